/**
 * A typed plant-store client in a few lines: openapi-fetch plus the types `npm run gen:client`
 * generates from the service's own OpenAPI document. It creates, lists, updates and deletes plants.
 *
 *   npm run build
 *   PLANT_STORE_URL=http://127.0.0.1:3000 PLANT_STORE_TOKEN=<token> node dist/examples/plants-client.js
 */
import createClient from 'openapi-fetch'
import type { components, paths } from '../client/plant-store-api.js'

type Plant = components['schemas']['Plant']
type ErrorBody = components['schemas']['Error']

const baseUrl = process.env.PLANT_STORE_URL ?? 'http://127.0.0.1:3000'
const token = process.env.PLANT_STORE_TOKEN
if (token === undefined || token === '') {
  process.stderr.write('Set PLANT_STORE_TOKEN to a token the service accepts (API_TOKENS, or the one it printed).\n')
  process.exit(2)
}

const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } })

/** The body of a successful answer, or a thrown error that says what the service answered. */
function ok<T> (step: string, result: { data?: T, error?: ErrorBody, response: Response }): T {
  if (result.error !== undefined || result.data === undefined) {
    throw new Error(`${step}: ${result.response.status} ${result.error?.message ?? 'no body'}`)
  }
  return result.data
}

const show = (plant: Plant): string => `#${plant.id} ${plant.name}${plant.tag === undefined ? '' : ` [${plant.tag}]`}`

const fern = ok('create', await client.POST('/plants', { body: { name: 'Boston fern', tag: 'fern' } }))
const cactus = ok('create', await client.POST('/plants', { body: { name: 'Golden barrel cactus', tag: 'succulent' } }))
console.log(`created ${show(fern)} and ${show(cactus)}`)

const ferns = ok('list', await client.GET('/plants', { params: { query: { tag: 'fern', limit: 10 } } }))
console.log(`ferns: ${ferns.map(show).join(', ')}`)

const renamed = ok('update', await client.PATCH('/plants/{id}', {
  params: { path: { id: fern.id } },
  body: { name: 'Sword fern', tag: null }
}))
console.log(`updated ${show(renamed)}`)

for (const plant of [renamed, cactus]) {
  const { response, error } = await client.DELETE('/plants/{id}', { params: { path: { id: plant.id } } })
  if (error !== undefined || response.status !== 204) {
    throw new Error(`delete: ${response.status} ${error?.message ?? ''}`)
  }
  console.log(`deleted #${plant.id}`)
}

const gone = await client.GET('/plants/{id}', { params: { path: { id: fern.id } } })
console.log(`after the delete, GET #${fern.id}: ${gone.response.status} ${gone.error?.message ?? ''}`)
