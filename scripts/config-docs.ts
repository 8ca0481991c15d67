import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { TSchema } from '@sinclair/typebox'
import { EnvSchema } from '../src/config/load-config.js'
import { DEFAULT_SCOPES } from '../src/auth/scopes.js'

/** Where the generated parts live; `npm run gen:docs` rewrites them, a test checks they are current. */
export const CONFIGURATION_PAGE = fileURLToPath(new URL('../../docs/configuration.md', import.meta.url))
export const ENV_EXAMPLE = fileURLToPath(new URL('../../.env.example', import.meta.url))

const START = '<!-- generated from EnvSchema (npm run gen:docs): do not edit by hand -->'
const END = '<!-- end of generated table -->'
const SCOPES_START = '<!-- generated from the scopes and the served document (npm run gen:docs): do ' +
  'not edit by hand -->'
const SCOPES_END = '<!-- end of generated scope table -->'

interface Setting { name: string, defaultValue: string | undefined, description: string }

/** Every setting of EnvSchema in its order, the schema being the one source of truth. */
export function settings (): Setting[] {
  return Object.entries(EnvSchema.properties as Record<string, TSchema>).map(([name, schema]) => {
    const description = schema.description
    if (typeof description !== 'string' || description === '') throw new Error(`EnvSchema.${name} has no description`)
    const value: unknown = schema.default
    return { name, defaultValue: value === undefined ? undefined : String(value), description }
  })
}

function cell (text: string): string {
  return text.replaceAll('|', '\\|')
}

/** One table row: `| NAME | default | description |`. */
export function tableRow ({ name, defaultValue, description }: Setting): string {
  const shown = defaultValue === undefined ? '—' : defaultValue === '' ? '(empty)' : `\`${defaultValue}\``
  return `| \`${name}\` | ${shown} | ${cell(description)} |`
}

export function configurationTable (): string {
  return ['| variable | default | meaning |', '| --- | --- | --- |', ...settings().map(tableRow)].join('\n')
}

type OpenApiPaths = Record<string, Record<string, { operationId?: string, 'x-scopes'?: string[] }>>

/** Each scope, what it grants, and the operations of the served document that need it (HEADs said once). */
export function scopeTable (document: { paths?: unknown }): string {
  const operations = Object.values(document.paths as OpenApiPaths).flatMap((methods) => Object.entries(methods))
  const rows = Object.entries(DEFAULT_SCOPES.descriptions).map(([scope, description]) => {
    const needing = operations.filter(([, operation]) => operation['x-scopes']?.includes(scope) === true)
    const named = needing.filter(([method]) => method !== 'head').map(
      ([, operation]) => `\`${operation.operationId ?? '?'}\``)
    const heads = needing.some(([method]) => method === 'head') ? ' (and their HEADs)' : ''
    return `| \`${scope}\` | ${cell(description)} | ${named.join(', ')}${heads} |`
  })
  return ['| scope | grants | operations |', '| --- | --- | --- |', ...rows].join('\n')
}

/** `page` with what lies between the two marker lines replaced by `content`. */
export function replaceBetween (
  page: string, startMarker: string, endMarker: string, content: string, name = CONFIGURATION_PAGE
): string {
  const start = page.indexOf(startMarker)
  const end = page.indexOf(endMarker)
  if (start === -1 || end < start) throw new Error(`${name} lacks the generated table's markers`)
  return `${page.slice(0, start)}${startMarker}\n${content}\n${page.slice(end)}`
}

/**
 * The configuration page with its generated tables (settings, and scopes from the served document) replaced by the
 * current ones.
 */
export function configurationPage (current: string, document: { paths?: unknown }): string {
  return replaceBetween(replaceBetween(current, START, END, configurationTable()), SCOPES_START, SCOPES_END,
    scopeTable(document))
}

/** Strips the Markdown of a description for a shell comment. */
function plain (text: string): string {
  return text.replaceAll('`', '')
}

/** `.env.example`: every setting, commented out at its default, each with its meaning. */
export function envExample (): string {
  const lines = [
    '# plant-store settings: every variable the service reads, at its default (docs/configuration.md).',
    '# Copy to .env for your supervisor or container runtime; the service itself reads only its environment.',
    ''
  ]
  for (const { name, defaultValue, description } of settings()) {
    lines.push(`# ${plain(description)}`, `# ${name}=${defaultValue ?? ''}`, '')
  }
  return lines.join('\n')
}

export function readConfigurationPage (): string {
  return readFileSync(CONFIGURATION_PAGE, 'utf8')
}
