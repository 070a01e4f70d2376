/**
 * `GET /balance` answered on the listener without Fastify (src/api/fast-balance.ts), on a real
 * 127.0.0.1 listener, each backend pair. The fast path must be indistinguishable from Fastify's:
 * the same status, the same bytes, the same headers in the same order; `/balance?ref=1` (a query
 * string: always Fastify's) on the same listener is the reference. Every refusal is Fastify's own
 * answer, and no request takes two rate tokens. `erm3_balance_fast_path_total` (Prometheus) shows
 * which path answered, so a test cannot pass by the fast path never running.
 */
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, before, describe, it } from 'node:test'
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
const SCRAPE_TOKEN = 'fast-balance-test-metrics-token'

const header = (r: Raw, name: string) => r.headers.find(([k]) => k === name)?.[1]

for (const pair of BACKEND_PAIRS) {
  describe(`GET /balance fast path: ${pair.name}`, { skip: pair.skip ?? false }, () => {
    let t: TestApp
    let origin: string
    before(async () => {
      t = await startTestApp({ db: pair.db, limits: pair.limits, env: { METRICS_TOKEN: SCRAPE_TOKEN } })
      origin = await t.listen()
    })
    after(async () => {
      await t?.close()
    })

    const scrape = () =>
      t.app.fastify.inject({
        method: 'GET',
        url: '/metrics-prom',
        headers: { authorization: `Bearer ${SCRAPE_TOKEN}` },
      })
    const fastCount = async () => {
      const text = await scrape()
      const m = /^erm3_balance_fast_path_total (\d+)$/m.exec(text.body)
      assert.ok(m, 'the fast-path counter is exported')
      return Number(m[1])
    }
    const getBalanceCount = async (status: number) => {
      const text = (await scrape()).body
      const re = new RegExp(
        `^erm3_http_requests_total\\{operation="getBalance",status="${status}"\\} (\\d+)$`,
        'm',
      )
      return Number(re.exec(text)?.[1] ?? 0)
    }

    /** Fast and Fastify's answers to the same key agree in everything but the per-request values. */
    function sameAnswer(fast: Raw, slow: Raw) {
      assert.equal(fast.status, slow.status)
      assert.equal(fast.body, slow.body, 'the same bytes')
      assert.deepEqual(
        fast.headers.map(([k]) => k),
        slow.headers.map(([k]) => k),
        'the same headers in the same order',
      )
      for (const [k, v] of slow.headers) {
        const f = header(fast, k) as string
        if (k === 'x-request-id') assert.match(f, /^req_[A-Za-z0-9]+$/)
        else if (k === 'date' || k === 'x-ratelimit-reset') assert.ok(f.length > 0)
        else if (k === 'x-ratelimit-remaining') assert.equal(Number(f), Number(v) - 1, 'one token each')
        else assert.equal(f, v, k)
      }
    }

    it('answers with Fastify’s status, bytes and headers, for live and test keys', async () => {
      const account = await t.account(12.5)
      for (const env of ['live', 'test'] as const) {
        const key = await t.key(account, { env })
        const auth = { Authorization: `Bearer ${key}` }
        const before = await fastCount()
        const served = await getBalanceCount(200)
        const slow = await get(origin, '/balance?ref=1', auth)
        assert.equal(await fastCount(), before, 'a query string goes to Fastify')
        const fast = await get(origin, '/balance', auth)
        assert.equal(await fastCount(), before + 1, 'served by the fast path')
        assert.equal(slow.status, 200)
        sameAnswer(fast, slow)
        const body = JSON.parse(fast.body)
        assert.equal(body.account_id, account)
        assert.equal(body.environment, env)
        if (env === 'live') assert.equal(body.balance_usd, 12.5)
        assert.equal(await getBalanceCount(200), served + 2, 'both counted in erm3_http_requests_total')
      }
    })

    it('X-Request-ID is erm3’s own; a sane client id comes back as X-Correlation-ID, as Fastify does', async () => {
      const key = await t.key(await t.account(1))
      const auth = { Authorization: `Bearer ${key}`, 'X-Request-ID': 'trace-42.a:b' }
      const before = await fastCount()
      const slow = await get(origin, '/balance?ref=1', auth)
      const ok = await get(origin, '/balance', auth)
      assert.equal(await fastCount(), before + 1)
      sameAnswer(ok, slow)
      assert.match(header(ok, 'x-request-id') as string, /^req_[A-Za-z0-9]+$/)
      assert.equal(header(ok, 'x-correlation-id'), 'trace-42.a:b')
      const bad = await get(origin, '/balance', {
        Authorization: `Bearer ${key}`,
        'X-Request-ID': 'no spaces!',
      })
      assert.match(header(bad, 'x-request-id') as string, /^req_/)
      assert.equal(header(bad, 'x-correlation-id'), undefined)
    })

    it('every refusal is Fastify’s own answer (401 problem, no fast-path count)', async () => {
      const before = await fastCount()
      const cases: Record<string, string>[] = [
        {},
        { Authorization: 'Bearer erm_agent_live_not-a-real-key_0000' },
        { Authorization: 'Basic dXNlcjpwYXNz' },
        { Authorization: `Bearer  ${await t.key(await t.account(1))}` },
      ]
      for (const h of cases) {
        const r = await get(origin, '/balance', h)
        const ref = await t.app.fastify.inject({ method: 'GET', url: '/balance', headers: h })
        assert.equal(r.status, ref.statusCode, JSON.stringify(h))
        if (r.status !== 200) {
          assert.match(header(r, 'content-type') as string, /^application\/problem\+json/)
          assert.equal(JSON.parse(r.body).code, JSON.parse(ref.body).code)
        }
      }
      // The double space is Fastify's to parse (and accepts it); the others are 401s.
      assert.equal(await fastCount(), before)
    })

    it('HEAD, POST and a trailing slash go to Fastify', async () => {
      const key = await t.key(await t.account(1))
      const before = await fastCount()
      const auth = { Authorization: `Bearer ${key}` }
      assert.equal((await get(origin, '/balance', auth, 'HEAD')).status, 200)
      assert.equal((await get(origin, '/balance', auth, 'POST')).status, 405)
      assert.equal((await get(origin, '/balance/', auth)).status, 200)
      assert.equal(await fastCount(), before)
    })

    it('takes one rate token per request: a key gets its burst, then Fastify’s 429', async () => {
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

    it('a key at its concurrency cap gets Fastify’s 429 with the one token the request took; slots come back', async () => {
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
      // One token for this request: none taken twice though Fastify answered it.
      assert.equal(Number(header(refused, 'x-ratelimit-remaining')), remaining0 - 1)
      for (const l of held) await t.ctx.limits.concurrency.release(`key:${record.id}`, l)
      // Sequential fast answers give their slots back: the cap is free again afterwards.
      for (let i = 0; i < 15; i++) assert.equal((await get(origin, '/balance', auth)).status, 200)
      await assertSlotsFree(t, record.id, MAX_CONCURRENT)
    })

    it('answers in one turn when key, limits and balance are all in this process, else the asynchronous way: the same answer either way', async () => {
      // Which way a request went shows in which of the limiter's takes ran for the key's bucket.
      // And whether it held a concurrency slot shows in the limiter's acquires.
      const rate = t.ctx.limits.rate
      const slots = t.ctx.limits.concurrency
      const calls = { take: 0, takeNow: 0, acquire: 0 }
      const acquire = slots.acquire.bind(slots)
      slots.acquire = (key, ...rest) => {
        if (key.startsWith('key:')) calls.acquire++
        return acquire(key, ...rest)
      }
      const take = rate.take.bind(rate)
      const takeNow = rate.takeNow?.bind(rate)
      const patched = rate as { take: typeof take; takeNow?: typeof takeNow }
      patched.take = (key, ...rest) => {
        if (key.startsWith('key:')) calls.take++
        return take(key, ...rest)
      }
      if (takeNow)
        patched.takeNow = (key, ...rest) => {
          if (key.startsWith('key:')) calls.takeNow++
          return takeNow(key, ...rest)
        }
      try {
        const account = await t.account(3)
        const auth = { Authorization: `Bearer ${await t.key(account)}` }
        const way = async (path: string) => {
          const before = { ...calls }
          const r = await get(origin, path, auth)
          assert.equal(r.status, 200)
          return {
            r,
            inTurn: calls.takeNow > before.takeNow,
            async: calls.take > before.take,
            slot: calls.acquire > before.acquire,
          }
        }
        // A key not yet verified here: authenticated (and the balance read) the asynchronous way.
        const first = await way('/balance')
        assert.deepEqual([first.inTurn, first.async], [false, true])
        // Verified and with a fresh snapshot: one turn where the limits are in-process (memory),
        // the asynchronous way where they are not (Redis), with the same bytes as Fastify's.
        const slow = await way('/balance?ref=1')
        const fast = await way('/balance')
        assert.deepEqual([fast.inTurn, fast.async], pair.limits === 'memory' ? [true, false] : [false, true])
        // Answered in the turn its limits answered in, either way: it took no slot (with Redis,
        // one round trip for the token and the free-slot check, none to give a slot back).
        assert.equal(fast.slot, false)
        sameAnswer(fast.r, slow.r)
        assert.equal(JSON.parse(fast.r.body).balance_usd, 3)
        // A write through this process drops the snapshot: the next answer reads the balance anew.
        await t.ctx.accounts.credit(
          account,
          { kind: 'credit', amountMicros: 2_000_000, reference: 'fast-1' },
          t.ctx.now(),
        )
        const after = await way('/balance')
        assert.equal(after.inTurn, false)
        // The balance had to be read: that request held a slot while it waited.
        assert.equal(after.slot, true)
        assert.equal(JSON.parse(after.r.body).balance_usd, 5)
        const again = await way('/balance')
        assert.equal(again.inTurn, pair.limits === 'memory')
        assert.equal(JSON.parse(again.r.body).balance_usd, 5)
      } finally {
        patched.take = take
        if (takeNow) patched.takeNow = takeNow
        slots.acquire = acquire
      }
    })
  })
}
