const MS_PER_DAY = 86_400_000
/** 0001-01-01 and 9999-12-31T23:59:59.999Z: the range toISOString writes as four-digit years. */
const MIN_MS = -62_135_596_800_000
const MAX_MS = 253_402_300_799_999

const pad2 = (n: number): string => (n < 10 ? `0${n}` : `${n}`)
const pad3 = (n: number): string => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`)
const pad4 = (n: number): string => (n < 1000 ? `0${pad3(n)}` : `${n}`)

/** `new Date(ms).toISOString()` without the Date (docs/performance.md#what-the-measurements-decided). */
export function isoTime (ms: number): string {
  if (!Number.isInteger(ms) || ms < MIN_MS || ms > MAX_MS) return new Date(ms).toISOString()
  const days = Math.floor(ms / MS_PER_DAY)
  const timeOfDay = ms - days * MS_PER_DAY
  // H. Hinnant's days_from_civil, inverted.
  const z = days + 719_468
  const era = Math.floor(z / 146_097)
  const dayOfEra = z - era * 146_097
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365
  )
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100))
  const shiftedMonth = Math.floor((5 * dayOfYear + 2) / 153)
  const day = dayOfYear - Math.floor((153 * shiftedMonth + 2) / 5) + 1
  const month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
  const hours = Math.floor(timeOfDay / 3_600_000)
  const minutes = Math.floor(timeOfDay / 60_000) % 60
  const seconds = Math.floor(timeOfDay / 1000) % 60
  const millis = timeOfDay % 1000
  return `${pad4(year)}-${pad2(month)}-${pad2(day)}T${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}.${pad3(millis)}Z`
}

/** Epoch ms of a `date-time`; a leap second (`:60`, which Date.parse refuses) is the one after `:59`, as in POSIX. */
export function parseDateTime (text: string): number {
  const ms = Date.parse(text)
  if (!Number.isNaN(ms)) return ms
  const leap = /^(.*[Tt ]\d\d:\d\d:)60(.*)$/.exec(text)
  return leap === null ? ms : Date.parse(`${leap[1] ?? ''}59${leap[2] ?? ''}`) + 1000
}
