import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Locator } from 'playwright-core'
import { TOKEN } from '../helpers/app.js'
import { launchChromium, screenshot } from '../helpers/chromium.js'
import { startServer } from '../helpers/server-process.js'

/** Swagger UI starts in "Try it out" mode here (tryItOutEnabled); switch it on if it is not. */
async function tryItOut (operation: Locator): Promise<void> {
  const button = operation.locator('button.try-out__btn')
  if ((await button.textContent())?.trim() === 'Try it out') await button.click()
}

test('Swagger UI: the webhooks section shows the three events; authorize, create and delete a plant with "Try it ' +
  'out" (201, 204), then 401 without a token', { timeout: 120_000 }, async (t) => {
  const server = await startServer(t)
  const origin = new URL(server.baseUrl).origin

  const { page, requested } = await launchChromium(t, new Set([origin]))
  await page.goto(`${server.baseUrl}/docs`)
  const deleteOp = page.locator('#operations-plants-deletePlant')
  await deleteOp.waitFor()
  await screenshot(page, '01-docs')

  // The OpenAPI 3.1 webhooks section: the three events, each with its signed headers and body.
  await page.locator('h2', { hasText: /^Webhooks$/ }).waitFor()
  for (const event of ['plantCreatedEvent', 'plantUpdatedEvent', 'plantDeletedEvent']) {
    await page.locator(`#operations-webhooks-${event}`).waitFor()
  }
  const createdEvent = page.locator('#operations-webhooks-plantCreatedEvent')
  await createdEvent.locator('.opblock-summary').click()
  for (const header of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    await createdEvent.locator('.parameters .parameter__name', { hasText: header }).waitFor()
  }
  await createdEvent.locator('.opblock-section-request-body').waitFor()
  await screenshot(page, '01b-webhooks-section')
  await createdEvent.locator('.opblock-summary').click()

  // Authorize with the bearer token.
  await page.locator('.auth-wrapper button.authorize').click()
  const dialog = page.locator('.dialog-ux .modal-ux')
  await dialog.locator('input').fill(TOKEN)
  await dialog.locator('.auth-btn-wrapper button.authorize').click()
  await dialog.locator('.auth-btn-wrapper button', { hasText: 'Logout' }).waitFor()
  await screenshot(page, '02-authorized')
  await dialog.locator('button.btn-done').click()

  // POST /plants with "Try it out": 201 with the new plant.
  const createOp = page.locator('#operations-plants-createPlant')
  await createOp.locator('.opblock-summary').click()
  await tryItOut(createOp)
  await createOp.locator('textarea.body-param__text').fill(
    JSON.stringify({ name: 'Fern from the browser', tag: 'e2e' }))
  await createOp.locator('button.execute').click()
  const created = createOp.locator('.live-responses-table .response .response-col_status')
  await created.waitFor()
  assert.equal((await created.textContent())?.trim(), '201')
  const plant = JSON.parse(
    await createOp.locator('.live-responses-table .response-col_description pre').first().textContent() ??
      '') as Record<string, unknown>
  assert.equal(plant.name, 'Fern from the browser')
  assert.equal(plant.tag, 'e2e')
  assert.equal(typeof plant.id, 'number')
  const id = String(plant.id)
  await screenshot(page, '03-created-201')

  // DELETE /plants/{id} with "Try it out": 204.
  await deleteOp.locator('.opblock-summary').click()
  await tryItOut(deleteOp)
  await deleteOp.locator('.parameters input[placeholder="id"]').fill(id)
  await deleteOp.locator('button.execute').click()
  const status = deleteOp.locator('.live-responses-table .response .response-col_status')
  await status.waitFor()
  assert.equal((await status.textContent())?.trim(), '204')
  await screenshot(page, '04-deleted-204')

  // Log out, try again: 401 in the Error shape.
  await page.locator('.auth-wrapper button.authorize').click()
  await dialog.locator('.auth-btn-wrapper button', { hasText: 'Logout' }).click()
  await dialog.locator('button.btn-done').click()
  await deleteOp.locator('button.execute').click()
  await deleteOp.locator('.live-responses-table .response .response-col_status', { hasText: '401' }).waitFor()
  const body = JSON.parse(
    await deleteOp.locator('.live-responses-table .response-col_description pre').first().textContent() ??
      '') as unknown
  // Exactly what the service answers a client without a token.
  const direct = await fetch(`${server.baseUrl}/plants/${id}`, { method: 'DELETE' })
  assert.equal(direct.status, 401)
  assert.deepEqual(body, await direct.json())
  assert.deepEqual(Object.keys(body as object), ['error', 'message'])
  await screenshot(page, '05-unauthorized-401')

  // Swagger UI's own assets and the document came from the service; nothing came from elsewhere.
  assert.ok(requested.includes(`${origin}/docs/static/swagger-ui-bundle.js`), requested.join('\n'))
  assert.ok(requested.includes(`${origin}/docs/json`), requested.join('\n'))
  assert.deepEqual(requested.filter((url) => new URL(url).origin !== origin), [])
})
