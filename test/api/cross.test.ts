import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { parse } from 'csv-parse/sync'
import type { ModelStore } from '../../src/engine/model-store/reader.ts'
import { readHyparquet } from '../helpers/history-checks.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * The cross-sectional endpoints against direct computations written here from the stored
 * per-stock fields (never from src/engine/model/cross): industry panel, universe members, ETF factor
 * returns, the residual-reversion basket; teo resolution, errors and money.
 */

const SECTOR_ETFS = ['XLB', 'XLC', 'XLE', 'XLF', 'XLI', 'XLK', 'XLP', 'XLRE', 'XLU', 'XLV', 'XLY']

/** Scale-aware closeness: |a − b| ≤ tol × scale, scale being the size of the terms that were combined. */
function close(a: number | null, b: number | null, scale: number, what: string, tol = 1e-12): void {
  if (a === null || b === null) assert.equal(a, b, what)
  else assert.ok(Math.abs(a - b) <= tol * Math.max(scale, 1e-300), `${what}: ${a} vs ${b} (scale ${scale})`)
}

const monthOf = (day: number) => {
  const d = new Date(day * 86_400_000)
  return d.getUTCFullYear() * 12 + d.getUTCMonth()
}

interface Raw {
  cap: Float64Array[]
  ret: Float64Array[]
  closePx: Float64Array[]
  beta: Record<'market' | 'sector' | 'subsector', Float64Array[]>
  l3rr: Float64Array[]
  stock: boolean[]
}

async function rawFields(store: ModelStore): Promise<Raw> {
  const n = store.symbols.length
  const h = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      store.history(i, [
        'market_cap',
        'returns_gross',
        'price_close',
        'l1_mkt_beta',
        'l2_sec_beta',
        'l3_sub_beta',
        'l3_rr',
      ]),
    ),
  )
  const f = (k: string) => h.map((x) => (x as unknown as Record<string, Float64Array>)[k])
  return {
    cap: f('market_cap'),
    ret: f('returns_gross'),
    closePx: f('price_close'),
    beta: { market: f('l1_mkt_beta'), sector: f('l2_sec_beta'), subsector: f('l3_sub_beta') },
    l3rr: f('l3_rr'),
    stock: store.symbols.map((s) => s.asset_type === 'stock'),
  }
}

/**
 * docs/methodology.md §11 written out: the uni_mc_N mask in force on day t (ranks by symbol
 * index), or null.
 */
