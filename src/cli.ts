/** The commands of the `plant-store` executable (src/server.ts runs them). */
export type Command =
  | { name: 'serve' }
  | { name: 'backup', file: string }
  | { name: 'restore', file: string, force: boolean }
  | { name: 'token' }
  | { name: 'check' }
  | { name: 'help' }
  | { name: 'version' }

export const USAGE = `Usage: plant-store [command]

Commands:
  serve            run the service (the default): settings come from the environment (docs/configuration.md)
  backup <file>    write a consistent copy of the SQLite database (DATABASE_URL) to <file> (- for
                   stdout), while a server keeps serving; the copy is checked with PRAGMA integrity_check
  restore [--force] <file>
                   replace the SQLite database with the backup <file> (checked first); an existing
                   database only with --force, and it is then kept beside it; refused while a
                   server uses the database: stop it, restore, start it again
  token            print a new random API token (for API_TOKENS or API_TOKENS_FILE)
  check            validate the configuration and every dependency it names (the database, Redis)
                   without starting; says which failed; exit 0 when all are fine
  help, --help     show this text
  --version        print the version

PostgreSQL (a postgres:// DATABASE_URL) is backed up and restored with pg_dump and pg_restore (docs/operations.md).
`

/** Reads the command line (without `node` and the script); a misuse is an Error whose message says what is wrong. */
export function parseCommandLine (args: readonly string[]): Command {
  const [name, ...rest] = args
  const noMore = (command: Command): Command => {
    if (rest.length > 0) throw new Error(`${name ?? ''}: unexpected argument ${JSON.stringify(rest[0])}`)
    return command
  }
  switch (name) {
    case undefined:
    case 'serve':
      return noMore({ name: 'serve' })
    case 'token':
      return noMore({ name: 'token' })
    case 'check':
      return noMore({ name: 'check' })
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
