import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { BALANCE_VIEW_MAX_AGE_MS } from '../../src/services/billing/views.ts'
import { BACKEND_PAIRS, type BackendPair, startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * Money invariants through the whole HTTP stack under concurrency: 200 metered requests on an
 * account funded for exactly 50 → exactly 50 succeed, the balance ends at exactly 0, the ledger
 * sums to the charges, and no observer ever sees a negative available balance.
 */
function moneySuite(backends: BackendPair) {
  describe(`money under concurrency: ${backends.name}`, { skip: backends.skip ?? undefined }, () => {
    let t: TestApp
    before(async () => {
      t = await startTestApp(backends)
    })
    after(() => t?.close())

    test('200 concurrent metered calls, funds for 50', async () => {
      const account = await t.account(0.05)
      // 20 keys × 10 calls: within each key's burst and concurrency cap, so only money decides.
      const keys = await Promise.all(Array.from({ length: 20 }, () => t.key(account)))
      let negative = false
      let sampling = true
      const sampler = (async () => {
        while (sampling) {
          const b = await t.ctx.accounts.balance(account)
          if (b.balanceMicros - b.reservedMicros < 0 || b.balanceMicros < 0) negative = true
          await new Promise((r) => setImmediate(r))
        }
      })()
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          t.client.call('getMetrics', {
            key: keys[i % 20] as string,
            params: { ticker: 'AAPL' },
            headers: { 'cache-control': 'no-cache' },
          }),
        ),
      )
      sampling = false
      await sampler
      const statuses = results.map((r) => r.status)
      assert.equal(statuses.filter((s) => s === 200).length, 50, JSON.stringify(statuses))
      assert.equal(statuses.filter((s) => s === 402).length, 150)
      assert.equal(negative, false, 'a negative available balance was observed')
      const b = await t.ctx.accounts.balance(account)
      assert.deepEqual(b, { balanceMicros: 0, reservedMicros: 0 })
      const ledger = await t.ctx.accounts.entries(account, { from: 0, to: Date.now() + 1, limit: 1000 })
      const debits = ledger.filter((e) => e.kind === 'debit')
      assert.equal(debits.length, 50)
      assert.equal(
        ledger.reduce((a, e) => a + e.amountMicros, 0),
        0,
      )
      const charged = results.filter((r) => r.status === 200).map((r) => r.headers['x-request-id'])
      assert.deepEqual(debits.map((d) => d.requestId).sort(), charged.sort())
      assert.ok(results.filter((r) => r.status === 200).every((r) => r.headers['x-api-cost-usd'] === '0.001'))
    })

    test('GET /balance: debits of this node show at once, a top-up made elsewhere within the view age', async () => {
      const account = await t.account(0.003)
      const key = await t.key(account)
      const balance = async () => {
        return (await t.client.call('getBalance', { key })).ok()
      }
      const micros = (b: { balance_usd: number }) => Math.round(b.balance_usd * 1e6)
      assert.equal(micros(await balance()), 3000)
      for (let i = 0; i < 3; i++) {
        const r = await t.client.call('getMetrics', {
          key,
          params: { ticker: 'AAPL' },
          headers: { 'cache-control': 'no-cache' },
        })
        assert.equal(r.status, 200)
        assert.equal(micros(await balance()), 2000 - i * 1000, 'the debit shows at once')
      }
      assert.equal((await balance()).status.can_make_requests, false)
      const operator = t.anotherStore()
      try {
        await operator.credit(
          account,
          { kind: 'topup', amountMicros: 10_000_000, reference: 'ops-1' },
          Date.now(),
        )
      } finally {
        await operator.close()
      }
      // A stale answer is a snapshot read before the top-up, kept at most the view age: every
      // balance asked for that long after the top-up shows it (a busy CI only delays the answers).
      const waited = performance.now()
      for (;;) {
        const asked = performance.now()
        const seen = await balance()
        if (micros(seen) === 10_000_000) {
          assert.equal(seen.status.can_make_requests, true)
          break
        }
        // (+5 ms: the server stamps and ages snapshots on whole-millisecond Date.now.)
        assert.ok(
          asked - waited < BALANCE_VIEW_MAX_AGE_MS + 5,
          `the old balance, asked ${(asked - waited).toFixed(0)} ms after the top-up`,
        )
        await new Promise((r) => setTimeout(r, 50))
      }
    })

    test('cache hits cost 0 and failed requests cost 0', async () => {
      const account = await t.account(1)
      const key = await t.key(account)
      const first = await t.client.call('getMetrics', { key, params: { ticker: 'AAPL' } })
      assert.equal(first.status, 200)
      const again = await Promise.all(
        Array.from({ length: 9 }, () => t.client.call('getMetrics', { key, params: { ticker: 'AAPL' } })),
      )
      assert.ok(again.every((r) => r.status === 200 && r.headers['x-api-cost-usd'] === '0'))
      const failed = await Promise.all([
        t.client.call('getMetrics', { key, params: { ticker: 'ZZZZZZ' } }),
        t.client.call('getMetrics', { key, params: { ticker: '!!' } }),
      ])
      assert.deepEqual(
        failed.map((r) => r.status),
        [404, 400],
      )
      assert.deepEqual(await t.ctx.accounts.balance(account), { balanceMicros: 999_000, reservedMicros: 0 })
    })

    test('an answer with nothing in it (an ETF on a model operation) is free, says why, needs no funds', async () => {
      const empty = await t.account(0)
      const funded = await t.account(1)
      const etfCalls = [
        ['getMetrics', { params: { ticker: 'SPY' } }],
        ['decompose', { body: { ticker: 'SPY' } }],
        ['decomposeV4', { body: { ticker: 'xlk' } }],
        ['getLstar', { query: { ticker: 'SPY', years: 1 } }],
        ['getReturnsDecomposition', { query: { ticker: 'SPY' } }],
        ['getL3Decomposition', { query: { ticker: 'SPY' } }],
        ['getFundamentals', { params: { ticker: 'SPY' } }],
        ['getRankings', { params: { ticker: 'XLK' } }],
      ] as const
      for (const account of [empty, funded]) {
        const key = await t.key(account)
        const before = await t.ctx.accounts.balance(account)
        for (const [op, input] of etfCalls) {
          for (const headers of [{}, { 'cache-control': 'no-cache' }]) {
            const r = await t.client.call(op, { key, ...input, headers } as never)
            assert.equal(r.status, 200, `${op}: ${r.text}`)
            const b = r.json as { _agent: { cost_usd: number }; _metadata: Record<string, unknown> }
            assert.equal(b._agent.cost_usd, 0, op)
            assert.equal(r.headers['x-api-cost-usd'], '0', op)
            const why = b._metadata.nothing_to_answer as { asset_type: string; reason: string; see: string }
            assert.equal(why.asset_type, 'etf', op)
            assert.match(why.reason, /^ETFs /, op)
            assert.equal(why.see, '/etf-returns', op)
            assert.equal(r.headers['x-nothing-to-answer'], why.reason)
          }
        }
        const decompose = await t.client.call('decompose', { key, body: { ticker: 'SPY' } })
        assert.doesNotMatch(JSON.stringify(decompose.json), /too few observations/)
        assert.deepEqual(await t.ctx.accounts.balance(account), before)
        const ledger = await t.ctx.accounts.entries(account, { from: 0, to: Date.now() + 1, limit: 100 })
        assert.equal(ledger.filter((e) => e.kind === 'debit').length, 0)
      }
      // The same operations on a stock are charged; an ETF's returns are an answer, charged too.
      const key = await t.key(funded)
      const stock = await t.client.call('getMetrics', { key, params: { ticker: 'AAPL' } })
      assert.equal(stock.ok()._agent.cost_usd, 0.001)
      assert.equal(Object.hasOwn((stock.json as { _metadata: object })._metadata, 'nothing_to_answer'), false)
      const returns = await t.client.call('getEtfReturns', { key, query: { ticker: 'SPY' } })
      assert.equal(returns.ok()._agent.cost_usd, 0.005)
      assert.deepEqual(await t.ctx.accounts.balance(funded), { balanceMicros: 994_000, reservedMicros: 0 })
      const poor = await t.client.call('getMetrics', { key: await t.key(empty), params: { ticker: 'AAPL' } })
      assert.equal(poor.status, 402)
    })
  })
}

for (const b of BACKEND_PAIRS) moneySuite(b)
