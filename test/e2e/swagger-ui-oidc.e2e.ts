import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUDIENCE, signingKey, startProvider } from '../helpers/oidc-provider.js'
import { launchChromium, screenshot } from '../helpers/chromium.js'
import { startServer } from '../helpers/server-process.js'

test('Swagger UI with OIDC_ISSUER: Authorize gets a client-credentials token from the provider, and "Try it out" ' +
  'lists plants with it (200)', { timeout: 120_000 }, async (t) => {
  const provider = await startProvider([await signingKey('e2e-key')])
  t.after(provider.stop)
  const server = await startServer(t,
    { env: { API_TOKENS: undefined, OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: AUDIENCE } })
  const origins = new Set([new URL(server.baseUrl).origin, provider.issuer])

  const { page, requested } = await launchChromium(t, origins)
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

  // GET /plants with "Try it out": 200. The service has no opaque token the page knows (API_TOKENS unset: a generated
  // one), so the JWT did it.
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
