import assert from 'node:assert/strict'
import { test } from 'node:test'
import { chatToolContent, toolResultText } from '../../src/services/chat/result-text.ts'

/** What the chat model reads of a tool answer: metadata first, newest rows first, oldest cut first. */
const day = (i: number) => new Date(Date.UTC(2025, 0, 1) + i * 86_400_000).toISOString().slice(0, 10)
const meta = { dataset: { kind: 'synthetic', synthetic: true }, data_as_of: day(399) }

test('rows with dates: newest first, the oldest left out over the budget, _metadata kept and first', () => {
  const data = Array.from({ length: 400 }, (_, i) => ({ date: day(i), returns_gross: i / 1000 }))
  const text = toolResultText(JSON.stringify({ ticker: 'AMZN', data, _metadata: meta }), 4096)
  assert.ok(Buffer.byteLength(text) <= 4096, `${Buffer.byteLength(text)}`)
  const out = JSON.parse(text) as {
    data: { date: string }[]
    _metadata: typeof meta
    _omitted: { series: { series: string; kept_newest: number; of: number }[] }
  }
  assert.ok(text.startsWith('{"_metadata":'), text.slice(0, 40))
  assert.deepEqual(out._metadata, meta)
  assert.equal(out.data[0]?.date, day(399), 'the latest day comes first')
  // Kept rows are the newest ones, contiguous and in descending order.
  out.data.forEach((r, i) => {
    assert.equal(r.date, day(399 - i))
  })
  assert.deepEqual(out._omitted.series, [{ series: 'data', kept_newest: out.data.length, of: 400 }])
})

test('parallel arrays beside dates are reversed and cut together', () => {
  const n = 300
  const dates = Array.from({ length: n }, (_, i) => day(i))
  const returns_gross = dates.map((_, i) => i)
  const text = toolResultText(JSON.stringify({ symbol: 'SPY', dates, returns_gross, _metadata: meta }), 2048)
  const out = JSON.parse(text) as { dates: string[]; returns_gross: number[]; symbol: string }
  assert.ok(Buffer.byteLength(text) <= 2048)
  assert.equal(out.dates.length, out.returns_gross.length)
  assert.equal(out.dates[0], day(n - 1))
  assert.equal(out.returns_gross[0], n - 1, 'values stay paired with their dates')
  assert.equal(out.symbol, 'SPY')
})

test('a small answer is unchanged in content; no series and too big: cut with a note', () => {
  const small = { a: 1, _metadata: meta }
  assert.deepEqual(JSON.parse(toolResultText(JSON.stringify(small), 4096)), small)
  const blob = toolResultText(JSON.stringify({ text: 'x'.repeat(10_000) }), 1000)
  assert.match(blob, /\[truncated: the result was \d+ bytes; only the first 1000 are shown/)
})

test('chat content: the MCP summary first (numbers, dataset kind, cost), then the data newest first', () => {
  const data = Array.from({ length: 400 }, (_, i) => ({ date: day(i), returns_gross: i / 1000 }))
  const body = { ticker: 'AMZN', data, _metadata: meta, _agent: { cost_usd: 0.01, balance_usd: 4.5 } }
  const text = chatToolContent('ticker_returns', JSON.stringify(body), 12 * 1024)
  assert.ok(Buffer.byteLength(text) <= 12 * 1024 + 64, `${Buffer.byteLength(text)}`)
  const [summary, data_] = text.split('\nData (newest first):\n') as [string, string]
  assert.match(summary, /AMZN/)
  assert.match(summary, /synthetic/i)
  assert.match(summary, /0\.01/)
  assert.match(summary, new RegExp(day(399)), 'the summary names the latest day')
  const out = JSON.parse(data_) as { data: { date: string }[] }
  assert.equal(out.data[0]?.date, day(399), 'the data starts with the latest day')
})
