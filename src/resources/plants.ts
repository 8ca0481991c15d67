import { defineResource, type FieldTypes } from './fields.js'

/** Stored exactly as given; the schemas exclude NUL and lone surrogates, which the stores cannot store. */
export const PLANT_FIELDS = {
  name: { kind: 'text', maxLength: 100, trimmed: true, example: 'Monstera', description: 'The plant name' },
  tag: {
    kind: 'text',
    maxLength: 50,
    nullable: true,
    description: 'A free-form tag',
    example: 'tropical',
    filter: 'Only plants with exactly this tag'
  }
} as const

export type PlantTypes = FieldTypes<typeof PLANT_FIELDS>
export type Plant = PlantTypes['item']
export type NewPlant = PlantTypes['create']

export const PLANTS = defineResource({
  collection: 'plants',
  name: 'plant',
  title: 'Plant',
  fields: PLANT_FIELDS,
  bodies: {
    create: 'A plant to create',
    replace: {
      description: 'A full replacement of a plant: a missing tag clears it',
      example: { name: 'Monstera deliciosa', tag: 'tropical' }
    },
    patch: {
      description: 'A JSON merge patch (RFC 7396) of a plant: a missing field is kept, `"tag": null` clears the tag',
      example: { tag: null }
    }
  },
  texts: {
    tag: 'The plants resource',
    list: {
      description: 'Plants ordered by id, at most `limit` of them. When more follow, a `Link: <…>; rel="next"` ' +
        'header gives the next page (keyset pagination on `after`: a deep page costs what the first one does). ' +
        '`tag` keeps only plants with exactly that tag.',
      badRequest: 'A query parameter is invalid or unknown (limit outside 1..100 or not a canonical integer, after ' +
        'not an int64, tag empty or too long), or a name or value is not percent-encoded UTF-8'
    },
    create: {
      description: 'Creates a plant and answers 201 with it and `Location: /plants/{id}`. `id` is optional (clients ' +
        'of the original `NewPlant`, which required it, keep working): when given it must be free, else 409. ' +
        'With an `Idempotency-Key`, a retry of the same request within 24 hours answers the first 201 again.',
      badRequest: 'The body is not a valid NewPlant (the message names the field; an id must be written without a ' +
        'fraction or exponent), or the Idempotency-Key is malformed'
    },
    replace: {
      description: 'Replaces the name and tag of the plant with this id (a missing tag clears it); never creates a ' +
        'plant.'
    },
    update: {
      description: 'Applies a JSON merge patch (RFC 7396) to the plant with this id: a field that is absent is kept, ' +
        '`"tag": null` clears the tag (the name cannot be cleared). Sent as `application/merge-patch+json` or plain ' +
        'JSON.'
    },
    scopes: { read: 'List and get plants', write: 'Create, replace, update and delete plants' },
    events: {
      created: 'A plant was created; `data` is the plant',
      updated: 'A plant was replaced or updated; `data` is the plant after the change',
      deleted: 'A plant was deleted; `data` is the plant as it was'
    }
  }
})

export const plantEtag = (plant: Plant): string => PLANTS.etag(plant)
export const plantJson = (plant: Plant): string => PLANTS.json(plant)
