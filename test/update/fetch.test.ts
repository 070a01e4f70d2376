import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { readManifest } from '../../src/engine/data/dataset-reader.ts'
import { readBars, readFetchState } from '../../src/engine/update/data-dir.ts'
import { readClassification } from '../../src/engine/update/dir-files.ts'
import { fetchData } from '../../src/engine/update/fetch.ts'
import { exists, tempDir } from '../data/import-helpers.ts'
import { type FakeMarket, fakeBars, fakeMarket, fakeSource, listedSymbols } from './fake-source.ts'

const FROM = '2020-01-02'
const END = '2021-03-31'

/** The synthetic market's own sectors, as the user's overrides (each symbol is listed as its ticker). */
function classify(m: FakeMarket) {
  return new Map(
    m.ds.securities
      .filter((r) => r.assetType === 'stock' && r.sector !== null)
      .map((r) => [r.ticker, { sector: r.sector ?? '', industry: r.industry }]),
  )
}

const historyCalls = (m: FakeMarket) =>
  new Map([...m.calls].filter(([k]) => k.startsWith('history:')).map(([k, n]) => [k.slice(8), n]))

describe('fetchData', () => {
  test('a full fetch writes the data directory and assembles the dataset', async () => {
    const m = fakeMarket()
    const dataDir = await tempDir('erm3-fetch-')
    const s = await fetchData({
      dataDir,
      sources: [fakeSource(m)],
      from: FROM,
      to: END,
      overrides: classify(m),
    })
    assert.deepEqual(s.failed, [])
    assert.equal(s.aborted, false)
    assert.equal(s.universe.stocks, 22)
    assert.deepEqual(s.universe.delisted, ['YUX', 'ZSI'])
    assert.equal(s.dataset?.manifest.source.kind, 'vendor')
    const source = s.dataset?.manifest.source as { sources: string[]; fetched_at: string }
    assert.deepEqual(source.sources, ['tiingo'])
    assert.match(source.fetched_at, /^\d{4}-\d{2}-\d{2}T/)
    assert.deepEqual(await readBars(dataDir, 'NVDA'), fakeBars(m, 'NVDA', FROM, END))
    assert.equal((await readClassification(dataDir)).get('NVDA')?.sector, 'Information Technology')
    const shares = await readFile(join(dataDir, 'shares', 'CIK0009000018.csv'), 'utf8')
    assert.match(shares, /^end,filed,shares\r\n2020-01-02,2020-02-01,/)
    assert.ok(await exists(join(dataDir, 'facts', 'CIK0009000018.json.gz')))
    // Every listed symbol's history was asked for exactly once; the state records every task.
    for (const sym of listedSymbols(m)) assert.equal(historyCalls(m).get(sym), 1, sym)
    const state = await readFetchState(dataDir)
    assert.equal(Object.keys(state.tasks).length, s.tasks)
    assert.equal(state.tasks['tiingo:prices:NVDA']?.through, END)
  })

  test('after an abort the re-run does only the rest', async () => {
    const m = fakeMarket()
    const dataDir = await tempDir('erm3-fetch-')
    const ac = new AbortController()
    let n = 0
    m.onCall = (key) => {
      if (key.startsWith('history:') && ++n === 30) ac.abort()
    }
    const opts = {
      dataDir,
      sources: [fakeSource(m)],
      from: FROM,
      to: END,
      overrides: classify(m),
      stateEvery: 7,
    }
    const first = await fetchData({ ...opts, signal: ac.signal, concurrency: 3 })
    assert.equal(first.aborted, true)
    assert.equal(first.dataset, null)
    assert.equal(await exists(join(dataDir, 'dataset')), false, 'nothing assembled from a partial fetch')
    const doneFirst = Object.keys((await readFetchState(dataDir)).tasks)
    assert.equal(doneFirst.length, first.done)
    assert.ok(first.done >= 30 && first.done < first.tasks, `${first.done} of ${first.tasks}`)
    const before = new Map(m.calls)
    m.onCall = undefined
    const second = await fetchData(opts)
    assert.equal(second.skipped, first.done)
    assert.equal(second.done, second.tasks - first.done)
    for (const key of doneFirst.filter((k) => k.startsWith('tiingo:prices:'))) {
      const sym = key.slice('tiingo:prices:'.length)
      assert.equal(m.calls.get(`history:${sym}`), before.get(`history:${sym}`), `${sym} not fetched again`)
    }
    for (const [sym, calls] of historyCalls(m)) assert.equal(calls, 1, `${sym} fetched once over both runs`)
    assert.ok(second.dataset)
  })

  test('a failing task is reported, the rest go on, and dataset/ stays as it was', async () => {
    const m = fakeMarket()
    const dataDir = await tempDir('erm3-fetch-')
    const opts = { dataDir, sources: [fakeSource(m)], from: FROM, overrides: classify(m) }
    await fetchData({ ...opts, to: '2021-02-26' })
    const before = await readManifest(join(dataDir, 'dataset'))
    m.failing.add('history:AMZN')
    const failed = await fetchData({ ...opts, to: END })
    assert.deepEqual(failed.failed, [
      { task: 'tiingo:prices:AMZN', error: 'fake: history:AMZN: service unavailable' },
    ])
    assert.equal(failed.dataset, null)
    assert.match(failed.datasetError ?? '', /1 task\(s\) failed/)
    const kept = await readManifest(join(dataDir, 'dataset'))
    assert.equal(kept.digest, before.digest)
    assert.equal(kept.calendar.last, '2021-02-26')
    // The retry asks only for what failed.
    m.failing.clear()
    const calls = new Map(m.calls)
    const retry = await fetchData({ ...opts, to: END })
    assert.equal(retry.done, 1)
    assert.equal(m.calls.get('history:AMZN'), (calls.get('history:AMZN') ?? 0) + 1)
    assert.equal(m.calls.get('history:NVDA'), calls.get('history:NVDA'))
    assert.equal(retry.dataset?.manifest.calendar.last, END)
  })

  test('bad requests are clear errors', async () => {
    const m = fakeMarket()
    const dataDir = await tempDir('erm3-fetch-')
    const { securities: _, ...noList } = fakeSource(m)
    await assert.rejects(
      fetchData({ dataDir, sources: [noList], from: FROM, to: END }),
      /no source lists securities/,
    )
    await assert.rejects(
      fetchData({ dataDir, sources: [fakeSource(m)], from: END, to: FROM }),
      /--from 2021-03-31 is after --to 2020-01-02/,
    )
  })
})
