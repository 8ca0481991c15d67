import assert from 'node:assert/strict'
import { test } from 'node:test'
import { calls, estimatedCycles, inclusive, summary, windowCounts } from '../../bench/callgrind.js'

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
    '      120 ( 0.41%)  ???:v8::internal::Heap::CollectGarbage(space) [node]'
  ].join('\n')
  assert.deepEqual(inclusive(listing, /Heap::CollectGarbage\(/, ['Ir']), { Ir: 12120 })
  assert.deepEqual(inclusive(listing, /Runtime_CompileLazy\(/, ['Ir']), { Ir: 0 })
})

// callgrind_annotate's columns with --cache-sim=yes --branch-sim=yes: a count and its share, or a bare 0.
const EVENTS = ['Ir', 'Dr', 'Dw', 'I1mr', 'D1mr', 'D1mw', 'ILmr', 'DLmr', 'DLmw', 'Bc', 'Bcm', 'Bi', 'Bim']
const SIMULATED = '   11,800,480 ( 1.40%)       1,120 ( 0.00%)  11,797,120 ( 9.26%)        256 ( 0.00%)' +
  '        367 ( 0.00%)   184,399 ( 7.50%)  0            0             353 ( 1.31%)  11,797,152 ( 7.89%)' +
  '        280 ( 0.00%)         23 ( 0.00%)          2 ( 0.00%)  ???:hdr_reset [/usr/bin/node]'

test('inclusive reads every event column, bare zeros included, and no figure of the name', () => {
  assert.deepEqual(inclusive(SIMULATED, /hdr_reset/, EVENTS), {
    Ir: 11800480,
    Dr: 1120,
    Dw: 11797120,
    I1mr: 256,
    D1mr: 367,
    D1mw: 184399,
    ILmr: 0,
    DLmr: 0,
    DLmw: 353,
    Bc: 11797152,
    Bcm: 280,
    Bi: 23,
    Bim: 2
  })
})

test('summary names the dump\'s totals by its events', () => {
  assert.deepEqual(summary(DUMP), { Ir: 29120 })
  assert.deepEqual(summary('events: Ir I1mr\nsummary: 500 7\n'), { Ir: 500, I1mr: 7 })
})

test('estimatedCycles costs a first-level hit 1, a last-level hit 5 and a memory access 35', () => {
  // 1,000 accesses: 100 missed the first level, of which 10 missed the last as well.
  const counts = { Ir: 600, Dr: 300, Dw: 100, I1mr: 50, D1mr: 40, D1mw: 10, ILmr: 4, DLmr: 5, DLmw: 1 }
  assert.equal(estimatedCycles(counts), 900 + 5 * 90 + 35 * 10)
  assert.ok(Number.isNaN(estimatedCycles({ Ir: 600 })), 'without a cache simulation there is no estimate')
})

test('windowCounts leaves the compiler\'s and the clock\'s work out of the requests\', event by event', () => {
  const dump = 'events: Ir I1mr\nsummary: 100000 900\n'
  const listing = [
    '   100,000 (100.0%)  900 (100.0%)  ???:node::SpinEventLoopInternal(node::Environment*) [/usr/bin/node]',
    '     4,000 ( 4.00%)   40 ( 4.44%)  ???:v8::internal::Runtime_CompileOptimized(int) [node]',
    '     1,000 ( 1.00%)   10 ( 1.11%)  ???:v8::internal::Runtime_CompileLazy(int) [node]',
    '     7,000 ( 7.00%)    5 ( 0.56%)  ???:node::HistogramImpl::GetMean(info) [node]',
    '     3,000 ( 3.00%)    0            ???:node::HistogramImpl::DoReset(info) [node]',
    '     9,000 ( 9.00%)   90 (10.00%)  ???:v8::internal::Heap::CollectGarbage(space) [node]'
  ].join('\n')
  assert.deepEqual(windowCounts(dump, listing), {
    totals: { Ir: 100000, I1mr: 900 },
    compile: { Ir: 5000, I1mr: 50 },
    clock: { Ir: 10000, I1mr: 5 },
    gc: { Ir: 9000, I1mr: 90 },
    // Collections are the requests' own garbage: counted, and shown apart.
    steady: { Ir: 85000, I1mr: 845 }
  })
})
