import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { gunzipSync } from 'node:zlib'
import { buildStore } from '../../src/engine/build/index.ts'
import { writeDataset } from '../../src/engine/data/dataset-writer.ts'
import { buildImportedDataset } from '../../src/engine/data/import/index.ts'
// Only to call the service; the test's own correlation (directPearson) shares no code with it.
import { createCorrelationScratch } from '../../src/engine/model/correlation.ts'
import { ModelStore } from '../../src/engine/model-store/reader.ts'
import { correlationOf } from '../../src/services/analytics/correlation.ts'
import { REAL, realDataPresent } from '../helpers/real-data.ts'

/**
 * The macro and style factors from real files (../shared/data/real): the 216-ticker fixture of
 * adjusted closes, the closes of the factor ETFs from the benda931 OHLCV file (2021-04-01 →
 * 2026-04-01) and a VIX level file, built into a store. The numbers are checked against a direct
 * computation from the raw files that shares no code with the importer, the build or
 * src/engine/model/correlation.ts. Skips without the data.
 */

const FILES = {
  prices: `${REAL}fixture_adjclose_2019-01-02_2026-07-31.csv`,
  ohlcv: `${REAL}volume/benda931_daily_ohlcv_70tickers_2021-04-01_2026-04-01.csv.gz`,
  securities: `${REAL}classification/sp500_constituents_gics_2026-08-08.csv`,
  map: `${REAL}classification/gics_to_etf_map.csv`,
}

/** Factor key → the ETF whose close comes from the OHLCV file. */
const FROM_OHLCV: Record<string, string> = {
  oil: 'USO',
  credit: 'HYG',
  gold: 'GLD',
  usd: 'UUP',
  inflation: 'TIP',
  growth: 'IWF',
  size: 'IWM',
}
/** The file was pulled during the session of its last day(s): the importer drops them. */
const LAST_FULL_DAY = '2026-03-31'

const DAY_MS = 86_400_000
const isoOf = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10)

/**
 * A FRED-format VIXCLS file written by the test. The real VIX history is not among the shared
 * files, so the level is a deterministic made-up wave (10 … 28 points): it only exercises the
 * import path (FRED header, '.' for missing days, alignment, the store's level and its change),
 * not the economics. Every weekday from 2018-12-03; '.' on New Year's Day, Christmas and every
 * 97th weekday.
 */
function vixcls(): { csv: string; level: Map<string, number> } {
  const level = new Map<string, number>()
  const lines = ['observation_date,VIXCLS']
  let k = 0
  for (let d = Date.UTC(2018, 11, 3) / DAY_MS; d <= Date.UTC(2026, 6, 31) / DAY_MS; d++) {
    const dow = new Date(d * DAY_MS).getUTCDay()
    if (dow === 0 || dow === 6) continue
    const iso = isoOf(d)
    k++
    if (iso.endsWith('-01-01') || iso.endsWith('-12-25') || k % 97 === 0) {
      lines.push(`${iso},.`)
      continue
    }
    const v = Math.round((19 + 6 * Math.sin(k / 23) + 3 * Math.cos(k / 71)) * 100) / 100
    level.set(iso, v)
    lines.push(`${iso},${v.toFixed(2)}`)
  }
  return { csv: `${lines.join('\n')}\n`, level }
}

/** date → value of one ticker, read straight from the files (no importer code). */
async function rawWide(ticker: string): Promise<Map<string, number>> {
  const [head, ...rows] = (await readFile(FILES.prices, 'utf8')).trim().split(/\r?\n/)
  const col = head.split(',').indexOf(ticker)
  assert.ok(col > 0, `${ticker} in the fixture`)
  const out = new Map<string, number>()
  for (const r of rows) {
    const cells = r.split(',')
    if (cells[col] !== '') out.set(cells[0], Number(cells[col]))
  }
  return out
}

