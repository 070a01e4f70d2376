/**
 * A stock's row on a day it has no price. A missing close inside a stock's
 * listed life (its first to its last priced day) is a day like any other for the model: the
 * state at t is the fit over the window ending at t, where t (and t+1, whose return needs t's
 * close, docs/methodology.md §2) simply do not contribute. The store, the export and the history
 * endpoints all have that day; returns and decomposition are null on it. Days before the first
 * and after the last price still have no rows. Every number is checked against a direct
 * weighted regression written here (it shares no code with src/).
 */
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { buildStore } from '../../src/engine/build/index.ts'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import { writeDataset } from '../../src/engine/data/dataset-writer.ts'
import type { Dataset } from '../../src/engine/data/format.ts'
import { generateSynthetic } from '../../src/engine/data/synth/index.ts'
import { CsvTableWriter } from '../../src/engine/export/csv-table.ts'
import { STATE_FIELDS } from '../../src/engine/model/stock-kernel.ts'
import { ModelStore } from '../../src/engine/model-store/reader.ts'
import { DECOMP_FIELDS } from '../../src/platform/metric-fields.ts'
import { type ExportBlock, exportBlocks, planExport } from '../../src/services/analytics/export-panel.ts'
import { TICKER_RETURNS_L3_FIELDS } from '../../src/services/analytics/returns.ts'
import { importRealDataset, realDataPresent } from '../helpers/real-data.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

// ---- the direct computation (docs/methodology.md §2–§7, §10 with the default parameters)

const W = 252
const H = 126
const MIN_OBS = 126

type Expected = Record<string, number>

const dot = (w: number[], a: number[], b: number[]) => a.reduce((s, v, k) => s + w[k] * v * b[k], 0)

/** Returns of one symbol straight from the adjusted closes (null when either close is). */
function returnsOf(ds: Dataset, symbol: string): number[] {
  const a = ds.prices.adj_close[ds.symbols.indexOf(symbol)]
  return Array.from(a, (v, t) => (t === 0 ? Number.NaN : v / a[t - 1] - 1))
}

/** The factor ETFs of a stock (one classification row), the subsector null without an ETF. */
function factorsOf(ds: Dataset, symbol: string): { m: string; s: string; u: string | null } {
  const row = ds.securities.find((r) => r.symbol === symbol)
  const etf = (ticker: string | null | undefined) =>
    ds.securities.find((r) => r.ticker === ticker && r.assetType === 'etf')?.symbol ?? null
  const m = etf(ds.factors.find((f) => f.role === 'market')?.ticker)
  const s = etf(ds.factors.find((f) => f.role === 'sector' && f.code === row?.sector)?.ticker)
  const u = etf(ds.factors.find((f) => f.role === 'subsector' && f.code === row?.industry)?.ticker)
  assert.ok(m && s, `${symbol} has a market and a sector ETF`)
  return { m, s, u }
}

