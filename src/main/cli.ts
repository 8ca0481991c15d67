import { DEFAULT_SCOPES, type Scope } from '../auth/scopes.js'
import { checkTokenName, namedScopes } from '../auth/token-settings.js'

/** The commands of the `plant-store` executable (src/main/server.ts runs them). */
type Command =
  | { name: 'serve' }
  | { name: 'backup', file: string }
  | { name: 'restore', file: string, force: boolean }
  /** With `entry`, a named API_TOKENS_FILE entry is printed with the token. */
  | { name: 'token', entry?: { name: string, scopes: Scope[] } }
  | { name: 'check' }
  | { name: 'migrate' }
  /** With `command`, only that command's help (`plant-store backup --help`). */
  | { name: 'help', command?: CommandName }
  | { name: 'version' }

/** Each command's lines of the usage: `plant-store <command> --help` prints its own. */
const COMMAND_HELP = {
  serve: `  serve            run the service (the default): settings come from the environment (docs/configuration.md)
`,
  backup: `  backup <file>    write a consistent copy of the SQLite database (DATABASE_URL) to <file> (- for
                   stdout), while a server keeps serving; the copy is checked with PRAGMA integrity_check
`,
  restore: `  restore [--force] <file>
                   replace the SQLite database with the backup <file> (checked first); an existing
                   database only with --force, and it is then kept beside it; refused while a
                   server uses the database: stop it, restore, start it again
`,
  token: `  token            print a new random API token (for API_TOKENS or API_TOKENS_FILE)
  token --name <name> --scopes <scope>[,<scope>…]
                   print a new token once, and the API_TOKENS_FILE line that grants it those scopes
                   (${DEFAULT_SCOPES.scopes.join(', ')}); the line holds only the token's SHA-256
`,
  check: `  check            validate the configuration and every dependency it names (the database, Redis,
                   the OpenID provider) without starting; says which failed; exit 0 when all are fine
`,
  migrate: `  migrate          apply the database's pending migrations (PostgreSQL over DATABASE_DIRECT_URL when
                   set), print each one and the schema version reached; exit 0, or 1 with the cause.
                   With MIGRATE_ON_START=0, serve applies none (docs/upgrading.md)
`
} as const

type CommandName = keyof typeof COMMAND_HELP

const PG_NOTE = 'PostgreSQL (a postgres:// DATABASE_URL) is backed up and restored with pg_dump and pg_restore ' +
  '(docs/operations.md).\n'

export const USAGE = `Usage: plant-store [command]

Commands:
${Object.values(COMMAND_HELP).join('')}  help, --help     show this text (<command> --help: that command's only)
  --version        print the version

${PG_NOTE}`

/** `plant-store <command> --help`: that command's lines of the usage. */
export function commandUsage (command: CommandName): string {
  const note = command === 'backup' || command === 'restore' ? `\n${PG_NOTE}` : ''
  return `Usage: plant-store ${command === 'serve' ? '[serve]' : command} …\n\n${COMMAND_HELP[command]}${note}`
}

/** Reads the command line (without `node` and the script); a misuse is an Error whose message says what is wrong. */
export function parseCommandLine (args: readonly string[]): Command {
  const [name, ...rest] = args
  if (isCommandName(name) && rest.some((arg) => arg === '--help' || arg === '-h')) {
    return { name: 'help', command: name }
  }
  const noMore = (command: Command): Command => {
    if (rest.length > 0) throw new Error(`${name ?? ''}: unexpected argument ${JSON.stringify(rest[0])}`)
    return command
  }
  switch (name) {
    case undefined:
    case 'serve':
      return noMore({ name: 'serve' })
    case 'token':
      return parseToken(rest)
    case 'check':
    case 'migrate':
      return noMore({ name })
    case 'help':
    case '--help':
    case '-h':
      return { name: 'help' }
    case '--version':
    case '-v':
      return noMore({ name: 'version' })
    case 'backup':
    case 'restore': {
      const force = name === 'restore' && rest.includes('--force')
      const [file, extra] = force ? rest.filter((arg) => arg !== '--force') : rest
      if (file === undefined || file === '') throw new Error(`${name}: which file? (plant-store ${name} <file>)`)
      if (extra !== undefined) throw new Error(`${name}: unexpected argument ${JSON.stringify(extra)}`)
      return name === 'backup' ? { name, file } : { name, file, force }
    }
    default:
      throw new Error(`unknown command ${JSON.stringify(name)}`)
  }
}

/** `token [--name <name> --scopes <list>]`, each option also as `--option=value`. */
function parseToken (args: readonly string[]): Command {
  const options = new Map<string, string>()
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? ''
    const match = /^--(name|scopes)(?:=(.*))?$/.exec(arg)
    if (match === null) throw new Error(`token: unexpected argument ${JSON.stringify(arg)}`)
    const [, option = '', inline] = match
    const value = inline ?? args[++i]
    if (value === undefined || value === '') throw new Error(`token: --${option} needs a value`)
    options.set(option, value)
  }
  const name = options.get('name')
  const scopeList = options.get('scopes')
  if (name === undefined && scopeList === undefined) return { name: 'token' }
  if (name === undefined || scopeList === undefined) {
    throw new Error('token: --name and --scopes go together (plant-store token --name ci --scopes plants:read)')
  }
  const problem = (what: string): Error => new Error(`token: ${what}`)
  checkTokenName(name, problem)
  const scopes = namedScopes(scopeList.split(',').map((scope) => scope.trim()), problem)
  return { name: 'token', entry: { name, scopes } }
}

function isCommandName (name: string | undefined): name is CommandName {
  return name !== undefined && Object.hasOwn(COMMAND_HELP, name)
}
