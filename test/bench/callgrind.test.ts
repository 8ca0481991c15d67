import assert from 'node:assert/strict'
import { test } from 'node:test'
import { calls, inclusive } from '../../bench/callgrind.js'

// The shape of callgrind's output with --dump-instr=no --dump-line=no: names compressed to (id)
// after their first mention, each call site a cfn= line and then calls=<count> <line>.
const DUMP = [
  'version: 1',
  'events: Ir',
  'ob=(1) /usr/bin/node',
  'fn=(10) v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace)',
  '0 120',
  'cfn=(11) v8::internal::Heap::MarkCompact()',
  'calls=2 0',
  '0 9000',
  'cfn=(12) v8::internal::Heap::Scavenge()',
  'calls=7 0',
  '0 3000',
  'fn=(13) v8::internal::Heap::FinalizeIncrementalMarkingAtomically()',
  'cfn=(11)',
  'calls=1 0',
  '0 4000',
  'fn=(11)',
  '0 13000',
  'summary: 29120',
  ''
].join('\n')

test('calls sums a function\'s call counts over every call site, by its compressed id', () => {
  assert.equal(calls(DUMP, 'v8::internal::Heap::MarkCompact()'), 3)
  assert.equal(calls(DUMP, 'v8::internal::Heap::Scavenge()'), 7)
})

test('calls is 0 for a function the dump never mentions, or one named only in part', () => {
  assert.equal(calls(DUMP, 'v8::internal::Heap::MinorMarkCompact()'), 0)
  assert.equal(calls(DUMP, 'MarkCompact()'), 0)
})

test('inclusive takes the largest figure on the lines that name the function', () => {
  const listing = [
    '   29,120 (100.0%)  ???:0x0000000000001000 [/usr/bin/node]',
    '   12,120 (41.62%)  ???:v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace) [/usr/bin/node]',
    '      120 ( 0.41%)  ???:v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace) [/usr/bin/node]'
  ].join('\n')
  assert.equal(inclusive(listing, /Heap::CollectGarbage\(/), 12120)
  assert.equal(inclusive(listing, /Runtime_CompileLazy\(/), 0)
})