/** Every state field of `symbol` after the close of `t`, by a weighted regression over the window. */
function directState(
  ds: Dataset,
  symbol: string,
  t: number,
): { fields: Expected; days: number[]; scale: Expected } {
  const f = factorsOf(ds, symbol)
  const r = returnsOf(ds, symbol)
  const m = returnsOf(ds, f.m)
  const s = returnsOf(ds, f.s)
  const uRaw = f.u ? returnsOf(ds, f.u) : null
  const window: number[] = []
  for (let d = t; d > t - W && d >= 0; d--) window.push(d)
  const fallback = !uRaw || window.filter((d) => !Number.isNaN(uRaw[d])).length < MIN_OBS
  const pick = (series: number[][]) => {
    const days = window.filter((d) => series.every((x) => !Number.isNaN(x[d])))
    return { days, w: days.map((d) => 0.5 ** ((t - d) / H)), at: (x: number[]) => days.map((d) => x[d]) }
  }
  const out: Expected = {}
  const scale: Expected = {}
  // L1
  const l1 = pick([r, m])
  assert.ok(l1.days.length >= MIN_OBS)
  {
    const [R, M] = [l1.at(r), l1.at(m)]
    const bm = dot(l1.w, R, M) / dot(l1.w, M, M)
    const rr = dot(l1.w, R, R)
    const e = R.map((v, k) => v - bm * M[k])
    Object.assign(out, {
      l1_mkt_beta: bm,
      l1_mkt_hr: bm,
      l1_mkt_er: (bm * bm * dot(l1.w, M, M)) / rr,
      l1_res_er: dot(l1.w, e, e) / rr,
    })
  }
  // L2
  const l2 = pick([r, m, s])
  assert.ok(l2.days.length >= MIN_OBS)
  {
    const [R, M, S] = [l2.at(r), l2.at(m), l2.at(s)]
    const lsm = dot(l2.w, S, M) / dot(l2.w, M, M)
    const Ss = S.map((v, k) => v - lsm * M[k])
    const bm = dot(l2.w, R, M) / dot(l2.w, M, M)
    const bs = dot(l2.w, R, Ss) / dot(l2.w, Ss, Ss)
    const rr = dot(l2.w, R, R)
    const e = R.map((v, k) => v - bm * M[k] - bs * Ss[k])
    scale.l2_mkt_hr = Math.abs(bm) + Math.abs(bs * lsm)
    Object.assign(out, {
      l2_mkt_hr: bm - bs * lsm,
      l2_sec_hr: bs,
      l2_mkt_er: (bm * bm * dot(l2.w, M, M)) / rr,
      l2_sec_er: (bs * bs * dot(l2.w, Ss, Ss)) / rr,
      l2_res_er: dot(l2.w, e, e) / rr,
      l2_sec_beta: bs,
    })
  }
  // L3 (or the fallback: L2 with a zero subsector leg)
  if (fallback || !uRaw) {
    Object.assign(out, {
      l3_mkt_hr: out.l2_mkt_hr,
      l3_sec_hr: out.l2_sec_hr,
      l3_sub_hr: 0,
      l3_mkt_er: out.l2_mkt_er,
      l3_sec_er: out.l2_sec_er,
      l3_sub_er: 0,
      l3_res_er: out.l2_res_er,
      l3_sub_beta: Number.NaN,
    })
  } else {
    const l3 = pick([r, m, s, uRaw])
    assert.ok(l3.days.length >= MIN_OBS)
    const [R, M, S, U] = [l3.at(r), l3.at(m), l3.at(s), l3.at(uRaw)]
    const mm = dot(l3.w, M, M)
    const lsm = dot(l3.w, S, M) / mm
    const Ss = S.map((v, k) => v - lsm * M[k])
    const lum = dot(l3.w, U, M) / mm
    const lus = dot(l3.w, U, Ss) / dot(l3.w, Ss, Ss)
    const Us = U.map((v, k) => v - lum * M[k] - lus * Ss[k])
    const bm = dot(l3.w, R, M) / mm
    const bs = dot(l3.w, R, Ss) / dot(l3.w, Ss, Ss)
    const bu = dot(l3.w, R, Us) / dot(l3.w, Us, Us)
    const rr = dot(l3.w, R, R)
    const e = R.map((v, k) => v - bm * M[k] - bs * Ss[k] - bu * Us[k])
    // Sums of terms that partly cancel: their rounding scales with the terms, not the sum.
    scale.l3_mkt_hr = Math.abs(bm) + Math.abs(bs * lsm) + Math.abs(bu * lum) + Math.abs(bu * lus * lsm)
    scale.l3_sec_hr = Math.abs(bs) + Math.abs(bu * lus)
    Object.assign(out, {
      l3_mkt_hr: bm - bs * lsm - bu * lum + bu * lus * lsm,
      l3_sec_hr: bs - bu * lus,
      l3_sub_hr: bu,
      l3_mkt_er: (bm * bm * mm) / rr,
      l3_sec_er: (bs * bs * dot(l3.w, Ss, Ss)) / rr,
      l3_sub_er: (bu * bu * dot(l3.w, Us, Us)) / rr,
      l3_res_er: dot(l3.w, e, e) / rr,
      l3_sub_beta: bu,
    })
  }
  // §8: sample variances of the non-null returns of the last 23 and 252 calendar days.
  const sampleVar = (xs: number[]) => {
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length
    return xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1)
  }
  const last = (n: number) => r.slice(Math.max(0, t - n + 1), t + 1).filter((v) => !Number.isNaN(v))
  out.stock_var = sampleVar(last(23))
  out.vol_23d = Math.sqrt(252 * out.stock_var)
  out.vol_252d_ann = Math.sqrt(252 * sampleVar(last(252)))
  return { fields: out, days: l1.days, scale }
}

