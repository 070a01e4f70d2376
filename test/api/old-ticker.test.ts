import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { buildStore } from '../../src/engine/build/index.ts'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import { writeDataset } from '../../src/engine/data/dataset-writer.ts'
import type { SecurityRow } from '../../src/engine/data/format.ts'
import { synthesizeDataset } from '../../src/engine/data/synthesize.ts'
import { isoFromDay } from '../../src/platform/dates.ts'
import { assertResponseShape } from '../helpers/history-checks.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'
import { mcpTransport } from '../mcp/clients.ts'

/**
 * A small synthetic market rewritten with ticker history: one security traded as FB and then as
 * META (one symbol, two windows); another traded as OLDR and then as NEWR, and a third company
 * took OLDR later (a reused ticker whose current holder must not get a note).
 */
const dir = await mkdtemp(join(tmpdir(), 'erm3-old-ticker-'))
after(() => rm(dir, { recursive: true, force: true }))
const synthDir = join(dir, 'synth')
await synthesizeDataset(synthDir, {
  seed: 7,
  stocks: 20,
  start: '2020-01-02',
  end: '2021-06-30',
  fundamentals: false,
})
const { dataset: ds } = await readDataset(synthDir)
const cal = Array.from(ds.calendar, isoFromDay)
const first = cal[0] as string
const RENAMED_ON = cal[200] as string
const REUSED_ON = cal[260] as string
const dayBefore = (iso: string) => cal[cal.indexOf(iso) - 1] as string

for (const t of ['FB', 'META', 'OLDR', 'NEWR'])
  assert.ok(
    !ds.securities.some((r) => r.ticker === t && r.symbol !== 'META'),
    `${t} is free in the synthetic market`,
  )
// Stocks listed all along under one ticker; META first when the generator placed it.
const whole = ds.securities
  .filter((r) => r.assetType === 'stock' && r.validFrom === first && r.validTo === null)
  .filter((r) => ds.securities.filter((x) => x.symbol === r.symbol).length === 1)
  .sort((a, b) => (a.symbol === 'META' ? -1 : b.symbol === 'META' ? 1 : a.symbol.localeCompare(b.symbol)))
const [meta, renamed, reuser] = whole as [SecurityRow, SecurityRow, SecurityRow]
assert.ok(reuser, 'three stocks listed all along')
const REUSER_FIRST = reuser.ticker
ds.securities = ds.securities.flatMap((r): SecurityRow[] => {
  if (r === meta)
    return [
      { ...r, ticker: 'FB', validTo: dayBefore(RENAMED_ON) },
      { ...r, ticker: 'META', validFrom: RENAMED_ON },
    ]
  if (r === renamed)
    return [
      { ...r, ticker: 'OLDR', validTo: dayBefore(RENAMED_ON) },
      { ...r, ticker: 'NEWR', validFrom: RENAMED_ON },
    ]
  if (r === reuser)
    return [
      { ...r, validTo: dayBefore(REUSED_ON) },
      { ...r, ticker: 'OLDR', validFrom: REUSED_ON },
    ]
  return [r]
})
const datasetDir = join(dir, 'dataset')
await writeDataset(ds, datasetDir)
const storeDir = join(dir, 'store')
await buildStore({ dataset: datasetDir, store: storeDir })

const FB_NOTE = `FB is now META (since ${RENAMED_ON})`

