import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ModelStore } from '../../src/engine/model-store/reader.ts'
import { readEvaluation, writeEvaluation } from '../../src/services/analytics/evaluate/cache.ts'
import { DEFAULT_EVALUATE, evaluateStore } from '../../src/services/analytics/evaluate/run.ts'
import type { EvaluationResult } from '../../src/services/analytics/evaluate/summary.ts'
import { fixtureStores } from '../helpers/fixture-store.ts'
import { startTestApp } from '../helpers/test-app.ts'

/**
 * `erm3 evaluate` on a copy of the small fixture store (the evaluation writes its cache beside
 * the builds): the hedge figures against a direct computation, the cache per build, the page.
 */
describe('evaluate: out-of-sample forecast quality on the fixture store', () => {
  let root: string
  let store: ModelStore
  let result: EvaluationResult
  const opts = {
    ...DEFAULT_EVALUATE,
    sizes: [3, 5],
    booksPerSize: 4,
    singles: 10,
    estimators: ['sample_252', 'ewma_nw'] as EvaluationResult['estimators'][number]['name'][],
  }

  before(async () => {
    const fx = await fixtureStores()
    root = mkdtempSync(join(tmpdir(), 'erm3-evaluate-'))
    cpSync(fx.live, root, { recursive: true })
    store = await ModelStore.open(root)
    result = await evaluateStore(store, opts)
  })
  after(async () => {
    await store?.close()
    if (root) rmSync(root, { recursive: true, force: true })
  })

  test('dates every 21 days after the longest window, figures for every estimator and size', () => {
    const days = store.calendar.length
    const expected: number[] = []
    for (let t = 503; t + 21 < days; t += 21) expected.push(t)
    assert.ok(result.dates.count > 0 && result.dates.count <= expected.length)
    // A date whose ETFs or stocks are too few is skipped: the first kept is one of the schedule.
    assert.ok(expected.map((t) => store.date(t)).includes(String(result.dates.first)))
    for (const e of opts.estimators)
      for (const size of ['1', '3', '5']) {
        const b = result.bias[e]?.[size]
        assert.ok(b && Number.isFinite(b.bias) && b.bias > 0, `${e} ${size}`)
        if (size === '1') assert.ok(b.n <= result.dates.count * 10)
        else assert.equal(b.n, result.dates.count * 4)
      }
    assert.ok(result.recommended === 'sample_252' || result.recommended === 'ewma_nw')
  })

  test('single-stock hedge effectiveness equals a direct computation over every eligible stock-date', async () => {
    const days = store.calendar.length
    const etfRet = new Map<number, Float64Array>()
    for (const [code, etf] of store.etfs.entries()) {
      const s = await store.etfSeries(etf)
      if (s) etfRet.set(code, s.returns)
    }
    const market = store.etfs.indexOf('SPY')
    let unhedged = 0
    let l3 = 0
    for (let t = 503; t + 21 < days; t += 21) {
      const complete = (code: number) => {
        const s = etfRet.get(code)
        if (!s) return false
        for (let d = t - 503; d <= t + 21; d++) if (Number.isNaN(s[d] as number)) return false
        return true
      }
      for (const [i, sym] of store.symbols.entries()) {
        if (sym.asset_type !== 'stock') continue
        const h = await store.history(i, [
          'returns_gross',
          'l3_rr',
          'l1_mkt_hr',
          'l2_mkt_hr',
          'l2_sec_hr',
          'l3_mkt_hr',
          'l3_sec_hr',
          'l3_sub_hr',
          'sector_etf',
          'subsector_etf',
        ])
        const at = (f: string) => (h[f] as ArrayLike<number>)[t] as number
        const sec = at('sector_etf')
        const sub = at('subsector_etf') >= 0 ? at('subsector_etf') : sec
        const hrs = ['l1_mkt_hr', 'l2_mkt_hr', 'l2_sec_hr', 'l3_mkt_hr', 'l3_sec_hr', 'l3_sub_hr'].map(at)
        if (sec < 0 || hrs.some(Number.isNaN) || ![market, sec, sub].every(complete)) continue
        const r = h.returns_gross as ArrayLike<number>
        let realised = 0
        let ok = true
        for (let d = t + 1; d <= t + 21; d++) {
          ok &&= !Number.isNaN(r[d] as number)
          realised += r[d] as number
        }
        let resDays = 0
        for (let d = Math.max(0, t - 251); d <= t; d++)
          if (!Number.isNaN((h.l3_rr as ArrayLike<number>)[d] as number)) resDays++
        if (!ok || resDays < 20) continue
        const sum = (code: number) => {
          let s = 0
          for (let d = t + 1; d <= t + 21; d++) s += (etfRet.get(code) as Float64Array)[d] as number
          return s
        }
        const hedged =
          realised -
          (hrs[3] as number) * sum(market) -
          (hrs[4] as number) * sum(sec) -
          (hrs[5] as number) * sum(sub)
        unhedged += realised * realised
        l3 += hedged * hedged
      }
    }
    assert.ok(unhedged > 0)
    const got = result.hedge.single.l3
    assert.ok(Math.abs(got - l3 / unhedged) <= 1e-9 * (l3 / unhedged), `${got} vs ${l3 / unhedged}`)
  })

  test('cached per build; the page shows how to run it, then the figures', async () => {
    const t = await startTestApp({ liveStore: root })
    try {
      const empty = await t.app.fastify.inject({ method: 'GET', url: '/docs/model-quality' })
      assert.equal(empty.statusCode, 200)
      assert.match(empty.body, /erm3 evaluate --store/)
      assert.equal(await readEvaluation(store), null)
      const path = await writeEvaluation(store, result)
      assert.ok(path.includes(join('evaluations', `${store.buildId}.json`)))
      assert.equal((await readEvaluation(store))?.generated_at, result.generated_at)
      const page = await t.app.fastify.inject({ method: 'GET', url: '/docs/model-quality' })
      assert.equal(page.statusCode, 200)
      assert.match(page.body, /Bias and rolling MRAD/)
      assert.match(page.body, /<td>sample_252<\/td><td>single stocks<\/td>/)
      assert.match(String(page.headers['content-security-policy']), /style-src 'sha256-/)
      assert.doesNotMatch(page.body, /<script/)
    } finally {
      await t.close()
    }
  })

  test('erm3 evaluate: a progress line per stage, the table and the cache file; a bad estimator is refused', () => {
    const bin = fileURLToPath(new URL('../../bin/erm3.js', import.meta.url))
    const run = (args: string[]) =>
      spawnSync(process.execPath, [bin, 'evaluate', '--store', root, ...args], {
        encoding: 'utf8',
        timeout: 120_000,
      })
    const ok = run(['--dates', '2', '--books', '2', '--singles', '3', '--estimators', 'sample_252'])
    assert.equal(ok.status, 0, ok.stderr)
    assert.match(ok.stderr, /evaluate dates: done in/)
    assert.match(ok.stdout, /sample_252 +single stocks/)
    assert.match(ok.stdout, /recommended estimator: sample_252/)
    assert.match(ok.stdout, new RegExp(`written to .*evaluations/${store.buildId}\\.json`))
    const bad = run(['--estimators', 'bogus'])
    assert.notEqual(bad.status, 0)
    assert.match(bad.stderr, /unknown estimator "bogus"/)
  })
})
