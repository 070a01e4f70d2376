import assert from 'node:assert/strict'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { after, describe, test } from 'node:test'
import { buildStore } from '../../src/engine/build/index.ts'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import { writeDataset } from '../../src/engine/data/dataset-writer.ts'
import type { Dataset } from '../../src/engine/data/format.ts'
import { synthesizeDataset } from '../../src/engine/data/synthesize.ts'
import { defaultUniverseBasis, industryPanelDay } from '../../src/engine/model/cross/index.ts'
import { ModelStore } from '../../src/engine/model-store/reader.ts'
import { rankingAt } from '../../src/services/analytics/rankings-day.ts'
import { universeBasisOf } from '../../src/services/models.ts'
import * as fc from '../helpers/fc.ts'
import { importRealDataset, realDataPresent } from '../helpers/real-data.ts'

// docs/methodology.md §11–§12: a dataset without market caps falls back to uni_dv_3000 (volume)
// or to every valid stock, and the industry panel weighs members equally. Every expected number
// below is computed here from the dataset's prices, never by the build's kernels.

const dir = await mkdtemp(join(tmpdir(), 'erm3-universe-basis-'))
after(() => rm(dir, { recursive: true, force: true }))
await synthesizeDataset(join(dir, 'synth'), {
  seed: 44,
  stocks: 40,
  start: '2014-01-02',
  end: '2016-12-30',
  fundamentals: false,
})
const { dataset: synth } = await readDataset(join(dir, 'synth'))
const N = synth.symbols.length
const T = synth.calendar.length
const stockSymbols = [
  ...new Set(synth.securities.filter((s) => s.assetType === 'stock').map((s) => s.symbol)),
]
const copy = (p: Float64Array[] | null) => p?.map((s) => s.slice()) ?? null

/** Stocks priced on the last two days (so valid on data_as_of). */
const alive = stockSymbols.filter((s) => {
  const adj = synth.prices.adj_close[synth.symbols.indexOf(s)]
  return !Number.isNaN(adj[T - 1]) && !Number.isNaN(adj[T - 2])
})

/** Prices only (no shares outstanding); volume kept, with one live stock without any and one with a gap. */
function pricesWithVolume(): Dataset {
  const volume = copy(synth.prices.volume)
  if (!volume) throw new Error('the synthetic dataset has no volume')
  volume[synth.symbols.indexOf(alive[0])].fill(Number.NaN)
  volume[synth.symbols.indexOf(alive[1])].fill(Number.NaN, 200, 400)
  return { ...synth, prices: { ...synth.prices, shares_out: null, volume } }
}

async function buildFrom(name: string, ds: Dataset): Promise<string> {
  await writeDataset(ds, join(dir, `${name}-dataset`))
  await buildStore({ dataset: join(dir, `${name}-dataset`), store: join(dir, `${name}-store`) })
  return join(dir, `${name}-store`)
}

// ---- direct computations --------------------------------------------------------------------

const monthOf = (day: number) => {
  const d = new Date(day * 86_400_000)
  return d.getUTCFullYear() * 12 + d.getUTCMonth()
}

/** The dataset's panels re-indexed to the store's symbol order. */
function inStoreOrder(ds: Dataset, store: ModelStore) {
  const at = store.symbols.map((s) => ds.symbols.indexOf(s.symbol))
  const pick = (p: Float64Array[] | null) => (p ? at.map((k) => p[k]) : null)
  const adj = pick(ds.prices.adj_close) as Float64Array[]
  const close = pick(ds.prices.close) ?? adj
  const isStock = store.symbols.map((s) => s.asset_type === 'stock')
  const valid = (i: number, t: number) =>
    isStock[i] && t > 0 && !Number.isNaN(close[i][t]) && !Number.isNaN(adj[i][t] / adj[i][t - 1] - 1)
  return { adj, close, volume: pick(ds.prices.volume), isStock, valid }
}

/** Dollar-volume rank per symbol and day from the previous month-end (0 = unranked), directly. */
function directDvRanks(ds: Dataset, store: ModelStore): Int32Array[] {
  const { close, volume, valid } = inStoreOrder(ds, store)
  const cal = ds.calendar
  const ranks = store.symbols.map(() => new Int32Array(cal.length))
  if (!volume) return ranks
  const ends: number[] = []
  for (let t = 0; t + 1 < cal.length; t++) if (monthOf(cal[t + 1]) !== monthOf(cal[t])) ends.push(t)
  ends.forEach((e, m) => {
    const keyed: [number, number][] = []
    for (let i = 0; i < store.symbols.length; i++) {
      if (!valid(i, e)) continue
      const dvs: number[] = []
      for (let d = Math.max(0, e - 62); d <= e; d++) {
        const v = close[i][d] * volume[i][d]
        if (!Number.isNaN(v)) dvs.push(v)
      }
      if (dvs.length > 0) keyed.push([i, dvs.reduce((a, b) => a + b, 0) / dvs.length])
    }
    keyed.sort((a, b) => b[1] - a[1] || a[0] - b[0])
    const to = m + 1 < ends.length ? ends[m + 1] : cal.length - 1
    keyed.forEach(([i], r) => {
      for (let d = e + 1; d <= to; d++) ranks[i][d] = r + 1
    })
  })
  return ranks
}

