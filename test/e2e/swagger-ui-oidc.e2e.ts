import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { chromium, type Page } from 'playwright-core'
import { AUDIENCE, signingKey, startProvider } from '../helpers/oidc-provider.js'
import { startServer } from '../helpers/server-process.js'

// Run with `npm run test:e2e` (needs Debian's Chromium: `apt-get install chromium`).
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const SCREENSHOTS = fileURLToPath(new URL('../../../test-results/e2e/', import.meta.url))

async function screenshot (page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true })
}

test('Swagger UI with OIDC_ISSUER: Authorize gets a client-credentials token from the provider, and "Try it out" lists plants with it (200)', { timeout: 120_000 }, async (t) => {
  const provider = await startProvider([await signingKey('e2e-key')])
  t.after(provider.stop)
  const server = await startServer(t, { env: { API_TOKENS: undefined, OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: AUDIENCE } })
  const origins = new Set([new URL(server.baseUrl).origin, provider.issuer])
  mkdirSync(SCREENSHOTS, { recursive: true })

  const userDataDir = mkdtempSync(join(tmpdir(), 'plant-store-chromium-'))
  const browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync']
  })
  t.after(async () => {
    await browser.close()
    rmSync(userDataDir, { recursive: true, force: true })
  })
  // The page may reach the service and the provider, nothing else.
  const requested: string[] = []
  await browser.route('**/*', async (route) => {
    const url = route.request().url()
    requested.push(url)
    if (origins.has(new URL(url).origin)) await route.continue()
    else await route.abort('blockedbyclient')
  })

  const page = browser.pages()[0] ?? await browser.newPage()
  await page.goto(`${server.baseUrl}/docs`)
  const listOp = page.locator('#operations-plants-listPlants')
  await listOp.waitFor()

  // Authorize: the openIdConnect scheme, client credentials, the reader client and its scope.
  await page.locator('.auth-wrapper button.authorize').click()
  const dialog = page.locator('.dialog-ux .modal-ux')
  // Swagger UI offers one flow per grant type the discovery document lists.
  const oidc = dialog.locator('.auth-container').filter({ hasText: 'openIdConnect (OAuth2, client_credentials)' })
  await oidc.waitFor()
  await oidc.locator('input').nth(0).fill('reader')
  await oidc.locator('input').nth(1).fill('reader-secret')
  await oidc.locator('label', { hasText: 'plants:read' }).first().click()
  await screenshot(page, 'oidc-01-authorize')
  await oidc.locator('button.authorize').click()
  await oidc.locator('button', { hasText: 'Logout' }).waitFor()
  await screenshot(page, 'oidc-02-authorized')
  await dialog.locator('button.btn-done').first().click()

  // GET /plants with "Try it out": 200. The service has no opaque token the page knows (API_TOKENS unset: a generated one), so the JWT did it.
  await listOp.locator('.opblock-summary').click()
  const tryOut = listOp.locator('button.try-out__btn')
  if ((await tryOut.textContent())?.trim() === 'Try it out') await tryOut.click()
  await listOp.locator('button.execute').click()
  const status = listOp.locator('.live-responses-table .response .response-col_status')
  await status.waitFor()
  await screenshot(page, 'oidc-03-listed-200')
  assert.equal((await status.textContent())?.trim(), '200')
  assert.ok(requested.includes(`${provider.issuer}/token`), requested.join('\n'))
})
