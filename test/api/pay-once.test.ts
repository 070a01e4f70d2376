import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import net from 'node:net'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { BACKEND_PAIRS, type BackendPair, startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * One request, one price, and no charge for an answer that did not arrive
 * (docs/decisions/money.md): a request is charged once per account and data_as_of whatever its
 * spelling or format; an answer whose connection closed before its body was handed over costs
 * nothing.
 */
const BATCH_ANALYZE_USD = 0.005

function payOnceSuite(backends: BackendPair) {
  describe(`pay once, pay on delivery: ${backends.name}`, { skip: backends.skip ?? undefined }, () => {
    let t: TestApp
    let stocks: string[]
    let socketPath: string
    before(async () => {
      t = await startTestApp(backends)
      const store = t.ctx.models.store('live')
      stocks = store.symbols.filter((s) => s.asset_type === 'stock').map((s) => s.symbol)
      // A Unix socket's buffers hold a few hundred kilobytes, so a body of megabytes cannot have
      // been handed over when a client that stopped reading goes away (loopback TCP holds MBs).
      socketPath = join(t.home, 'api.sock')
      await t.app.fastify.listen({ path: socketPath })
    })
    after(async () => {
      await t?.close()
      rmSync(socketPath, { force: true })
    })
    const micros = async (account: string) => t.ctx.accounts.balance(account)
    const debits = async (account: string) =>
      (await t.ctx.accounts.entries(account, { from: 0, to: Number.MAX_SAFE_INTEGER, limit: 1000 })).filter(
        (e) => e.kind === 'debit',
      )
    const bigBatch = (tickers: string[]) => ({
      tickers,
      metrics: ['returns', 'hedge_ratios', 'full_metrics', 'l3_decomposition'] as (
        | 'returns'
        | 'hedge_ratios'
        | 'full_metrics'
        | 'l3_decomposition'
      )[],
      years: 15,
    })

    test('an answer cut off mid-body costs nothing; read in full it costs its price once', async () => {
      const account = await t.account(1)
      const key = await t.key(account)
      const body = JSON.stringify(bigBatch(stocks))
      const request =
        `POST /batch/analyze HTTP/1.1\r\nHost: erm3.test\r\nAuthorization: Bearer ${key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
      // Reads the status line and headers, then goes away without reading the body: 4 KiB reads,
      // the first that completes the headers stops reading at once (the client shares this process).
      const head = await new Promise<string>((resolve, reject) => {
        let got = ''
        const buffer = Buffer.alloc(4096)
        const s: net.Socket = net.connect({
          path: socketPath,
          onread: {
            // Returning false stops reading at once.
            buffer,
            callback: (n) => {
              got += buffer.toString('latin1', 0, n)
              const end = got.indexOf('\r\n\r\n')
              if (end < 0) return true
              setImmediate(() => s.destroy())
              resolve(got.slice(0, end))
              return false
            },
          },
        })
        s.on('connect', () => s.write(request))
        s.on('error', reject)
      })
      assert.match(head, /^HTTP\/1.1 200/)
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1])
      assert.ok(length > 1_000_000, `a body of megabytes (${length} bytes)`)
      // The server sees the close and releases the reservation.
      for (let i = 0; i < 2000 && (await micros(account)).reservedMicros !== 0; i++)
        await new Promise((r) => setImmediate(r))
      assert.deepEqual(await micros(account), { balanceMicros: 1_000_000, reservedMicros: 0 })
      assert.deepEqual(await debits(account), [])

      // Read in full: charged once, the per-ticker price for each ticker.
      const full = await t.client.call('batchAnalyze', { key, body: bigBatch(stocks) })
      assert.equal(full.status, 200)
      // Per ticker that succeeded (a stock without data in the window fails, uncharged).
      const succeeded = Object.values(full.ok().results).filter((r) => r.status === 'ok').length
      assert.ok(succeeded >= stocks.length - 2, `${succeeded} of ${stocks.length}`)
      const price = Math.round(BATCH_ANALYZE_USD * succeeded * 1e6)
      assert.equal(full.headers['x-api-cost-usd'], String(price / 1e6))
      assert.deepEqual(await micros(account), { balanceMicros: 1_000_000 - price, reservedMicros: 0 })
      assert.equal((await debits(account)).length, 1)
    })

    test('equivalent spellings are one request: charged once, then HIT at 0', async () => {
      const account = await t.account(1)
      const key = await t.key(account)
      const [a, b] = stocks as [string, string]
      const spellings = [
        { query: { ticker: a } },
        { query: { ticker: ` ${a.toLowerCase()} `, years: 1 } },
        { query: { ticker: a.toLowerCase(), threshold: 0.01, years: 1 } },
      ]
      const costs: string[] = []
      for (const s of spellings) {
        const r = await t.client.call('getLstar', { key, ...s })
        assert.equal(r.status, 200, r.text)
        costs.push(`${r.headers['x-api-cost-usd']} ${r.headers['x-cache-status']}`)
        assert.equal(r.ok().ticker, a)
      }
      assert.deepEqual(costs, ['0.02 MISS', '0 HIT', '0 HIT'])
      // A batch with its tickers spelled otherwise is the same batch.
      const first = await t.client.call('batchLstar', { key, body: { tickers: [a, b] } })
      const again = await t.client.call('batchLstar', {
        key,
        body: { tickers: [` ${a.toLowerCase()}`, b.toLowerCase()], years: 1, threshold: 0.01 },
      })
      assert.deepEqual([first.headers['x-api-cost-usd'], again.headers['x-api-cost-usd']], ['0.01', '0'])
      // Another meaning is another price.
      const other = await t.client.call('getLstar', { key, query: { ticker: a, threshold: 0.02 } })
      assert.equal(other.headers['x-api-cost-usd'], '0.02')
      const spent = 20_000 + 10_000 + 20_000
      assert.deepEqual(await micros(account), { balanceMicros: 1_000_000 - spent, reservedMicros: 0 })
    })

    test('a request paid for is free in another format and without its cached answer', async () => {
      const account = await t.account(1)
      const key = await t.key(account)
      const [a] = stocks as [string]
      const json = await t.client.call('getL3Decomposition', { key, query: { ticker: a } })
      assert.equal(json.headers['x-api-cost-usd'], '0.02')
      // Not in the response cache (another format), but paid for: recorded with the debit.
      const csv = await t.client.call('getL3Decomposition', { key, query: { ticker: a, format: 'csv' } })
      assert.equal(csv.status, 200)
      assert.deepEqual([csv.headers['x-api-cost-usd'], csv.headers['x-cache-status']], ['0', 'HIT'])
      // The record lives in the account store beside the debit (as after a restart, or on another node).
      assert.equal((await debits(account)).length, 1)
      assert.deepEqual(await micros(account), { balanceMicros: 1_000_000 - 20_000, reservedMicros: 0 })
      // Cache-Control: no-cache asks for the answer computed again, and is charged (BYPASS).
      const bypass = await t.client.call('getL3Decomposition', {
        key,
        query: { ticker: a },
        headers: { 'cache-control': 'no-cache' },
      })
      assert.deepEqual(
        [bypass.headers['x-api-cost-usd'], bypass.headers['x-cache-status']],
        ['0.02', 'BYPASS'],
      )
    })
  })
}

for (const b of BACKEND_PAIRS) payOnceSuite(b)
