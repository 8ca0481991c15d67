import { Type, type Static, type TObject } from '@sinclair/typebox'
import { ConfigError } from '../lib/errors.js'
import { flagSetting, integerSetting, stringSetting } from '../config/setting-types.js'
import { isPostgresUrl, parsePostgresUrl } from './postgres/connection.js'
import { SQLITE_SYNCHRONOUS, type SqliteSynchronous } from './sqlite/sqlite-store.js'

export const DATABASE_URL_SETTING = stringSetting({ minLength: 1, default: 'data/plants.db' },
  'A SQLite file path (its folder is created) or `:memory:`; a `postgres://` or `postgresql://` URL selects ' +
      'PostgreSQL, with `?schema=name` for a schema of its own (see docs/scaling.md). Any other scheme (`file:`, ' +
      '`sqlite:`, `postgres:/` with one slash) stops the start.')

/** The store's other settings: their part of EnvSchema (src/config/load-config.ts composes them, in this order). */
export const DATABASE_SETTINGS = {
  DATABASE_DIRECT_URL: Type.Optional(stringSetting({ minLength: 1 },
    'PostgreSQL: a `postgres://` URL of the same database that reaches PostgreSQL itself, when ' +
    'DATABASE_URL is a transaction pooler (PgBouncer); used for migrations and LISTEN (without it the webhook ' +
    'dispatcher polls). See docs/scaling.md.')),
  PG_POOL_MAX: integerSetting({ minimum: 1, maximum: 1000, default: 10 },
    'PostgreSQL: the most connections one instance opens; N instances open up to N times this.'),
  PG_CONNECT_TIMEOUT_MS: integerSetting({ minimum: 100, maximum: 600000, default: 5000 },
    'PostgreSQL: how long a request waits for a connection, or for a call it shares with others, before it is ' +
    'answered 503.'),
  PG_STATEMENT_TIMEOUT_MS: integerSetting({ minimum: 100, maximum: 600000, default: 5000 },
    'PostgreSQL: the longest a statement may run or wait for a lock before the request is answered 503.'),
  PG_STARTUP_TIMEOUT_MS: integerSetting({ minimum: 0, maximum: 3_600_000, default: 30_000 },
    'PostgreSQL: how long a starting instance keeps retrying a database it cannot reach, then exits 1 (0: no retry).'),
  MIGRATE_ON_START: flagSetting('1',
    '`1`: `serve` applies pending migrations at start. `0`: it refuses a database behind its schema; ' +
    'migrations are then a step of their own (`plant-store migrate`, docs/upgrading.md).'),
  SQLITE_SYNCHRONOUS: Type.Unsafe<SqliteSynchronous>({
    type: 'string',
    enum: SQLITE_SYNCHRONOUS,
    default: 'full',
    description:
      'SQLite durability: `full`, an acknowledged write survives a power loss; `normal`, it survives a process crash.'
  })
}

type DatabaseEnv = Static<TObject<{ DATABASE_URL: typeof DATABASE_URL_SETTING } & typeof DATABASE_SETTINGS>>

/**
 * A scheme other than PostgreSQL's (`file:/…`, `sqlite:///…`, `postgres:/x`) would otherwise be a relative SQLite
 * path: a new, empty database under the working directory. Only the scheme is named: the rest may hold a password.
 */
function refuseUnknownScheme (url: string): void {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(url)?.[1]
  if (scheme === undefined || isPostgresUrl(url)) return
  throw new ConfigError(`invalid configuration: DATABASE_URL starts with ${scheme}:, a form it does not take: ` +
    'a SQLite file path (data/plants.db, /var/lib/plant-store/plants.db; ./ before a name holding a colon), ' +
    ':memory:, or a postgres:// or postgresql:// URL')
}

/** DATABASE_URL is a form the docs name, a PostgreSQL URL parses, DATABASE_DIRECT_URL goes with one. */
export function checkDatabaseSettings (parsed: DatabaseEnv): void {
  if (parsed.DATABASE_URL !== ':memory:') refuseUnknownScheme(parsed.DATABASE_URL)
  if (isPostgresUrl(parsed.DATABASE_URL)) {
    try {
      parsePostgresUrl(parsed.DATABASE_URL)
    } catch (err) {
      throw new ConfigError(`invalid configuration: ${(err as Error).message}`)
    }
  }
  if (parsed.DATABASE_DIRECT_URL !== undefined &&
      (!isPostgresUrl(parsed.DATABASE_URL) || !isPostgresUrl(parsed.DATABASE_DIRECT_URL))) {
    throw new ConfigError(
      'invalid configuration: DATABASE_DIRECT_URL must be a postgres:// URL, and DATABASE_URL one too')
  }
}
