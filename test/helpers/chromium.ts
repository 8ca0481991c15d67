import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import type { Cleanup } from './cleanup.js'

// The e2e tests run with `npm run test:e2e` (needs Debian's Chromium: `apt-get install chromium`).
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const SCREENSHOTS = fileURLToPath(new URL('../../../test-results/e2e/', import.meta.url))

export async function screenshot (page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true })
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true })
}

/**
 * Headless Chromium in a fresh profile, closed when the test ends. Every request its pages make is
 * recorded in `requested`; one to an origin outside `origins` is refused, so the page loads nothing
 * from elsewhere (and the machine's closed network is never tried).
 */
export async function launchChromium (t: Cleanup,
  origins: ReadonlySet<string>): Promise<{ browser: BrowserContext, page: Page, requested: string[] }> {
  const userDataDir = mkdtempSync(join(tmpdir(), 'plant-store-chromium-'))
  const browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic',
      '--no-first-run', '--disable-component-update', '--disable-sync'
    ]
  })
  t.after(async () => {
    await browser.close()
    rmSync(userDataDir, { recursive: true, force: true })
  })
  const requested: string[] = []
  await browser.route('**/*', async (route) => {
    const url = route.request().url()
    requested.push(url)
    if (origins.has(new URL(url).origin)) await route.continue()
    else await route.abort('blockedbyclient')
  })
  return { browser, page: browser.pages()[0] ?? await browser.newPage(), requested }
}
