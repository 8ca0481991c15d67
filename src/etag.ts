import { sha256 } from './digest.js'
import type { Plant } from './schemas/plant.js'

/**
 * A strong ETag for a plant's representation: it changes whenever anything a client can see
 * changes (and `updatedAt` changes on every write), and is the same on every store and instance.
 */
export function plantEtag (plant: Plant): string {
  const digest = sha256(`${plant.id}\n${plant.name}\n${plant.tag === undefined ? '' : `#${plant.tag}`}\n${plant.createdAt}\n${plant.updatedAt}`, 'base64url')
  return `"${digest.slice(0, 22)}"`
}