async function rawCloses(): Promise<Map<string, Map<string, number>>> {
  const text = gunzipSync(await readFile(FILES.ohlcv)).toString('utf8')
  const out = new Map<string, Map<string, number>>()
  for (const line of text.trim().split('\n').slice(1)) {
    const [ticker, date, , , , close] = line.split(',')
    if (date > LAST_FULL_DAY) continue
    const m = out.get(ticker) ?? new Map<string, number>()
    out.set(ticker, m)
    m.set(date, Number(close))
  }
  return out
}

/** Simple returns on the calendar: null (NaN) where either close is missing. */
function returnsOn(dates: readonly string[], px: ReadonlyMap<string, number>): Float64Array {
  const r = new Float64Array(dates.length).fill(Number.NaN)
  for (let t = 1; t < dates.length; t++) {
    const a = px.get(dates[t - 1])
    const b = px.get(dates[t])
    if (a !== undefined && b !== undefined) r[t] = b / a - 1
  }
  return r
}

/** Pearson correlation over the last `n` days (at or before `end`) where both are present. */
function directPearson(x: Float64Array, y: Float64Array, end: number, n: number) {
  const xs: number[] = []
  const ys: number[] = []
  for (let t = end; t >= 0 && xs.length < n; t--) {
    if (Number.isFinite(x[t]) && Number.isFinite(y[t])) {
      xs.push(x[t])
      ys.push(y[t])
    }
  }
  const mean = (a: number[]) => a.reduce((s, v) => s + v, 0) / a.length
  const mx = mean(xs)
  const my = mean(ys)
  let sxy = 0
  let sxx = 0
  let syy = 0
  for (let i = 0; i < xs.length; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my)
    sxx += (xs[i] - mx) ** 2
    syy += (ys[i] - my) ** 2
  }
  return { value: sxy / Math.sqrt(sxx * syy), pairs: xs.length }
}

