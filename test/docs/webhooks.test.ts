import assert from 'node:assert/strict'
import { test } from 'node:test'
import { resourceScope } from '../../src/auth/scopes.js'
import { RESOURCES } from '../../src/resources/index.js'
import { PLANTS } from '../../src/resources/plants.js'
import { defaultEventsParagraph, readWebhooksPage, webhooksPage } from '../../scripts/webhook-docs.js'
import { escaped, RESOURCE_EVENT_TYPES } from '../helpers/resources.js'

test('docs/webhooks.md says what a subscription without events gets, generated from the resources ' +
  '(npm run gen:docs)', () => {
  const page = readWebhooksPage()
  assert.equal(page, webhooksPage(page, RESOURCES), 'stale: run npm run gen:docs')
  const start = page.indexOf('A subscription created without `events`')
  const paragraph = page.slice(start, page.indexOf('\n\n', start)).replace(/\s+/g, ' ')
  for (const type of RESOURCE_EVENT_TYPES) assert.ok(paragraph.includes(`\`${type}\``), type)
  for (const resource of RESOURCES) {
    assert.match(paragraph, new RegExp(
      `\`${escaped(resourceScope(resource, 'read'))}\` \\(or \`${escaped(resourceScope(resource, 'write'))}\`\\)`))
  }
})

test('with two resources, the paragraph names each one\'s events and scopes, and the first read scope', () => {
  const pots = { ...PLANTS, collection: 'pots', name: 'pot' }
  const trays = { ...PLANTS, collection: 'trays', name: 'tray' }
  assert.equal(defaultEventsParagraph([pots, trays]), [
    'A subscription created without `events` gets the events of every resource its token may read:',
    '`pot.created`, `pot.updated` and `pot.deleted` with `pots:read` (or `pots:write`); `tray.created`,',
    '`tray.updated` and `tray.deleted` with `trays:read` (or `trays:write`). They are fixed at creation,',
    'as a list sent would be: a scope the token gains later, or a resource served later, adds events only',
    'through a `PATCH` of `events`. A token that may read none of them is refused: 403 naming',
    '`pots:read`.'
  ].join('\n'))
  assert.throws(() => webhooksPage('no markers', [pots]), /webhooks\.md lacks the generated table's markers/)
})
