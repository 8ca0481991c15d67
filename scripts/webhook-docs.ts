import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { resourceScope } from '../src/auth/scopes.js'
import type { ResourceDefinition } from '../src/resources/definition.js'
import { eventTypesOf } from '../src/webhooks/events.js'
import { replaceBetween } from './config-docs.js'

/** docs/webhooks.md: `npm run gen:docs` rewrites its default-events paragraph, a test checks it is current. */
export const WEBHOOKS_PAGE = fileURLToPath(new URL('../../docs/webhooks.md', import.meta.url))

const START = '<!-- generated from the resources (npm run gen:docs): do not edit by hand -->'
const END = '<!-- end of generated default events -->'

const code = (text: string): string => `\`${text}\``

/** `a`, `a and b`, `a, b and c`. */
const listed = (items: readonly string[]): string =>
  items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1) ?? ''}`

/** Words filled into lines of at most 100 characters, as the docs are written. */
function filled (text: string): string {
  const lines: string[] = []
  for (const word of text.split(' ')) {
    const last = lines.at(-1)
    if (last !== undefined && last.length + 1 + word.length <= 100) lines[lines.length - 1] = `${last} ${word}`
    else lines.push(word)
  }
  return lines.join('\n')
}

/** What a subscription without `events` gets from an app serving `resources`, said from their declarations. */
export function defaultEventsParagraph (resources: readonly ResourceDefinition[]): string {
  const each = resources.map((resource) =>
    `${listed(eventTypesOf([resource]).map(code))} with ${code(resourceScope(resource, 'read'))} ` +
    `(or ${code(resourceScope(resource, 'write'))})`)
  const first = resources[0]
  return filled([
    'A subscription created without `events` gets the events of every resource its token may read:',
    `${each.join('; ')}.`,
    'They are fixed at creation, as a list sent would be: a scope the token gains later, or a resource served later,',
    'adds events only through a `PATCH` of `events`.',
    ...(first === undefined
      ? []
      : [`A token that may read none of them is refused: 403 naming ${code(resourceScope(first, 'read'))}.`])
  ].join(' '))
}

/** docs/webhooks.md with its generated paragraph replaced by the current one. */
export const webhooksPage = (current: string, resources: readonly ResourceDefinition[]): string =>
  replaceBetween(current, START, END, defaultEventsParagraph(resources), WEBHOOKS_PAGE)

export const readWebhooksPage = (): string => readFileSync(WEBHOOKS_PAGE, 'utf8')