/** Agreement to 1e-13 of the value's scale (at least 1); NaN only with NaN. */
function assertClose(actual: number, expected: number, what: string, scale = 0): void {
  if (Number.isNaN(expected)) {
    assert.ok(Number.isNaN(actual), `${what}: ${actual}, expected null`)
    return
  }
  assert.ok(
    Math.abs(actual - expected) <= 1e-13 * Math.max(1, Math.abs(expected), scale),
    `${what}: ${actual} vs direct ${expected}`,
  )
}

// ---- datasets with a gap

/** Removes every price field of `symbol` on day `t` (what a missing close looks like). */
function removeClose(ds: Dataset, symbol: string, t: number): void {
  const i = ds.symbols.indexOf(symbol)
  for (const p of [ds.prices.adj_close, ds.prices.close, ds.prices.volume, ds.prices.shares_out])
    if (p) p[i][t] = Number.NaN
}

/** Calendar index of the last trading day of the month `k` months before the last day's. */
function monthEndBefore(ds: Dataset, k: number): number {
  const month = (t: number) => new Date(ds.calendar[t] * 86_400_000).toISOString().slice(0, 7)
  let t = ds.calendar.length - 1
  for (let seen = 0; t > 0; t--) if (month(t) !== month(t - 1) && ++seen === k) return t - 1
  throw new Error('calendar too short')
}

/** A stock priced on every day of [from, to] whose subsector ETF does not fall back. */
function pricedStock(ds: Dataset, from: number, to: number, except: string[] = []): string {
  const sym = ds.symbols.find((s, i) => {
    const rows = ds.securities.filter((r) => r.symbol === s)
    if (rows.length !== 1 || rows[0].assetType !== 'stock' || except.includes(s)) return false
    const a = ds.prices.adj_close[i]
    for (let t = from; t <= to; t++) if (Number.isNaN(a[t])) return false
    const u = ds.factors.find((f) => f.role === 'subsector' && f.code === rows[0].industry)?.ticker
    const ui = ds.symbols.indexOf(u ?? '')
    return ui >= 0 && !Number.isNaN(ds.prices.adj_close[ui][from - W])
  })
  assert.ok(sym, 'a stock priced over the whole range')
  return sym
}

/**
 * The state fields with a direct value here (the levels are the §7 rule on them, tested
 * elsewhere; the style split, gaps included, against its own oracle in test/model/kernel.test.ts
 * and test/services/build-synth.test.ts).
 */
const NOT_DIRECT: ReadonlySet<string> = new Set([
  'lstar_level',
  'recommended_level',
  'l3_style_er',
  'style_factors',
])
const STATE = STATE_FIELDS.filter((f) => !NOT_DIRECT.has(f))
const DECOMP = DECOMP_FIELDS

/** The export rows of one ticker as date → column → value. */
async function exportRows(storeDir: string, ticker: string): Promise<Map<string, Map<string, number>>> {
  const store = await ModelStore.open(storeDir)
  try {
    const rows = new Map<string, Map<string, number>>()
    for await (const b of exportBlocks(store, planExport(store, { tickers: [ticker] }))) {
      b.date.forEach((d, k) => {
        const iso = new Date(d * 86_400_000).toISOString().slice(0, 10)
        rows.set(iso, new Map([...b.numbers].map(([f, v]) => [f, v[k]])))
      })
    }
    return rows
  } finally {
    await store.close()
  }
}

