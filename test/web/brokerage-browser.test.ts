import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { chromiumSkip, launchChromium } from '../helpers/chromium.ts'
import { type FakePlaid, startFakePlaid } from '../helpers/fake-plaid.ts'
import { freePort } from '../helpers/oauth-browser.ts'
import { modelledTickers } from '../helpers/portfolio-math.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * The dashboard's brokerage page in a real Chromium against the real server and a loopback fake
 * Plaid API (test/helpers/fake-plaid.ts, driven by the real Plaid SDK on the server). Plaid Link's
 * script cannot be fetched here, so the browser is answered at its real address
 * (https://cdn.plaid.com/link/v2/stable/link-initialize.js) with a stand-in that implements
 * Link's `Plaid.create({ token, onSuccess, onExit }).open()` contract and hands back a public
 * token the fake API issued; the page's Content-Security-Policy must let that address run. Link,
 * exchange, holdings (charged 0.02 USD), re-link in update mode, unlink, a Link exit, and no
 * console error, page error or CSP violation throughout.
 */

const LINK_SCRIPT = 'https://cdn.plaid.com/link/v2/stable/link-initialize.js'
const SCREENSHOTS = fileURLToPath(new URL('../../test-artifacts/dashboard', import.meta.url))
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
const EMAIL = 'broker@example.com'

/** Plaid Link's contract, answered from `window.__plaidNext` (set by the test before each open). */
const FAKE_LINK = `window.Plaid = {
  create: function (o) {
    window.__plaidTokens = (window.__plaidTokens || []).concat([o.token]);
    return {
      open: function () {
        setTimeout(function () {
          var next = window.__plaidNext || {};
          if (next.exit) o.onExit(next.exit, { status: 'requires_credentials' });
          else o.onSuccess(next.publicToken || 'public-none', { institution: { institution_id: 'ins_115616', name: 'Fake Brokerage' }, accounts: [] });
        }, 10);
      },
      exit: function () {},
      destroy: function () {}
    };
  }
};`

describe('dashboard brokerage page in Chromium', { skip: chromiumSkip ?? false }, () => {
  let t: TestApp
  let fake: FakePlaid
  let browser: Browser
  let page: Page
  let origin: string
  let account: string
  const problems: string[] = []

  before(async () => {
    fake = await startFakePlaid()
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    t = await startTestApp({
      env: {
        PUBLIC_URL: origin,
        PORT: String(port),
        PLAID_CLIENT_ID: fake.clientId,
        PLAID_SECRET: fake.secret,
        PLAID_ENV: 'sandbox',
        PLAID_API_BASE: fake.url,
        ERM3_PLAID_TOKEN_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      },
    })
    const [a, b] = (await modelledTickers(t.ctx.models.store('live'))).slice(0, 2) as [string, string]
    fake.portfolio = [
      { account: 0, ticker: a, type: 'equity', name: `${a} Inc`, quantity: 10, price: 100 },
      { account: 1, ticker: b, type: 'equity', name: `${b} Corp`, quantity: 5, price: 40 },
      { account: 0, ticker: 'CUR:USD', type: 'cash', name: 'U S Dollar', quantity: 250, price: 1 },
    ]
    await t.app.fastify.listen({ port, host: '127.0.0.1' })
    account = await t.account(5, EMAIL)
    browser = await launchChromium()
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } })
    await context.route(LINK_SCRIPT, (r) => r.fulfill({ contentType: 'text/javascript', body: FAKE_LINK }))
    page = await context.newPage()
    page.on('dialog', (d) => void d.accept())
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
    // Failed loads are checked by status below; any other console error is a problem.
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource'))
        problems.push(`console: ${m.text()}`)
    })
    // The expected failures: who is signed in before sign-in, and the holdings of an item to re-link.
    page.on('response', (r) => {
      const path = new URL(r.url()).pathname
      const expected =
        (r.status() === 401 && path === '/auth/session') || (r.status() === 409 && path === '/plaid/holdings')
      if (r.status() >= 400 && !expected) problems.push(`HTTP ${r.status()} ${r.url()}`)
    })
  })
  after(async () => {
    await browser?.close()
    await t?.close()
    await fake?.close()
  })

  const linkTokenCalls = () => fake.requests.filter((r) => r.path === '/link/token/create')

  test('the dashboard allows Plaid Link’s script, frame and API host, and nothing more', async () => {
    const csp = (await fetch(`${origin}/app`)).headers.get('content-security-policy') ?? ''
    assert.match(
      csp,
      /script-src 'self' https:\/\/cdn\.plaid\.com\/link\/v2\/stable\/link-initialize\.js(;|$)/,
    )
    assert.match(csp, /frame-src https:\/\/cdn\.plaid\.com(;|$)/)
    assert.match(csp, /connect-src 'self' https:\/\/sandbox\.plaid\.com(;|$)/)
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/)
  })

  test('sign in, link an account through Link, see it listed', async () => {
    await page.goto(`${origin}/app#/signin`)
    await page.fill('#email', EMAIL)
    await page.click('button[type=submit]')
    await page.getByText('sign-in link is on its way').waitFor()
    const link = t
      .outbox()
      .filter((m) => m.to === EMAIL)
      .pop()
      ?.text.match(/https?:\/\/\S+/)?.[0]
    assert.ok(link)
    await page.goto(link)
    await page.goto(`${origin}/app#/brokerage`)
    await page.getByText('No brokerage account is linked yet.').waitFor()
    assert.equal(await page.isDisabled('#plaid-show-holdings'), true)
    await page.evaluate(`window.__plaidNext = { publicToken: ${JSON.stringify(fake.publicToken())} }`)
    await page.click('#plaid-link')
    await page.getByText('Fake Brokerage is linked.').waitFor()
    await page.locator('#plaid-items td', { hasText: 'connected' }).waitFor()
    const items = await t.ctx.accounts.plaid().listItems(account)
    assert.equal(items.length, 1)
    assert.equal(items[0]?.institutionName, 'Fake Brokerage')
    // Link was opened with the token the server created; the exchange went to Plaid.
    const tokens = (await page.evaluate('window.__plaidTokens')) as string[]
    assert.equal(tokens.length, 1)
    assert.match(tokens[0] as string, /^link-sandbox-/)
    assert.equal(linkTokenCalls().length, 1)
    assert.ok(fake.requests.some((r) => r.path === '/item/public_token/exchange'))
  })

  test('holdings with their risk, charged 0.02 USD like any API call', async () => {
    const before = (await t.ctx.accounts.balance(account)).balanceMicros
    await page.click('#plaid-show-holdings')
    const caption = page.locator('#plaid-holdings caption')
    await caption.waitFor()
    assert.match(
      (await caption.textContent()) ?? '',
      /^Holdings: 2 of 3 positions with risk \(cost 0\.02 USD\)$/,
    )
    assert.equal(await page.locator('#plaid-holdings tbody tr').count(), 3)
    assert.equal((await t.ctx.accounts.balance(account)).balanceMicros, before - 20_000)
    // Accessible as every dashboard page is (axe-core, run through DevTools: the CSP still applies).
    const result = (await page.evaluate(`${AXE}; axe.run(document, { resultTypes: ['violations'] })`)) as {
      violations: { id: string; nodes: { target: string[] }[] }[]
    }
    assert.deepEqual(
      result.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
      [],
    )
    mkdirSync(SCREENSHOTS, { recursive: true })
    await page.screenshot({ path: join(SCREENSHOTS, 'brokerage.png'), fullPage: true })
  })

  test('an item Plaid wants re-linked opens Link in update mode; no exchange follows', async () => {
    const item = [...fake.items.values()][0]
    assert.ok(item)
    item.state = 'login_required'
    await page.click('#plaid-show-holdings')
    await page.locator('#plaid-status [role=alert]').waitFor()
    await page.reload()
    await page.locator('#plaid-items td', { hasText: 'needs re-linking' }).waitFor()
    const exchanges = fake.requests.filter((r) => r.path === '/item/public_token/exchange').length
    await page.getByRole('button', { name: 'Re-link: Fake Brokerage' }).click()
    await page.getByText('Fake Brokerage is re-linked.').waitFor()
    const update = linkTokenCalls().at(-1)
    assert.equal(update?.body.access_token, item.accessToken, 'update mode names the item’s access token')
    assert.equal(fake.requests.filter((r) => r.path === '/item/public_token/exchange').length, exchanges)
  })

  test('Link closed with an error says so; unlink removes the item at Plaid and here', async () => {
    await page.evaluate(`window.__plaidNext = { exit: { error_message: 'the user closed Link' } }`)
    await page.click('#plaid-link')
    await page.locator('#plaid-status [role=alert]', { hasText: 'the user closed Link' }).waitFor()
    await page.getByRole('button', { name: 'Unlink: Fake Brokerage' }).click()
    await page.getByText('Fake Brokerage is unlinked.').waitFor()
    await page.getByText('No brokerage account is linked yet.').waitFor()
    assert.equal(fake.removed.length, 1)
    assert.deepEqual(await t.ctx.accounts.plaid().listItems(account), [])
    assert.deepEqual(
      problems.filter((p) => !p.includes('409')),
      [],
    )
  })
})