/** Industry index (into the store's meta/industries.json) of each symbol on day t. */
function industryAt(ds: Dataset, store: ModelStore, i: number, t: number): number {
  const iso = new Date(ds.calendar[t] * 86_400_000).toISOString().slice(0, 10)
  const rows = ds.securities
    .filter((r) => r.symbol === store.symbols[i].symbol)
    .sort((a, b) => a.validFrom.localeCompare(b.validFrom))
  let row = rows[0]
  for (const r of rows) if (r.validFrom <= iso) row = r
  return row?.industry ? store.industries.indexOf(row.industry) : -1
}

/** The stored equal-weighted industry panel at day t equals the plain mean and variance. */
async function checkEqualPanel(
  ds: Dataset,
  store: ModelStore,
  member: (i: number, t: number) => boolean,
  t: number,
): Promise<number> {
  let rows = 0
  for (const [level, field] of [
    ['market', 'l1_mkt_beta'],
    ['sector', 'l2_sec_beta'],
    ['subsector', 'l3_sub_beta'],
  ] as const) {
    const beta = await store.crossSection(field, t)
    const groups = new Map<number, number[]>()
    for (let i = 0; i < store.symbols.length; i++) {
      const g = industryAt(ds, store, i, t)
      if (g < 0 || Number.isNaN(beta[i]) || !member(i, t)) continue
      groups.set(g, [...(groups.get(g) ?? []), beta[i]])
    }
    const base = `products/industry_panel/${level}`
    const [mean, variance, weight, count] = await Promise.all(
      ['beta_mean', 'beta_variance', 'total_log_mcap_weight', 'n_companies'].map((a) =>
        store.readRow(`${base}/${a}`, t),
      ),
    )
    for (let g = 0; g < store.industries.length; g++) {
      const b = groups.get(g) ?? []
      assert.equal(count[g], b.length, `${level} industry ${g} n_companies at ${t}`)
      if (b.length === 0) {
        assert.ok(Number.isNaN(mean[g]))
        continue
      }
      const m = b.reduce((s, v) => s + v, 0) / b.length
      const v = b.reduce((s, x) => s + (x - m) ** 2, 0) / b.length
      assert.ok(Math.abs(mean[g] - m) <= 1e-12 * (1 + Math.abs(m)), `${level} ${g} mean ${mean[g]} vs ${m}`)
      assert.ok(Math.abs(variance[g] - v) <= 1e-12 * (1 + v), `${level} ${g} variance ${variance[g]} vs ${v}`)
      assert.equal(weight[g], b.length, 'equal weights: total weight = member count')
      rows++
    }
  }
  return rows
}

/** The universe cohort of gross_return_1d at data_as_of: members with a return, in order. */
async function checkRankingCohort(ds: Dataset, store: ModelStore, member: (i: number, t: number) => boolean) {
  const { adj } = inStoreOrder(ds, store)
  const t = T - 1
  const ranked: [number, number][] = []
  for (let i = 0; i < store.symbols.length; i++) {
    const r = 1 + (adj[i][t] / adj[i][t - 1] - 1) - 1
    if (member(i, t) && !Number.isNaN(r)) ranked.push([i, r])
  }
  ranked.sort((a, b) => b[1] - a[1] || a[0] - b[0])
  const want = new Int32Array(store.symbols.length)
  ranked.forEach(([i], k) => {
    want[i] = k + 1
  })
  // data_as_of: the build's stored rankings.
  const stored = await rankingAt(store, store.calendar.length - 1, 'gross_return', '1d')
  assert.equal(t, store.calendar.length - 1)
  const ordinal = stored.ordinal.universe
  const size = stored.cohortSize.universe
  assert.deepEqual(Array.from(ordinal), Array.from(want))
  for (let i = 0; i < size.length; i++) if (ordinal[i] > 0) assert.equal(size[i], ranked.length)
  return ranked.length
}

