import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { TSchema } from '@sinclair/typebox'
import { EnvSchema } from '../src/load-config.js'

/** Where the generated parts live; `npm run gen:docs` rewrites them, a test checks they are current. */
export const CONFIGURATION_PAGE = fileURLToPath(new URL('../../docs/configuration.md', import.meta.url))
export const ENV_EXAMPLE = fileURLToPath(new URL('../../.env.example', import.meta.url))

const START = '<!-- generated from EnvSchema (npm run gen:docs): do not edit by hand -->'
const END = '<!-- end of generated table -->'

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

/** The configuration page with its generated table replaced by the current one. */
export function configurationPage (current: string): string {
  const start = current.indexOf(START)
  const end = current.indexOf(END)
  if (start === -1 || end < start) throw new Error(`${CONFIGURATION_PAGE} lacks the generated table's markers`)
  return `${current.slice(0, start)}${START}\n${configurationTable()}\n${current.slice(end)}`
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
