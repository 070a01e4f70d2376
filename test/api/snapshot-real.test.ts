import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { buildStore } from '../../src/engine/build/index.ts'
import { writeDataset } from '../../src/engine/data/dataset-writer.ts'
import { MARKET_ETF, SECTOR_ETFS } from '../../src/engine/data/etf-registry.ts'
import type { ModelStore } from '../../src/engine/model-store/reader.ts'
import {
  type Body,
  BookMath,
  checkBody,
  expectedSnapshot,
  legMap,
  lookbackWindow,
  modelledTickers,
  near,
  rng,
  snapshotCall,
} from '../helpers/portfolio-math.ts'
import { importRealDataset, realDataPresent } from '../helpers/real-data.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * POST /snapshot on a store built from the real prices and GICS classification
 * (../shared/data/real): random books of real tickers against the independent computation of
 * test/helpers/portfolio-math.ts (docs/methodology.md §13), and economics a risk manager would
 * check: a technology-heavy book's largest sector exposure is XLK and it tracks XLK more closely
 * than XLE; a long-only book's diversification ratio is at least 1. Skips without the data.
 * The recomputed books ask `estimator: "sample"` (lookbacks up to 2,000 days, beyond ewma_nw's 504).
 */

const SECTOR_SET = new Set(Object.values(SECTOR_ETFS))

describe('POST /snapshot on real prices (../shared/data/real)', {
  skip: realDataPresent ? false : 'shared/data/real is absent',
}, () => {
  let work: string
  let t: TestApp
  let store: ModelStore
  let key: string
  let m: BookMath
  let modelled: string[]
  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'erm3-real-snapshot-'))
    const ds = await importRealDataset(join(work, 'unused'))
    await writeDataset(ds, join(work, 'dataset'))
    await buildStore({ dataset: join(work, 'dataset'), store: join(work, 'store') })
    t = await startTestApp({ liveStore: join(work, 'store') })
    store = t.ctx.models.store('live')
    key = await t.key(await t.account(100), { tier: 'premium' })
    m = new BookMath(store)
    modelled = await modelledTickers(store)
  })
  after(async () => {
    await t?.close()
    if (work) await rm(work, { recursive: true, force: true })
  })

  async function ok(body: Record<string, unknown>): Promise<Body> {
    const r = await snapshotCall(t.app, body, key)
    assert.equal(r.status, 200, `${JSON.stringify(body).slice(0, 300)} → ${r.status} ${r.text.slice(0, 500)}`)
    return r.json as Body
  }

  test('random books of real tickers (weights and shares; lookbacks 60 to 2000) equal the independent computation', async () => {
    assert.ok(modelled.length > 140, `${modelled.length} modelled real stocks`)
    const rand = rng(2026)
    const cases: [number, number, string | null][] = [
      [5, 252, null],
      [30, 1000, '60:SPY,40:XLK'],
      [12, 2000, 'SPY'],
      [1, 60, null],
      [20, 252, 'XLF'],
    ]
    for (const [c, [n, lookback, benchmark]] of cases.entries()) {
      const pool = [...modelled]
      const picked: string[] = []
      while (picked.length < n) picked.push(pool.splice(Math.floor(rand() * pool.length), 1)[0] as string)
      const byShares = c % 2 === 0
      const rows = picked.map((ticker) =>
        byShares
          ? { ticker, shares: 1 + Math.floor(rand() * 500) }
          : { ticker, weight: Math.round((0.1 + rand() * 5) * 1000) / 1000 },
      )
      const what = `real book ${c} (${n} stocks, lookback ${lookback}, benchmark ${benchmark})`
      const body = await ok({
        type: 'portfolio',
        portfolio: rows,
        lookback_days: lookback,
        benchmark,
        estimator: 'sample',
      })
      const book = await m.holdings(rows, lookback)
      let legs = null
      if (benchmark === '60:SPY,40:XLK')
        legs = await m.benchLegs(
          [
            { ticker: 'SPY', weight: 0.6 },
            { ticker: 'XLK', weight: 0.4 },
          ],
          lookback,
        )
      else if (benchmark) legs = await m.benchLegs([{ ticker: benchmark, weight: 1 }], lookback)
      const exp = await expectedSnapshot(store, book, lookbackWindow(store, lookback), legs)
      assert.ok(exp.risk, `${what}: risk figures`)
      checkBody(store, body, exp, what)
      if (exp.bench) {
        const act = body.risk_summary.active
        assert.ok(act)
        const tol = (252 * 1e-11 * exp.bench.teScale) / (2 * exp.bench.te) + 1e-15
        assert.ok(
          Math.abs((act.tracking_error_ann as number) - exp.bench.te) <= tol,
          `${what} tracking error: got ${act.tracking_error_ann}, expected ${exp.bench.te}`,
        )
      }
      // A long-only book: the diversification ratio is at least 1 (up to rounding).
      assert.ok((body.snapshot.diversification_ratio as number) >= 1 - 1e-12, `${what} DR`)
      assert.ok(
        (body.snapshot.volatility_ann as number) > 0.03 && (body.snapshot.volatility_ann as number) < 1.5,
      )
    }
  })

  test('a technology-heavy book: largest sector exposure on XLK, closer to XLK than to XLE; DR ≥ 1', async () => {
    const sectorOf = (ticker: string) => store.symbols[store.resolve(ticker)]?.sector
    const tech = modelled.filter((x) => sectorOf(x) === 'Information Technology').slice(0, 12)
    const other = modelled.filter((x) => sectorOf(x) && sectorOf(x) !== 'Information Technology').slice(0, 4)
    assert.ok(tech.length >= 8 && other.length === 4, `${tech.length} tech, ${other.length} others`)
    const portfolio = [
      ...tech.map((ticker) => ({ ticker, weight: 80 / tech.length })),
      ...other.map((ticker) => ({ ticker, weight: 5 })),
    ]
    const vsXlk = await ok({ type: 'portfolio', portfolio, benchmark: 'XLK', estimator: 'sample' })
    const vsXle = await ok({ type: 'portfolio', portfolio, benchmark: 'XLE' })
    // L2: the sector legs themselves.
    const l2 = [...legMap(vsXlk.snapshot.hedges.L2)]
      .filter(([e]) => SECTOR_SET.has(e))
      .sort((a, b) => b[1] - a[1])
    assert.equal(l2[0]?.[0], 'XLK', `L2 sector exposures: ${JSON.stringify(l2)}`)
    // L3: a subsector ETF takes most of a stock's sector move (XLK's own L3 leg is often small or
    // negative), so the sector exposure at L3 is the sector ETF's leg plus its subsector ETFs' legs.
    const sectorOfEtf = new Map<string, string>()
    for (const p of vsXlk.snapshot.positions) {
      const h = p.hedge_etfs
      if (h.sector) sectorOfEtf.set(h.sector, h.sector)
      if (h.sector && h.subsector) sectorOfEtf.set(h.subsector, h.sector)
    }
    const l3 = new Map<string, number>()
    for (const [e, hr] of legMap(vsXlk.snapshot.hedges.L3)) {
      const sector = sectorOfEtf.get(e)
      if (sector) l3.set(sector, (l3.get(sector) ?? 0) + hr)
    }
    const l3s = [...l3].sort((a, b) => b[1] - a[1])
    assert.equal(
      l3s[0]?.[0],
      'XLK',
      `L3 sector exposures (sector + its subsector ETFs): ${JSON.stringify(l3s)}`,
    )
    near(
      l3s[0]?.[1],
      (l2[0]?.[1] as number) ?? 0,
      0.15,
      'the L3 tech exposure (XLK + tech subsectors) is close to the L2 XLK exposure',
    )
    // The independent computation for this book too.
    const book = await m.holdings(portfolio, 252)
    const legs = await m.benchLegs([{ ticker: 'XLK', weight: 1 }], 252)
    checkBody(
      store,
      vsXlk,
      await expectedSnapshot(store, book, lookbackWindow(store, 252), legs),
      'tech book vs XLK',
    )
    const market = legMap(vsXlk.snapshot.hedges.L1).get(MARKET_ETF) as number
    assert.ok(market > 0.8 && market < 1.6, `a tech book's market beta ${market}`)
    const te = (b: Body) => b.risk_summary.active?.tracking_error_ann as number
    assert.ok(te(vsXlk) < te(vsXle), `TE vs XLK ${te(vsXlk)} < TE vs XLE ${te(vsXle)}`)
    assert.ok((vsXlk.snapshot.diversification_ratio as number) >= 1)
    const split = vsXlk.snapshot.variance_decomposition
    assert.ok((split.market as number) > 0.3, `a tech book is mostly market risk: ${JSON.stringify(split)}`)
    // The same book against itself: no active risk.
    const self = await ok({
      type: 'portfolio',
      portfolio,
      benchmark: portfolio.map((p) => `${p.weight}:${p.ticker}`).join(','),
    })
    assert.ok(Math.abs(te(self)) < 1e-7, `TE against itself ${te(self)}`)
  })
})