async function reversionMembers(store: ModelStore, t: number) {
  const decile = await store.readRow('products/reversion_decile', t)
  return Array.from(decile).flatMap((d, i) => (d > 0 ? [i] : []))
}

// ---- tests --------------------------------------------------------------------------------

describe('default universe without market caps', () => {
  test('prices and volume, no shares: uni_dv_3000 by a direct dollar-volume ranking, equal weights', async () => {
    const ds = pricesWithVolume()
    const store = await ModelStore.open(await buildFrom('dv', ds))
    try {
      const m = store.manifest
      assert.equal(m.universe_basis, 'dollar_volume')
      assert.equal(m.default_universe, 'uni_dv_3000')
      assert.equal(m.weight_basis, 'equal')
      assert.deepEqual(universeBasisOf(store), {
        universe_basis: 'dollar_volume',
        weight_basis: 'equal',
        default_universe: 'uni_dv_3000',
      })
      const ranks = directDvRanks(ds, store)
      const { valid } = inStoreOrder(ds, store)
      for (let t = 0; t < T; t++) {
        const stored = await store.readRow('universe/dv_rank', t)
        assert.deepEqual(
          Array.from(stored),
          Array.from(ranks, (r) => r[t]),
          `dv_rank on day ${t}`,
        )
      }
      const member = (i: number, t: number) => ranks[i][t] >= 1 && ranks[i][t] <= 3000 && valid(i, t)
      const active = store.symbols.filter((_, i) => member(i, T - 1)).length
      assert.equal(m.universe_size, active)
      assert.ok(active > 30, `universe_size ${active}`)
      // A valid stock without any volume is never ranked, so it is not in the default universe.
      const noVolume = store.symbols.findIndex((s) => s.symbol === alive[0])
      assert.ok(valid(noVolume, T - 1) && !member(noVolume, T - 1))
      assert.ok((await checkRankingCohort(ds, store, member)) > 30)
      for (const t of [T - 1, T - 200, 400]) assert.ok((await checkEqualPanel(ds, store, member, t)) > 0)
      const rev = await reversionMembers(store, T - 1)
      assert.ok(rev.length > 30 && rev.every((i) => member(i, T - 1)))
    } finally {
      await store.close()
    }
  })

  test('prices only, no volume either: every valid stock, equal weights', async () => {
    const ds: Dataset = { ...synth, prices: { ...synth.prices, shares_out: null, volume: null } }
    const store = await ModelStore.open(await buildFrom('valid', ds))
    try {
      const m = store.manifest
      assert.deepEqual(
        [m.universe_basis, m.default_universe, m.weight_basis],
        ['all_valid', 'all_valid', 'equal'],
      )
      const { valid } = inStoreOrder(ds, store)
      const count = store.symbols.filter((_, i) => valid(i, T - 1)).length
      assert.equal(m.universe_size, count)
      assert.ok(count > 30, `universe_size ${count}`)
      assert.ok((await checkRankingCohort(ds, store, valid)) > 30)
      // No monthly mask: members exist before the first month-end too (day 1 is valid for most).
      assert.ok(store.symbols.filter((_, i) => valid(i, 1)).length > 30)
      for (const t of [T - 1, 300]) assert.ok((await checkEqualPanel(ds, store, valid, t)) > 0)
      const rev = await reversionMembers(store, T - 1)
      assert.ok(rev.length > 30 && rev.every((i) => valid(i, T - 1)))
    } finally {
      await store.close()
    }
  })

  test('market caps for half the stocks keep the market-cap basis and log-cap weights', async () => {
    const shares = copy(synth.prices.shares_out)
    if (!shares) throw new Error('the synthetic dataset has no shares outstanding')
    const capped = new Set(stockSymbols.filter((_, k) => k % 2 === 0))
    for (let k = 0; k < N; k++) if (!capped.has(synth.symbols[k])) shares[k].fill(Number.NaN)
    const ds: Dataset = { ...synth, prices: { ...synth.prices, shares_out: shares } }
    const store = await ModelStore.open(await buildFrom('half-caps', ds))
    try {
      const m = store.manifest
      assert.deepEqual(
        [m.universe_basis, m.default_universe, m.weight_basis],
        ['market_cap', 'uni_mc_3000', 'log_market_cap'],
      )
      const { valid } = inStoreOrder(ds, store)
      const inUniverse = store.symbols.filter((s, i) => capped.has(s.symbol) && valid(i, T - 1)).length
      assert.equal(m.universe_size, inUniverse)
    } finally {
      await store.close()
    }
  })

  test('defaultUniverseBasis: market caps first, then any finite close × volume, else all valid', () => {
    const cell = fc.oneof(fc.constant(Number.NaN), fc.double({ min: 0, max: 1e6, noNaN: true }))
    const panel = (n: number, days: number) =>
      fc.array(fc.array(cell, { minLength: days, maxLength: days }), {
        minLength: n,
        maxLength: n,
      })
    const input = fc
      .record({ n: fc.integer({ min: 1, max: 5 }), days: fc.integer({ min: 1, max: 4 }) })
      .chain(({ n, days }) =>
        fc.record({
          isStock: fc.array(fc.integer({ min: 0, max: 1 }), { minLength: n, maxLength: n }),
          close: panel(n, days),
          marketCap: panel(n, days),
          volume: fc.option(panel(n, days)),
        }),
      )
    fc.assert(
      fc.property(input, (r) => {
        const f64 = (p: number[][]) => p.map((c) => Float64Array.from(c))
        const got = defaultUniverseBasis({
          isStock: Uint8Array.from(r.isStock),
          close: f64(r.close),
          marketCap: f64(r.marketCap),
          volume: r.volume ? f64(r.volume) : null,
        })
        const stock = (i: number) => r.isStock[i] === 1
        const caps = r.marketCap.some((c, i) => stock(i) && c.some(Number.isFinite))
        const vol = r.volume
        const dv =
          vol !== null && r.close.some((c, i) => stock(i) && c.some((v, t) => Number.isFinite(v * vol[i][t])))
        const want = caps ? 'market_cap' : dv ? 'dollar_volume' : 'all_valid'
        assert.equal(got.universe_basis, want)
        assert.equal(got.weight_basis, caps ? 'log_market_cap' : 'equal')
        assert.equal(
          got.default_universe,
          { market_cap: 'uni_mc_3000', dollar_volume: 'uni_dv_3000', all_valid: 'all_valid' }[want],
        )
      }),
      { numRuns: 300 },
    )
  })

  test('industryPanelDay with equal weights: plain mean, population variance, count; caps ignored', () => {
    const maybe = fc.oneof(fc.constant(Number.NaN), fc.double({ min: -3, max: 3, noNaN: true }))
    const input = fc.integer({ min: 1, max: 12 }).chain((n) =>
      fc.record({
        industry: fc.array(fc.integer({ min: -1, max: 2 }), { minLength: n, maxLength: n }),
        beta: fc.array(maybe, { minLength: n, maxLength: n }),
        cap: fc.array(maybe, { minLength: n, maxLength: n }),
        active: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
        minPeers: fc.integer({ min: 1, max: 4 }),
      }),
    )
    fc.assert(
      fc.property(input, (r) => {
        const col = (v: number[]) => v.map((x) => Float64Array.of(x))
        const beta = col(r.beta)
        const p = industryPanelDay(
          {
            industry: r.industry.map((g) => Int16Array.of(g)),
            nIndustries: 3,
            marketCap: col(r.cap),
            l1MktBeta: beta,
            l2SecBeta: beta,
            l3SubBeta: beta,
            active: (i) => r.active[i],
            weightBasis: 'equal',
          },
          0,
          'market',
          r.minPeers,
        )
        const want: number[][] = [[], [], []]
        r.industry.forEach((g, i) => {
          if (g >= 0 && r.active[i] && !Number.isNaN(r.beta[i])) want[g].push(r.beta[i])
        })
        const rows = [0, 1, 2].filter((g) => want[g].length >= r.minPeers)
        assert.deepEqual(Array.from(p.industry), rows)
        rows.forEach((g, k) => {
          const b = want[g]
          const m = b.reduce((s, v) => s + v, 0) / b.length
          const v = b.reduce((s, x) => s + (x - m) ** 2, 0) / b.length
          assert.ok(Math.abs(p.beta_mean[k] - m) <= 1e-12)
          assert.ok(Math.abs(p.beta_variance[k] - v) <= 1e-12)
          assert.equal(p.n_companies[k], b.length)
          assert.equal(p.total_log_mcap_weight[k], b.length)
        })
      }),
      { numRuns: 300 },
    )
  })
})

