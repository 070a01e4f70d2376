import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { chromiumSkip, launchChromium } from '../helpers/chromium.ts'
import { freePort } from '../helpers/oauth-browser.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

// The landing page and the API reference in a real Chromium: everything they load comes from
// erm3 on 127.0.0.1 (no CDN, no telemetry), the Content-Security-Policy blocks nothing they need,
// and the reference renders the operations of /openapi.json.
describe('landing page and API reference in Chromium', { skip: chromiumSkip ?? false }, () => {
  let t: TestApp
  let browser: Browser
  let origin: string
  before(async () => {
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    t = await startTestApp({ env: { PUBLIC_URL: origin, PORT: String(port) } })
    await t.app.fastify.listen({ port, host: '127.0.0.1' })
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await t?.close()
  })

  /** Opens `path`, recording every request and every CSP violation or page error. */
  async function open(path: string): Promise<{ page: Page; requests: string[]; problems: string[] }> {
    const context = await browser.newContext()
    const page = await context.newPage()
    const requests: string[] = []
    const problems: string[] = []
    page.on('request', (r) => requests.push(r.url()))
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
    // A failed load is judged by its response below (the browser's own /favicon.ico may 404).
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource'))
        problems.push(`console: ${m.text()}`)
    })
    page.on('response', (r) => {
      if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) problems.push(`${r.status()} ${r.url()}`)
    })
    // Page code as a string: the tests are typed without the DOM library.
    await page.addInitScript(
      "document.addEventListener('securitypolicyviolation', (e) => console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI))",
    )
    const r = await page.goto(new URL(path, origin).href, { waitUntil: 'networkidle' })
    assert.equal(r?.status(), 200)
    return { page, requests, problems }
  }

  const local = (requests: string[]) =>
    requests.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith('data:'))

  test('/ renders: synthetic data notice, data_as_of, links; nothing loaded from elsewhere', async () => {
    const { page, requests, problems } = await open('/')
    assert.match(await page.title(), /^erm3/)
    const notice = await page.locator('#dataset').innerText()
    assert.match(notice, /Synthetic data — data as of 2021-12-31/)
    assert.match(notice, /SYNTHETIC data/)
    assert.deepEqual(local(requests), [])
    assert.deepEqual(problems, [])
    // The way to the dashboard.
    assert.equal(await page.locator('#dashboard a[href="/app"]').innerText(), 'Open the dashboard')
    await page.click('a[href="/docs/api"]')
    await page.waitForSelector('.opblock', { timeout: 20_000 })
    await page.context().close()
  })

  test('/docs/api renders every operation of /openapi.json from files erm3 serves', async () => {
    const { page, requests, problems } = await open('/docs/api')
    await page.waitForSelector('.opblock', { timeout: 20_000 })
    const doc = JSON.parse((await t.app.fastify.inject({ method: 'GET', url: '/openapi.json' })).body) as {
      paths: Record<string, Record<string, unknown>>
      webhooks?: Record<string, Record<string, unknown>>
    }
    // The OpenAPI 3.1 `webhooks` (what erm3 POSTs to subscribers) are shown as operations too.
    const expected = [...Object.entries(doc.paths), ...Object.entries(doc.webhooks ?? {})].flatMap(
      ([p, ms]) => Object.keys(ms).map((m) => `${m.toUpperCase()} ${p}`),
    )
    assert.ok(Object.keys(doc.webhooks ?? {}).includes('key.created'), 'the webhooks are documented')
    const shown = await page.$$eval('.opblock-summary', (els) =>
      els.map((e) => {
        const method = e.querySelector('.opblock-summary-method')?.textContent ?? ''
        const path = e.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? ''
        return `${method.trim()} ${path}`
      }),
    )
    const missing = expected.filter((x) => !shown.includes(x))
    const extra = shown.filter((x) => !expected.includes(x))
    assert.deepEqual({ missing, extra }, { missing: [], extra: [] })
    // An operation with two tags is shown under each.
    assert.equal(new Set(shown).size, expected.length)
    assert.ok(shown.includes('GET /metrics/{ticker}'))
    assert.ok(requests.includes(`${origin}/openapi.json`), 'the reference reads /openapi.json')
    assert.deepEqual(local(requests), [], 'every request stays on 127.0.0.1')
    assert.deepEqual(problems, [])
    await page.context().close()
  })
})
