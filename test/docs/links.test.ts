import assert from 'node:assert/strict'
import { existsSync, statSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { test } from 'node:test'
import { anchors, linkTargets, markdownFiles, readMarkdown, ROOT, slug } from './markdown.js'

test('every relative link and #anchor in README.md and docs/*.md resolves', () => {
  const broken: string[] = []
  for (const file of markdownFiles()) {
    for (const target of linkTargets(readMarkdown(file))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // http:, https:, mailto: are not ours to check
      const [path = '', anchor] = target.split('#')
      const resolved = path === '' ? file : normalize(join(dirname(file), path))
      if (!existsSync(join(ROOT, resolved))) {
        broken.push(`${file}: ${target} (no ${resolved})`)
        continue
      }
      if (anchor === undefined) continue
      if (!resolved.endsWith('.md') || statSync(join(ROOT, resolved)).isDirectory()) {
        broken.push(`${file}: ${target} (an anchor into a file that is not Markdown)`)
      } else if (!anchors(readMarkdown(resolved)).has(anchor)) {
        broken.push(`${file}: ${target} (no heading #${anchor} in ${resolved})`)
      }
    }
  }
  assert.deepEqual(broken, [])
})

test('the link checker itself: GitHub anchors, repeated headings, links outside code only', () => {
  assert.equal(slug('What each status means'), 'what-each-status-means')
  assert.equal(slug('Logs and request ids'), 'logs-and-request-ids')
  assert.equal(slug('`GET /health`, and `/health/ready`'), 'get-health-and-healthready')
  assert.deepEqual([...anchors('# A\n## B\n```\n# not a heading\n```\n## B\n')], ['a', 'b', 'b-1'])
  assert.deepEqual(linkTargets('[a](x.md) `[b](y.md)`\n```\n[c](z.md)\n```\n[d](w.md#e)'), ['x.md', 'w.md#e'])
})