// ---- incremental builds ---------------------------------------------------------------------

async function buildFiles(root: string): Promise<Map<string, Buffer>> {
  const cur = JSON.parse(await readFile(join(root, 'CURRENT'), 'utf8')).build as string
  const base = join(root, 'builds', cur)
  const out = new Map<string, Buffer>()
  const walk = async (d: string) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name)
      if (e.isDirectory()) await walk(p)
      else if (e.name !== 'manifest.json') out.set(relative(base, p), await readFile(p))
    }
  }
  await walk(base)
  return out
}

async function assertSameBuild(a: string, b: string): Promise<void> {
  const [fa, fb] = [await buildFiles(a), await buildFiles(b)]
  assert.deepEqual([...fa.keys()].sort(), [...fb.keys()].sort())
  for (const [rel, bytes] of fa) assert.ok(bytes.equals(fb.get(rel) ?? Buffer.alloc(0)), `${rel} differs`)
}

function withoutLast(ds: Dataset, drop: number): Dataset {
  const days = ds.calendar.length - drop
  const cut = (p: Float64Array[] | null) => p?.map((s) => s.slice(0, days)) ?? null
  return {
    ...ds,
    calendar: ds.calendar.slice(0, days),
    prices: {
      adj_close: cut(ds.prices.adj_close) ?? [],
      close: cut(ds.prices.close),
      volume: cut(ds.prices.volume),
      shares_out: cut(ds.prices.shares_out),
    },
    series: ds.series ? { ...ds.series, values: ds.series.values.map((v) => v.slice(0, days)) } : null,
  }
}