async function exportCsv(storeDir: string, out: string): Promise<Buffer> {
  const store = await ModelStore.open(storeDir)
  const plan = planExport(store, {})
  const w = new CsvTableWriter(out, plan.fields)
  for await (const b of exportBlocks(store, plan)) await w.write(b as ExportBlock)
  await w.close()
  await store.close()
  return readFile(out)
}

const iso = (ds: Dataset, t: number) => new Date(ds.calendar[t] * 86_400_000).toISOString().slice(0, 10)

// ---- the synthetic panel with a one-day gap at g and a missing close on data_as_of

const dir = await mkdtemp(join(tmpdir(), 'erm3-gap-'))
after(() => rm(dir, { recursive: true, force: true }))
const ds = generateSynthetic({
  seed: 12,
  stocks: 30,
  start: '2018-01-02',
  end: '2020-12-31',
  fundamentals: false,
})
const T = ds.calendar.length
/** The gap day: a month end, so /l3-decomposition serves it too. */
const g = monthEndBefore(ds, 2)
const gapStock = pricedStock(ds, g - W - 5, T - 1)
/** A stock whose only missing close is the last day (data_as_of). */
const tailStock = pricedStock(ds, g - W - 5, T - 1, [gapStock])
/** A second gap of the same stock on the first day of its 1-year series (after 2019-12-31). */
const g0 = ds.calendar.findIndex((d) => d > Date.UTC(2019, 11, 31) / 86_400_000)
assert.ok(g0 > g - W - 5 && g0 < g - 2)
removeClose(ds, gapStock, g)
removeClose(ds, gapStock, g0)
removeClose(ds, tailStock, T - 1)
const datasetDir = join(dir, 'dataset')
await writeDataset(ds, datasetDir)
const storeDir = join(dir, 'store')
await buildStore({ dataset: datasetDir, store: storeDir })
const gapTicker = ds.securities.find((r) => r.symbol === gapStock)?.ticker as string
const tailTicker = ds.securities.find((r) => r.symbol === tailStock)?.ticker as string

