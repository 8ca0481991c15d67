import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The repository's root, from the compiled build/test/docs/. */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

/** README.md and every page of docs/, as paths relative to the root. */
export function markdownFiles (): string[] {
  return ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md',
    ...readdirSync(`${ROOT}docs`).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)]
}

export function readMarkdown (path: string): string {
  return readFileSync(`${ROOT}${path}`, 'utf8')
}

/** The text with fenced code blocks blanked out (links and headings inside them are not Markdown). */
export function withoutCodeBlocks (text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '')
}

/** The first fenced block under the heading `heading` (e.g. `## Walk-through with curl`). */
export function codeBlockUnder (text: string, heading: string): string {
  const at = text.split('\n').indexOf(heading)
  if (at === -1) throw new Error(`no heading ${JSON.stringify(heading)}`)
  const rest = text.split('\n').slice(at + 1).join('\n')
  const block = /^```[a-z]*\n([\s\S]*?)^```$/m.exec(rest)
  if (block?.[1] === undefined) throw new Error(`no code block under ${JSON.stringify(heading)}`)
  return block[1]
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug (heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-')
}

/** Every anchor a page defines, numbered as GitHub numbers repeated headings (`x`, `x-1`, …). */
export function anchors (text: string): Set<string> {
  const seen = new Map<string, number>()
  const result = new Set<string>()
  for (const match of withoutCodeBlocks(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(match[1] ?? '')
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    result.add(count === 0 ? base : `${base}-${count}`)
  }
  return result
}

/** The targets of every inline link and image outside code: `[text](target)`. */
export function linkTargets (text: string): string[] {
  const prose = withoutCodeBlocks(text).replace(/`[^`\n]*`/g, '')
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1] ?? '')
}
