import pg from 'pg'

/** int8 as bigint, so ids beyond 2^53 arrive exactly. Not in connection.ts: SQLite-only processes load that. */
export const pgTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 && format !== 'binary' ? BigInt : pg.types.getTypeParser(oid, format)
  ) as typeof pg.types.getTypeParser
}
