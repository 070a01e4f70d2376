import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { keyChecksum } from '../../src/contract/api-key.ts'
import { type CallInput, type CallResult, createClient } from '../../src/contract/client.ts'
import { OPERATIONS, type OperationId } from '../../src/contract/operations.ts'
import { assertSlotsFree as slotsFree } from '../helpers/slots.ts'
import type { BackendPair, TestApp } from '../helpers/test-app.ts'
import { startTestApp } from '../helpers/test-app.ts'

/** One authenticated operation to put through the suite. */
export interface SecurityCase<K extends OperationId = OperationId> {
  op: K
  input: CallInput<K>
  /** Metered operations also get the 402 case and a balance check. */
  metered: boolean
  /** A request whose body or parameters are invalid (an unauthenticated one must still be 401); absent when nothing can be. */
  invalid?: CallInput<K>
  /** Operations a test key may not use at all (top-ups): 403 FORBIDDEN instead of a sandbox answer. */
  testKey?: 'refused'
}

export interface SecuritySuiteOptions {
  /** Extra configuration of the suite's app (e.g. Stripe for the top-up case). */
  env?: Record<string, string>
  /** Suffix of the suite's name, to tell several suites on one backend pair apart. */
  name?: string
  /** Prepares the suite's account after it is created (e.g. links a brokerage for /plaid/holdings). */
  setup?: (t: TestApp, accountId: string) => Promise<void>
}

const opById = (id: OperationId) => OPERATIONS.find((o) => o.id === id) as (typeof OPERATIONS)[number]

function assertProblem(r: CallResult<OperationId>, status: number, code: string): Record<string, unknown> {
  assert.equal(r.status, status, `expected ${status} ${code}, got ${r.status}: ${r.text}`)
  assert.match(r.headers['content-type'] ?? '', /^application\/problem\+json/)
  const p = r.json as Record<string, unknown>
  assert.equal(p.code, code)
  assert.equal(p.status, status)
  for (const m of ['type', 'title', 'detail', 'instance', 'request_id'])
    assert.equal(typeof p[m], 'string', m)
  assert.equal(p.request_id, r.headers['x-request-id'])
  return p
}

/**
 * The shared security suite (CONTRIBUTING.md, "Style"): every authenticated operation, on every backend pair,
 * answers each credential and limit failure with its own documented error.
 */
