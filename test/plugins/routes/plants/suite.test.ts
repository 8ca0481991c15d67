import { PLANTS } from '../../../../src/resources/plants.js'
import { resourceRouteSuite } from '../resource-suite.js'

/** The routes every resource has, for plants; what only plants do (names, tags) is tested beside this file. */
resourceRouteSuite({
  resource: PLANTS,
  bodies: [{ name: 'Monstera', tag: 'tropical' }, { name: 'Fern' }, { name: 'Cactus', tag: 'tropical' }],
  replacement: { name: 'Ficus' },
  patch: { tag: 'green' },
  invalid: { body: { tag: 'x' }, message: "body must have property 'name'" },
  filter: { parameter: 'tag', value: 'tropical', keeps: (body) => body.tag === 'tropical' }
})
