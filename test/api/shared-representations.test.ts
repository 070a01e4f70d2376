/**
 * Encoded answers shared across accounts (src/services/billing/shared-representations.ts): the
 * table's own bounds (bytes, entry size, least recently used first), then through the API — a
 * second account's MISS and a no-cache BYPASS are answered with the bytes the first account's
 * computation produced, and every one of those calls is still charged and debited; errors and
 * test keys never share an entry with live answers.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Representation } from '../../src/services/billing/metered-call.ts'
import {
  type SharedAnswer,
  SharedRepresentations,
  sharedRepresentations,
} from '../../src/services/billing/shared-representations.ts'
import { rawCall } from '../helpers/history-checks.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

function answer(bytes: number, tag = 'x'): SharedAnswer {
  const rep: Representation = {
    etag: `W/"${tag}"`,
    format: 'json',
    data: Buffer.alloc(bytes, tag),
    filename: null,
    dataAsOf: '2024-01-02',
    lineage: {},
    confidence: { overall: 1, factors: {} },
  }
  return { rep, positions: 1 }
}

describe('SharedRepresentations (the table)', () => {
  test('keeps answers within the byte budget, least recently used out first; oversized never kept', () => {
    // Each entry: body + 2 × key length + 256 bytes of allowance.
    const t = new SharedRepresentations(3 * (1000 + 2 + 256), 2000)
    t.put('a', answer(1000, 'a'))
    t.put('b', answer(1000, 'b'))
    t.put('c', answer(1000, 'c'))
    assert.equal(t.count, 3)
    assert.equal(t.size, 3 * 1258)
    assert.ok(t.get('a')) // a is now the most recently used
    t.put('d', answer(1000, 'd'))
    assert.equal(t.count, 3)
    assert.equal(t.get('b'), undefined, 'b was the least recently used')
    assert.equal(t.get('a')?.rep.etag, 'W/"a"')
    t.put('big', answer(5000))
    assert.equal(t.get('big'), undefined)
    // Replacing an entry accounts for the old one's bytes.
    t.put('a', answer(500, 'A'))
    assert.equal(t.size, 2 * 1258 + 758)
    assert.equal(t.get('a')?.rep.etag, 'W/"A"')
  })

  test('a kept body owns its memory (never a slice pinning a shared slab), with the same bytes', () => {
    const t = new SharedRepresentations()
    const slab = Buffer.from('xxxx{"a":1}yyyy')
    const slice = slab.subarray(4, 11)
    const a = answer(0)
    t.put('k', { ...a, rep: { ...a.rep, data: slice } })
    const kept = t.get('k')?.rep.data
    assert.ok(kept)
    assert.equal(kept.toString(), '{"a":1}')
    assert.equal(kept.buffer.byteLength, kept.length)
    assert.equal(kept.byteOffset, 0)
    slab.fill(0)
    assert.equal(kept.toString(), '{"a":1}', 'a copy, not a view of the slab')
  })

  test('the key holds environment, build, format and every part of the request', () => {
    const k = SharedRepresentations.key('live', '2024-01-02/b1', 'json', ['GET', '/metrics/aapl', '', 'null'])
    for (const other of [
      SharedRepresentations.key('test', '2024-01-02/b1', 'json', ['GET', '/metrics/aapl', '', 'null']),
      SharedRepresentations.key('live', '2024-01-02/b2', 'json', ['GET', '/metrics/aapl', '', 'null']),
      SharedRepresentations.key('live', '2024-01-02/b1', 'csv', ['GET', '/metrics/aapl', '', 'null']),
      SharedRepresentations.key('live', '2024-01-02/b1', 'json', ['GET', '/metrics/msft', '', 'null']),
      SharedRepresentations.key('live', '2024-01-02/b1', 'json', ['GET', '/metrics/aapl', 'years=2', 'null']),
    ])
      assert.notEqual(other, k)
  })
})

describe('shared answers through the API (embedded)', () => {
  let t: TestApp
  let a: string
  let b: string
  let keyA: string
  let keyB: string
  let keyTest: string
  before(async () => {
    t = await startTestApp({ env: { METRICS_TOKEN: 'shared-test-metrics-token' } })
    a = await t.account(1)
    b = await t.account(1)
    keyA = await t.key(a)
    keyB = await t.key(b)
    keyTest = await t.key(a, { env: 'test' })
  })
  after(() => t?.close())

  const withoutAgent = (text: string) => {
    const { _agent, ...rest } = JSON.parse(text) as Record<string, unknown>
    return { rest, agent: _agent as { cost_usd: number; cache_status: string } }
  }
  const debits = async (accountId: string) =>
    (await t.ctx.accounts.summary(accountId, { from: 0, to: Date.now() + 1 })).requests

  test('a second account and a no-cache call get the first computation’s bytes, each charged and debited', async () => {
    const table = sharedRepresentations(t.ctx)
    const before = table.count
    const first = await rawCall(t, 'GET', '/metrics/AAPL', keyA)
    assert.equal(first.status, 200, first.text)
    assert.equal(first.headers['x-cache-status'], 'MISS')
    assert.equal(table.count, before + 1, 'the answer is kept once')

    const second = await rawCall(t, 'GET', '/metrics/AAPL', keyB)
    const bypass = await rawCall(t, 'GET', '/metrics/AAPL', keyB, { 'cache-control': 'no-cache' })
    assert.equal(table.count, before + 1, 'answered from the kept entry, nothing new kept')
    for (const [r, status] of [
      [second, 'MISS'],
      [bypass, 'BYPASS'],
    ] as const) {
      assert.equal(r.status, 200, r.text)
      assert.equal(r.headers['x-cache-status'], status)
      assert.equal(r.headers['x-api-cost-usd'], '0.001')
      assert.equal(r.headers.etag, first.headers.etag)
      const got = withoutAgent(r.text)
      assert.deepEqual(got.rest, withoutAgent(first.text).rest)
      assert.equal(got.agent.cost_usd, 0.001)
      assert.equal(got.agent.cache_status, status)
      // The body up to `_agent` is byte for byte the first computation's.
      const cut = (s: string) => s.slice(0, s.indexOf(',"_agent":'))
      assert.equal(cut(r.text), cut(first.text))
    }
    assert.equal(await debits(a), 1)
    assert.equal(await debits(b), 2)
    // The per-account response cache still answers account A's repeat free.
    const again = await rawCall(t, 'GET', '/metrics/AAPL', keyA)
    assert.equal(again.headers['x-cache-status'], 'HIT')
    assert.equal(again.headers['x-api-cost-usd'], '0')
    assert.equal(await debits(a), 1)
  })

  test('/metrics-prom reports the table: bytes and entries held, lookups by result', async () => {
    const scrape = async () => {
      const text = (
        await t.app.fastify.inject({
          method: 'GET',
          url: '/metrics-prom',
          headers: { authorization: 'Bearer shared-test-metrics-token' },
        })
      ).body
      const value = (line: string) => {
        const m = new RegExp(`^${line.replace(/[{}"]/g, '\\$&')} (\\d+)$`, 'm').exec(text)
        assert.ok(m, `${line} in\n${text}`)
        return Number(m[1])
      }
      return {
        bytes: value('erm3_shared_answers_bytes'),
        entries: value('erm3_shared_answers'),
        hits: value('erm3_shared_answer_lookups_total{result="hit"}'),
        misses: value('erm3_shared_answer_lookups_total{result="miss"}'),
      }
    }
    const table = sharedRepresentations(t.ctx)
    const before = await scrape()
    assert.deepEqual(
      { bytes: before.bytes, entries: before.entries },
      { bytes: table.size, entries: table.count },
    )
    const r = await rawCall(t, 'GET', '/metrics/MSFT', keyA, { 'cache-control': 'no-cache' })
    assert.equal(r.status, 200, r.text)
    await rawCall(t, 'GET', '/metrics/MSFT', keyB, { 'cache-control': 'no-cache' })
    await rawCall(t, 'GET', '/metrics/MSFT', keyB, { 'cache-control': 'no-cache' })
    const now = await scrape()
    assert.equal(now.entries, before.entries + 1)
    assert.equal(now.bytes, table.size)
    assert.ok(now.bytes > before.bytes + r.bytes.length / 2)
    assert.equal(now.misses - before.misses, 1)
    assert.equal(now.hits - before.hits, 2)
  })

  test('a refused request keeps nothing; a test key reads its own (sandbox) entry', async () => {
    const table = sharedRepresentations(t.ctx)
    const n = table.count
    const missing = await rawCall(t, 'GET', '/metrics/NOSUCHTICKER', keyA, { 'cache-control': 'no-cache' })
    assert.equal(missing.status, 404, missing.text)
    assert.equal(table.count, n)
    const sandbox = await rawCall(t, 'GET', '/metrics/AAPL', keyTest, { 'cache-control': 'no-cache' })
    assert.equal(sandbox.status, 200, sandbox.text)
    assert.equal(table.count, n + 1, 'the test environment has its own entry')
    assert.equal(sandbox.headers['x-environment'], 'test')
  })
})