export function securitySuite(backends: BackendPair, cases: SecurityCase[], opts: SecuritySuiteOptions = {}) {
  const name = `security suite: ${backends.name}${opts.name ? ` (${opts.name})` : ''}`
  describe(name, { skip: backends.skip ?? undefined }, () => {
    let t: TestApp
    let account: string
    before(async () => {
      // Every case's refusals come from 127.0.0.1 and take its address tokens: with this many
      // cases the default burst (200) could run out on a fast machine and turn a 401 into a 429.
      // The address limit itself is tested with its own addresses (session suite, rate-headers).
      t = await startTestApp({ ...backends, env: { ERM3_IP_RATE_BURST: '100000', ...(opts.env ?? {}) } })
      account = await t.account(1)
      await opts.setup?.(t, account)
    })
    after(() => t?.close())

    const call = (
      c: SecurityCase,
      key: string | null,
      input: CallInput<OperationId> = c.input,
      headers: Record<string, string> = {},
    ) =>
      t.client.call(c.op, {
        ...input,
        key,
        headers: { ...headers, ...(input.headers ?? {}) },
      } as CallInput<OperationId>)

    async function keyId(key: string): Promise<string> {
      const keys = await t.ctx.accounts.listKeys(account)
      const hit = keys.find((k) => key.startsWith(k.prefix.replace('…', '')))
      assert.ok(hit, 'key not found')
      return hit.id
    }

    /** A fresh account with 1 USD, prepared like the suite's (e.g. a linked brokerage). */
    const fundedAccount = async () => {
      const a = await t.account(1)
      await opts.setup?.(t, a)
      return a
    }
    const entries = (a: string) =>
      t.ctx.accounts.entries(a, { from: 0, to: Number.MAX_SAFE_INTEGER, limit: 1000 })

    /** Every one of the key's ten concurrency slots can be taken at once (then given back). */
    const assertSlotsFree = async (key: string) => slotsFree(t, await keyId(key), 10)

    for (const c of cases) {
      describe(c.op, () => {
        test('no key → 401 MISSING_CREDENTIALS; bad body without a key is still 401', async () => {
          assertProblem(await call(c, null), 401, 'MISSING_CREDENTIALS')
          if (c.invalid) assertProblem(await call(c, null, c.invalid), 401, 'MISSING_CREDENTIALS')
        })
        test('malformed key and bad checksum → 401 INVALID_KEY before any lookup', async () => {
          const real = await t.key(account)
          const lookups = { n: 0 }
          const original = t.ctx.accounts.findKeyByHash.bind(t.ctx.accounts)
          t.ctx.accounts.findKeyByHash = async (h) => {
            lookups.n++
            return original(h)
          }
          try {
            assertProblem(await call(c, 'erm_agent_live_short'), 401, 'INVALID_KEY')
            const flipped = `${real.slice(0, -1)}${real.endsWith('A') ? 'B' : 'A'}`
            assertProblem(await call(c, flipped), 401, 'INVALID_KEY')
            assert.equal(lookups.n, 0, 'a malformed key reached the database')
          } finally {
            t.ctx.accounts.findKeyByHash = original
          }
        })
        test('unknown, revoked and expired keys each have their own code', async () => {
          const body = 'erm_agent_live_00000000000000000000000000000000'
          assertProblem(await call(c, `${body}_${keyChecksum(body)}`), 401, 'INVALID_KEY')
          const revoked = await t.key(account)
          await t.ctx.accounts.revokeKey(await keyId(revoked), Date.now())
          assertProblem(await call(c, revoked), 401, 'REVOKED_KEY')
          const expired = await t.key(account, { expiresAt: Date.now() - 1000 })
          assertProblem(await call(c, expired), 401, 'EXPIRED_KEY')
        })
        test('live and test keys: environment header, rate headers; test keys never move the balance', async () => {
          const before = await t.ctx.accounts.balance(account)
          const r = await call(c, await t.key(account, { env: 'test' }), c.input, {
            'cache-control': 'no-cache',
          })
          if (c.testKey === 'refused') assertProblem(r, 403, 'FORBIDDEN')
          else assert.ok(r.status < 300, r.text)
          assert.equal(r.headers['x-environment'], 'test')
          assert.deepEqual(await t.ctx.accounts.balance(account), before)
          const live = await call(c, await t.key(account))
          assert.ok(live.status < 300, live.text)
          assert.equal(live.headers['x-environment'], 'live')
          assert.equal(live.headers['x-ratelimit-limit'], '60')
          assert.match(live.headers['x-ratelimit-remaining'] ?? '', /^\d+$/)
          assert.ok(
            Number(live.headers['x-ratelimit-reset']) > Date.now() / 1000 - 1,
            'reset is epoch seconds',
          )
        })
        if (c.metered) {
          test('insufficient balance → 402 with the documented members, nothing charged', async () => {
            const poor = await t.account(0)
            const p = assertProblem(await call(c, await t.key(poor)), 402, 'INSUFFICIENT_BALANCE')
            assert.equal(p.balance_usd, 0)
            assert.equal(typeof p.required_usd, 'number')
            assert.ok((p.required_usd as number) > 0)
            assert.match(String(p.top_up_url), /^http/)
            // …and it leads somewhere: the billing page of this instance.
            const page = await t.app.fastify.inject({ url: new URL(String(p.top_up_url)).pathname })
            assert.equal(page.statusCode, 200)
            assert.match(page.body, /minimum top-up is 10\.00 USD/)
            assert.equal(p.min_top_up_usd, 10)
            assert.deepEqual(
              await t.ctx.accounts.entries(poor, { from: 0, to: Date.now() + 1, limit: 10 }),
              [],
            )
          })
        }
        if (c.metered) {
          test('a client X-Request-ID is only echoed (X-Correlation-ID): the ledger keeps erm3’s own id', async () => {
            const payer = await fundedAccount()
            const key = await t.key(payer)
            const chosen = 'client-chosen.id:1'
            const served: string[] = []
            for (let i = 0; i < 2; i++) {
              // no-cache: each call is computed and charged (a HIT would post no ledger row).
              const r = await call(c, key, c.input, { 'x-request-id': chosen, 'cache-control': 'no-cache' })
              assert.ok(r.status < 300, r.text)
              assert.equal(r.headers['x-correlation-id'], chosen)
              assert.match(r.headers['x-request-id'] ?? '', /^req_[A-Za-z0-9]+$/)
              served.push(r.headers['x-request-id'] as string)
            }
            assert.notEqual(served[0], served[1], 'two requests, two ids')
            const debits = (await entries(payer)).filter((e) => e.kind === 'debit')
            assert.deepEqual(debits.map((e) => e.requestId).sort(), [...served].sort())
            // A refusal's problem names erm3's id as well.
            const p = assertProblem(
              await call(c, await t.key(await t.account(0)), c.input, { 'x-request-id': chosen }),
              402,
              'INSUFFICIENT_BALANCE',
            )
            assert.match(String(p.request_id), /^req_/)
          })
        }
        if (c.metered && opById(c.op).method === 'GET') {
          test('HEAD → 405 with Allow: GET, before anything is computed or charged', async () => {
            const payer = await fundedAccount()
            const key = await t.key(payer)
            const head = createClient((req) => t.transport({ ...req, method: 'HEAD' }))
            const before = await t.ctx.accounts.balance(payer)
            const ledger = await entries(payer)
            const answers: CallResult<OperationId>[] = []
            for (const headers of [{}, { 'cache-control': 'no-cache' }])
              answers.push(await head.call(c.op, { ...c.input, key, headers } as CallInput<OperationId>))
            assert.deepEqual(await t.ctx.accounts.balance(payer), before, 'HEAD moved the balance')
            assert.deepEqual(await entries(payer), ledger)
            for (const r of answers) {
              assert.equal(r.status, 405, r.text)
              assert.equal(r.headers.allow, 'GET')
              assert.equal(r.headers['x-api-cost-usd'], undefined)
            }
            // The GET itself is charged as always.
            const r = await call(c, key)
            assert.ok(r.status < 300, r.text)
            assert.ok((await t.ctx.accounts.balance(payer)).balanceMicros < before.balanceMicros)
          })
        }
        test('over the rate → 429 RATE_LIMITED with Retry-After and rate headers', async () => {
          const key = await t.key(account)
          await t.ctx.limits.rate.take(
            `key:${await keyId(key)}`,
            { limit: 60, periodMs: 60_000, burst: 100 },
            t.ctx.now(),
            100,
          )
          const r = await call(c, key)
          const p = assertProblem(r, 429, 'RATE_LIMITED')
          assert.ok(Number(r.headers['retry-after']) >= 1)
          assert.equal(p.retry_after_seconds, Number(r.headers['retry-after']))
          assert.equal(r.headers['x-ratelimit-remaining'], '0')
          assert.equal(r.headers['x-ratelimit-limit'], '60')
          // The slot asked for beside the refused token went straight back: all ten are free.
          await assertSlotsFree(key)
        })
        test('over concurrency → 429 CONCURRENCY_LIMITED', async () => {
          const key = await t.key(account)
          const id = await keyId(key)
          const leases = []
          for (let i = 0; i < 10; i++)
            leases.push(await t.ctx.limits.concurrency.acquire(`key:${id}`, 10, 60_000, t.ctx.now()))
          const r = await call(c, key)
          assertProblem(r, 429, 'CONCURRENCY_LIMITED')
          assert.ok(Number(r.headers['retry-after']) >= 1)
          for (const l of leases)
            if (l.leaseId) await t.ctx.limits.concurrency.release(`key:${id}`, l.leaseId)
          const ok = await call(c, key)
          assert.ok(ok.status < 300, ok.text)
        })
        test('a finished request, answered or refused, holds no concurrency slot', async () => {
          const key = await t.key(account)
          for (let i = 0; i < 11; i++) assert.ok((await call(c, key)).status < 300)
          if (c.invalid) assert.ok((await call(c, key, c.invalid)).status >= 400)
          // Every slot is back: all ten can be taken at once.
          await assertSlotsFree(key)
        })
        test('an authenticated request with invalid input → 400 INVALID_REQUEST (or a more specific 4xx)', {
          skip: c.invalid ? undefined : 'no invalid input exists',
        }, async () => {
          const r = await call(c, await t.key(account), c.invalid ?? c.input)
          assert.ok(r.status >= 400 && r.status < 500, `${r.status} ${r.text}`)
          assert.match(r.headers['content-type'] ?? '', /^application\/problem\+json/)
        })
      })
    }
  })
}
