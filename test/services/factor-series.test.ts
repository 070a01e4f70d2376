import assert from 'node:assert/strict'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { after, describe, test } from 'node:test'
import { buildStore } from '../../src/engine/build/index.ts'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import { writeDataset } from '../../src/engine/data/dataset-writer.ts'
import { FACTOR_KEYS, factorKey } from '../../src/engine/data/factors.ts'
import type { Dataset } from '../../src/engine/data/format.ts'
import { synthesizeDataset } from '../../src/engine/data/synthesize.ts'
import { ModelStore } from '../../src/engine/model-store/reader.ts'
import { importRealDataset, realDataPresent } from '../helpers/real-data.ts'

const dir = await mkdtemp(join(tmpdir(), 'erm3-factor-series-'))
after(() => rm(dir, { recursive: true, force: true }))

// A short market around BITO's inception (2021-10-19); every other factor ETF predates it.
const dsDir = join(dir, 'dataset')
await synthesizeDataset(dsDir, {
  seed: 14,
  stocks: 30,
  start: '2021-03-01',
  end: '2022-03-31',
  fundamentals: false,
})
const { dataset: ds } = await readDataset(dsDir)
const storeDir = join(dir, 'store')
await buildStore({ dataset: dsDir, store: storeDir })

/** The proxies written out here on purpose (not imported), so the test checks the table too. */
const PROXIES: Record<string, string> = {
  inflation: 'TIP',
  term_spread: 'VGIT',
  short_rates: 'BIL',
  credit: 'HYG',
  oil: 'USO',
  gold: 'GLD',
  usd: 'UUP',
  volatility: 'VXX',
  bitcoin: 'BITO',
  vix_spot: 'VIX',
  momentum: 'MTUM',
  quality: 'QUAL',
  low_vol: 'USMV',
  value: 'VLUE',
  growth: 'IWF',
  size: 'IWM',
  dividend: 'SCHD',
  moat: 'MOAT',
}

const EPS = Number.EPSILON
const iso = (d: number) => new Date(d * 86_400_000).toISOString().slice(0, 10)

/** Both null, or equal within a few ulps of the terms' magnitude. */
function assertClose(got: number, want: number, scale: number, what: string): void {
  if (Number.isNaN(want)) {
    assert.ok(Number.isNaN(got), `${what}: want null, got ${got}`)
    return
  }
  assert.ok(Math.abs(got - want) <= 4 * EPS * scale, `${what}: got ${got}, want ${want}`)
}