describe('an old ticker answers for its security, with a note', () => {
  let t: TestApp
  let key: string
  before(async () => {
    t = await startTestApp({ liveStore: storeDir })
    key = await t.key(await t.account(5))
  })
  after(() => t?.close())

  const metrics = async (ticker: string) => {
    const r = await t.client.call('getMetrics', { key, params: { ticker } })
    return { b: r.ok(), headers: r.headers }
  }

  test('GET /metrics/FB: the symbol now META, same numbers, _metadata.ticker_note and X-Ticker-Note', async () => {
    const old = await metrics('fb')
    assertResponseShape('getMetrics', old.b)
    assert.equal(old.b.ticker, 'FB')
    assert.equal(old.b.symbol, meta.symbol)
    assert.equal(old.b._metadata.ticker_note, FB_NOTE)
    assert.equal(old.headers['x-ticker-note'], FB_NOTE)
    const now = await metrics('META')
    assert.equal(now.b.symbol, meta.symbol)
    assert.equal(now.b._metadata.ticker_note, undefined)
    assert.equal(now.headers['x-ticker-note'], undefined)
    assert.deepEqual(old.b.metrics, now.b.metrics)
  })

  test('a reused ticker names its current holder, without a note; the old holder is reached by its new ticker', async () => {
    const reused = await metrics('OLDR')
    assert.equal(reused.b.symbol, reuser.symbol)
    assert.equal(reused.b._metadata.ticker_note, undefined)
    assert.equal(reused.headers['x-ticker-note'], undefined)
    const moved = await metrics('NEWR')
    assert.equal(moved.b.symbol, renamed.symbol)
    assert.equal(moved.b._metadata.ticker_note, undefined)
    // The reuser's own first ticker is an old ticker of it too.
    const before = await metrics(REUSER_FIRST)
    assert.equal(before.b.symbol, reuser.symbol)
    assert.equal(before.b._metadata.ticker_note, `${REUSER_FIRST} is now OLDR (since ${REUSED_ON})`)
  })

  test('rankings on a day before the reuse reach the earlier holder, and the note does not call OLDR its ticker now', async () => {
    const teo = cal[100] as string
    const r = await t.client.call('getRankings', { key, params: { ticker: 'OLDR' }, query: { teo } })
    const b = r.ok()
    assert.equal(b.symbol, renamed.symbol)
    assert.equal(
      b._metadata.ticker_note,
      `OLDR named this security until ${dayBefore(RENAMED_ON)}; it is NEWR since ${RENAMED_ON}`,
    )
    const now = (await t.client.call('getRankings', { key, params: { ticker: 'OLDR' } })).ok()
    assert.equal(now.symbol, reuser.symbol)
    assert.equal(now._metadata.ticker_note, undefined)
  })

  test('an unknown ticker is still 404 TICKER_NOT_FOUND with suggestions', async () => {
    const r = await t.client.call('getMetrics', { key, params: { ticker: 'FBQ' } })
    assert.equal(r.status, 404)
    const p = r.json as { code: string; suggestions: string[] }
    assert.equal(p.code, 'TICKER_NOT_FOUND')
    assert.ok(p.suggestions.includes('FB'), JSON.stringify(p))
  })

  test('CSV carries the note as X-Ticker-Note; the JSON of the same series in _metadata', async () => {
    const csv = await t.client.call('getTickerReturns', {
      key,
      query: { ticker: 'FB', years: 1, format: 'csv' },
    })
    assert.equal(csv.status, 200)
    assert.match(csv.headers['content-type'] ?? '', /^text\/csv/)
    assert.equal(csv.headers['x-ticker-note'], FB_NOTE)
    const json = (await t.client.call('getTickerReturns', { key, query: { ticker: 'FB', years: 1 } })).ok()
    assert.equal(json._metadata.ticker_note, FB_NOTE)
    const current = await t.client.call('getTickerReturns', { key, query: { ticker: 'META', format: 'csv' } })
    assert.equal(current.headers['x-ticker-note'], undefined)
  })

  test('batch rows carry ticker_note; the batch _metadata does not', async () => {
    const r = await t.client.call('batchLstar', { key, body: { tickers: ['FB', 'META', 'OLDR'] } })
    const b = r.ok()
    assertResponseShape('batchLstar', b)
    const rows = b.results as Record<string, { symbol: string; ticker_note?: string }>
    assert.equal(rows.FB?.symbol, meta.symbol)
    assert.equal(rows.FB?.ticker_note, FB_NOTE)
    assert.equal(rows.META?.ticker_note, undefined)
    assert.equal(rows.OLDR?.symbol, reuser.symbol)
    assert.equal(rows.OLDR?.ticker_note, undefined)
    assert.equal(b._metadata.ticker_note, undefined)
  })

  test('correlation and snapshot say it in their warnings, once per position', async () => {
    const c = (await t.client.call('getCorrelation', { key, params: { ticker: 'FB' } })).ok()
    assert.equal(c.symbol, meta.symbol)
    assert.equal(c.warnings[0], FB_NOTE)
    assert.equal(c._metadata.ticker_note, FB_NOTE)
    const cNow = (await t.client.call('getCorrelation', { key, params: { ticker: 'META' } })).ok()
    assert.ok(!cNow.warnings.some((w) => w.includes('is now')), JSON.stringify(cNow.warnings))
    const portfolio = [
      { ticker: 'FB', weight: 0.5 },
      { ticker: 'OLDR', weight: 0.3 },
      { ticker: REUSER_FIRST, weight: 0.2 },
    ]
    const s = (await t.client.call('snapshot', { key, body: { type: 'portfolio', portfolio } })).ok()
    assertResponseShape('snapshot', s)
    const notes = s.snapshot.warnings.filter((w) => w.includes('is now'))
    assert.deepEqual(notes, [FB_NOTE, `${REUSER_FIRST} is now OLDR (since ${REUSED_ON})`])
  })

  test('MCP: the metrics tool answers FB with the same note', async () => {
    const base = await t.listen()
    const client = new Client({ name: 'erm3-old-ticker', version: '1.0.0' })
    await client.connect(mcpTransport('streamable HTTP', base, key))
    const r = await client.callTool({ name: 'metrics', arguments: { ticker: 'FB' } })
    assert.ok(!r.isError, JSON.stringify(r.content))
    const body = r.structuredContent as { symbol: string; _metadata: { ticker_note?: string } }
    assert.equal(body.symbol, meta.symbol)
    assert.equal(body._metadata.ticker_note, FB_NOTE)
    await client.close()
  })
})
