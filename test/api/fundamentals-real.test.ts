import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { gunzipSync } from 'node:zlib'
import { buildStore } from '../../src/engine/build/index.ts'
import { writeDataset } from '../../src/engine/data/dataset-writer.ts'
import type { ModelStore } from '../../src/engine/model-store/reader.ts'
import { close } from '../data/fundamentals-helpers.ts'
import { importRealDataset, REAL, realDataPresent } from '../helpers/real-data.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * GET /fundamentals/{ticker} over the API stack on a store built from the real files
 * (../shared/data/real): real prices and GICS, the four SEC companyfacts documents, CIKs from SEC's
 * ticker map and DTB3 as the 3-month rate. Expected values are computed here by hand from named
 * XBRL facts read from the raw JSON, from the rates CSV and from the store's own beta columns;
 * nothing expected comes from src/. Skips without the data.
 */

const FACTS = `${REAL}fundamentals/companyfacts/`
const DTB3 = `${REAL}rates/DTB3_fred_2023-01-12_2026-08-12.csv`

interface RawFact {
  start?: string
  end: string
  val: number
  filed: string
  form: string
}
type Doc = { facts: { 'us-gaap': Record<string, { units: Record<string, RawFact[]> }> } }

interface Row {
  period_end_date: string
  filed_date: string | null
  filed_date_source: string | null
  roe_ttm: number | null
  leverage_ratio: number | null
  beta_market: number | null
  beta_source: string | null
  rf_rate: number | null
}
interface Body {
  ticker: string
  as_of: string
  periods_returned: number
  rows: Row[]
  disclosures: Record<string, unknown>
}

const docs = new Map<string, Doc>()
function doc(cikFile: string): Doc {
  let d = docs.get(cikFile)
  if (!d) {
    d = JSON.parse(gunzipSync(readFileSync(`${FACTS}${cikFile}.json.gz`)).toString('utf8')) as Doc
    docs.set(cikFile, d)
  }
  return d
}

/** The us-gaap USD fact of exactly this period (start null: an instant), latest filed ≤ asOf. */
function find(cikFile: string, concept: string, start: string | null, end: string, asOf: string) {
  let best: RawFact | undefined
  for (const f of doc(cikFile).facts['us-gaap'][concept]?.units.USD ?? [])
    if ((f.start ?? null) === start && f.end === end && f.filed <= asOf && (!best || f.filed >= best.filed))
      best = f
  return best
}
function fact(cikFile: string, concept: string, start: string | null, end: string, asOf: string): number {
  const f = find(cikFile, concept, start, end, asOf)
  if (!f) throw new Error(`${cikFile}: no ${concept} ${start ?? ''}..${end} filed by ${asOf}`)
  return f.val
}

/** The first 10-Q/10-K filing date of a 3-month (or, for a fiscal Q4, 12-month) net income. */
function firstFiled(cikFile: string, start: string, end: string): string {
  const dates = (doc(cikFile).facts['us-gaap'].NetIncomeLoss?.units.USD ?? [])
    .filter((f) => f.start === start && f.end === end && /^10-[QK]/.test(f.form))
    .map((f) => f.filed)
    .sort()
  assert.ok(dates[0], `${cikFile}: net income ${start}..${end} is filed`)
  return dates[0]
}

/**
 * One hand-computed quarter: its fiscal quarters' net income periods (the four of the TTM
 * window, or the fiscal year for a Q4 row whose window is that year) and the four quarter ends.
 */
interface Quarter {
  ticker: string
  cik: string
  end: string
  /** How the TTM net income is summed from filed facts, written out for each case. */
  ttmNetIncome: (asOf: string) => number
  /** The four window quarter ends, oldest first (the last is `end`). */
  window: [string, string, string, string]
  /** The filing that first reported the quarter, and the quarter's own net income period. */
  own: [string, string]
}

const ni = (cik: string, start: string, end: string, asOf: string) =>
  fact(cik, 'NetIncomeLoss', start, end, asOf)

const AAPL = 'CIK0000320193'
const NVDA = 'CIK0001045810'

