import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { signSession } from '../../src/services/identity/session.ts'
import { createDispatcher, type Dispatcher } from '../../src/services/webhooks/dispatcher.ts'
import { chromiumSkip, launchChromium } from '../helpers/chromium.ts'
import { type FakeStripe, startFakeStripe } from '../helpers/fake-stripe.ts'
import { approveWithSession, exchangeCode, freePort, injectRequest } from '../helpers/oauth-browser.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'
import { startReceiver } from '../helpers/webhook-receiver.ts'

/**
 * The dashboard (/app) in a real Chromium against the real server: sign in through the e-mailed
 * link, the explorer draws non-empty charts for a ticker, a pasted portfolio is analysed, each
 * data call is charged like any API call, axe-core finds no violation on any page, and the
 * Content-Security-Policy blocks nothing the app needs. Screenshots go to test-artifacts/dashboard.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const SCREENSHOTS = join(ROOT, 'test-artifacts', 'dashboard')
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
const EMAIL = 'dash@example.com'
const answer = { next: '' }
const STRIPE_WEBHOOK_SECRET = 'whsec_dashboard_test'

describe('dashboard in Chromium', { skip: chromiumSkip ?? false }, () => {
  let t: TestApp
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let origin: string
  let account: string
  let fake: FakeStripe
  let dispatcher: Dispatcher
  const problems: string[] = []

  before(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true })
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    fake = await startFakeStripe()
    t = await startTestApp({
      env: {
        PUBLIC_URL: origin,
        PORT: String(port),
        STRIPE_SECRET_KEY: 'sk_test_dashboard',
        STRIPE_WEBHOOK_SECRET,
        STRIPE_API_BASE: fake.url,
        // The webhook receiver listens on loopback (the development opt-in).
        ERM3_WEBHOOK_ALLOW_LOOPBACK: 'true',
      },
    })
    t.ctx.secrets.webhookKey ??= randomBytes(32).toString('base64url')
    dispatcher = createDispatcher(t.ctx, { random: () => 0.5, timeoutMs: 2000 })
    await t.app.fastify.listen({ port, host: '127.0.0.1' })
    account = await t.account(5, EMAIL)
    browser = await launchChromium()
    context = await browser.newContext({ viewport: { width: 1100, height: 900 } })
    page = await context.newPage()
    // Rename and rotate ask with prompt(), revoke and delete confirm(): answered by `answer`.
    page.on('dialog', (d) => void d.accept(d.type() === 'prompt' ? answer.next : undefined))
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`)
    })
    // The one expected failed load: the signed-out page asking who is signed in.
    page.on('response', (r) => {
      if (r.status() >= 400 && !(r.status() === 401 && new URL(r.url()).pathname === '/auth/session'))
        problems.push(`HTTP ${r.status()} ${r.url()}`)
    })
  })
  after(async () => {
    await browser?.close()
    await dispatcher?.stop()
    await t?.close()
    await fake?.close()
  })

  async function balance(): Promise<number> {
    return (await t.ctx.accounts.balance(account)).balanceMicros
  }

  async function axe(name: string): Promise<void> {
    await axeOn(page, name)
  }

  async function axeOn(on: Page, name: string): Promise<void> {
    // Evaluated through the DevTools protocol: the page's CSP still applies to the page itself.
    const result = (await on.evaluate(`${AXE}; axe.run(document, { resultTypes: ['violations'] })`)) as {
      violations: { id: string; impact: string; nodes: { target: string[] }[] }[]
    }
    const found = result.violations.map(
      (v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
    )
    assert.deepEqual(found, [], `axe violations on ${name}`)
    await on.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true })
  }

  test('the first page: JavaScript ≤ 150 KB gzipped, served with a strict CSP', async () => {
    const res = await fetch(`${origin}/app`)
    assert.equal(res.status, 200)
    const csp = res.headers.get('content-security-policy') ?? ''
    assert.match(csp, /script-src 'self'(;|$)/)
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/)
    assert.match(csp, /frame-ancestors 'none'/)
    const html = await res.text()
    const scripts = [...html.matchAll(/src="(\/app\/assets\/[^"]+\.js)"/g)].map((m) => m[1] as string)
    assert.ok(scripts.length > 0)
    let gz = 0
    for (const s of scripts) {
      const a = await fetch(origin + s)
      assert.equal(a.status, 200)
      assert.match(a.headers.get('cache-control') ?? '', /immutable/)
      gz += gzipSync(Buffer.from(await a.arrayBuffer())).length
    }
    assert.ok(gz <= 150 * 1024, `${gz} bytes gzipped`)
    console.log(`# dashboard first-page JavaScript: ${(gz / 1024).toFixed(1)} KB gzipped`)
    assert.equal((await fetch(`${origin}/app/assets/nope.js`)).status, 404)
  })

  test('sign in through the e-mailed link (session cookie, HttpOnly)', async () => {
    await page.goto(`${origin}/app#/signin`)
    await axe('signin')
    await page.fill('#email', EMAIL)
    await page.click('button[type=submit]')
    await page.getByText('sign-in link is on its way').waitFor()
    const mail = t
      .outbox()
      .filter((m) => m.to === EMAIL)
      .pop()
    const link = mail?.text.match(/https?:\/\/\S+/)?.[0]
    assert.ok(link, 'a sign-in link was mailed')
    await page.goto(link)
    assert.equal(new URL(page.url()).pathname, '/app')
    const cookies = await context.cookies()
    const session = cookies.find((c) => c.name === 'erm3_session')
    assert.ok(session?.httpOnly, 'the session cookie is HttpOnly')
    assert.equal(await page.evaluate(`document.cookie.includes('erm3_session')`), false)
    assert.equal(await page.evaluate('JSON.stringify(localStorage)'), '{}')
    await page.locator('#who', { hasText: EMAIL }).waitFor()
  })

  test('explorer: a ticker draws its decomposition and 15 years of history; the calls are charged', async () => {
    const before = await balance()
    await page.goto(`${origin}/app#/explorer?ticker=MSFT`)
    await page.waitForSelector('#chart-cumulative canvas', { timeout: 30_000 })
    const drawn = (await page.evaluate(`Object.fromEntries(
      [...document.querySelectorAll('[data-points]')].map((e) => [
        e.id,
        { points: Number(e.dataset.points), ms: Number(e.dataset.renderMs ?? 'NaN') },
      ]),
    )`)) as Record<string, { points: number; ms: number }>
    for (const id of ['er-bars', 'chart-er', 'chart-hr', 'chart-cumulative'])
      assert.ok((drawn[id]?.points ?? 0) > 0, `${id} drew data: ${JSON.stringify(drawn[id])}`)
    // Drawn pixels, not an empty canvas: the plot area holds more than one colour.
    const colours = (await page.evaluate(`(() => {
      const c = document.querySelector('#chart-cumulative canvas')
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data
      const seen = new Set()
      for (let i = 0; i < d.length; i += 4 * 97) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2])
      return seen.size
    })()`)) as number
    assert.ok(colours > 3, `${colours} colours on the cumulative-return canvas`)
    console.log(
      `# explorer render ms: ${JSON.stringify(Object.fromEntries(Object.entries(drawn).map(([k, v]) => [k, v.ms])))}`,
    )
    assert.match((await page.textContent('#industry-context')) ?? '', /^Industry context: /)
    // Numbers for people: percentiles to one decimal, ratios to three, signs never doubled, and
    // each ETF once in a hedge basket.
    const hedgeRows = await page
      .locator('table', { hasText: 'Hedge ratios and the hedge basket' })
      .locator('tbody tr')
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')))
    assert.equal(hedgeRows.length, 3)
    for (const cells of hedgeRows) {
      for (const hr of cells.slice(1, 4)) assert.match(hr, /^(−?\d+\.\d{3}|—)$/, hr)
      const basket = cells[5] ?? ''
      assert.doesNotMatch(basket, /[+−-] [-−]|\+ -|--/, basket)
      const etfs = basket.match(/[A-Z]{2,5}/g) ?? []
      assert.equal(new Set(etfs).size, etfs.length, `each ETF once: ${basket}`)
    }
    const percentiles = await page
      .locator('table', { hasText: 'Rankings' })
      .locator('tbody tr td:nth-child(4)')
      .allTextContents()
    assert.ok(percentiles.length > 0)
    for (const p of percentiles) assert.match(p, /^\d{1,3}\.\d$/, p)
    const meta = (await page.textContent('#explorer-out .meta')) ?? ''
    const m = /this view cost ([0-9.]+) USD/.exec(meta)
    assert.ok(m, meta)
    assert.equal(Math.round((before - (await balance())) / 1000), Math.round(Number(m[1]) * 1000))
    await axe('explorer')
  })

  test('explorer: an ETF costs nothing — the reason instead of empty charts', async () => {
    const before = await balance()
    await page.goto(`${origin}/app#/explorer?ticker=SPY`)
    // The status line says "Loading SPY…" first; wait for the answer's reason.
    const status = page.locator('#explorer-out p[role=status]', {
      hasText: /^ETFs carry no factor decomposition/,
    })
    await status.waitFor({ timeout: 30_000 })
    const meta = (await page.textContent('#explorer-out .meta')) ?? ''
    assert.match(meta, /^etf · this view cost 0\.000 USD/)
    assert.equal(await page.locator('#explorer-out canvas').count(), 0)
    assert.equal(await balance(), before)
  })

  test('explorer: metrics without hedge levels and an industry without a beta mean (both allowed by the contract) still draw the page', async () => {
    // erm3's answer as sent, with the two nullable fields null: a stock the model has no market
    // beta for that day, in an industry whose members have no beta.
    const nulled = (path: string, edit: (body: Record<string, unknown>) => void) =>
      page.route(
        (u) => u.origin === origin && u.pathname.startsWith(path),
        async (r) => {
          const res = await r.fetch()
          const body = (await res.json()) as Record<string, unknown>
          edit(body)
          await r.fulfill({ response: res, json: body })
        },
      )
    // A listed stock whose industry has peers, so the industry context reads the panel.
    const symbols = t.ctx.models.store('live').symbols
    const inIndustry = (industry: string | null | undefined) =>
      symbols.filter((x) => x.industry === industry).length
    const peered = symbols
      .filter((x) => x.industry && inIndustry(x.industry) >= 2)
      .flatMap((x) => x.tickers)
      .find((k) => !k.to && k.ticker !== 'MSFT')?.ticker
    assert.ok(peered, 'the test store has an industry with peers')
    await nulled(`/metrics/${peered}`, (b) => {
      b.hedge_levels = null
    })
    await nulled('/industry-panel', (b) => {
      for (const i of b.industries as Record<string, unknown>[]) {
        i.beta_mean = null
        i.beta_variance = null
      }
    })
    const seen = problems.length
    try {
      await page.goto(`${origin}/app#/explorer?ticker=${peered}`)
      await page.getByText(`No hedge ratios for ${peered} as of`).waitFor({ timeout: 30_000 })
      await page.waitForSelector('#chart-cumulative canvas')
      const context = (await page.textContent('#industry-context')) ?? ''
      assert.match(context, /beta averages n\/a \(variance n\/a\)/)
      const captions = await page.locator('#explorer-out caption').allTextContents()
      assert.ok(
        captions.some((c) => c.startsWith('Rankings')),
        captions.join(' | '),
      )
      assert.ok(!captions.some((c) => c.startsWith('Hedge ratios')), captions.join(' | '))
      assert.deepEqual(problems.slice(seen), [])
    } finally {
      await page.unrouteAll()
    }
  })

  test('portfolio: pasted positions → the snapshot as tables and charts, 0.25 USD', async () => {
    const before = await balance()
    await page.goto(`${origin}/app#/portfolio`)
    // A long/short book: JPM short.
    await page.fill('#positions', 'AAPL 40\nMSFT 35\nJPM -25')
    await page.fill('#benchmark', '60:SPY,40:XLK')
    await page.click('#main form button[type=submit]')
    await page.waitForSelector('#chart-drawdown canvas', { timeout: 30_000 })
    const meta = (await page.textContent('#portfolio-out .meta')) ?? ''
    assert.match(meta, /volatility [0-9.]+% a year/)
    assert.match(meta, /tracking error [0-9.]+%/)
    const rows = await page.locator('#positions-table tbody tr').count()
    assert.equal(rows, 3)
    // Exposure of the gross 100: long 75, short −25, net 50, leverage 100 ÷ 50.
    const exposure = await page.locator('#exposure-table tbody tr').allTextContents()
    assert.deepEqual(exposure, [
      'Long75.0% (2 positions)',
      'Short\u221225.0% (1 position)',
      'Net50.0%',
      'Gross100.0%',
      'Leverage (gross ÷ |net|)2.00×',
    ])
    assert.equal(before - (await balance()), 250_000)
    await axe('portfolio')
  })

  test('keys: create (shown once, copy, snippets), use it over HTTP, rename, rotate, revoke', async () => {
    await page.goto(`${origin}/app#/keys`)
    await page.waitForSelector('#create-key')
    await axe('keys')
    await page.fill('#key-name', 'from the browser')
    await page.click('#create-key button[type=submit]')
    const key = ((await page.locator('#new-key').textContent()) ?? '').trim()
    assert.match(key, /^erm_(agent|user)_live_/)
    assert.match((await page.textContent('#key-reveal')) ?? '', /curl -H "Authorization: Bearer erm_/)
    assert.match((await page.textContent('#key-reveal')) ?? '', /"mcpServers"/)
    await axe('keys-created')
    // The key works from outside the browser.
    const r = await fetch(`${origin}/metrics/AAPL`, { headers: { authorization: `Bearer ${key}` } })
    assert.equal(r.status, 200)
    const row = page.locator('#key-list tr', { hasText: 'from the browser' })
    answer.next = 'renamed in the browser'
    await row.getByRole('button', { name: /^Rename/ }).click()
    await page.locator('#key-list tr', { hasText: 'renamed in the browser' }).waitFor()
    answer.next = '0'
    await page
      .locator('#key-list tr', { hasText: 'renamed in the browser' })
      .getByRole('button', { name: /^Rotate/ })
      .click()
    // Polled from here: a function evaluated in the page would be eval, which the CSP forbids.
    for (let i = 0; i < 100 && ((await page.locator('#new-key').textContent()) ?? '').trim() === key; i++)
      await new Promise((r) => setTimeout(r, 50))
    const rotated = ((await page.locator('#new-key').textContent()) ?? '').trim()
    assert.notEqual(rotated, key)
    assert.equal(
      (await fetch(`${origin}/metrics/AAPL`, { headers: { authorization: `Bearer ${key}` } })).status,
      401,
    )
    assert.equal(
      (await fetch(`${origin}/metrics/AAPL`, { headers: { authorization: `Bearer ${rotated}` } })).status,
      200,
    )
    const active = page
      .locator('#key-list tr', { hasText: 'renamed in the browser' })
      .filter({ hasText: 'active' })
    await active.getByRole('button', { name: /^Revoke/ }).click()
    await page.getByText('is revoked').waitFor()
    assert.equal(
      (await fetch(`${origin}/metrics/AAPL`, { headers: { authorization: `Bearer ${rotated}` } })).status,
      401,
    )
  })

  test('keys at 1280 px: the table fits; reloads and pages reuse the session’s one dashboard key', async () => {
    await page.setViewportSize({ width: 1280, height: 900 })
    try {
      const dashboardKeys = async () =>
        (await t.ctx.accounts.listKeys(account)).filter((k) => k.name === 'dashboard (this browser session)')
      await page.goto(`${origin}/app#/explorer?ticker=AAPL`)
      await page.waitForSelector('#chart-cumulative canvas', { timeout: 30_000 })
      const before = await t.ctx.accounts.listKeys(account)
      for (const hash of ['#/explorer?ticker=MSFT', '#/billing', '#/explorer?ticker=AAPL']) {
        await page.goto(`${origin}/app${hash}`)
        await page.reload()
        await page.waitForSelector(hash.startsWith('#/billing') ? '#balance' : '#chart-cumulative canvas', {
          timeout: 30_000,
        })
      }
      const after = await t.ctx.accounts.listKeys(account)
      assert.equal(after.length, before.length, 'no key made by reloading pages')
      assert.equal((await dashboardKeys()).filter((k) => k.revokedAt === null).length, 1)
      await page.goto(`${origin}/app#/keys`)
      await page.reload()
      await page.locator('#key-list tbody tr').first().waitFor()
      const fit = (await page.evaluate(`(() => {
        const t = document.querySelector('#key-list table')
        return { table: t.scrollWidth - t.clientWidth, page: document.documentElement.scrollWidth - window.innerWidth }
      })()`)) as { table: number; page: number }
      assert.ok(fit.table <= 1 && fit.page <= 1, `horizontal overflow at 1280 px: ${JSON.stringify(fit)}`)
      await axe('keys-1280')
    } finally {
      await page.setViewportSize({ width: 1100, height: 900 })
    }
  })

  test('keys: a connected agent (OAuth grant) is listed, revoked with its button, and its tokens stop at once', async () => {
    // The agent's side, in-process: registration, consent as the signed-in user, code exchange.
    let n = 0
    const ip = () => `10.44.0.${++n}`
    const reg = await injectRequest(t.app, 'POST', '/oauth/register', {
      json: { client_name: 'Dashboard test agent', redirect_uris: ['http://127.0.0.1:7777/cb'] },
      ip: ip(),
    })
    const clientId = JSON.parse(reg.body).client_id as string
    const cookie = `erm3_session=${await signSession(t.ctx, { accountId: account, email: EMAIL })}`
    const a = await approveWithSession(t.app, cookie, clientId, 'http://127.0.0.1:7777/cb', ip)
    const tk = await exchangeCode(t.app, clientId, a, ip())
    const { access_token, refresh_token } = JSON.parse(tk.body) as Record<string, string>
    const useToken = () =>
      fetch(`${origin}/balance`, { headers: { authorization: `Bearer ${access_token}` } })
    assert.equal((await useToken()).status, 200)

    // The previous test left the page on #/keys: loaded again, it shows the new grant.
    await page.goto(`${origin}/app#/keys`)
    await page.reload()
    const row = page.locator('#grant-list tr', { hasText: 'Dashboard test agent' })
    await row.waitFor()
    const cells = await row.locator('td').allTextContents()
    assert.equal(cells[1], clientId)
    assert.equal(cells[2], 'http://127.0.0.1:7777/cb')
    assert.equal(cells[6], 'active')
    assert.notEqual(cells[5], '—', 'last used: the call above')
    await page.locator('#activity-list tr', { hasText: 'oauth.approved' }).first().waitFor()
    await axe('keys-agents')
    await row.getByRole('button', { name: 'Revoke Dashboard test agent' }).click()
    await page.getByText('Dashboard test agent can no longer use your account.').waitFor()
    await page.locator('#grant-list', { hasText: 'No agent has access' }).waitFor()
    const refused = await useToken()
    assert.equal(refused.status, 401)
    assert.equal(((await refused.json()) as { code: string }).code, 'REVOKED_KEY')
    const refreshed = await fetch(`${origin}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token, client_id: clientId }),
    })
    assert.equal(refreshed.status, 400)
    await page.locator('#activity-list tr', { hasText: 'oauth.grant_revoked' }).waitFor()
  })

  test('usage: the calls made so far show in the charts and the table', async () => {
    await page.goto(`${origin}/app#/usage`)
    await page.waitForSelector('#chart-requests canvas')
    const totals = (await page.textContent('#usage-totals')) ?? ''
    const calls = Number(/: (\d+) calls/.exec(totals)?.[1])
    assert.ok(calls >= 3, totals)
    assert.ok(Number(await page.locator('#chart-requests').getAttribute('data-points')) > 0)
    assert.ok((await page.locator('table', { hasText: 'Top endpoints' }).textContent())?.includes('metrics'))
    await axe('usage')
  })

  test('billing: top up through (fake) Stripe, spend cap, alert threshold, ledger CSV', async () => {
    await page.goto(`${origin}/app#/billing`)
    await page.waitForSelector('#topup-form')
    assert.equal(await page.textContent('#account-id'), account)
    assert.equal(await page.locator('#topup-form button', { hasText: 'Pay with Stripe' }).count(), 1)
    await axe('billing')
    await page.fill('#topup', '20')
    // Stripe's hosted page is not reachable from here: the browser gets a stand-in for it.
    const offsite = (u: URL) => u.origin !== origin
    await page.route(offsite, (r) =>
      r.fulfill({
        contentType: 'text/html',
        body: '<!doctype html><title>Checkout</title><p>Stripe Checkout</p>',
      }),
    )
    await page.click('#topup-form button[type=submit]')
    // The page leaves for the Checkout URL; the fake then reports the payment to erm3.
    await page.waitForURL((u) => !u.pathname.startsWith('/app'))
    const session = [...fake.sessions.values()].pop()
    assert.ok(session, 'a Checkout Session was created')
    assert.equal(session.metadata?.account_id ?? session.client_reference_id, account)
    const paid = fake.complete(session.id)
    const before = await balance()
    const sent = await fake.send(
      `${origin}/billing/stripe/webhook`,
      fake.event('checkout.session.completed', { ...paid }),
      {
        secret: STRIPE_WEBHOOK_SECRET,
      },
    )
    assert.equal(sent.status, 200)
    assert.equal((await balance()) - before, 20_000_000)
    assert.match(page.url(), /checkout|stripe/i)
    await page.unroute(offsite)
    await page.goto(`${origin}/app#/billing`)
    await page.waitForSelector('#cap-form')
    await page.fill('#cap', '50')
    await page.click('#cap-form button[type=submit]')
    await page.getByText('Cap set to $50.00 a month').waitFor()
    await page.fill('#threshold', '2.5')
    await page.click('#threshold-form button[type=submit]')
    await page.getByText('falls below $2.50').waitFor()
    assert.match((await page.textContent('table')) ?? '', /topup/)
    const csv = await page.evaluate(`fetch('/account/ledger?format=csv').then((r) => r.text())`)
    assert.match(String(csv), /^date,kind,capability/)
  })

  test('billing without Stripe: no card form, the operator’s real command with this account id', async () => {
    // The same page on an instance without Stripe: its /auth/session says so.
    await page.route(
      (u) => u.origin === origin && u.pathname === '/auth/session',
      async (r) => {
        const res = await r.fetch()
        const body = (await res.json()) as { features: Record<string, boolean> }
        body.features = { card_top_ups: false, brokerage: false }
        await r.fulfill({ response: res, json: body })
      },
    )
    try {
      await page.goto(`${origin}/app#/explorer`)
      await page.reload()
      await page.goto(`${origin}/app#/billing`)
      await page.waitForSelector('#operator-topup')
      assert.equal(await page.locator('#topup-form').count(), 0)
      assert.equal(await page.getByText('Pay with Stripe').count(), 0)
      assert.equal(
        (await page.textContent('#operator-topup code'))?.trim(),
        `erm3 topup --account ${account} --usd <amount>`,
      )
      assert.doesNotMatch((await page.textContent('main')) ?? '', /erm3 admin/)
      assert.equal(await page.locator('nav a[href="#/brokerage"]').isVisible(), false)
      await axe('billing-no-stripe')
    } finally {
      await page.unrouteAll()
    }
    await page.reload()
    await page.locator('nav a[href="#/brokerage"]').waitFor({ state: 'hidden' })
  })

  test('webhooks: add a subscription (secret shown once), send a test event, see its delivery', async () => {
    const receiver = await startReceiver()
    try {
      await page.goto(`${origin}/app#/webhooks`)
      await page.waitForSelector('#create-hook')
      await axe('webhooks')
      await page.fill('#hook-url', receiver.url)
      await page.click('#create-hook button[type=submit]')
      assert.match((await page.textContent('#hook-secret')) ?? '', /whsec_/)
      const row = page.locator('#hook-list tr', { hasText: receiver.url })
      await row.getByRole('button', { name: /^Send test/ }).click()
      await page.getByText('A test event is queued').waitFor()
      while ((await dispatcher.runOnce()) > 0) {}
      assert.ok(receiver.received.some((r) => r.headers['x-erm3-event'] !== undefined))
      await row.getByRole('button', { name: /^Log/ }).click()
      await page.locator('#hook-log td', { hasText: 'delivered' }).first().waitFor()
      await axe('webhooks-log')
    } finally {
      await receiver.close()
    }
  })

  test('phone width: navigation and forms stay usable; nothing the CSP blocked', async () => {
    await page.setViewportSize({ width: 375, height: 800 })
    const keys = async () => (await t.ctx.accounts.listKeys(account)).length
    const before = await keys()
    await page.goto(`${origin}/app#/portfolio`)
    await page.reload()
    await page.waitForSelector('#positions')
    assert.equal(await keys(), before, 'opening a page makes no key: it waits for the first data call')
    await page.goto(`${origin}/app#/explorer`)
    await page.waitForSelector('#ticker')
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth')
    assert.ok(overflow <= 1, `horizontal overflow ${overflow}px`)
    // Keyboard: the skip link is the first focusable element and is on screen when focused.
    const first = await page.evaluate(
      `document.querySelector('a[href], button, input, select, textarea')?.textContent`,
    )
    assert.equal(first, 'Skip to content')
    await page.focus('.skip')
    const box = await page.locator('.skip').boundingBox()
    assert.ok(box && box.x >= 0 && box.y >= 0, 'the focused skip link is on screen')
    await page.focus('#ticker')
    assert.equal(await page.evaluate('document.activeElement?.id'), 'ticker')
    await axe('explorer-phone')
    await page.setViewportSize({ width: 1100, height: 900 })
    assert.deepEqual(
      // The signed-out first page asks /auth/session and gets the 401 it expects.
      // Failed loads are judged by their responses above (the console repeats them without a URL).
      problems.filter((p) => !/Failed to load resource/.test(p)),
      [],
    )
  })

  test('sign out: cookies cleared, the explorer key revoked, the pages ask to sign in again', async () => {
    // A data call on this page provisions its explorer key; sign-out revokes it.
    await page.goto(`${origin}/app#/explorer?ticker=AAPL`)
    await page.waitForSelector('#chart-cumulative canvas', { timeout: 30_000 })
    await page.locator('#who', { hasText: EMAIL }).waitFor()
    const keysBefore = (await t.ctx.accounts.listKeys(account)).filter((k) => k.revokedAt === null).length
    const cookie = (await context.cookies()).find((c) => c.name === 'erm3_session')?.value
    assert.ok(cookie)
    await page.click('#sign-out')
    await page.locator('#who a', { hasText: 'Sign in' }).waitFor()
    const names = (await context.cookies()).map((c) => c.name)
    assert.ok(!names.includes('erm3_session') && !names.includes('erm3_csrf'), names.join(','))
    // The session ended on the server: a copy of the cookie kept from before is refused.
    const replay = await fetch(`${origin}/auth/session`, { headers: { cookie: `erm3_session=${cookie}` } })
    assert.equal(replay.status, 401)
    assert.equal(((await replay.json()) as { code: string }).code, 'REVOKED_KEY')
    const keysAfter = (await t.ctx.accounts.listKeys(account)).filter((k) => k.revokedAt === null).length
    assert.equal(keysAfter, keysBefore - 1, 'the session’s dashboard key is revoked')
    // Dashboard keys expire with their session (12 hours from sign-in) even when nobody signs out.
    const dashboard = (await t.ctx.accounts.listKeys(account)).filter(
      (k) => k.name === 'dashboard (this browser session)',
    )
    assert.ok(
      dashboard.length > 0 &&
        dashboard.every(
          (k) =>
            k.expiresAt !== null &&
            k.expiresAt - k.createdAt <= 12 * 3600_000 &&
            k.expiresAt - k.createdAt > 11 * 3600_000,
        ),
      JSON.stringify(dashboard),
    )
    await page.goto(`${origin}/app#/keys`)
    await page.waitForURL(/#\/signin/)
  })

  /** Asks for a sign-in link on this page's sign-in form; the link mailed. */
  async function askForLink(): Promise<string> {
    const before = t.outbox().filter((m) => m.to === EMAIL).length
    await page.goto(`${origin}/app#/signin`)
    await page.fill('#email', EMAIL)
    await page.click('button[type=submit]')
    await page.getByText('sign-in link is on its way').waitFor()
    const mail = t.outbox().filter((m) => m.to === EMAIL)
    assert.equal(mail.length, before + 1)
    const link = mail.at(-1)?.text.match(/https?:\/\/\S+/)?.[0]
    assert.ok(link)
    return link
  }

  test('a link opened in another browser asks to confirm; sign out everywhere ends both browsers’ sessions', async () => {
    // Asked for here, opened on "the phone" (another browser profile): it names the account first.
    const link = await askForLink()
    const phone = await browser.newContext()
    const phonePage = await phone.newPage()
    await phonePage.goto(link)
    await phonePage.getByRole('heading', { name: `Sign in as ${EMAIL}?` }).waitFor()
    assert.ok(!(await phone.cookies()).some((c) => c.name === 'erm3_session'), 'not signed in by opening it')
    await axeOn(phonePage, 'signin-confirm')
    await phonePage.getByRole('button', { name: `Sign in as ${EMAIL}` }).click()
    await phonePage.waitForURL(/\/app#\/explorer$/)
    await phonePage.locator('#who', { hasText: EMAIL }).waitFor()
    // Signed in here again (the browser that asks follows its link directly), then everywhere out.
    await page.goto(await askForLink())
    assert.equal(new URL(page.url()).pathname, '/app')
    await page.locator('#sign-out-everywhere').waitFor()
    await axe('signed-in-controls')
    await page.click('#sign-out-everywhere')
    await page.locator('#who a', { hasText: 'Sign in' }).waitFor()
    // The phone's session ended too: its next page asks to sign in.
    await phonePage.goto(`${origin}/app#/keys`)
    await phonePage.waitForURL(/#\/signin/)
    await phone.close()
    const audit = await t.ctx.accounts.selfService().audit(account, { from: 0, to: Date.now() + 1, limit: 1 })
    assert.equal(audit[0]?.action, 'session.signed_out_everywhere')
  })
})