describe('a stock-day without a price inside the listed life', () => {
  test('the fixture: one-day gaps at g0 and g inside the life, returns null on them and the next day', () => {
    const r = returnsOf(ds, gapStock)
    for (const d of [g0, g]) {
      assert.ok(Number.isNaN(r[d]) && Number.isNaN(r[d + 1]))
      assert.ok(!Number.isNaN(r[d - 1]) && !Number.isNaN(r[d + 2]))
    }
  })

  test('the stored model at g is the window fit with g and g+1 not contributing (direct regression)', async () => {
    const store = await ModelStore.open(storeDir)
    try {
      const i = store.resolve(gapTicker)
      for (const t of [g - 1, g, g + 1, g + 2]) {
        const { fields, days, scale } = directState(ds, gapStock, t)
        assert.ok(!days.includes(g) && !days.includes(g + 1))
        const h = await store.history(i, STATE, t, t + 1)
        for (const f of STATE) assertClose(h[f][0] as number, fields[f], `${f} at ${iso(ds, t)}`, scale[f])
      }
      const d = await store.history(i, ['returns_gross', 'price_close', 'market_cap', ...DECOMP], g, g + 2)
      for (const f of ['returns_gross', ...DECOMP]) {
        assert.ok(Number.isNaN(d[f][0]) && Number.isNaN(d[f][1]), `${f} null at g and g+1`)
      }
      assert.ok(Number.isNaN(d.price_close[0]) && Number.isNaN(d.market_cap[0]))
      assert.ok(!Number.isNaN(d.price_close[1]))
    } finally {
      await store.close()
    }
  })

  test('export: a row on the gap day with null returns and the window fit; none outside the life', async () => {
    const rows = await exportRows(storeDir, gapTicker)
    const day = rows.get(iso(ds, g))
    assert.ok(day, `an export row for ${gapTicker} on ${iso(ds, g)}`)
    const { fields, scale } = directState(ds, gapStock, g)
    for (const f of STATE) assertClose(day.get(f) as number, fields[f], `export ${f}`, scale[f])
    for (const f of ['returns_gross', 'price_close', 'market_cap', ...DECOMP])
      assert.ok(Number.isNaN(day.get(f)), `export ${f} null on the gap day`)
    assert.ok(Number.isNaN(rows.get(iso(ds, g + 1))?.get('returns_gross')), 'and the next day’s return')
    // One row per day of the listed life (first to last priced day), the gap included.
    const a = ds.prices.adj_close[ds.symbols.indexOf(gapStock)]
    const first = a.findIndex((v) => !Number.isNaN(v))
    let last = T - 1
    while (Number.isNaN(a[last])) last--
    assert.deepEqual(
      [...rows.keys()],
      Array.from({ length: last - first + 1 }, (_, k) => iso(ds, first + k)),
    )
  })

  test('export: a delisted or not-yet-listed stock has no rows outside its priced life', async () => {
    const store = await ModelStore.open(storeDir)
    try {
      for (const [i, meta] of store.symbols.entries()) {
        const a = ds.prices.adj_close[ds.symbols.indexOf(meta.symbol)]
        const first = a.findIndex((v) => !Number.isNaN(v))
        let last = T - 1
        while (last >= 0 && Number.isNaN(a[last])) last--
        const plan = planExport(store, { fields: ['returns_gross'] })
        plan.symbols = [i]
        let n = 0
        let lo = Number.POSITIVE_INFINITY
        let hi = -1
        for await (const b of exportBlocks(store, plan)) {
          n += b.date.length
          lo = Math.min(lo, b.date[0])
          hi = Math.max(hi, b.date[b.date.length - 1])
        }
        if (first < 0) {
          assert.equal(n, 0, meta.symbol)
          continue
        }
        assert.equal(n, last - first + 1, meta.symbol)
        assert.equal(lo, ds.calendar[first])
        assert.equal(hi, ds.calendar[last])
      }
    } finally {
      await store.close()
    }
  })

  test('the synthetic market’s own halts leave days without a close inside lives; each is exported', async (t) => {
    const store = await ModelStore.open(storeDir)
    try {
      let days = 0
      let oneDay = 0
      for (const [k, sym] of ds.symbols.entries()) {
        const rows = ds.securities.filter((r) => r.symbol === sym)
        if (rows[0]?.assetType !== 'stock' || sym === gapStock || sym === tailStock) continue
        const a = ds.prices.adj_close[k]
        const first = a.findIndex((v) => !Number.isNaN(v))
        let last = T - 1
        while (last >= 0 && Number.isNaN(a[last])) last--
        const halted: number[] = []
        for (let d = first + 1; d < last; d++) if (Number.isNaN(a[d])) halted.push(d)
        if (halted.length === 0) continue
        days += halted.length
        oneDay += halted.filter((d) => !Number.isNaN(a[d - 1]) && !Number.isNaN(a[d + 1])).length
        const plan = planExport(store, { fields: ['returns_gross', 'price_close', 'l1_mkt_hr'] })
        plan.symbols = [store.symbols.findIndex((m) => m.symbol === sym)]
        const exported = new Map<number, number>()
        for await (const b of exportBlocks(store, plan)) {
          const px = b.numbers.get('price_close') as Float64Array
          for (const [j, d] of b.date.entries()) exported.set(d, px[j])
        }
        for (const d of halted) {
          assert.ok(exported.has(ds.calendar[d]), `${sym}: a row on ${iso(ds, d)}`)
          assert.ok(Number.isNaN(exported.get(ds.calendar[d])))
        }
      }
      t.diagnostic(`${days} halted stock-days inside listed lives, ${oneDay} of them one-day gaps`)
      assert.ok(days > 0, 'the synthetic market halts some stocks')
    } finally {
      await store.close()
    }
  })

  describe('served by the history endpoints', () => {
    let t: TestApp
    let key: string
    before(async () => {
      t = await startTestApp({ liveStore: storeDir })
      key = await t.key(await t.account(5))
    })
    after(() => t?.close())

    test('/ticker-returns, /returns-decomposition, /lstar and /l3-decomposition have the gap day', async () => {
      const day = iso(ds, g)
      const next = iso(ds, g + 1)
      const { fields, scale } = directState(ds, gapStock, g)
      const query = { ticker: gapTicker, years: 1 }
      const tr = (await t.client.call('getTickerReturns', { key, query })).ok()
      assert.equal(tr.data[0]?.date, iso(ds, g0), 'a gap on the first day of the window is served too')
      assert.equal(tr.data[0]?.price_close, null)
      assert.deepEqual(tr._metadata.range, [iso(ds, g0), iso(ds, T - 1)])
      const row = tr.data.find((x) => x.date === day)
      assert.ok(row, '/ticker-returns row on the gap day')
      assert.equal(row.returns_gross, null)
      assert.equal(row.price_close, null)
      for (const f of TICKER_RETURNS_L3_FIELDS)
        assertClose(row[f] as number, fields[f], `/ticker-returns ${f}`, scale[f])
      assert.equal(tr.data.find((x) => x.date === next)?.returns_gross, null)

      const rd = (await t.client.call('getReturnsDecomposition', { key, query })).ok()
      const k = rd.dates.indexOf(day)
      assert.ok(k >= 0, '/returns-decomposition has the gap day')
      assert.equal(rd.gross?.[k], null)
      assert.equal(rd.l3_rr?.[k], null)
      assert.equal(rd.l3_cfr?.[k + 1], null, 'the next day has no return to decompose either')

      const ls = (await t.client.call('getLstar', { key, query })).ok()
      const j = ls.dates.indexOf(day)
      assert.ok(j >= 0, '/lstar has the gap day')
      assert.equal(ls.residual_return?.[j], null)
      assertClose(ls.l3_subsector_er?.[j] as number, fields.l3_sub_er, '/lstar l3_subsector_er')

      const l3 = (
        await t.client.call('getL3Decomposition', { key, query: { ticker: gapTicker, years: 2 } })
      ).ok()
      const e = l3.dates.indexOf(day)
      assert.ok(e >= 0, '/l3-decomposition has the gap day (a month end)')
      assertClose(
        l3.l3_mkt_hr?.[e] as number,
        fields.l3_mkt_hr,
        '/l3-decomposition l3_mkt_hr',
        scale.l3_mkt_hr,
      )
    })

    test('a missing close on data_as_of: /metrics and /decompose show the last priced day (teo), as does every series', async () => {
      const lastPriced = iso(ds, T - 2)
      const { fields, scale } = directState(ds, tailStock, T - 2)
      const m = (await t.client.call('getMetrics', { key, params: { ticker: tailTicker } })).ok()
      assert.equal(m.teo, lastPriced)
      assert.notEqual(m.teo, m._metadata.data_as_of)
      assert.equal(m._agent.confidence.factors.freshness, 0.5)
      assertClose(m.metrics.l3_mkt_hr as number, fields.l3_mkt_hr, '/metrics l3_mkt_hr', scale.l3_mkt_hr)
      assert.ok(m.metrics.price_close !== null, 'with that day’s close')
      const d = (await t.client.call('decompose', { key, body: { ticker: tailTicker } })).ok()
      assert.equal(d.teo, lastPriced)
      const tr = (
        await t.client.call('getTickerReturns', { key, query: { ticker: tailTicker, years: 1 } })
      ).ok()
      assert.equal(tr.data.at(-1)?.date, lastPriced)
      const rows = await exportRows(storeDir, tailTicker)
      assert.equal([...rows.keys()].at(-1), lastPriced)
    })
  })

  test('incremental builds give the full build’s numbers and rows, whether g is a new day or the last old one', async () => {
    const full = await exportCsv(storeDir, join(dir, 'full.csv'))
    for (const drop of [T - 1 - g, T - 1 - g - 3]) {
      // The dataset as it was `drop` days ago (the gap day is its last day, or three days before it).
      const cut = (p: Float64Array[] | null) => p?.map((s) => s.slice(0, T - drop)) ?? null
      const pre: Dataset = {
        ...ds,
        calendar: ds.calendar.slice(0, T - drop),
        prices: {
          adj_close: cut(ds.prices.adj_close) ?? [],
          close: cut(ds.prices.close),
          volume: cut(ds.prices.volume),
          shares_out: cut(ds.prices.shares_out),
        },
        series: ds.series
          ? { ...ds.series, values: ds.series.values.map((v) => v.slice(0, T - drop)) }
          : null,
        truth: null,
      }
      const preDir = join(dir, `pre-${drop}`)
      const inc = join(dir, `inc-${drop}`)
      await writeDataset(pre, preDir)
      await buildStore({ dataset: preDir, store: inc })
      const before = await exportRows(inc, gapTicker)
      // While g is the last day, the stock's last price is before it: no row yet (§ listed life).
      assert.equal(before.has(iso(ds, g)), g < T - drop - 1, `drop ${drop}`)
      const m = await buildStore({ dataset: datasetDir, store: inc, incremental: true })
      assert.deepEqual(m.notes, [])
      assert.ok(m.incremental_from)
      assert.ok((await exportCsv(inc, join(dir, `inc-${drop}.csv`))).equals(full), `drop ${drop}`)
      const a = await ModelStore.open(inc)
      const b = await ModelStore.open(storeDir)
      const i = a.resolve(gapTicker)
      const ha = await a.history(i, STATE)
      const hb = await b.history(i, STATE)
      for (const f of STATE) for (let d = 0; d < T; d++) assert.ok(Object.is(ha[f][d], hb[f][d]), `${f} ${d}`)
      await a.close()
      await b.close()
    }
  })
})

