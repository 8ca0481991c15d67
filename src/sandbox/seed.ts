import { readFileSync } from 'node:fs'
import { Ajv } from 'ajv'
import { ConfigError } from '../lib/errors.js'
import { PLANTS, type NewPlant } from '../resources/plants.js'

/** What a new tenant starts with unless SANDBOX_SEED says otherwise: ids 1 to 5, as the docs' examples use them. */
export const BUILT_IN_SEED: ReadonlyArray<Omit<NewPlant, 'id'>> = [
  { name: 'Monstera', tag: 'tropical' },
  { name: 'Snake plant', tag: 'succulent' },
  { name: 'Fiddle-leaf fig', tag: 'tropical' },
  { name: 'Pothos', tag: 'trailing' },
  { name: 'Aloe vera', tag: 'succulent' }
]

/** The plants SANDBOX_SEED names (`none`, a JSON file, unset: the built-in set), checked as a create checks them. */
export function loadSeed (seed: string | undefined, maxPlants: number): Array<Omit<NewPlant, 'id'>> {
  if (seed === undefined) return BUILT_IN_SEED.slice(0, maxPlants)
  if (seed === 'none') return []
  const problem = (what: string) => new ConfigError(`invalid configuration: SANDBOX_SEED ${what}`)
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(seed, 'utf8'))
  } catch (err) {
    throw problem(`cannot be read as JSON (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}: ${seed})`)
  }
  if (!Array.isArray(parsed)) throw problem('must hold a JSON array of {"name": …, "tag": …} objects')
  if (parsed.length > maxPlants) {
    throw problem(`holds ${parsed.length} plants, more than SANDBOX_MAX_PLANTS (${maxPlants})`)
  }
  // A seed plant is what a PUT may send (a name and an optional tag): the API's own schema checks it.
  const isPlant = new Ajv().compile<{ name: string, tag?: string }>(PLANTS.schemas.replace)
  return parsed.map((entry: unknown, index) => {
    if (!isPlant(entry)) {
      throw problem(`entry ${index}: a plant is {"name": 1 to 100 characters, "tag": optional, 1 to 50 characters}`)
    }
    return { name: entry.name.trim(), ...(entry.tag !== undefined && { tag: entry.tag }) }
  })
}
