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

/** docs/methodology.md §9 written out directly. */
function rule(sec: Num, sub: Num, theta: number): 'L1' | 'L2' | 'L3' | null {
  if (sec === null && sub === null) return null
  if (sub !== null && sub >= theta) return 'L3'
  if (sec !== null && sec >= theta) return 'L2'
  return 'L1'
}

const FIELDS = [
  'l1_mkt_hr',
  'l2_mkt_hr',
  'l2_sec_hr',
  'l3_mkt_hr',
  'l3_sec_hr',
  'l3_sub_hr',
  'l1_res_er',
  'l2_res_er',
  'l3_res_er',
  'l2_sec_er',
  'l3_sub_er',
  'l1_rr',
  'l2_rr',
  'l3_rr',
  'lstar_rr',
  'lstar_level',
] as const

async function expectedLstar(store: ModelStore, i: number, years: number, theta: number) {
  const { from, to } = await expectedWindow(store, i, years)
  const h = await store.history(i, FIELDS)
  const v = (f: (typeof FIELDS)[number], t: number) => n(h[f][t])
  const lvl = (t: number) => (t < 0 ? null : rule(v('l2_sec_er', t), v('l3_sub_er', t), theta))
  const e = {
    dates: [] as string[],
    lstar: [] as ('L1' | 'L2' | 'L3' | null)[],
    market_hr: [] as Num[],
    sector_hr: [] as Num[],
    subsector_hr: [] as Num[],
    total_er: [] as Num[],
    residual_return: [] as Num[],
    l2_sector_er: [] as Num[],
    l3_subsector_er: [] as Num[],
    stored_level: [] as ('L1' | 'L2' | 'L3' | null)[],
    stored_lstar_rr: [] as Num[],
  }
  for (let t = from; t < to; t++) {
    const k = lvl(t)
    const p = lvl(t - 1)
    e.dates.push(store.date(t))
    e.lstar.push(k)
    e.market_hr.push(
      k === null ? null : v(k === 'L1' ? 'l1_mkt_hr' : k === 'L2' ? 'l2_mkt_hr' : 'l3_mkt_hr', t),
    )
    e.sector_hr.push(k === 'L2' ? v('l2_sec_hr', t) : k === 'L3' ? v('l3_sec_hr', t) : null)
    e.subsector_hr.push(k === 'L3' ? v('l3_sub_hr', t) : null)
    const res = k === null ? null : v(k === 'L1' ? 'l1_res_er' : k === 'L2' ? 'l2_res_er' : 'l3_res_er', t)
    e.total_er.push(res === null ? null : 1 - res)
    e.residual_return.push(p === null ? null : v(p === 'L1' ? 'l1_rr' : p === 'L2' ? 'l2_rr' : 'l3_rr', t))
    e.l2_sector_er.push(v('l2_sec_er', t))
    e.l3_subsector_er.push(v('l3_sub_er', t))
    const code = h.lstar_level[t]
    e.stored_level.push(code === 1 ? 'L1' : code === 2 ? 'L2' : code === 3 ? 'L3' : null)
    e.stored_lstar_rr.push(v('lstar_rr', t))
  }
  return e
}

const SERIES = [
  'dates',
  'lstar',
  'market_hr',
  'sector_hr',
  'subsector_hr',
  'total_er',
  'residual_return',
  'l2_sector_er',
  'l3_subsector_er',
] as const

