import assert from 'node:assert/strict'
import { test } from 'node:test'
import { commandUsage, parseCommandLine, USAGE } from '../../../src/main/cli.js'
import { SCOPE_NAMES } from '../../helpers/resources.js'

test('the command line: serve by default; backup and restore take one file; token, check, help, version', () => {
  assert.deepEqual(parseCommandLine([]), { name: 'serve' })
  assert.deepEqual(parseCommandLine(['serve']), { name: 'serve' })
  assert.deepEqual(parseCommandLine(['backup', 'plants.bak']), { name: 'backup', file: 'plants.bak' })
  assert.deepEqual(parseCommandLine(['backup', '-']), { name: 'backup', file: '-' })
  assert.deepEqual(parseCommandLine(['restore', '/backups/plants.bak']), {
    name: 'restore',
    file: '/backups/plants.bak',
    force: false
  })
  assert.deepEqual(parseCommandLine(['restore', '--force', 'plants.bak']),
    { name: 'restore', file: 'plants.bak', force: true })
  assert.deepEqual(parseCommandLine(['restore', 'plants.bak', '--force']),
    { name: 'restore', file: 'plants.bak', force: true })
  assert.deepEqual(parseCommandLine(['token']), { name: 'token' })
  assert.deepEqual(parseCommandLine(['check']), { name: 'check' })
  assert.deepEqual(parseCommandLine(['migrate']), { name: 'migrate' })
  for (const help of ['help', '--help', '-h']) assert.deepEqual(parseCommandLine([help]), { name: 'help' })
  for (const version of ['--version', '-v']) assert.deepEqual(parseCommandLine([version]), { name: 'version' })
})

test('a misused command line says what is wrong', () => {
  const cases: Array<[string[], string]> = [
    [['backup'], 'backup: which file? (plant-store backup <file>)'],
    [['restore', ''], 'restore: which file? (plant-store restore <file>)'],
    [['backup', 'a', 'b'], 'backup: unexpected argument "b"'],
    [['backup', '--force', 'a'], 'backup: unexpected argument "a"'],
    [['restore', '--force'], 'restore: which file? (plant-store restore <file>)'],
    [['restore', '--force', 'a', 'b'], 'restore: unexpected argument "b"'],
    [['token', 'extra'], 'token: unexpected argument "extra"'],
    [['migrate', 'now'], 'migrate: unexpected argument "now"'],
    [['serve', '--port=1'], 'serve: unexpected argument "--port=1"'],
    [['start'], 'unknown command "start"'],
    [['--verbose'], 'unknown command "--verbose"']
  ]
  for (const [args, message] of cases) assert.throws(() => parseCommandLine(args), { message }, args.join(' '))
})

test('<command> --help (or -h): that command\'s help, wherever the option stands', () => {
  for (const name of ['serve', 'backup', 'restore', 'token', 'check', 'migrate'] as const) {
    assert.deepEqual(parseCommandLine([name, '--help']), { name: 'help', command: name })
    assert.deepEqual(parseCommandLine([name, 'x', '-h']), { name: 'help', command: name })
    assert.ok(USAGE.includes(commandUsage(name).split('\n\n')[1] ?? '-'), name)
  }
  assert.deepEqual(parseCommandLine(['restore', '--force', 'a.bak', '--help']), { name: 'help', command: 'restore' })
  assert.equal(commandUsage('check'), 'Usage: plant-store check …\n\n' +
    '  check            validate the configuration and every dependency it names (the database, Redis,\n' +
    '                   the OpenID provider) without starting; says which failed; exit 0 when all are fine\n')
  assert.match(commandUsage('backup'),
    /\n\nPostgreSQL \(a postgres:\/\/ DATABASE_URL\) is backed up and restored with pg_dump/)
})

test('the usage names every command', () => {
  for (const command of ['serve', 'backup <file>', 'restore [--force] <file>', '(- for\n                   stdout)',
    'token', 'check', '--help', '--version', 'pg_dump']) {
    assert.ok(USAGE.includes(command), command)
  }
})

test('token --name <name> --scopes <list>: a named entry; both options or neither, a valid name, known scopes', () => {
  assert.deepEqual(parseCommandLine(['token', '--name', 'ci', '--scopes', 'plants:read']), {
    name: 'token',
    entry: { name: 'ci', scopes: ['plants:read'] }
  })
  assert.deepEqual(parseCommandLine(['token', '--scopes=plants:write, webhooks,plants:write', '--name=batch.job']),
    { name: 'token', entry: { name: 'batch.job', scopes: ['plants:write', 'webhooks'] } })
  const cases: Array<[string[], string]> = [
    [['token', '--name', 'ci'],
      'token: --name and --scopes go together (plant-store token --name ci --scopes plants:read)'],
    [['token', '--scopes', 'webhooks'],
      'token: --name and --scopes go together (plant-store token --name ci --scopes plants:read)'],
    [['token', '--name'], 'token: --name needs a value'],
    [['token', '--name=', '--scopes', 'webhooks'], 'token: --name needs a value'],
    [['token', '--name', 'c i', '--scopes', 'webhooks'], 'token: a name is 1 to 64 of A-Z a-z 0-9 . _ -'],
    [['token', '--name', 'ci', '--scopes', 'plants:read,admin'],
      `token: unknown scope "admin" (known: ${SCOPE_NAMES})`],
    [['token', '--name', 'ci', '--scope', 'webhooks'], 'token: unexpected argument "--scope"']
  ]
  for (const [args, message] of cases) assert.throws(() => parseCommandLine(args), { message }, args.join(' '))
  assert.match(USAGE, /token --name <name> --scopes <scope>\[,<scope>…\]/)
})
