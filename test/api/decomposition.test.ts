import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { ModelStore } from '../../src/engine/model-store/reader.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'
import {
  checkCsv,
  checkParquet,
  type ExpectedColumn,
  expectedWindow,
  raw,
  stocks,
} from './analytics-helpers.ts'

type Num = number | null
const n = (v: number | undefined): Num => (v === undefined || Number.isNaN(v) ? null : v)
const PARTS = ['l1_cfr', 'l1_fr', 'l1_rr', 'l2_cfr', 'l2_fr', 'l2_rr', 'l3_cfr', 'l3_fr', 'l3_rr'] as const
const L3 = [
  'l3_mkt_hr',
  'l3_sec_hr',
  'l3_sub_hr',
  'l3_mkt_er',
  'l3_sec_er',
  'l3_sub_er',
  'l3_res_er',
] as const
const level = (c: number | undefined) => (c === 1 ? 'L1' : c === 2 ? 'L2' : c === 3 ? 'L3' : null)

async function expectedDecomposition(store: ModelStore, i: number, years: number) {
  const { from, to } = await expectedWindow(store, i, years)
  const h = await store.history(i, ['returns_gross', ...PARTS, 'lstar_rr', 'lstar_level'], from, to)
  const col = (f: string) => Array.from(h[f] as Float64Array, (x) => n(x))
  return {
    dates: Array.from({ length: to - from }, (_, k) => store.date(from + k)),
    gross: col('returns_gross'),
    ...(Object.fromEntries(PARTS.map((p) => [p, col(p)])) as Record<(typeof PARTS)[number], Num[]>),
    lstar: Array.from(h.lstar_level as ArrayLike<number>, level),
    lstar_residual_return: col('lstar_rr'),
  }
}

async function expectedMonthly(store: ModelStore, i: number, years: number) {
  const { from, to } = await expectedWindow(store, i, years)
  const h = await store.history(i, [...L3, 'sector_etf', 'subsector_etf'])
  const ends: number[] = []
  for (let t = from; t < to; t++)
    if (t === to - 1 || store.date(t).slice(0, 7) !== store.date(t + 1).slice(0, 7)) ends.push(t)
  const etf = (c: number | undefined) => (c === undefined || c < 0 ? null : (store.etfs[c] ?? null))
  return {
    dates: ends.map((t) => store.date(t)),
    ...(Object.fromEntries(L3.map((k) => [k, ends.map((t) => n(h[k][t]))])) as Record<
      (typeof L3)[number],
      Num[]
    >),
    sector_etf: ends.map((t) => etf(h.sector_etf[t])),
    subsector_etf: ends.map((t) => etf(h.subsector_etf[t])),
  }
}