// Apple's fiscal years end on the last Saturday of September; NVIDIA's on the last Sunday of
// January. Each quarter's 3-month net income is tagged; a fiscal Q4 is FY − Q1 − Q2 − Q3.
const QUARTERS: Quarter[] = [
  {
    ticker: 'AAPL',
    cik: AAPL,
    end: '2023-09-30', // fiscal 2023 Q4: its window is the fiscal year
    ttmNetIncome: (a) => ni(AAPL, '2022-09-25', '2023-09-30', a),
    window: ['2022-12-31', '2023-04-01', '2023-07-01', '2023-09-30'],
    own: ['2022-09-25', '2023-09-30'],
  },
  {
    ticker: 'AAPL',
    cik: AAPL,
    end: '2024-06-29', // fiscal 2024 Q3: fiscal 2023 Q4 + fiscal 2024 Q1..Q3
    ttmNetIncome: (a) =>
      ni(AAPL, '2022-09-25', '2023-09-30', a) -
      ni(AAPL, '2022-09-25', '2022-12-31', a) -
      ni(AAPL, '2023-01-01', '2023-04-01', a) -
      ni(AAPL, '2023-04-02', '2023-07-01', a) +
      ni(AAPL, '2023-10-01', '2023-12-30', a) +
      ni(AAPL, '2023-12-31', '2024-03-30', a) +
      ni(AAPL, '2024-03-31', '2024-06-29', a),
    window: ['2023-09-30', '2023-12-30', '2024-03-30', '2024-06-29'],
    own: ['2024-03-31', '2024-06-29'],
  },
  {
    ticker: 'NVDA',
    cik: NVDA,
    end: '2024-01-28', // fiscal 2024 Q4
    ttmNetIncome: (a) => ni(NVDA, '2023-01-30', '2024-01-28', a),
    window: ['2023-04-30', '2023-07-30', '2023-10-29', '2024-01-28'],
    own: ['2023-01-30', '2024-01-28'],
  },
  {
    ticker: 'NVDA',
    cik: NVDA,
    end: '2024-10-27', // fiscal 2025 Q3: fiscal 2024 Q4 + fiscal 2025 Q1..Q3
    ttmNetIncome: (a) =>
      ni(NVDA, '2023-01-30', '2024-01-28', a) -
      ni(NVDA, '2023-01-30', '2023-04-30', a) -
      ni(NVDA, '2023-05-01', '2023-07-30', a) -
      ni(NVDA, '2023-07-31', '2023-10-29', a) +
      ni(NVDA, '2024-01-29', '2024-04-28', a) +
      ni(NVDA, '2024-04-29', '2024-07-28', a) +
      ni(NVDA, '2024-07-29', '2024-10-27', a),
    window: ['2024-01-28', '2024-04-28', '2024-07-28', '2024-10-27'],
    own: ['2024-07-29', '2024-10-27'],
  },
]

/**
 * roe_ttm = TTM net income / mean of the four window quarter-end StockholdersEquity;
 * leverage = (LongTermDebt + CommercialPaper + ShortTermBorrowings, the last two when tagged at
 * the quarter end) / StockholdersEquity at the quarter end. Facts as filed by `asOf`.
 */
function byHand(q: Quarter, asOf: string): { roe: number; leverage: number } {
  const [e0, e1, e2, e3] = q.window.map((e) => fact(q.cik, 'StockholdersEquity', null, e, asOf))
  const debt =
    fact(q.cik, 'LongTermDebt', null, q.end, asOf) +
    (find(q.cik, 'CommercialPaper', null, q.end, asOf)?.val ?? 0) +
    (find(q.cik, 'ShortTermBorrowings', null, q.end, asOf)?.val ?? 0)
  return { roe: q.ttmNetIncome(asOf) / ((e0 + e1 + e2 + e3) / 4), leverage: debt / e3 }
}

const dayOf = (iso: string) => Date.parse(`${iso}T00:00:00Z`) / 86_400_000
const shift = (iso: string, days: number) =>
  new Date((dayOf(iso) + days) * 86_400_000).toISOString().slice(0, 10)

/** DTB3 (percent) at its last non-empty observation ≤ `iso`, as a fraction; null when none. */
function dtb3At(lines: string[], iso: string): number | null {
  let v: number | null = null
  for (const line of lines.slice(1)) {
    const [date, value] = line.split(',')
    if (date === undefined || date > iso) break
    if (value !== undefined && value.trim() !== '') v = Number(value) / 100
  }
  return v
}