describe('GET /lstar', () => {
  let t: TestApp
  let account: string
  let key: string
  let testKey: string
  before(async () => {
    t = await startTestApp()
    account = await t.account(5)
    key = await t.key(account)
    testKey = await t.key(account, { env: 'test' })
  })
  after(() => t?.close())

  test('θ = 0.01: the stored lstar_level and lstar_rr, the HRs and ER of that level, exact', async () => {
    const store = t.ctx.models.store('live')
    for (const s of stocks(store, 4)) {
      for (const years of [1, 3]) {
        const res = await t.client.call('getLstar', { key, query: { ticker: s.ticker.toLowerCase(), years } })
        const body = res.ok()
        const e = await expectedLstar(store, s.index, years, 0.01)
        for (const k of SERIES) assert.deepEqual(body[k], e[k], `${s.ticker} ${years}y ${k}`)
        assert.deepEqual(body.lstar, e.stored_level)
        assert.deepEqual(body.residual_return, e.stored_lstar_rr)
        assert.ok(
          body.lstar.some((l) => l !== null),
          `${s.ticker}: some model days`,
        )
        assert.equal(body.ticker, s.ticker)
        assert.equal(body.threshold_used, 0.01)
        assert.deepEqual(body._metadata.range, [e.dates[0], e.dates[e.dates.length - 1]])
        assert.equal(res.headers['x-data-as-of'], store.dataAsOf)
        assert.equal(body._agent.billing_code, 'lstar_v1')
      }
    }
    const bal = (await t.client.call('getBalance', { key })).ok()
    assert.equal(Math.round(bal.balance_usd * 1e6), 5_000_000 - 8 * 20_000)
  })

  test('another θ recomputes the §7 rule (null rule, null l3_sub_er, ties with >=)', async () => {
    const store = t.ctx.models.store('live')
    let differs = 0
    for (const s of stocks(store, 3)) {
      const base = await expectedLstar(store, s.index, 2, 0.01)
      for (const theta of [0, 0.003, 0.05, 0.5]) {
        const body = (
          await t.client.call('getLstar', { key, query: { ticker: s.ticker, years: 2, threshold: theta } })
        ).ok()
        const e = await expectedLstar(store, s.index, 2, theta)
        for (const k of SERIES) assert.deepEqual(body[k], e[k], `${s.ticker} θ=${theta} ${k}`)
        assert.equal(body.threshold_used, theta)
        differs += e.lstar.filter((l, i) => l !== base.lstar[i]).length
      }
      // A tie: θ equal to a day's own l3_sub_er dispatches that day to L3.
      const i = base.l3_subsector_er.findIndex((x) => x !== null && x > 0 && x <= 0.5)
      if (i >= 0) {
        const theta = base.l3_subsector_er[i] as number
        const body = (
          await t.client.call('getLstar', { key, query: { ticker: s.ticker, years: 2, threshold: theta } })
        ).ok()
        assert.equal(body.lstar?.[i], 'L3')
      }
    }
    assert.ok(differs > 0, 'some θ changes some level')
  })

  test('Parquet and CSV: one long table, read back by DuckDB, hyparquet and csv-parse', async () => {
    const store = t.ctx.models.store('live')
    const [s] = stocks(store, 1)
    assert.ok(s)
    const e = await expectedLstar(store, s.index, 3, 0.01)
    const cols: ExpectedColumn[] = [
      { name: 'ticker', kind: 'text', values: e.dates.map(() => s.ticker) },
      { name: 'date', kind: 'date', values: e.dates },
      { name: 'lstar', kind: 'text', values: e.lstar },
      ...SERIES.slice(2).map((k): ExpectedColumn => ({ name: k, kind: 'double', values: e[k] })),
    ]
    const pq = await raw(t, 'GET', `/lstar?ticker=${s.ticker}&years=3&format=parquet`, key)
    assert.equal(pq.status, 200, pq.text)
    assert.equal(pq.headers['content-type'], 'application/vnd.apache.parquet')
    assert.match(pq.headers['content-disposition'] ?? '', /attachment; filename="lstar_.+_3y\.parquet"/)
    assert.equal(pq.headers['x-risk-model-version'], store.manifest.model_version)
    await checkParquet(pq.bytes, cols)
    const csv = await raw(t, 'GET', `/lstar?ticker=${s.ticker}&years=3`, key, undefined, {
      accept: 'text/csv',
    })
    assert.equal(csv.status, 200)
    assert.match(csv.headers['content-type'] ?? '', /^text\/csv/)
    checkCsv(csv.text, cols)
    assert.ok(e.lstar.includes(null) || e.residual_return.includes(null), 'the table has nulls to round-trip')
  })

  test('errors: θ and years out of range 400, unknown 404 with suggestions, format=xml 406; all free', async () => {
    const store = t.ctx.models.store('live')
    const [s] = stocks(store, 1)
    assert.ok(s)
    const before = (await t.client.call('getBalance', { key })).ok().balance_usd
    const code = async (query: Record<string, unknown>, status: number, c: string) => {
      const r = await t.client.call('getLstar', { key, query: query as { ticker: string } })
      assert.equal(r.status, status, JSON.stringify(query))
      assert.equal((r.json as { code: string }).code, c)
      return r.json as Record<string, unknown>
    }
    await code({ ticker: s.ticker, threshold: 0.6 }, 400, 'INVALID_REQUEST')
    await code({ ticker: s.ticker, threshold: -0.01 }, 400, 'INVALID_REQUEST')
    await code({ ticker: s.ticker, years: 0 }, 400, 'INVALID_REQUEST')
    await code({ ticker: s.ticker, years: 16 }, 400, 'INVALID_REQUEST')
    await code({ ticker: s.ticker, years: 1.5 }, 400, 'INVALID_REQUEST')
    await code({ ticker: '$$$' }, 400, 'INVALID_TICKER')
    const nf = await code({ ticker: `${s.ticker}X` }, 404, 'TICKER_NOT_FOUND')
    assert.ok(Array.isArray(nf.suggestions) && nf.suggestions.includes(s.ticker))
    const xml = await raw(t, 'GET', `/lstar?ticker=${s.ticker}&format=xml`, key)
    assert.equal(xml.status, 406)
    assert.equal((await t.client.call('getBalance', { key })).ok().balance_usd, before)
  })

  test('test keys read the sandbox store with the same shape and cost nothing', async () => {
    const sandbox = t.ctx.models.store('test')
    const [s] = stocks(sandbox, 1)
    assert.ok(s)
    const r = await t.client.call('getLstar', { key: testKey, query: { ticker: s.ticker, years: 3 } })
    const body = r.ok()
    const e = await expectedLstar(sandbox, s.index, 3, 0.01)
    for (const k of SERIES) assert.deepEqual(body[k], e[k], k)
    assert.equal(body._agent.cost_usd, 0)
    assert.equal(r.headers['x-environment'], 'test')
  })
})
