import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parseCommandLine, USAGE } from '../../src/cli.js'

test('the command line: serve by default; backup and restore take one file; token, check, help, version', () => {
  assert.deepEqual(parseCommandLine([]), { name: 'serve' })
  assert.deepEqual(parseCommandLine(['serve']), { name: 'serve' })
  assert.deepEqual(parseCommandLine(['backup', 'plants.bak']), { name: 'backup', file: 'plants.bak' })
  assert.deepEqual(parseCommandLine(['backup', '-']), { name: 'backup', file: '-' })
  assert.deepEqual(parseCommandLine(['restore', '/backups/plants.bak']), { name: 'restore', file: '/backups/plants.bak', force: false })
  assert.deepEqual(parseCommandLine(['restore', '--force', 'plants.bak']), { name: 'restore', file: 'plants.bak', force: true })
  assert.deepEqual(parseCommandLine(['restore', 'plants.bak', '--force']), { name: 'restore', file: 'plants.bak', force: true })
  assert.deepEqual(parseCommandLine(['token']), { name: 'token' })
  assert.deepEqual(parseCommandLine(['check']), { name: 'check' })
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
    [['serve', '--port=1'], 'serve: unexpected argument "--port=1"'],
    [['start'], 'unknown command "start"'],
    [['--verbose'], 'unknown command "--verbose"']
  ]
  for (const [args, message] of cases) assert.throws(() => parseCommandLine(args), { message }, args.join(' '))
})

test('the usage names every command', () => {
  for (const command of ['serve', 'backup <file>', 'restore [--force] <file>', '(- for\n                   stdout)', 'token', 'check', '--help', '--version', 'pg_dump']) {
    assert.ok(USAGE.includes(command), command)
  }
})
