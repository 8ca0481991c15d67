/**
 * Reading callgrind's output for `npm run bench:instructions`: a function's inclusive cost from
 * `callgrind_annotate --inclusive=yes`, and how often a function was called from the dump itself
 * (callgrind_annotate does not print call counts).
 */

/** `name`'s inclusive cost in a callgrind_annotate listing (its largest line), or 0. */
export function inclusive (listing: string, name: RegExp): number {
  let largest = 0
  for (const line of listing.split('\n')) {
    const match = /^\s*([\d,]+)\s/.exec(line)
    if (match?.[1] !== undefined && name.test(line)) largest = Math.max(largest, Number(match[1].replaceAll(',', '')))
  }
  return largest
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
