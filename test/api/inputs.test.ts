import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, before, describe, test } from 'node:test'
import { toolCatalogue, toolRequest } from '../../src/contract/tools.ts'
import * as fc from '../helpers/fc.ts'
import { debits, readCsv } from '../helpers/history-checks.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * Asking for exactly what you need (docs/using-the-api.md): start/end windows and fields on history
 * operations, the cursor convention of long lists, strict input (unknown parameters, enum
 * errors, missing path parameters) and the ticker pattern before routing.
 */
describe('inputs: windows, fields, cursors, strict input', () => {
  let t: TestApp
  let account: string
  let key: string
  let port: number
  before(async () => {
    t = await startTestApp()
    account = await t.account(50)
    // Premium: the cursor walks below make more calls than the default rate allows.
    key = await t.key(account, { tier: 'premium' })
    await t.app.fastify.listen({ port: 0, host: '127.0.0.1' })
    port = (t.app.fastify.server.address() as { port: number }).port
  })
  after(() => t?.close())

  const call = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
    const r = await t.app.fastify.inject({
      method,
      url,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    })
    return { status: r.statusCode, text: r.body, json: () => JSON.parse(r.body) as Record<string, unknown> }
  }
  const iso = (day: number) => new Date(day * 86_400_000).toISOString().slice(0, 10)
  const calendar = () => Array.from(t.ctx.models.store('live').calendar, iso)

  test('a one-week window: exactly the trading days between start and end, in JSON and CSV', async () => {
    const days = calendar()
    const end = days[days.length - 3] as string
    const start = iso(Date.parse(`${end}T00:00:00Z`) / 86_400_000 - 6)
    const want = days.filter((d) => d >= start && d <= end)
    assert.ok(want.length >= 3 && want.length <= 5, String(want))
    const q = `ticker=AAPL&start=${start}&end=${end}`
    const tr = (await call('GET', `/ticker-returns?${q}`)).json() as { data: { date: string }[] }
    assert.deepEqual(
      tr.data.map((r) => r.date),
      want,
    )
    const rd = (await call('GET', `/returns-decomposition?${q}`)).json()
    assert.deepEqual(rd.dates, want)
    assert.deepEqual((rd._metadata as { range: string[] }).range, [want[0], want[want.length - 1]])
    const lstar = (await call('GET', `/lstar?${q}`)).json()
    assert.deepEqual(lstar.dates, want)
    const batch = (await call('POST', '/batch/lstar', { tickers: ['AAPL'], start, end })).json() as {
      results: { AAPL: { dates: string[] } }
    }
    assert.deepEqual(batch.results.AAPL.dates, want)
    const csv = readCsv((await call('GET', `/ticker-returns?${q}&format=csv&fields=price_close`)).text)
    assert.deepEqual(csv[0], ['date', 'price_close'])
    assert.deepEqual(
      csv.slice(1).map((r) => r[0]),
      want,
    )
  })

  test('start wins over years; end alone is years back from end', async () => {
    const days = calendar()
    const start = days[days.length - 10] as string
    const a = (await call('GET', `/returns?ticker=AAPL&years=5&start=${start}`)).json()
    assert.deepEqual(a.dates, days.slice(-10))
    const end = '2021-06-30'
    const b = (await call('GET', `/returns?ticker=AAPL&years=1&end=${end}`)).json() as { dates: string[] }
    assert.deepEqual(
      b.dates,
      days.filter((d) => d > '2020-06-30' && d <= end),
    )
  })

  test('fields: only the columns asked (comma list or repeated), unknown names a 400 listing the allowed', async () => {
    const r = (await call('GET', '/ticker-returns?ticker=AAPL&fields=returns_gross,l3_res_er')).json() as {
      data: Record<string, unknown>[]
    }
    for (const row of r.data) assert.deepEqual(Object.keys(row), ['date', 'returns_gross', 'l3_res_er'])
    const l = (await call('GET', '/lstar?ticker=AAPL&fields=lstar&fields=total_er')).json()
    assert.ok('lstar' in l && 'total_er' in l && !('market_hr' in l) && 'dates' in l)
    const l3 = (await call('GET', '/l3-decomposition?ticker=AAPL&fields=l3_res_er')).json()
    assert.ok('l3_res_er' in l3 && !('l3_mkt_hr' in l3) && !('sector_etf' in l3))
    const bad = await call('GET', '/ticker-returns?ticker=AAPL&fields=returns_gross,nope')
    assert.equal(bad.status, 400)
    assert.match(
      String(bad.json().detail),
      /unknown field nope; allowed: returns_gross, price_close, l3_mkt_hr/,
    )
  })

  test('bad windows are 400s that say why, and cost nothing', async () => {
    const before = (await debits(t, account)).length
    const cases: [string, RegExp][] = [
      ['start=2021-12-27&end=2021-12-20', /start 2021-12-27 is after end 2021-12-20/],
      ['start=1990-01-01', /start: 1990-01-01 is outside the data/],
      ['end=2099-01-01', /end: 2099-01-01 is outside the data/],
      ['start=2021-02-30', /querystring\.start: must match format "date"/],
      ['start=yesterday', /querystring\.start/],
    ]
    for (const [q, re] of cases) {
      const r = await call('GET', `/ticker-returns?ticker=AAPL&${q}`)
      assert.equal(r.status, 400, q)
      assert.match(String(r.json().detail), re, q)
    }
    assert.equal((await debits(t, account)).length, before)
  })

  test('unknown query parameters and body fields are a 400 naming them, never charged', async () => {
    const before = (await debits(t, account)).length
    const q = await call('GET', '/metrics/AAPL?foo=1')
    assert.equal(q.status, 400)
    assert.equal(q.json().detail, 'querystring.foo: unknown field')
    const b = await call('POST', '/decompose', { ticker: 'AAPL', extra: 1 })
    assert.equal(b.status, 400)
    assert.match(String(b.json().detail), /body\.extra: unknown field/)
    assert.equal((await debits(t, account)).length, before)
  })

  test('an enum error lists the allowed values', async () => {
    const r = await call('GET', '/metrics/AAPL/correlation?method=kendall')
    assert.equal(r.status, 400)
    assert.equal(r.json().detail, 'querystring.method: must be one of: pearson, spearman')
  })

  test('a missing path parameter is named, never "No such endpoint"', async () => {
    for (const url of ['/metrics/', '/metrics//correlation']) {
      const r = await call('GET', url)
      assert.equal(r.status, 400, url)
      assert.match(String(r.json().detail), /ticker/, url)
      assert.doesNotMatch(String(r.json().detail), /No such endpoint/, url)
    }
  })

  test('POST /correlation: factors as an array or a comma list, same answer', async () => {
    const a = (await call('POST', '/correlation', { ticker: 'AAPL', factors: ['oil', 'gold'] })).json()
    const s = (await call('POST', '/correlation', { ticker: 'AAPL', factors: 'oil,gold' })).json()
    assert.deepEqual(a.correlations, s.correlations)
    assert.deepEqual(Object.keys(a.correlations as object), ['oil', 'gold'])
  })

  test('path-like tickers are a 400 over HTTP and a tool error over MCP, never the landing page', async () => {
    for (const path of ['/metrics/..', '/metrics/%2e%2e', '/metrics/.', '/metrics/a%2Fb']) {
      const { status, body } = await new Promise<{ status: number; body: string }>((res, rej) => {
        const r = request(
          { host: '127.0.0.1', port, path, headers: { authorization: `Bearer ${key}` } },
          (s) => {
            let b = ''
            s.on('data', (c) => {
              b += c
            })
            s.on('end', () => res({ status: s.statusCode ?? 0, body: b }))
          },
        )
        r.on('error', rej)
        r.end()
      })
      assert.equal(status, 400, path)
      assert.match(body, /must be a ticker/, path)
    }
    const tool = toolCatalogue().find((x) => x.operation.id === 'getMetrics')
    assert.ok(tool)
    for (const ticker of ['..', '.', 'a/b', ''])
      assert.throws(() => toolRequest(tool, { ticker }, key), /ticker/, ticker)
    assert.equal(toolRequest(tool, { ticker: 'brk.b' }, key).url, '/metrics/brk.b')
  })

  test('/tickers: a cursor walk returns every row exactly once, whatever the limit', async () => {
    const all = (await call('GET', '/tickers?limit=1000')).json() as { tickers: string[]; total: number }
    assert.equal(all.total, all.tickers.length)
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.integer({ min: 1, max: 3 }).map((k) => Math.ceil(all.total / k)),
          fc.integer({ min: 40, max: 400 }),
        ),
        fc.boolean(),
        async (limit, meta) => {
          const seen: string[] = []
          let cursor: string | null = null
          let pages = 0
          do {
            const q = `limit=${limit}${meta ? '&include_metadata=true' : ''}${cursor ? `&cursor=${cursor}` : ''}`
            const p = (await call('GET', `/tickers?${q}`)).json() as {
              tickers: (string | { ticker: string })[]
              next_cursor: string | null
              total: number
              count: number
            }
            assert.equal(p.total, all.total)
            assert.equal(p.count, p.tickers.length)
            assert.ok(p.count <= limit)
            seen.push(...p.tickers.map((x) => (typeof x === 'string' ? x : x.ticker)))
            cursor = p.next_cursor
            pages++
          } while (cursor)
          assert.deepEqual(seen, all.tickers)
          assert.equal(pages, Math.max(1, Math.ceil(all.total / limit)))
        },
      ),
      { numRuns: 12 },
    )
  })

  test('/tickers: a cursor for other parameters, or not a cursor, is a 400', async () => {
    const p = (await call('GET', '/tickers?limit=5')).json() as { next_cursor: string }
    const other = await call('GET', `/tickers?limit=5&search=a&cursor=${p.next_cursor}`)
    assert.equal(other.status, 400)
    assert.match(String(other.json().detail), /other parameters/)
    const junk = await call('GET', '/tickers?cursor=bm90LWEtY3Vyc29y')
    assert.equal(junk.status, 400)
    assert.match(String(junk.json().detail), /not a cursor/)
  })

  /**
   * Walks a paged list with `limit` (and `limit2` from the second page on: limit may change), checking
   * every page's total and size; returns the rows in the order seen.
   */
  async function walk<R>(
    page: (
      limit: number,
      cursor: string | null,
    ) => Promise<{ rows: R[]; total: number; next_cursor: string | null }>,
    limit: number,
    limit2: number,
    total: number,
  ): Promise<R[]> {
    const seen: R[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const lim = pages === 0 ? limit : limit2
      const p = await page(lim, cursor)
      assert.equal(p.total, total)
      assert.equal(p.rows.length, Math.min(lim, total - seen.length))
      seen.push(...p.rows)
      cursor = p.next_cursor
      pages++
    } while (cursor)
    assert.equal(seen.length, total)
    return seen
  }

  interface ScreenPage {
    rows: { symbol: string; rank_ordinal: number; decile: number; cohort_size: number }[]
    total: number
    total_matches: number
    next_cursor: string | null
  }
  const screen = async (body: Record<string, unknown>) => {
    const r = await call('POST', '/rankings/screen', body)
    assert.equal(r.status, 200, r.text)
    return r.json() as unknown as ScreenPage
  }

  test('/rankings/screen: a cursor walk returns every row exactly once, in order; total right', async () => {
    // Cohort universe: ordinals are unique, so the full screen is ordinals 1..cohort_size.
    const all = await screen({ metric: 'er_l2', limit: 500 })
    assert.ok(all.total >= 10 && all.total < 500, `total ${all.total}`)
    assert.equal(all.next_cursor, null)
    assert.equal(all.total, all.rows.length)
    assert.equal(all.total_matches, all.total)
    assert.deepEqual(
      all.rows.map((r) => r.rank_ordinal),
      Array.from({ length: all.total }, (_, k) => k + 1),
    )
    assert.ok(all.rows.every((r) => r.cohort_size === all.total))
    // One decile of the sector cohorts: rows from several cohorts, several pages.
    const d1 = await screen({ metric: 'gross_return', cohort: 'sector', window: '1d', decile: 1, limit: 500 })
    assert.equal(d1.total, d1.rows.length)
    assert.ok(d1.rows.every((r) => r.decile === 1))
    const cases: [Record<string, unknown>, ScreenPage][] = [
      [{ metric: 'er_l2' }, all],
      [{ metric: 'gross_return', cohort: 'sector', window: '1d', decile: 1 }, d1],
    ]
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(0, 1),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 4 }),
        async (which, k1, k2) => {
          const [body, full] = cases[which]
          const size = (k: number) => Math.max(1, Math.ceil(full.total / (k + 1)))
          const rows = await walk(
            async (limit, cursor) => {
              const p = await screen({ ...body, limit, ...(cursor ? { cursor } : {}) })
              return { ...p, rows: p.rows }
            },
            size(k1),
            size(k2),
            full.total,
          )
          assert.deepEqual(rows, full.rows)
        },
      ),
      { numRuns: 6 },
    )
  })

  test('/universe/{universe}/members: a cursor walk returns every member exactly once, by rank', async () => {
    interface MembersPage {
      members: { symbol: string; rank: number; active: boolean }[]
      counts: { mask: number; active: number }
      total: number
      next_cursor: string | null
    }
    const members = async (q: string) => {
      const r = await call('GET', `/universe/uni_mc_50/members?${q}`)
      assert.equal(r.status, 200, r.text)
      return r.json() as unknown as MembersPage
    }
    const all = await members('limit=3000')
    assert.ok(all.total > 5, `total ${all.total}`)
    assert.equal(all.next_cursor, null)
    assert.equal(all.total, all.members.length)
    assert.equal(all.counts.mask, all.total)
    assert.equal(all.counts.active, all.members.filter((m) => m.active).length)
    // The mask of uni_mc_50 is its top 50 by rank: ranks 1..total, in order.
    assert.ok(all.total <= 50)
    assert.deepEqual(
      all.members.map((m) => m.rank),
      Array.from({ length: all.total }, (_, k) => k + 1),
    )
    // The default page (1,000) holds it whole.
    assert.deepEqual((await members('')).members, all.members)
    for (const [l1, l2] of [
      [1, 1],
      [7, 3],
      [Math.ceil(all.total / 2), all.total],
    ]) {
      const rows = await walk(
        async (limit, cursor) => {
          const p = await members(`limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`)
          assert.deepEqual(p.counts, all.counts)
          return { ...p, rows: p.members }
        },
        l1,
        l2,
        all.total,
      )
      assert.deepEqual(rows, all.members)
    }
  })

  test('screen and members: a cursor for other parameters, another day, or not a cursor, is a free 400', async () => {
    const before = (await debits(t, account)).length
    const s = await screen({ metric: 'er_l2', limit: 3 })
    assert.ok(s.next_cursor)
    const days = calendar()
    const refusals: [Promise<{ status: number; json: () => Record<string, unknown> }>, RegExp, string][] = [
      [
        call('POST', '/rankings/screen', { metric: 'er_l1', limit: 3, cursor: s.next_cursor }),
        /other parameters/,
        'body.cursor',
      ],
      [
        call('POST', '/rankings/screen', {
          metric: 'er_l2',
          teo: days[days.length - 2],
          cursor: s.next_cursor,
        }),
        /other parameters/,
        'body.cursor',
      ],
      [
        call('POST', '/rankings/screen', { metric: 'er_l2', cursor: 'bm90LWEtY3Vyc29y' }),
        /not a cursor/,
        'body.cursor',
      ],
    ]
    const m = (await call('GET', '/universe/uni_mc_50/members?limit=2')).json() as { next_cursor: string }
    assert.ok(m.next_cursor)
    refusals.push(
      [
        call('GET', `/universe/uni_mc_500/members?limit=2&cursor=${m.next_cursor}`),
        /other parameters/,
        'querystring.cursor',
      ],
      [
        call('GET', `/universe/uni_mc_50/members?cursor=${s.next_cursor}`),
        /other parameters/,
        'querystring.cursor',
      ],
      [call('GET', '/universe/uni_mc_50/members?cursor=%7B'), /not a cursor/, 'querystring.cursor'],
    )
    for (const [pending, re, field] of refusals) {
      const r = await pending
      assert.equal(r.status, 400)
      assert.match(String(r.json().detail), re)
      assert.equal((r.json().errors as { field: string }[] | undefined)?.[0]?.field, field)
    }
    // The two first pages were charged; no refusal was.
    assert.equal((await debits(t, account)).length, before + 2)
  })
})