describe('macro and style factor series in the model store', () => {
  test('the factor table: 18 keys, aliases resolve case-insensitively, unknown names are rejected', () => {
    assert.deepEqual([...FACTOR_KEYS], Object.keys(PROXIES))
    const cases: [string, string][] = [
      ['dxy', 'usd'],
      ['DXY', 'usd'],
      ['vix', 'vix_spot'],
      ['VIX', 'vix_spot'],
      ['btc', 'bitcoin'],
      ['Tips', 'inflation'],
      ['low-vol', 'low_vol'],
      ['MTUM', 'momentum'],
      [' Oil ', 'oil'],
      ['Term_Spread', 'term_spread'],
    ]
    for (const [raw, key] of cases) assert.equal(factorKey(raw), key, raw)
    for (const k of FACTOR_KEYS) assert.equal(factorKey(k.toUpperCase()), k)
    for (const bad of ['', 'spy', 'foo', 'vix spot level', 'momentum2'])
      assert.throws(() => factorKey(bad), { code: 'INVALID_REQUEST' }, bad)
  })

  test('every factor return equals a direct computation from the dataset closes', async () => {
    const store = await ModelStore.open(storeDir)
    try {
      const { keys, returns } = await store.factorReturns()
      assert.deepEqual(keys, Object.keys(PROXIES))
      assert.deepEqual(
        store.factors?.map((f) => [f.key, f.ticker, f.present]),
        keys.map((k) => [k, PROXIES[k], true]),
      )
      const T = ds.calendar.length
      assert.deepEqual(Array.from(store.calendar), Array.from(ds.calendar))
      for (const [j, key] of keys.entries()) {
        assert.equal(returns[j].length, T)
        if (key === 'vix_spot') continue
        const adj = ds.prices.adj_close[ds.symbols.indexOf(PROXIES[key])]
        assert.ok(adj, `${key}: ${PROXIES[key]} is in the dataset`)
        let finite = 0
        for (let t = 0; t < T; t++) {
          const want = t === 0 ? Number.NaN : adj[t] / adj[t - 1] - 1
          assertClose(returns[j][t], want, 1 + Math.abs(adj[t] / adj[t - 1]), `${key} ${iso(ds.calendar[t])}`)
          if (!Number.isNaN(want)) finite++
        }
        assert.ok(finite > 0, `${key} has returns`)
      }
      // Repeated calls share one read.
      assert.equal(await store.factorReturns(), await store.factorReturns())
    } finally {
      await store.close()
    }
  })

  test('vix_spot is the daily change of the VIX level in index points; the level is stored too', async () => {
    const store = await ModelStore.open(storeDir)
    try {
      const { keys, returns } = await store.factorReturns()
      const level = ds.series?.values[ds.series.names.indexOf('VIX')]
      assert.ok(level)
      const spot = returns[keys.indexOf('vix_spot')]
      assert.ok(Number.isNaN(spot[0]))
      for (let t = 1; t < level.length; t++) {
        assertClose(spot[t], level[t] - level[t - 1], Math.abs(level[t]) + Math.abs(level[t - 1]), `day ${t}`)
      }
      assert.deepEqual(Array.from(await store.vixLevel()), Array.from(level))
    } finally {
      await store.close()
    }
  })

  test('a factor is null (never zero) before its inception: BITO before 2021-10-19', async () => {
    const store = await ModelStore.open(storeDir)
    try {
      const { keys, returns } = await store.factorReturns()
      const bito = returns[keys.indexOf('bitcoin')]
      const inception = Date.UTC(2021, 9, 19) / 86_400_000
      let before = 0
      let after = 0
      for (let t = 0; t < bito.length; t++) {
        if (ds.calendar[t] <= inception) {
          assert.ok(Number.isNaN(bito[t]), `bitcoin on ${iso(ds.calendar[t])} is ${bito[t]}`)
          before++
        } else if (!Number.isNaN(bito[t])) after++
      }
      assert.ok(before > 100 && after > 100, `${before} null days, ${after} with returns`)
    } finally {
      await store.close()
    }
  })

  test('an incremental build writes the same factor arrays, byte for byte, as a full build', async () => {
    const drop = 9
    const T = ds.calendar.length - drop
    const cut = (p: Float64Array[] | null) => p?.map((s) => s.slice(0, T)) ?? null
    const prefix: Dataset = {
      ...ds,
      calendar: ds.calendar.slice(0, T),
      prices: {
        adj_close: cut(ds.prices.adj_close) ?? [],
        close: cut(ds.prices.close),
        volume: cut(ds.prices.volume),
        shares_out: cut(ds.prices.shares_out),
      },
      series: ds.series ? { ...ds.series, values: ds.series.values.map((v) => v.slice(0, T)) } : null,
    }
    const preDir = join(dir, 'prefix')
    await writeDataset(prefix, preDir)
    const incStore = join(dir, 'store-inc')
    await buildStore({ dataset: preDir, store: incStore })
    const m = await buildStore({ dataset: dsDir, store: incStore, incremental: true })
    assert.deepEqual(m.notes, [])
    assert.equal(m.incremental_from, iso(ds.calendar[T]))
    const a = await factorFiles(incStore)
    const b = await factorFiles(storeDir)
    assert.deepEqual([...a.keys()].sort(), [...b.keys()].sort())
    assert.ok(a.size >= 4, `${a.size} files`)
    for (const [rel, bytes] of a) assert.ok(bytes.equals(b.get(rel) ?? Buffer.alloc(0)), `${rel} differs`)
  })

  test('a build made before the factor series is refused by the reader and rebuilt in full', async () => {
    const old = join(dir, 'store-old')
    await buildStore({ dataset: dsDir, store: old })
    const build = await currentDir(old)
    await rm(join(build, 'meta/factors.json'))
    await rm(join(build, 'factors'), { recursive: true })
    const store = await ModelStore.open(old)
    try {
      assert.equal(store.factors, null)
      await assert.rejects(
        store.factorReturns(),
        /predates|before the macro and style factor series.*rebuild/,
      )
    } finally {
      await store.close()
    }
    const m = await buildStore({ dataset: dsDir, store: old, incremental: true })
    assert.match(m.notes.join(), /predates the factor series/)
    const again = await ModelStore.open(old)
    try {
      assert.equal((await again.factorReturns()).keys.length, 18)
    } finally {
      await again.close()
    }
  })
})

describe('factor series of the real-data fixture store', {
  skip: realDataPresent ? false : 'shared/data/real is absent',
}, () => {
  test('builds; factors the fixture has no prices for are all-null columns, not errors', async () => {
    const work = join(dir, 'real')
    const real = await importRealDataset(join(work, 'unused'))
    await writeDataset(real, join(work, 'dataset'))
    await buildStore({ dataset: join(work, 'dataset'), store: join(work, 'store') })
    const store = await ModelStore.open(join(work, 'store'))
    try {
      const { keys, returns } = await store.factorReturns()
      assert.deepEqual(keys, Object.keys(PROXIES))
      const priced = new Set(real.symbols)
      for (const [j, f] of (store.factors ?? []).entries()) {
        const has = f.kind === 'etf' ? priced.has(f.ticker) : (real.series?.names.includes(f.ticker) ?? false)
        assert.equal(f.present, has, f.key)
        if (!has) assert.ok(returns[j].every(Number.isNaN), `${f.key} is all null`)
        else
          assert.ok(
            returns[j].some((v) => !Number.isNaN(v)),
            `${f.key} has returns`,
          )
      }
      if (!real.series) assert.ok((await store.vixLevel()).every(Number.isNaN))
    } finally {
      await store.close()
    }
  })
})

async function currentDir(root: string): Promise<string> {
  const cur = JSON.parse(await readFile(join(root, 'CURRENT'), 'utf8')).build as string
  return join(root, 'builds', cur)
}

/** The factor files of the current build: meta/factors.json and everything under factors/. */
async function factorFiles(root: string): Promise<Map<string, Buffer>> {
  const base = await currentDir(root)
  const out = new Map<string, Buffer>([
    ['meta/factors.json', await readFile(join(base, 'meta/factors.json'))],
  ])
  const walk = async (d: string) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name)
      if (e.isDirectory()) await walk(p)
      else out.set(relative(base, p), await readFile(p))
    }
  }
  await walk(join(base, 'factors'))
  return out
}