describe('GET /returns-decomposition and GET /l3-decomposition', () => {
  let t: TestApp
  let key: string
  before(async () => {
    t = await startTestApp()
    key = await t.key(await t.account(5))
  })
  after(() => t?.close())

  test('daily arrays equal the store; gross = l3_cfr + l3_rr and cfr = cumulative fr on every day', async () => {
    const store = t.ctx.models.store('live')
    let checked = 0
    for (const s of stocks(store, 5)) {
      const r = await t.client.call('getReturnsDecomposition', { key, query: { ticker: s.ticker, years: 3 } })
      const body = r.ok()
      const e = await expectedDecomposition(store, s.index, 3)
      assert.deepEqual(body.dates, e.dates)
      assert.deepEqual(body.gross, e.gross)
      for (const p of PARTS) assert.deepEqual(body[p], e[p], `${s.ticker} ${p}`)
      assert.equal(body.lstar, undefined)
      assert.equal(body.lstar_residual_return, undefined)
      assert.deepEqual(body._metadata.range, [e.dates[0], e.dates[e.dates.length - 1]])
      assert.equal(body._agent.billing_code, 'returns_decomposition_v1')
      body.dates.forEach((_, d) => {
        const at = (a: Num[] | undefined) => a?.[d] ?? null
        const g = at(body.gross)
        const c3 = at(body.l3_cfr)
        const rr = at(body.l3_rr)
        if (g === null || c3 === null || rr === null) return
        checked++
        assert.ok(Math.abs(g - (c3 + rr)) <= 1e-12, `${s.ticker} ${body.dates[d]}: gross ≠ l3_cfr + l3_rr`)
        // A non-null l3_cfr implies every level's state and factor returns were there.
        const [c1, f1, c2, f2, f3] = [body.l1_cfr, body.l1_fr, body.l2_cfr, body.l2_fr, body.l3_fr].map(
          (a) => at(a) as number,
        ) as [number, number, number, number, number]
        assert.ok([c1, f1, c2, f2, f3].every((x) => typeof x === 'number'))
        assert.equal(c1, f1)
        assert.ok(Math.abs(c2 - (f1 + f2)) <= 1e-12)
        assert.ok(Math.abs(c3 - (f1 + f2 + f3)) <= 1e-12)
      })
    }
    assert.ok(checked > 500, `identity checked on ${checked} days`)
  })

  test('include_lstar=true and dispatch=lstar add the stored level and lstar_rr', async () => {
    const store = t.ctx.models.store('live')
    const [s] = stocks(store, 1)
    assert.ok(s)
    const e = await expectedDecomposition(store, s.index, 2)
    for (const query of [
      { ticker: s.ticker, years: 2, include_lstar: true },
      { ticker: s.ticker, years: 2, dispatch: 'lstar' as const },
    ]) {
      const body = (await t.client.call('getReturnsDecomposition', { key, query })).ok()
      assert.deepEqual(body.lstar, e.lstar)
      assert.deepEqual(body.lstar_residual_return, e.lstar_residual_return)
    }
    const bad = await t.client.call('getReturnsDecomposition', {
      key,
      query: { ticker: s.ticker, dispatch: 'l3' as 'lstar' },
    })
    assert.equal(bad.status, 400)
  })

  test('returns-decomposition as Parquet and CSV (nulls included)', async () => {
    const store = t.ctx.models.store('live')
    const [s] = stocks(store, 1)
    assert.ok(s)
    const e = await expectedDecomposition(store, s.index, 3)
    const cols: ExpectedColumn[] = [
      { name: 'date', kind: 'date', values: e.dates },
      { name: 'gross', kind: 'double', values: e.gross },
      ...PARTS.map((p): ExpectedColumn => ({ name: p, kind: 'double', values: e[p] })),
      { name: 'lstar', kind: 'text', values: e.lstar },
      { name: 'lstar_residual_return', kind: 'double', values: e.lstar_residual_return },
    ]
    assert.ok(e.l3_rr.includes(null))
    const url = `/returns-decomposition?ticker=${s.ticker}&years=3&include_lstar=true`
    const pq = await raw(t, 'GET', `${url}&format=parquet`, key)
    assert.equal(pq.status, 200, pq.text)
    assert.match(pq.headers['content-disposition'] ?? '', /filename="returns-decomposition_.+_3y\.parquet"/)
    await checkParquet(pq.bytes, cols)
    const csv = await raw(t, 'GET', `${url}&format=csv`, key)
    assert.equal(csv.status, 200)
    checkCsv(csv.text, cols)
    assert.equal((await raw(t, 'GET', `${url}&format=xml`, key)).status, 406)
  })

  test('l3-decomposition: one point per month end (default 5 years), values equal the store', async () => {
    const store = t.ctx.models.store('live')
    for (const s of stocks(store, 3)) {
      const body = (await t.client.call('getL3Decomposition', { key, query: { ticker: s.ticker } })).ok()
      const e = await expectedMonthly(store, s.index, 5)
      assert.deepEqual(body.dates, e.dates)
      for (const k of [...L3, 'sector_etf', 'subsector_etf'] as const) assert.deepEqual(body[k], e[k], k)
      assert.equal(body.periodicity, 'monthly')
      assert.equal(new Set(body.dates.map((d) => d.slice(0, 7))).size, body.dates.length)
      assert.equal(body.dates[body.dates.length - 1], store.dataAsOf)
      assert.deepEqual(body._metadata.range, [body.dates[0], body.dates[body.dates.length - 1]])
      body.dates.forEach((_, i) => {
        const ers = [body.l3_mkt_er?.[i], body.l3_sec_er?.[i], body.l3_sub_er?.[i], body.l3_res_er?.[i]]
        if (ers.every((x) => typeof x === 'number'))
          assert.ok(Math.abs((ers as number[]).reduce((a, x) => a + x, 0) - 1) < 1e-9)
      })
      assert.ok(body.sector_etf?.some((x) => x !== null))
    }
    const [s] = stocks(store, 1)
    assert.ok(s)
    const one = (
      await t.client.call('getL3Decomposition', { key, query: { ticker: s.ticker, years: 1 } })
    ).ok()
    assert.ok(one.dates.length >= 12 && one.dates.length <= 13)
    for (const years of [0, 16])
      assert.equal(
        (await t.client.call('getL3Decomposition', { key, query: { ticker: s.ticker, years } })).status,
        400,
      )
  })

  test('l3-decomposition as Parquet and CSV', async () => {
    const store = t.ctx.models.store('live')
    const [s] = stocks(store, 1)
    assert.ok(s)
    const e = await expectedMonthly(store, s.index, 5)
    const cols: ExpectedColumn[] = [
      { name: 'date', kind: 'date', values: e.dates },
      ...L3.map((k): ExpectedColumn => ({ name: k, kind: 'double', values: e[k] })),
      { name: 'sector_etf', kind: 'text', values: e.sector_etf },
      { name: 'subsector_etf', kind: 'text', values: e.subsector_etf },
    ]
    const pq = await raw(t, 'GET', `/l3-decomposition?ticker=${s.ticker}&format=parquet`, key)
    assert.equal(pq.status, 200, pq.text)
    await checkParquet(pq.bytes, cols)
    const csv = await raw(t, 'GET', `/l3-decomposition?ticker=${s.ticker}`, key, undefined, {
      accept: 'text/csv',
    })
    checkCsv(csv.text, cols)
  })
})
