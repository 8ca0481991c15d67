/** Numbers as a person reads them in the banner and the commands' reports (English, as every message is). */

const PLURAL = new Intl.PluralRules('en')

/** `1 plant`, `2 plants`, `0 plants`. */
export function countOf (count: number, one: string, many: string): string {
  return `${count} ${PLURAL.select(count) === 'one' ? one : many}`
}

const UNITS = [['day', 86_400_000], ['hour', 3_600_000], ['minute', 60_000], ['second', 1000]] as const

/** In the largest unit that states it exactly: `1 day`, `90 minutes`, `1500 ms`. */
export function duration (ms: number): string {
  for (const [unit, size] of UNITS) {
    if (ms >= size && ms % size === 0) {
      return new Intl.NumberFormat('en', { style: 'unit', unit, unitDisplay: 'long' }).format(ms / size)
    }
  }
  return `${ms} ms`
}
