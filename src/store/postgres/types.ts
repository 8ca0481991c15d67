import pg from 'pg'

/**
 * The driver's type parsers for every plant-store connection: int8 → bigint, so ids beyond 2^53
 * arrive exactly; every other type as the driver reads it. (Not in connection.ts: that module is
 * loaded by SQLite-only processes too, and must not load the driver.)
 */
export const pgTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 && format !== 'binary' ? BigInt : pg.types.getTypeParser(oid, format)
  ) as typeof pg.types.getTypeParser
}