describe('macro and style factors from the real files', {
  skip: realDataPresent ? false : 'shared/data/real is absent',
}, () => {
  let work = ''
  let store: ModelStore
  let dates: string[]
  let factors: { keys: string[]; returns: Float64Array[] }
  let closes: Map<string, Map<string, number>>
  let vix: ReturnType<typeof vixcls>
  const factor = (key: string) => {
    const r = factors.returns[factors.keys.indexOf(key)]
    assert.ok(r, key)
    return r
  }
  const gross = (ticker: string, keys: string[]) =>
    correlationOf(
      store,
      ticker,
      { keys, returnType: 'gross', windowDays: 252, method: 'pearson' },
      createCorrelationScratch(252),
    )

  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'erm3-real-factors-'))
    vix = vixcls()
    await writeFile(join(work, 'VIXCLS.csv'), vix.csv)
    const ds = await buildImportedDataset({
      prices: [FILES.prices, `${FILES.ohlcv}=close:${Object.values(FROM_OHLCV).join(',')}`],
      securities: FILES.securities,
      classificationMap: FILES.map,
      series: [join(work, 'VIXCLS.csv')],
      out: join(work, 'unused'),
    })
    await writeDataset(ds, join(work, 'dataset'))
    await buildStore({ dataset: join(work, 'dataset'), store: join(work, 'store') })
    store = await ModelStore.open(join(work, 'store'))
    dates = Array.from(store.calendar, isoOf)
    factors = await store.factorReturns()
    closes = await rawCloses()
  })
  after(async () => {
    if (work) await rm(work, { recursive: true, force: true })
  })

  test('each OHLCV factor: null up to its first close, equal to the raw closes’ returns through 2026-03-31, null after', () => {
    const last = dates.indexOf(LAST_FULL_DAY)
    assert.ok(last > 0)
    for (const [key, etf] of Object.entries(FROM_OHLCV)) {
      const r = factor(key)
      const px = closes.get(etf)
      assert.ok(px, etf)
      const first = dates.indexOf([...px.keys()].sort()[0])
      assert.ok(
        first > 0 && dates[first] >= '2021-04-01' && dates[first] <= '2021-04-05',
        `${etf} ${dates[first]}`,
      )
      const want = returnsOn(dates, px)
      for (let t = 0; t < dates.length; t++) {
        if (t <= first || t > last) {
          assert.ok(Number.isNaN(r[t]), `${key} null on ${dates[t]}`)
          continue
        }
        assert.ok(Number.isFinite(r[t]), `${key} (${etf}) on ${dates[t]}`)
        assert.ok(Math.abs(r[t] - want[t]) <= 1e-15, `${key} on ${dates[t]}: ${r[t]} vs ${want[t]}`)
      }
    }
  })

  test('the VIX level file: level on priced days, null on FRED’s "." days, vix_spot its daily change', async () => {
    const level = await store.vixLevel()
    const change = factor('vix_spot')
    let missing = 0
    for (let t = 0; t < dates.length; t++) {
      const v = vix.level.get(dates[t])
      if (v === undefined) {
        missing++
        assert.ok(Number.isNaN(level[t]), `no level on ${dates[t]}`)
      } else assert.equal(level[t], v)
      const prev = t > 0 ? vix.level.get(dates[t - 1]) : undefined
      if (v === undefined || prev === undefined)
        assert.ok(Number.isNaN(change[t]), `vix_spot null on ${dates[t]}`)
      else assert.equal(change[t], v - prev)
    }
    assert.ok(missing > 10, `${missing} calendar days without a level`)
  })

  test('XOM against oil (USO): a direct Pearson from the raw files equals the service’s, and is positive', async () => {
    const xom = returnsOn(dates, await rawWide('XOM'))
    const uso = returnsOn(dates, closes.get('USO') ?? new Map())
    const i = store.resolve('XOM')
    const end = await store.lastPriced(i)
    const direct = directPearson(xom, uso, end, 252)
    // The same, over the arrays the store holds.
    const stored = (await store.history(i, ['returns_gross'])).returns_gross as Float64Array
    const fromStore = directPearson(stored, factor('oil'), end, 252)
    const served = await gross('XOM', ['oil'])
    const value = served.correlations.oil
    process.stdout.write(
      `# XOM~oil over ${direct.pairs} pairs to ${served.teo}: direct ${direct.value}, store ${fromStore.value}, service ${value}\n`,
    )
    assert.equal(direct.pairs, 252)
    assert.equal(served.overlap_days.oil, 252)
    assert.ok(value !== null && value !== undefined)
    assert.ok(Math.abs(direct.value - value) <= 1e-12, `${direct.value} vs ${value}`)
    assert.ok(Math.abs(fromStore.value - value) <= 1e-12, `${fromStore.value} vs ${value}`)
    assert.ok(value > 0.2, `XOM~oil ${value}`)
  })

  test('economically sensible signs on the real data', async () => {
    const expect: [string, string, number][] = [
      ['CVX', 'oil', 0.2],
      ['COP', 'oil', 0.2],
      ['JPM', 'credit', 0.2],
      ['BAC', 'credit', 0.2],
      ['JPM', 'size', 0.2],
      ['BAC', 'size', 0.2],
      ['AAPL', 'growth', 0.4],
      ['MSFT', 'growth', 0.4],
      ['NVDA', 'growth', 0.4],
      ['NEM', 'gold', 0.4],
      ['FCX', 'gold', 0.1],
    ]
    const seen: string[] = []
    for (const [ticker, key, floor] of expect) {
      const v = (await gross(ticker, [key])).correlations[key]
      seen.push(`${ticker}~${key} ${v?.toFixed(3)}`)
      assert.ok(v !== null && v !== undefined && v > floor, `${ticker}~${key} ${v} > ${floor}`)
    }
    // A stronger dollar weighs on gold, so on the gold miner.
    const usd = (await gross('NEM', ['usd'])).correlations.usd
    seen.push(`NEM~usd ${usd?.toFixed(3)}`)
    assert.ok(usd !== null && usd !== undefined && usd < -0.15, `NEM~usd ${usd}`)
    process.stdout.write(`# ${seen.join(', ')}\n`)
  })
})
