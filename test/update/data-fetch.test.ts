import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { dataFetch } from '../../src/cli/commands/data-fetch.ts'
import { sourcesFromNames } from '../../src/engine/sources/index.ts'
import { exists, put, tempDir } from '../data/import-helpers.ts'
import { fakeMarket, fakeSource } from './fake-source.ts'

describe('erm3 data fetch', () => {
  test('fetches into $ERM3_HOME/data by default and prints a summary', async () => {
    const home = await tempDir('erm3-home-')
    const m = fakeMarket()
    const exclude = await put(home, 'exclude.txt', '# never\nmsft\n')
    let out = ''
    const code = await dataFetch(
      { source: 'fake', from: '2020-01-02', to: '2021-03-31', exclude, concurrency: '2' },
      { env: { ERM3_HOME: home }, sources: [fakeSource(m)], write: (s) => (out += s) },
    )
    assert.equal(code, 0, out)
    assert.ok(await exists(join(home, 'data', 'dataset', 'manifest.json')))
    assert.equal(m.calls.get('history:MSFT'), undefined, 'excluded')
    assert.match(out, /universe {2}21 stocks \(2 delisted\)/)
    assert.match(out, /dataset {3}21 stocks, \d+ ETFs, 2020-01-02 … 2021-03-31/)
  })

  test('overrides from ERM3_CLASSIFICATION_OVERRIDES; stocks without a sector are listed', async () => {
    const home = await tempDir('erm3-home-')
    const m = fakeMarket()
    const file = await put(
      home,
      'o.csv',
      'ticker,sector,industry\nnvda,Information Technology,Semiconductors\n',
    )
    let out = ''
    const env = { ERM3_HOME: home, ERM3_CLASSIFICATION_OVERRIDES: file }
    const code = await dataFetch(
      { source: 'fake', from: '2020-01-02', to: '2021-03-31' },
      { env, sources: [fakeSource(m)], write: (s) => (out += s) },
    )
    assert.equal(code, 0, out)
    assert.match(out, /sectors {3}1 of 22 stocks \(1 from override\)/)
    assert.match(out, /no sector 21: [A-Z]/)
    const bad = await put(home, 'bad.csv', 'ticker,sector,industry\nAAPL,Tech,\n')
    await assert.rejects(
      dataFetch({ source: 'fake', classification: bad }, { env, sources: [fakeSource(m)], write: () => {} }),
      /bad\.csv:2: sector "Tech" is not one of the classification map's/,
    )
  })

  test('a failed task makes the exit code 1 and is listed', async () => {
    const m = fakeMarket()
    m.failing.add('history:NVDA')
    const dataDir = await tempDir('erm3-fetch-')
    let out = ''
    const code = await dataFetch(
      { source: 'fake', from: '2020-01-02', to: '2021-03-31', dataDir },
      { env: {}, sources: [fakeSource(m)], write: (s) => (out += s) },
    )
    assert.equal(code, 1)
    assert.match(out, /failed {4}tiingo:prices:NVDA: fake: history:NVDA: service unavailable/)
    assert.match(out, /dataset {3}not replaced: 1 task\(s\) failed/)
  })

  test('bad flags and unknown sources are clear errors', async () => {
    const deps = { env: {}, sources: [], write: () => {} }
    await assert.rejects(
      dataFetch({ source: 'x', to: '2021-13-01' }, deps),
      /--to must be a date YYYY-MM-DD, got "2021-13-01"/,
    )
    await assert.rejects(
      dataFetch({ source: 'x', concurrency: '0' }, deps),
      /--concurrency must be an integer in 1\.\.64, got 0/,
    )
    await assert.rejects(
      dataFetch({ source: 'x', tickers: 'AAPL,no way' }, deps),
      /--tickers:2: "no way" is not a ticker/,
    )
    assert.throws(() => sourcesFromNames(['nope'], {}), /unknown source "nope"/)
  })
})