// ---- real prices with one close removed (in memory and a temporary dataset, never the repo)

describe('real data: one close removed from a real ticker', {
  skip: realDataPresent ? false : 'shared/data/real is absent',
}, () => {
  test('the row exists, returns are null, the model is the window fit (direct regression)', async () => {
    const work = await mkdtemp(join(tmpdir(), 'erm3-gap-real-'))
    try {
      const real = await importRealDataset(join(work, 'unused'))
      const n = real.calendar.length
      const t = n - 300
      const sym = 'MSFT'
      assert.ok(!Number.isNaN(real.prices.adj_close[real.symbols.indexOf(sym)][t]))
      removeClose(real, sym, t)
      await writeDataset(real, join(work, 'dataset'))
      await buildStore({ dataset: join(work, 'dataset'), store: join(work, 'store') })
      const rows = await exportRows(join(work, 'store'), sym)
      const day = rows.get(iso(real, t))
      assert.ok(day, `an export row for ${sym} on ${iso(real, t)}`)
      assert.ok(Number.isNaN(day.get('returns_gross')) && Number.isNaN(day.get('price_close')))
      assert.ok(Number.isNaN(rows.get(iso(real, t + 1))?.get('returns_gross')))
      assert.ok(Number.isNaN(day.get('l3_rr')))
      const { fields, scale } = directState(real, sym, t)
      for (const f of STATE) assertClose(day.get(f) as number, fields[f], `real ${sym} ${f}`, scale[f])
      assert.equal(rows.size, n, 'MSFT is priced from the first day to the last: one row per day')
      const back = await readDataset(join(work, 'dataset'))
      assert.ok(Number.isNaN(back.dataset.prices.adj_close[back.dataset.symbols.indexOf(sym)][t]))
    } finally {
      await rm(work, { recursive: true, force: true })
    }
  })
})
