/**
 * `GET /balance` on a real 127.0.0.1 listener, each backend pair: the bytes and headers it
 * answers (pinned: agents poll it, and a change here is a change of the interface), its refusals,
 * one rate token and one concurrency slot per request, and a balance that shows this process's own
 * writes at once. docs/decisions/fast-balance.md says why one path answers it.
 */
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, before, describe, it } from 'node:test'
import { API_VERSION } from '../../src/contract/openapi.ts'
import { hashKey } from '../../src/services/identity/keys.ts'
import { KEY_RULES, MAX_CONCURRENT } from '../../src/services/limits.ts'
import { assertSlotsFree } from '../helpers/slots.ts'
import { BACKEND_PAIRS, startTestApp, type TestApp } from '../helpers/test-app.ts'

interface Raw {
  status: number
  headers: [string, string][]
  body: string
}

function get(
  origin: string,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(`${origin}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const pairs: [string, string][] = []
        for (let i = 0; i < res.rawHeaders.length; i += 2)
          pairs.push([(res.rawHeaders[i] as string).toLowerCase(), res.rawHeaders[i + 1] as string])
        resolve({ status: res.statusCode ?? 0, headers: pairs, body: Buffer.concat(chunks).toString('utf8') })
      })
    })
    req.on('error', reject)
    req.end()
  })
}

/** /metrics-prom is off without METRICS_TOKEN. */
const SCRAPE_TOKEN = 'balance-test-metrics-token'

const header = (r: Raw, name: string) => r.headers.find(([k]) => k === name)?.[1]

/** The response headers of a 200, in the order they are sent (Date, Connection, Keep-Alive: Node's). */
const HEADERS_200 = [
  'x-request-id',
  'x-api-version',
  'x-environment',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'content-type',
  'content-length',
  'date',
  'connection',
  'keep-alive',
]

for (const pair of BACKEND_PAIRS) {
  describe(`GET /balance: ${pair.name}`, { skip: pair.skip ?? false }, () => {
    let t: TestApp
    let origin: string
    before(async () => {
      t = await startTestApp({ db: pair.db, limits: pair.limits, env: { METRICS_TOKEN: SCRAPE_TOKEN } })
      origin = await t.listen()
    })
    after(async () => {
      await t?.close()
    })

    const getBalanceCount = async (status: number) => {
      const text = (
        await t.app.fastify.inject({
          method: 'GET',
          url: '/metrics-prom',
          headers: { authorization: `Bearer ${SCRAPE_TOKEN}` },
        })
      ).body
      const re = new RegExp(
        `^erm3_http_requests_total\\{operation="getBalance",status="${status}"\\} (\\d+)$`,
        'm',
      )
      return Number(re.exec(text)?.[1] ?? 0)
    }

    it('answers these bytes and headers, in this order, for live and test keys', async () => {
      const account = await t.account(12.5)
      const rule = KEY_RULES.default
      const limits = { requests_per_minute: rule.limit, burst: rule.burst, max_concurrent: MAX_CONCURRENT }
      for (const env of ['live', 'test'] as const) {
        const key = await t.key(account, { env })
        const served = await getBalanceCount(200)
        const r = await get(origin, '/balance', { Authorization: `Bearer ${key}` })
        assert.equal(r.status, 200)
        const body =
          env === 'live'
            ? {
                account_id: account,
                balance_usd: 12.5,
                currency: 'USD',
                environment: 'live',
                status: { can_make_requests: true, billing: 'prepaid' },
                limits,
              }
            : {
                account_id: account,
                balance_usd: 12.5,
                currency: 'USD',
                environment: 'test',
                status: { can_make_requests: true, billing: 'sandbox' },
                limits,
              }
        assert.equal(r.body, JSON.stringify(body), 'the same bytes')
        assert.deepEqual(
          r.headers.map(([k]) => k),
          HEADERS_200,
          'the same headers in the same order',
        )
        assert.match(header(r, 'x-request-id') as string, /^req_[A-Za-z0-9]+$/)
        assert.equal(header(r, 'x-api-version'), API_VERSION)
        assert.equal(header(r, 'x-environment'), env)
        assert.equal(header(r, 'x-ratelimit-limit'), String(rule.limit))
        assert.equal(header(r, 'x-ratelimit-remaining'), String(rule.burst - 1), 'one token taken')
        assert.match(header(r, 'x-ratelimit-reset') as string, /^\d+$/)
        assert.equal(header(r, 'content-type'), 'application/json; charset=utf-8')
        assert.equal(header(r, 'content-length'), String(Buffer.byteLength(r.body)))
        assert.equal(header(r, 'connection'), 'keep-alive')
        assert.equal(await getBalanceCount(200), served + 1, 'counted in erm3_http_requests_total')
      }
    })

    it('X-Request-ID is erm3’s own; a sane client id comes back as X-Correlation-ID', async () => {
      const key = await t.key(await t.account(1))
      const ok = await get(origin, '/balance', {
        Authorization: `Bearer ${key}`,
        'X-Request-ID': 'trace-42.a:b',
      })
      assert.equal(ok.status, 200)
      assert.match(header(ok, 'x-request-id') as string, /^req_[A-Za-z0-9]+$/)
      assert.equal(header(ok, 'x-correlation-id'), 'trace-42.a:b')
      assert.deepEqual(
        ok.headers.map(([k]) => k),
        ['x-request-id', 'x-correlation-id', ...HEADERS_200.slice(1)],
        'the correlation id follows the request id',
      )
      const bad = await get(origin, '/balance', {
        Authorization: `Bearer ${key}`,
        'X-Request-ID': 'no spaces!',
      })
      assert.match(header(bad, 'x-request-id') as string, /^req_/)
      assert.equal(header(bad, 'x-correlation-id'), undefined)
    })

    it('refuses missing, unknown and non-bearer credentials with a 401 problem; a double space is accepted', async () => {
      const key = await t.key(await t.account(1))
      const cases: [Record<string, string>, number, string | null][] = [
        [{}, 401, 'MISSING_CREDENTIALS'],
        [{ Authorization: 'Bearer erm_agent_live_not-a-real-key_0000' }, 401, 'INVALID_KEY'],
        [{ Authorization: 'Basic dXNlcjpwYXNz' }, 401, 'INVALID_KEY'],
        [{ Authorization: `Bearer  ${key}` }, 200, null],
      ]
      for (const [h, status, code] of cases) {
        const r = await get(origin, '/balance', h)
        assert.equal(r.status, status, JSON.stringify(h))
        if (code === null) continue
        assert.match(header(r, 'content-type') as string, /^application\/problem\+json/)
        assert.equal(JSON.parse(r.body).code, code, JSON.stringify(h))
        assert.match(header(r, 'x-ratelimit-limit') as string, /^\d+$/, 'limited by its address')
      }
    })

    it('HEAD and a trailing slash are answered; POST is 405', async () => {
      const auth = { Authorization: `Bearer ${await t.key(await t.account(1))}` }
      const head = await get(origin, '/balance', auth, 'HEAD')
      assert.equal(head.status, 200)
      assert.equal(head.body, '')
      assert.equal((await get(origin, '/balance', auth, 'POST')).status, 405)
      assert.equal((await get(origin, '/balance/', auth)).status, 200)
    })

    it('takes one rate token per request: a key gets its burst, then 429 RATE_LIMITED', async () => {
      const key = await t.key(await t.account(1))
      const auth = { Authorization: `Bearer ${key}` }
      const burst = KEY_RULES.default.burst
      // Five at a time: below the key's concurrency cap, so only the rate limit refuses.
      const rs: Raw[] = []
      const t0 = Date.now()
      await Promise.all(
        Array.from({ length: 5 }, async () => {
          while (rs.length < burst + 20) rs.push(await get(origin, '/balance', auth))
        }),
      )
      const ok = rs.filter((r) => r.status === 200).length
      // One token a second refills while the burst is spent: the burst, and one more a second.
      const refilled = Math.ceil(((Date.now() - t0) / KEY_RULES.default.periodMs) * KEY_RULES.default.limit)
      assert.ok(
        ok >= burst && ok <= burst + refilled + 1,
        `${ok} answered of ${burst + 20} (burst ${burst}, ${refilled} refilled)`,
      )
      const limited = rs.find((r) => r.status === 429) as Raw
      assert.equal(JSON.parse(limited.body).code, 'RATE_LIMITED')
      assert.equal(header(limited, 'x-ratelimit-remaining'), '0')
      assert.ok(header(limited, 'retry-after'))
      // A refused request holds no slot afterwards (one taken beside its refused token went back).
      const record = await t.ctx.accounts.findKeyByHash(hashKey(t.ctx.secrets.pepper, key))
      assert.ok(record)
      await assertSlotsFree(t, record.id, MAX_CONCURRENT, 'after the refusals')
    })

    it('a key at its concurrency cap gets 429 CONCURRENCY_LIMITED, taking one token; slots come back', async () => {
      const key = await t.key(await t.account(1))
      const auth = { Authorization: `Bearer ${key}` }
      const first = await get(origin, '/balance', auth)
      const remaining0 = Number(header(first, 'x-ratelimit-remaining'))
      const record = await t.ctx.accounts.findKeyByHash(hashKey(t.ctx.secrets.pepper, key))
      assert.ok(record)
      const slot = () =>
        t.ctx.limits.concurrency.acquire(`key:${record.id}`, MAX_CONCURRENT, 60_000, t.ctx.now())
      // Hold every slot of the key, as ten slow requests would.
      const held: string[] = []
      for (let i = 0; i < MAX_CONCURRENT; i++) {
        const d = await slot()
        assert.ok(d.ok && d.leaseId)
        held.push(d.leaseId)
      }
      const refused = await get(origin, '/balance', auth)
      assert.equal(refused.status, 429)
      assert.equal(JSON.parse(refused.body).code, 'CONCURRENCY_LIMITED')
      assert.equal(Number(header(refused, 'x-ratelimit-remaining')), remaining0 - 1, 'one token for it')
      for (const l of held) await t.ctx.limits.concurrency.release(`key:${record.id}`, l)
      // Each answered request gives its slot back: the cap is free again afterwards.
      for (let i = 0; i < 15; i++) assert.equal((await get(origin, '/balance', auth)).status, 200)
      await assertSlotsFree(t, record.id, MAX_CONCURRENT)
    })

    it('shows a write made through this process at once', async () => {
      const account = await t.account(3)
      const auth = { Authorization: `Bearer ${await t.key(account)}` }
      const balance = async () => {
        const r = await get(origin, '/balance', auth)
        assert.equal(r.status, 200)
        return JSON.parse(r.body).balance_usd
      }
      assert.equal(await balance(), 3)
      assert.equal(await balance(), 3, 'again, within the snapshot’s age')
      await t.ctx.accounts.credit(
        account,
        { kind: 'credit', amountMicros: 2_000_000, reference: 'balance-1' },
        t.ctx.now(),
      )
      assert.equal(await balance(), 5)
    })
  })
}
