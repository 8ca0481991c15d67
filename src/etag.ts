import { strongEtag } from './resource.js'
import type { Plant } from './schemas/plant.js'

/** `updatedAt` changes on every write, so the tag does too. */
export const plantEtag = (plant: Plant): string =>
  strongEtag([String(plant.id), plant.name, plant.tag === undefined ? '' : `#${plant.tag}`, plant.createdAt, plant.updatedAt])