describe('GET /fundamentals on real filings (../shared/data/real)', {
  skip: realDataPresent ? false : 'shared/data/real is absent',
}, () => {
  let work: string
  let t: TestApp
  let store: ModelStore
  let key: string
  let dtb3: string[]

  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'erm3-real-fundamentals-'))
    const ds = await importRealDataset(join(work, 'unused'), {
      rates: [DTB3],
      fundamentals: `${REAL}fundamentals/companyfacts`,
      cikMap: `${REAL}fundamentals/company_tickers_sec.json.gz`,
    })
    await writeDataset(ds, join(work, 'dataset'))
    await buildStore({ dataset: join(work, 'dataset'), store: join(work, 'store') })
    t = await startTestApp({ liveStore: join(work, 'store') })
    store = t.ctx.models.store('live')
    key = await t.key(await t.account(100), { tier: 'premium' })
    dtb3 = readFileSync(DTB3, 'utf8').split(/\r?\n/)
  })
  after(async () => {
    await t?.close()
    if (work) await rm(work, { recursive: true, force: true })
  })

  const get = async (ticker: string, query: Record<string, string> = {}) =>
    (
      await t.client.call('getFundamentals', { key, params: { ticker }, query } as never)
    ).ok() as unknown as Body
  const rowOf = (b: Body, end: string) => {
    const r = b.rows.find((x) => x.period_end_date === end)
    assert.ok(r, `${b.ticker}: no row for ${end} at ${b.as_of}`)
    return r
  }

  test('AAPL and NVDA: roe_ttm and leverage_ratio equal the hand computation from the named facts', async () => {
    for (const q of QUARTERS) {
      const b = await get(q.ticker, { periods: '40' })
      assert.equal(b.as_of, store.dataAsOf)
      const row = rowOf(b, q.end)
      const want = byHand(q, b.as_of)
      close(row.roe_ttm, want.roe, `${q.ticker} ${q.end} roe_ttm`)
      close(row.leverage_ratio, want.leverage, `${q.ticker} ${q.end} leverage_ratio`)
    }
  })

  test('point in time: a quarter is absent the day before its first filing and present, as then filed, on it', async () => {
    for (const q of QUARTERS) {
      const filed = firstFiled(q.cik, ...q.own)
      const before = await get(q.ticker, { periods: '40', as_of: shift(filed, -1) })
      assert.equal(before.as_of, shift(filed, -1))
      assert.ok(before.rows.length > 0, `${q.ticker}: earlier quarters are visible`)
      assert.equal(
        before.rows.find((r) => r.period_end_date === q.end),
        undefined,
        `${q.ticker} ${q.end} before ${filed}`,
      )
      assert.ok(before.rows.every((r) => r.period_end_date < q.end))
      const on = await get(q.ticker, { periods: '40', as_of: filed })
      const row = rowOf(on, q.end)
      assert.equal(on.rows.at(-1)?.period_end_date, q.end, 'the newest visible quarter')
      assert.equal(row.filed_date, filed)
      assert.equal(row.filed_date_source, 'exact')
      const want = byHand(q, filed)
      close(row.roe_ttm, want.roe, `${q.ticker} ${q.end} roe_ttm as of ${filed}`)
      close(row.leverage_ratio, want.leverage, `${q.ticker} ${q.end} leverage_ratio as of ${filed}`)
    }
  })

  test('beta_market is the store’s l1_mkt_beta at the last trading day ≤ period end', async () => {
    let checked = 0
    for (const ticker of ['AAPL', 'NVDA']) {
      const b = await get(ticker, { periods: '40' })
      const index = store.symbols.findIndex((m) => m.tickers.some((w) => w.ticker === ticker && !w.to))
      assert.ok(index >= 0)
      for (const row of b.rows) {
        const end = dayOf(row.period_end_date)
        let tt = -1
        for (let k = 0; k < store.calendar.length; k++) if (store.calendar[k] <= end) tt = k
        if (tt < 0) {
          assert.equal(row.beta_market, null)
          continue
        }
        const h = await store.history(index, ['l1_mkt_beta'], tt, tt + 1)
        const beta = h.l1_mkt_beta[0] as number
        if (Number.isNaN(beta)) {
          assert.equal(row.beta_market, null, `${ticker} ${row.period_end_date}`)
          continue
        }
        assert.equal(row.beta_market, beta, `${ticker} ${row.period_end_date}`)
        assert.equal(row.beta_source, 'in-universe')
        checked++
      }
    }
    assert.ok(checked >= 40, `${checked} betas checked`)
    // A Saturday quarter end takes Friday's beta (Apple, 2023-09-30 → 2023-09-29).
    const aapl = store.symbols.findIndex((m) => m.tickers.some((w) => w.ticker === 'AAPL' && !w.to))
    const fri = store.calendar.indexOf(dayOf('2023-09-29'))
    const h = await store.history(aapl, ['l1_mkt_beta'], fri, fri + 1)
    assert.equal(rowOf(await get('AAPL', { periods: '40' }), '2023-09-30').beta_market, h.l1_mkt_beta[0])
  })

  test('rf_rate is DTB3’s 3-month value at its last observation ≤ period end (null before the file starts)', async () => {
    let checked = 0
    for (const ticker of ['AAPL', 'NVDA']) {
      for (const row of (await get(ticker, { periods: '40' })).rows) {
        const want = dtb3At(dtb3, row.period_end_date)
        close(row.rf_rate, want, `${ticker} ${row.period_end_date} rf_rate`)
        if (want !== null) checked++
      }
    }
    assert.ok(checked >= 20, `${checked} rates checked`)
    const aapl = await get('AAPL', { periods: '40' })
    // 2024-03-30: Saturday after Good Friday, whose DTB3 cell is empty → Thursday 2024-03-28.
    assert.equal(rowOf(aapl, '2024-03-30').rf_rate, 5.23 / 100)
    // 2022-12-31: before DTB3's first observation (2023-01-12).
    assert.equal(rowOf(aapl, '2022-12-31').rf_rate, null)
  })

  test('a priced stock without filings (MSFT: a CIK, no companyfacts) answers 200 with no rows', async () => {
    const b = await get('MSFT', { periods: '8', grid: 'true' })
    assert.equal(b.ticker, 'MSFT')
    assert.equal(b.periods_returned, 0)
    assert.deepEqual(b.rows, [])
    assert.match(String(b.disclosures.note), /no SEC company facts/)
  })
})