describe('incremental builds keep the basis or fall back', () => {
  test('prices and volume: appending 7 days gives the full build, byte for byte', async () => {
    const ds = pricesWithVolume()
    const full = await buildFrom('inc-ref', ds)
    await writeDataset(withoutLast(ds, 7), join(dir, 'inc-pre'))
    const store = join(dir, 'inc-store')
    await buildStore({ dataset: join(dir, 'inc-pre'), store })
    await writeDataset(ds, join(dir, 'inc-full'))
    const m = await buildStore({ dataset: join(dir, 'inc-full'), store, incremental: true })
    assert.deepEqual(m.notes, [])
    assert.ok(m.incremental_from !== null)
    assert.equal(m.universe_basis, 'dollar_volume')
    await assertSameBuild(store, full)
  })

  test('volume that first appears in the new days changes the basis: full build', async () => {
    // Volume only on the last 60 days (which hold month-ends): the prefix has none (all_valid).
    const volume = copy(synth.prices.volume) ?? []
    for (const v of volume) v.fill(Number.NaN, 0, T - 60)
    const ds: Dataset = { ...synth, prices: { ...synth.prices, shares_out: null, volume } }
    const full = await buildFrom('late-volume', ds)
    await writeDataset(withoutLast(ds, 60), join(dir, 'late-pre'))
    const store = join(dir, 'late-store')
    const before = await buildStore({ dataset: join(dir, 'late-pre'), store })
    assert.equal(before.universe_basis, 'all_valid')
    const m = await buildStore({ dataset: join(dir, 'late-volume-dataset'), store, incremental: true })
    assert.match(m.notes.join(), /basis changed \(all_valid in the current build, dollar_volume/)
    assert.equal(m.incremental_from, null)
    assert.equal(m.universe_basis, 'dollar_volume')
    assert.ok(m.universe_size > 30)
    await assertSameBuild(store, full)
  })
})

// ---- the real fixture -----------------------------------------------------------------------

describe('real prices-only fixture (../shared/data/real)', {
  skip: realDataPresent ? false : 'shared/data/real is absent',
}, () => {
  test('the default universe falls back, so universe, rankings, panel and reversion are non-empty', async (t) => {
    const ds = await importRealDataset(join(dir, 'real-unused'))
    assert.equal(ds.prices.shares_out, null)
    const store = await ModelStore.open(await buildFrom('real', ds))
    try {
      const m = store.manifest
      const last = m.calendar.days - 1
      const { valid, volume } = inStoreOrder(ds, store)
      const member =
        volume === null
          ? valid
          : (
              (ranks) => (i: number, t: number) =>
                ranks[i][t] >= 1 && ranks[i][t] <= 3000 && valid(i, t)
            )(directDvRanks(ds, store))
      assert.equal(m.universe_basis, volume === null ? 'all_valid' : 'dollar_volume')
      assert.equal(m.weight_basis, 'equal')
      const active = store.symbols.filter((_, i) => member(i, last)).length
      assert.equal(m.universe_size, active)
      assert.ok(active > 100, `universe_size ${active}`)
      t.diagnostic(`real fixture: ${m.universe_basis} (${m.default_universe}), universe_size ${active}`)
      const size = (await rankingAt(store, last, 'gross_return', '21d')).cohortSize.universe
      assert.ok(Math.max(...size) > 100)
      assert.ok((await checkEqualPanel(ds, store, member, last)) > 0)
      assert.ok((await reversionMembers(store, last)).length > 100)
    } finally {
      await store.close()
    }
  })
})