function mcMask(
  store: ModelStore,
  raw: Raw,
  t: number,
): { maskDay: number; rank: Map<number, number> } | null {
  const cal = store.calendar
  // The month-end whose ranking applies: the last trading day of an earlier month (before t's month).
  let e = t
  while (e >= 0 && monthOf(cal[e]) === monthOf(cal[t])) e--
  if (e < 0) return null
  const valid = (i: number, d: number) =>
    raw.stock[i] && !Number.isNaN(raw.closePx[i][d]) && !Number.isNaN(raw.ret[i][d])
  const ranked = raw.cap
    .map((c, i) => ({ i, v: c[e], key: store.symbols[i].symbol }))
    .filter((x) => valid(x.i, e) && Number.isFinite(x.v))
    .sort((a, b) => b.v - a.v || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  return { maskDay: cal[e], rank: new Map(ranked.map((x, k) => [x.i, k + 1])) }
}

describe('cross-sectional endpoints', () => {
  let t: TestApp
  let key: string
  let account: string
  let store: ModelStore
  let raw: Raw
  before(async () => {
    t = await startTestApp()
    account = await t.account(5)
    key = await t.key(account)
    store = t.ctx.models.store('live')
    raw = await rawFields(store)
  })
  after(() => t?.close())

  const active = (i: number, d: number) => {
    const m = mcMask(store, raw, d)
    const r = m?.rank.get(i) ?? 0
    return (
      r >= 1 && r <= 3000 && raw.stock[i] && !Number.isNaN(raw.closePx[i][d]) && !Number.isNaN(raw.ret[i][d])
    )
  }

  test('industry panel: every level, min_peers 1 and 5, three dates, equals a direct weighted computation', async () => {
    const T = store.calendar.length
    for (const d of [T - 1, T - 130, T - 400]) {
      const teo = store.date(d)
      for (const level of ['market', 'sector', 'subsector'] as const) {
        for (const minPeers of [1, 5]) {
          const body = (
            await t.client.call('getIndustryPanel', { key, query: { level, teo, min_peers: minPeers } })
          ).ok()
          assert.equal(body.teo, teo)
          assert.equal(body.weight_basis, 'log_market_cap')
          const groups = new Map<string, { w: number; b: number }[]>()
          store.symbols.forEach((s, i) => {
            const beta = raw.beta[level][i][d]
            const cap = raw.cap[i][d]
            if (!s.industry || Number.isNaN(beta) || !(cap >= 0) || !active(i, d)) return
            const g = groups.get(s.industry) ?? []
            g.push({ w: Math.log1p(cap), b: beta })
            groups.set(s.industry, g)
          })
          const expected = [...groups]
            .filter(([, g]) => g.length >= minPeers)
            .sort(([a], [b]) => (a < b ? -1 : 1))
          assert.deepEqual(
            body.industries.map((r) => r.industry_name),
            expected.map(([name]) => name),
            `${teo} ${level} ${minPeers}`,
          )
          for (const [k, [name, g]] of expected.entries()) {
            const row = body.industries[k]
            const sw = g.reduce((s, x) => s + x.w, 0)
            const mean = g.reduce((s, x) => s + x.w * x.b, 0) / sw
            const variance = g.reduce((s, x) => s + x.w * (x.b - mean) ** 2, 0) / sw
            const scale = g.reduce((s, x) => s + x.w * Math.abs(x.b), 0) / sw
            close(row.beta_mean, mean, scale, `${name} mean`)
            close(row.beta_variance, variance, scale * scale, `${name} variance`)
            close(row.total_log_mcap_weight, sw, sw, `${name} weight`)
            assert.equal(row.n_companies, g.length)
            assert.equal(row.level, level)
            assert.match(row.industry, /^[a-z0-9_]+$/)
            assert.ok(row.sector_etf === null || SECTOR_ETFS.includes(row.sector_etf))
          }
        }
      }
    }
    // Without level: all three levels in one answer.
    const all = (await t.client.call('getIndustryPanel', { key, query: { min_peers: 1 } })).ok()
    assert.deepEqual([...new Set(all.industries.map((r) => r.level))], ['market', 'sector', 'subsector'])
    assert.equal(all.teo, store.dataAsOf)
  })

  test('universe members across a month boundary equal a direct month-end ranking', async () => {
    const cal = store.calendar
    const T = cal.length
    // The last month boundary at least 30 days back: the days on both sides of it.
    let b = T - 30
    while (b > 0 && monthOf(cal[b]) === monthOf(cal[b - 1])) b--
    for (const d of [b - 1, b, b + 1]) {
      for (const universe of ['uni_mc_50', 'uni_mc_3000'] as const) {
        const n = universe === 'uni_mc_50' ? 50 : 3000
        const body = (
          await t.client.call('getUniverseMembers', {
            key,
            params: { universe },
            query: { teo: store.date(d) },
          })
        ).ok()
        const m = mcMask(store, raw, d)
        assert.ok(m, 'a mask exists')
        const expected = [...m.rank]
          .filter(([, r]) => r <= n)
          .sort((x, y) => x[1] - y[1])
          .map(([i, r]) => ({
            symbol: store.symbols[i].symbol,
            rank: r,
            active: !Number.isNaN(raw.closePx[i][d]) && !Number.isNaN(raw.ret[i][d]),
          }))
        assert.deepEqual(
          body.members.map((x) => ({ symbol: x.symbol, rank: x.rank, active: x.active })),
          expected,
        )
        assert.equal(body.mask_as_of, new Date(m.maskDay * 86_400_000).toISOString().slice(0, 10))
        assert.deepEqual(body.counts, {
          mask: expected.length,
          active: expected.filter((x) => x.active).length,
        })
        assert.equal(body.basis, 'market_cap')
      }
    }
    // Before the first month-end: no mask, no members (and it says so).
    const first = (
      await t.client.call('getUniverseMembers', {
        key,
        params: { universe: 'uni_mc_500' },
        query: { teo: store.date(0) },
      })
    ).ok()
    assert.equal(first.mask_as_of, null)
    assert.deepEqual(first.members, [])
  })

  test('teo: a weekend resolves to the previous trading day; outside the store is 404 naming the range', async () => {
    const cal = store.calendar
    let d = 1
    while (cal[d] - cal[d - 1] < 2) d++
    const gap = new Date((cal[d - 1] + 1) * 86_400_000).toISOString().slice(0, 10)
    const body = (await t.client.call('getEtfFactorReturns', { key, query: { teo: gap } })).ok()
    assert.equal(body.teo, store.date(d - 1))
    assert.equal(body.teo_requested, gap)
    for (const teo of ['1990-01-02', '2099-01-02']) {
      const res = await t.client.call('getIndustryPanel', { key, query: { teo } })
      assert.equal(res.status, 404)
      const p = res.json as { code: string; detail: string }
      assert.equal(p.code, 'DATE_NOT_AVAILABLE')
      assert.ok(p.detail.includes(store.date(0)) && p.detail.includes(store.dataAsOf), p.detail)
    }
    const bad = await t.client.call('getIndustryPanel', { key, query: { teo: '2021-02-30' } })
    assert.equal(bad.status, 400)
  })

  test('ETF factor returns: compounded stored returns over 1/21/63/252 days; other tickers are 400', async () => {
    const T = store.calendar.length
    for (const d of [T - 1, T - 300]) {
      const body = (await t.client.call('getEtfFactorReturns', { key, query: { teo: store.date(d) } })).ok()
      assert.deepEqual(
        body.etfs.map((e) => e.ticker),
        ['SPY', ...SECTOR_ETFS],
      )
      for (const e of body.etfs) {
        const i = store.resolve(e.ticker)
        const h = await store.history(i, ['returns_gross', 'price_close'])
        const r = h.returns_gross as Float64Array
        assert.equal(e.close, (h.price_close as Float64Array)[d])
        for (const days of [1, 21, 63, 252] as const) {
          let g = 1
          let scale = 1
          let missing = d - days + 1 < 0
          for (let k = d - days + 1; k <= d && !missing; k++) {
            if (Number.isNaN(r[k])) missing = true
            g *= 1 + r[k]
            scale *= 1 + Math.abs(r[k])
          }
          close(e[`return_${days}d`], missing ? null : g - 1, scale * days, `${e.ticker} ${days}d`, 1e-15)
        }
      }
    }
    const some = (
      await t.client.call('getEtfFactorReturns', { key, query: { tickers: 'xlk, SPY,XLK' } })
    ).ok()
    assert.deepEqual(
      some.etfs.map((e) => e.ticker),
      ['XLK', 'SPY'],
    )
    const before = (await t.client.call('getBalance', { key })).ok().balance_usd
    const res = await t.client.call('getEtfFactorReturns', { key, query: { tickers: 'SPY,QQQ' } })
    assert.equal(res.status, 400)
    const p = res.json as { code: string; detail: string }
    assert.ok(p.detail.includes('"QQQ"') && p.detail.includes('XLY'), p.detail)
    assert.equal((await t.client.call('getBalance', { key })).ok().balance_usd, before, 'a 400 costs nothing')
  })

  test('residual-reversion basket: z, deciles, quality filter, weights and reasons', async () => {
    const T = store.calendar.length
    const d = T - 5
    const teo = store.date(d)
    // Current holders of distinct tickers (a ticker can pass from one symbol to another).
    const stocks = store.symbols.flatMap((s, i) => {
      const ticker = s.tickers.at(-1)?.ticker ?? s.symbol
      return s.asset_type === 'stock' && store.resolve(ticker) === i ? [{ i, ticker }] : []
    })
    const zOf = (i: number) => {
      const x = raw.l3rr[i]
      let short = 0
      for (let k = d - 4; k <= d; k++) {
        if (k < 0 || Number.isNaN(x[k])) return null
        short += x[k]
      }
      const w: number[] = []
      for (let k = d - 59; k <= d; k++) if (k >= 0 && !Number.isNaN(x[k])) w.push(x[k])
      if (w.length < 30) return null
      const mean = w.reduce((s, v) => s + v, 0) / w.length
      const sd = Math.sqrt(w.reduce((s, v) => s + (v - mean) ** 2, 0) / (w.length - 1))
      return {
        z: short / (sd * Math.sqrt(5)),
        scale: (5 * Math.max(...w.map(Math.abs))) / (sd * Math.sqrt(5)),
      }
    }
    const positions = stocks
      .slice(0, 12)
      .map((s, k) => ({ ticker: s.ticker, weight: k % 3 === 0 ? -2 : 1 + k }))
    positions.push({ ticker: 'SPY', weight: 1 }, { ticker: 'NOSUCH', weight: 1 })
    const body = (await t.client.call('residualReversionBasket', { key, body: { positions, teo } })).ok()
    assert.equal(body.members.length, positions.length)
    let num = 0
    let den = 0
    let scale = 0
    for (const m of body.members) {
      const i = store.resolve(m.ticker)
      if (m.ticker === 'NOSUCH') {
        assert.deepEqual([m.included, m.reason, m.symbol], [false, 'TICKER_NOT_FOUND', null])
        continue
      }
      const e = zOf(i)
      if (e === null) {
        assert.equal(m.z, null)
        assert.equal(m.included, false)
        assert.match(m.reason ?? '', /^NO_SIGNAL/)
        continue
      }
      close(m.z, e.z, e.scale, `${m.ticker} z`, 1e-10)
      assert.equal(m.included, true)
      num += m.weight * (m.z as number)
      den += Math.abs(m.weight)
      scale += Math.abs(m.weight * (m.z as number))
    }
    close(body.aggregate.z, den > 0 ? num / den : null, scale / den, 'aggregate z')
    assert.equal(
      body.decile_histogram.reduce((s, b) => s + b.count, 0),
      body.members.filter((m) => m.included && m.decile !== null).length,
    )
    // Deciles: 1..10 over the default universe, 1 = most negative z (ranks of the active members).
    const universe = stocks.filter((s) => active(s.i, d) && zOf(s.i) !== null)
    const order = universe.map((s) => ({ i: s.i, z: zOf(s.i)?.z as number })).sort((a, b) => a.z - b.z)
    for (const m of body.members.filter((x) => x.decile !== null)) {
      const k = order.findIndex((o) => store.symbols[o.i].symbol === m.symbol)
      assert.ok(k >= 0, `${m.ticker} with a decile is in the universe`)
      const lo = Math.floor((10 * k) / order.length) + 1
      assert.ok(Math.abs((m.decile as number) - lo) <= 1, `${m.ticker} decile ${m.decile} near ${lo}`)
    }
    // Quality filter: members below the quintile are listed, excluded, with the reason.
    const q = (
      await t.client.call('residualReversionBasket', {
        key,
        body: { tickers: stocks.map((s) => s.ticker), signal_quality_min_quintile: 4, teo },
      })
    ).ok()
    for (const m of q.members) {
      if (m.included) assert.ok((m.quality_quintile ?? 0) >= 4)
      else assert.match(m.reason ?? '', /^(NO_SIGNAL|NO_QUALITY|BELOW_QUALITY)/)
    }
    assert.ok(q.members.some((m) => m.reason?.startsWith('BELOW_QUALITY')))
    assert.equal(q.aggregate.weighting, 'equal')
    // Bad baskets are free 400s; all-unknown is 404.
    const before = (await t.client.call('getBalance', { key })).ok().balance_usd
    for (const bad of [
      { tickers: ['AAA', 'aaa'] },
      { tickers: ['AAA'], positions: [{ ticker: 'AAA', weight: 1 }] },
      {},
      { positions: [{ ticker: 'AAA', weight: 0 }] },
      { tickers: Array.from({ length: 501 }, (_, k) => `T${k}`) },
    ]) {
      const res = await t.client.call('residualReversionBasket', { key, body: bad as never })
      assert.equal(res.status, 400, JSON.stringify(bad).slice(0, 80))
    }
    assert.equal((await t.client.call('getBalance', { key })).ok().balance_usd, before)
    const unknown = await t.client.call('residualReversionBasket', { key, body: { tickers: ['NOSUCH'] } })
    assert.equal(unknown.status, 404)
  })

  test('rankings: the screen equals a direct ranking, filters and limit, /rankings/{ticker} agrees with it', async () => {
    const T = store.calendar.length
    for (const d of [T - 1, T - 300]) {
      const teo = store.date(d)
      // gross_return 21d over the universe cohort, written out: compounded returns of active members.
      const ranked = store.symbols
        .map((s, i) => {
          if (!active(i, d)) return null
          let g = 1
          for (let k = d - 20; k <= d; k++) {
            if (k < 0 || Number.isNaN(raw.ret[i][k])) return null
            g *= 1 + raw.ret[i][k]
          }
          return { symbol: s.symbol, v: g - 1 }
        })
        .filter((x): x is { symbol: string; v: number } => x !== null)
        .sort((a, b) => b.v - a.v || (a.symbol < b.symbol ? -1 : 1))
      const body = (
        await t.client.call('rankingsScreen', {
          key,
          body: { metric: 'gross_return', cohort: 'universe', window: '21d', limit: 500, teo },
        })
      ).ok()
      assert.equal(body.teo, teo)
      assert.equal(body.total_matches, ranked.length)
      assert.deepEqual(
        body.rows.map((r) => r.symbol),
        ranked.map((r) => r.symbol),
      )
      const n = ranked.length
      for (const [k, r] of body.rows.entries()) {
        assert.equal(r.rank_ordinal, k + 1)
        assert.equal(r.cohort_size, n)
        assert.equal(r.rank_percentile, (100 * (n - k)) / n)
        assert.equal(r.decile, Math.ceil((10 * (k + 1)) / n))
        close(r.value, ranked[k].v, 21 * 4, r.symbol, 1e-15)
      }
      // Filters: min_percentile, decile, sector_filter, limit.
      const top = (
        await t.client.call('rankingsScreen', {
          key,
          body: { metric: 'gross_return', window: '21d', min_percentile: 50, limit: 3, teo },
        })
      ).ok()
      assert.deepEqual(
        top.rows.map((r) => r.symbol),
        body.rows
          .filter((r) => r.rank_percentile >= 50)
          .slice(0, 3)
          .map((r) => r.symbol),
      )
      const dec = (
        await t.client.call('rankingsScreen', {
          key,
          body: { metric: 'gross_return', window: '21d', decile: 10, teo },
        })
      ).ok()
      assert.deepEqual(
        dec.rows.map((r) => r.symbol),
        body.rows.filter((r) => r.decile === 10).map((r) => r.symbol),
      )
      const sector = body.rows[0].sector_etf as string
      const sec = (
        await t.client.call('rankingsScreen', {
          key,
          body: { metric: 'gross_return', window: '21d', cohort: 'sector', sector_filter: sector, teo },
        })
      ).ok()
      assert.deepEqual(
        sec.rows.map((r) => r.symbol),
        body.rows.filter((r) => r.sector_etf === sector).map((r) => r.symbol),
        'within one sector the sector cohort keeps the universe order',
      )
      assert.deepEqual(
        sec.rows.map((r) => r.rank_ordinal),
        sec.rows.map((_, k) => k + 1),
      )
      // The best stock's own rankings agree with the screen.
      const best = body.rows[0]
      const own = (
        await t.client.call('getRankings', { key, params: { ticker: best.ticker }, query: { teo } })
      ).ok()
      assert.equal(own.rankings.length, 84)
      const row = own.rankings.find(
        (r) => r.metric === 'gross_return' && r.window === '21d' && r.cohort === 'universe',
      )
      assert.deepEqual(
        [row?.value, row?.rank_ordinal, row?.cohort_size, row?.decile, row?.rank_percentile],
        [best.value, 1, n, 1, 100],
      )
    }
    const before = (await t.client.call('getBalance', { key })).ok().balance_usd
    const bad = await t.client.call('rankingsScreen', {
      key,
      body: { metric: 'gross_return', sector_filter: 'QQQ' },
    })
    assert.equal(bad.status, 400)
    assert.match((bad.json as { detail: string }).detail, /XLK/)
    assert.equal((await t.client.call('getBalance', { key })).ok().balance_usd, before, 'a 400 costs nothing')
  })

  test('billed once per call at the list price; a repeat is free (HIT)', async () => {
    const acct = await t.account(1)
    const k = await t.key(acct)
    const calls = [
      ['getIndustryPanel', { key: k, query: { level: 'sector' } }, 0.02],
      ['getUniverseMembers', { key: k, params: { universe: 'uni_mc_500' } }, 0.005],
      ['getEtfFactorReturns', { key: k }, 0.005],
      ['residualReversionBasket', { key: k, body: { tickers: ['SPY'] } }, 0.02],
      ['rankingsScreen', { key: k, body: { metric: 'er_l3' } }, 0.02],
      ['getRankings', { key: k, params: { ticker: 'AAPL' } }, 0.001],
    ] as const
    let spent = 0
    for (const [op, input, price] of calls) {
      const a = await t.client.call(op as 'getEtfFactorReturns', input as never)
      const body = a.ok() as { _agent: { cost_usd: number; cache_status: string } }
      assert.equal(body._agent.cost_usd, price, op)
      spent += price
      const b = (await t.client.call(op as 'getEtfFactorReturns', input as never)).ok() as {
        _agent: { cost_usd: number; cache_status: string }
      }
      assert.equal(b._agent.cost_usd, 0, `${op} repeat`)
      assert.equal(b._agent.cache_status, 'HIT')
    }
    const bal = (await t.client.call('getBalance', { key: k })).ok()
    assert.equal(Math.round(bal.balance_usd * 1e6), Math.round((1 - spent) * 1e6))
  })

  test('tabular forms: CSV and Parquet tables with lineage headers', async () => {
    for (const [path, rows] of [
      ['/industry-panel?level=market&min_peers=1', 'industry'],
      ['/universe/uni_mc_500/members', 'ticker'],
      ['/etf/factor-returns', 'ticker'],
      ['/rankings/SPY', 'metric'],
    ] as const) {
      const csv = await t.transport({
        method: 'GET',
        url: `${path}${path.includes('?') ? '&' : '?'}format=csv`,
        headers: { authorization: `Bearer ${key}` },
      })
      assert.equal(csv.status, 200, path)
      assert.match(String(csv.headers['content-type']), /text\/csv/)
      assert.equal(csv.headers['x-data-as-of'], store.dataAsOf)
      assert.match(
        String(csv.headers['x-dataset']),
        /^synthetic; seed=\d+$/,
        'CSV says the data is synthetic',
      )
      assert.ok(csv.body.split('\n')[0].includes(rows), path)
    }
    // Parquet (hyparquet) and CSV (csv-parse) hold exactly the JSON rows.
    const base = await t.listen()
    const get = (path: string) => fetch(base + path, { headers: { authorization: `Bearer ${key}` } })
    const json = (
      await t.client.call('getIndustryPanel', { key, query: { level: 'sector', min_peers: 1 } })
    ).ok()
    const pq = await readHyparquet(
      new Uint8Array(
        await (await get('/industry-panel?level=sector&min_peers=1&format=parquet')).arrayBuffer(),
      ),
    )
    assert.deepEqual(
      pq.map((r) => [r.industry, r.level, r.beta_mean, Number(r.n_companies), r.sector_etf, r.teo]),
      json.industries.map((r) => [
        r.industry,
        r.level,
        r.beta_mean,
        r.n_companies,
        r.sector_etf,
        Date.parse(`${json.teo}T00:00:00Z`),
      ]),
    )
    const screen = (
      await t.client.call('rankingsScreen', { key, body: { metric: 'er_l2', window: '63d', limit: 10 } })
    ).ok()
    const res = await fetch(`${base}/rankings/screen?format=csv`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ metric: 'er_l2', window: '63d', limit: 10 }),
    })
    const rowsCsv = parse(await res.text(), { columns: true }) as Record<string, string>[]
    assert.deepEqual(
      rowsCsv.map((r) => [r.ticker, Number(r.value), Number(r.rank_ordinal), Number(r.decile)]),
      screen.rows.map((r) => [r.ticker, r.value, r.rank_ordinal, r.decile]),
    )
  })
})
