/**
 * Reading callgrind's output for `npm run bench:instructions`: a function's inclusive cost from
 * `callgrind_annotate --inclusive=yes`, a window's counts with what its requests did not start left out,
 * and how often a function was called from the dump itself (callgrind_annotate does not print call counts).
 */

/** A function's (or the program's) counts of the dump's events (`Ir`, with a cache simulation `I1mr` and others). */
export type Events = Readonly<Record<string, number>>

/**
 * `name`'s inclusive cost in a callgrind_annotate listing (its largest line by instructions), every event the listing
 * shows (`events`, in its column order); all 0 when it is not there.
 */
export function inclusive (listing: string, name: RegExp, events: readonly string[]): Events {
  let largest: number[] = events.map(() => 0)
  for (const line of listing.split('\n')) {
    if (!name.test(line)) continue
    // Each count is followed by its share, `1,234 (5.6%)`, or stands alone as 0.
    const counts = [...line.matchAll(/(?:^|\s)([\d,]+)(?=\s)/g)].slice(0, events.length)
      .map((match) => Number((match[1] as string).replaceAll(',', '')))
    if (counts.length === events.length && (counts[0] as number) > (largest[0] as number)) largest = counts
  }
  return Object.fromEntries(events.map((event, index) => [event, largest[index] as number]))
}

/** The dump's event names and its totals (`events:` and `summary:` lines). */
export function summary (dump: string): Events {
  const events = /^events:\s+(.+)$/m.exec(dump)?.[1]?.trim().split(/\s+/) ?? []
  const totals = /^summary:\s+(.+)$/m.exec(dump)?.[1]?.trim().split(/\s+/).map(Number) ?? []
  return Object.fromEntries(events.map((event, index) => [event, totals[index] ?? Number.NaN]))
}

/** What a counted window spent apart from its requests, and what is left: the requests' own work, event by event. */
export interface WindowCounts {
  totals: Events
  /** The optimizing compiler, still at work on code the warm-up made hot. */
  compile: Events
  /**
   * The load-shedding monitor's sample (@fastify/under-pressure: the event-loop delay histogram's mean and reset),
   * taken once a second whatever the load: valgrind makes the counted window last many seconds, a real run's second
   * serves thousands of requests.
   */
  clock: Events
  gc: Events
  /** `totals` less `compile` and `clock`. */
  steady: Events
}

const COMPILE = [/Runtime_CompileOptimized\(/, /Runtime_CompileLazy\(/]
const CLOCK = [/node::HistogramImpl::GetMean\(/, /node::HistogramImpl::\w*Reset\(/]
const GC = [/Heap::CollectGarbage\(/]

/** A window's counts from its dump and the dump's `callgrind_annotate --inclusive=yes` listing. */
export function windowCounts (dump: string, listing: string): WindowCounts {
  const totals = summary(dump)
  const events = Object.keys(totals)
  const of = (names: readonly RegExp[]): Events => {
    const found = names.map((name) => inclusive(listing, name, events))
    return Object.fromEntries(events.map((event) => [event, found.reduce((sum, one) => sum + (one[event] ?? 0), 0)]))
  }
  const compile = of(COMPILE)
  const clock = of(CLOCK)
  const steady = Object.fromEntries(events.map((event) =>
    [event, (totals[event] ?? 0) - (compile[event] ?? 0) - (clock[event] ?? 0)]))
  return { totals, compile, clock, gc: of(GC), steady }
}

/**
 * Cycles as a cache simulation estimates them (Itamar Turner-Trauring's formula, iai-callgrind's EstimatedCycles): an
 * access served by the first-level caches costs 1, by the last level 5, by memory 35. NaN without `--cache-sim=yes`.
 */
export function estimatedCycles (e: Events): number {
  const count = (name: string): number => e[name] ?? Number.NaN
  const accesses = count('Ir') + count('Dr') + count('Dw')
  const firstLevelMisses = count('I1mr') + count('D1mr') + count('D1mw')
  const lastLevelMisses = count('ILmr') + count('DLmr') + count('DLmw')
  return (accesses - firstLevelMisses) + 5 * (firstLevelMisses - lastLevelMisses) + 35 * lastLevelMisses
}

/**
 * How many times the function named exactly `name` was called, summed over its callers, from a
 * callgrind dump. Callgrind compresses names: the first mention is `(id) name`, later ones `(id)`
 * alone, on `fn=` and `cfn=` lines; each call site is a `cfn=` line followed by `calls=<count> …`.
 * 0 when the function never ran (it is then not in the dump at all).
 */
export function calls (dump: string, name: string): number {
  const lines = dump.split('\n')
  let id: string | undefined
  for (const line of lines) {
    const match = /^c?fn=\((\d+)\) (.*)$/.exec(line)
    if (match?.[2] === name) {
      id = match[1]
      break
    }
  }
  if (id === undefined) return 0
  let total = 0
  for (let index = 0; index < lines.length - 1; index++) {
    const line = lines[index] as string
    if (line !== `cfn=(${id})` && !line.startsWith(`cfn=(${id}) `)) continue
    const count = /^calls=(\d+)/.exec(lines[index + 1] as string)?.[1]
    if (count !== undefined) total += Number(count)
  }
  return total
}
