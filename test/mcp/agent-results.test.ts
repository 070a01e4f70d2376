import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'
import { mcpTransport } from './clients.ts'

/**
 * Results a model can read and answers that fit (docs/agents.md), with the official TypeScript
 * SDK client (which also validates every structured result against the tool's outputSchema): the
 * text carries the numbers, the date, the dataset and the balance; long answers are previews under
 * the cap with a free link to the whole; a partial batch says so; annotations and prices are
 * declared before any call; REST answers carry the balance after the call.
 */

/** ~20k tokens at 4 characters a token: the most a default tool result may take. */
const RESULT_MAX_CHARS = 80_000
/** The structured part's cap (src/contract/result-preview.ts), restated. */
const STRUCTURED_MAX_CHARS = 48_000

const sig6 = (x: number) => String(Number(x.toPrecision(6)))
const textOf = (r: CallToolResult) =>
  r.content
    .filter((c) => c.type === 'text')
    .map((c) => (c as { text: string }).text)
    .join('\n')

describe('MCP results for agents', () => {
  let t: TestApp
  let base: string
  let stocks: string[]
  let all: string[]
  let dataAsOf: string
  before(async () => {
    t = await startTestApp()
    base = await t.listen()
    const store = t.ctx.models.store('live')
    dataAsOf = store.dataAsOf
    // Tickers as a caller spells them (a delisted symbol's stored name carries its date).
    const valid = store.symbols.filter((s) => /^[A-Z0-9.-]{1,12}$/.test(s.symbol))
    stocks = valid.filter((s) => s.asset_type === 'stock').map((s) => s.symbol)
    all = valid.map((s) => s.symbol).slice(0, 100)
  })
  after(async () => {
    await s?.client.close()
    await t?.close()
  })

  // One session for the MCP tests: the SDK compiles a validator per output schema on tools/list.
  let s: { client: Client; micros: () => Promise<number> } | null = null
  async function session() {
    if (s) return s
    const account = await t.account(100)
    const key = await t.key(account)
    const client = new Client({ name: 'erm3-agent-results', version: '1.0.0' })
    await client.connect(mcpTransport('streamable HTTP', base, key))
    await client.listTools() // the SDK validates structured results from here on
    s = { client, micros: async () => (await t.ctx.accounts.balance(account)).balanceMicros }
    return s
  }

  test('tools declare price, annotations and output schema before any call', async () => {
    const { client } = await session()
    const tools = new Map((await client.listTools()).tools.map((x) => [x.name, x]))
    const pricing = (await client.callTool({ name: 'pricing', arguments: {} })).structuredContent as {
      capabilities: { capability_id: string; cost_usd: number }[]
    }
    for (const c of pricing.capabilities) {
      const tool = tools.get(c.capability_id)
      if (!tool) continue // per-token chat is no tool
      const meta = tool._meta?.['erm3/pricing'] as { paid: boolean; unit_usd: number; confirm: boolean }
      assert.equal(meta.paid, true, c.capability_id)
      assert.equal(meta.unit_usd, c.cost_usd, c.capability_id)
      assert.ok(tool.description?.startsWith(`PAID: ${c.cost_usd} USD`), tool.description)
      assert.equal(tool.annotations?.readOnlyHint, false, `${c.capability_id} debits the balance`)
      assert.equal(tool.annotations?.destructiveHint, false)
      const live = c.capability_id === 'plaid_holdings'
      assert.equal(tool.annotations?.idempotentHint, !live, c.capability_id)
      assert.equal(tool.annotations?.openWorldHint, live, c.capability_id)
      assert.equal(meta.confirm, c.cost_usd >= 0.1, c.capability_id)
    }
    const snapshot = tools.get('snapshot')
    assert.match(snapshot?.description ?? '', /EXPENSIVE: confirm with the user/)
    assert.match(snapshot?.annotations?.title ?? '', /EXPENSIVE, 0\.25 USD/)
    for (const free of ['balance', 'pricing', 'estimate', 'tickers_search', 'invoices']) {
      const tool = tools.get(free)
      assert.equal(tool?.annotations?.readOnlyHint, true, free)
      assert.ok(tool?.description?.startsWith('FREE.'), free)
    }
    for (const name of [
      'metrics',
      'ticker_returns',
      'batch_lstar',
      'batch_analyze',
      'snapshot',
      'fundamentals',
    ])
      assert.equal(tools.get(name)?.outputSchema?.type, 'object', name)
  })

  test('the text carries the numbers, the date, the dataset, the cost and the balance', async () => {
    const { client, micros } = await session()
    const before = await micros()
    const r = (await client.callTool({ name: 'metrics', arguments: { ticker: stocks[0] } })) as CallToolResult
    assert.ok(!r.isError, textOf(r))
    const body = r.structuredContent as {
      metrics: Record<string, number | null>
      _metadata: { dataset: { kind: string } }
    }
    const text = textOf(r)
    assert.ok(text.includes(`data as of ${dataAsOf}`), text)
    assert.equal(body._metadata.dataset.kind, 'synthetic')
    assert.match(text, /SYNTHETIC/)
    for (const k of ['l3_mkt_hr', 'l3_mkt_er', 'l3_res_er']) {
      const v = body.metrics[k]
      assert.equal(typeof v, 'number', k)
      assert.ok(text.includes(`metrics.${k} = ${sig6(v as number)} (`), `${k} ${v} in the text`)
    }
    assert.ok(text.includes('(USD of ETF per USD 1 of stock)'))
    const left = (await micros()) / 1e6
    assert.equal(Math.round(before - left * 1e6), 1000)
    assert.ok(text.includes(`Cost 0.001 USD (MISS); balance after the call ${sig6(left)} USD.`), text)
  })

  test('a long series is a preview of its newest rows, the whole table one free read away', async () => {
    const { client, micros } = await session()
    const before = await micros()
    const ticker = stocks[0] as string
    const r = (await client.callTool({
      name: 'ticker_returns',
      arguments: { ticker, years: 15 },
    })) as CallToolResult
    assert.ok(!r.isError, textOf(r))
    assert.ok(JSON.stringify(r).length <= RESULT_MAX_CHARS)
    const shown = r.structuredContent as {
      data: { date: string; returns_gross: number | null }[]
      _preview: { full_chars: number; cuts: { path: string; total: number; shown: number }[] }
    }
    assert.ok(JSON.stringify(shown).length <= STRUCTURED_MAX_CHARS)
    const cut = shown._preview.cuts.find((c) => c.path === 'data')
    assert.ok(cut && cut.shown === shown.data.length && cut.total > cut.shown)
    const newest = shown.data.at(-1)
    assert.equal(newest?.date, dataAsOf, 'the newest rows are kept')
    const text = textOf(r)
    const rows = text.split('\n').filter((l) => /^ {2}\d{4}-\d{2}-\d{2}: /.test(l))
    assert.ok(
      rows[0]?.trim().startsWith(`${dataAsOf}: returns_gross=${sig6(newest?.returns_gross as number)}`),
    )
    assert.ok((rows[1] ?? '') < (rows[0] ?? ''), 'newest first')
    assert.match(text, /PREVIEW: the full answer is \d+ characters/)
    assert.match(text, /GET \/ticker-returns\?ticker=\w+&years=15&format=parquet/)
    const paid = await micros()
    assert.equal(before - paid, 5000)
    // The whole table: a resource link, read without a second charge.
    const link = r.content.find((c) => c.type === 'resource_link' && c.mimeType === 'text/csv') as {
      uri: string
    }
    const csv = await client.readResource({ uri: link.uri })
    const lines = String((csv.contents[0] as { text: string }).text)
      .trim()
      .split('\n')
    assert.equal(lines.length, cut.total + 1, 'every row, and the header')
    assert.equal(await micros(), paid, 'the full table is not charged again')
    const jsonLink = r.content.find((c) => c.type === 'resource_link' && c.mimeType === 'application/json')
    const json = await client.readResource({ uri: (jsonLink as { uri: string }).uri })
    assert.equal(JSON.parse((json.contents[0] as { text: string }).text).data.length, cut.total)
    assert.equal(await micros(), paid)
  })

  test('a partial batch says which tickers were not answered, in text and structure', async () => {
    const { client } = await session()
    const r = (await client.callTool({
      name: 'batch_lstar',
      arguments: { tickers: ['SPY', 'ZZZZQ', 'XLK', 'QQQQZ'] },
    })) as CallToolResult
    assert.ok(!r.isError, textOf(r))
    assert.match(textOf(r), /PARTIAL: 2 of 4 tickers answered; unknown: ZZZZQ, QQQQZ\./)
    assert.doesNotMatch(textOf(r), /: ok\b/)
    const partial = (
      r.structuredContent as { _partial: { asked: number; answered: number; failed: unknown[] } }
    )._partial
    assert.deepEqual(partial, {
      asked: 4,
      answered: 2,
      failed: [
        { ticker: 'ZZZZQ', code: 'TICKER_NOT_FOUND' },
        { ticker: 'QQQQZ', code: 'TICKER_NOT_FOUND' },
      ],
    })
  })

  test('every tool stays under the cap at its largest arguments', async () => {
    const { client } = await session()
    const a = stocks[0] as string
    const b = stocks[1] as string
    const calls: [string, Record<string, unknown>][] = [
      ['fundamentals', { ticker: a }],
      [
        'snapshot',
        { type: 'portfolio', portfolio: stocks.slice(0, 100).map((ticker) => ({ ticker, weight: 1 })) },
      ],
      [
        'snapshot',
        {
          type: 'portfolio',
          portfolio: [
            { ticker: a, weight: 1 },
            { ticker: b, weight: 1 },
          ],
          lookback_days: 2000,
        },
      ],
      ['ticker_returns', { ticker: a, years: 15 }],
      ['returns', { ticker: a, years: 15 }],
      ['lstar', { ticker: a, years: 15 }],
      ['returns_decomposition', { ticker: a, years: 15 }],
      ['l3_decomposition', { ticker: a, years: 15 }],
      ['batch_lstar', { tickers: all, years: 15 }],
      [
        'batch_analyze',
        { tickers: all, years: 15, metrics: ['returns', 'hedge_ratios', 'full_metrics', 'l3_decomposition'] },
      ],
      ['correlation_batch', { tickers: all.slice(0, 50), return_type: 'gross' }],
      ['rankings_screen', { metric: 'er_l3', limit: 500 }],
      ['industry_panel', { level: 'sector', min_peers: 1 }],
      ['etf_factor_returns', {}],
      ['tickers_search', { limit: 500, include_metadata: true }],
    ]
    for (const [name, args] of calls) {
      const r = (await client.callTool({ name, arguments: args })) as CallToolResult
      assert.ok(!r.isError, `${name}: ${textOf(r).slice(0, 300)}`)
      const size = JSON.stringify(r).length
      assert.ok(size <= RESULT_MAX_CHARS, `${name}: ${size} characters`)
      assert.ok(JSON.stringify(r.structuredContent).length <= STRUCTURED_MAX_CHARS, name)
      if (name !== 'tickers_search') assert.match(textOf(r), /SYNTHETIC/, name)
    }
  })

  test('REST: every metered answer carries the balance after the call, header and body', async () => {
    const account = await t.account(1)
    const key = await t.key(account)
    const call = async () => {
      const res = await t.app.fastify.inject({
        method: 'GET',
        url: `/metrics/${stocks[0]}`,
        headers: { authorization: `Bearer ${key}` },
      })
      assert.equal(res.statusCode, 200)
      return {
        header: res.headers['x-balance-usd'],
        agent: res.json()._agent as { balance_usd: number; cost_usd: number },
      }
    }
    const first = await call()
    const left = (await t.ctx.accounts.balance(account)).balanceMicros / 1e6
    assert.equal(left, 0.999)
    assert.equal(first.agent.balance_usd, left)
    assert.equal(first.header, String(left))
    const repeat = await call()
    assert.equal(repeat.agent.cost_usd, 0)
    assert.equal(repeat.agent.balance_usd, left)
    assert.equal(repeat.header, String(left))
    const doc = (await t.app.fastify.inject({ method: 'GET', url: '/openapi.json' })).json()
    const headers = doc.paths['/metrics/{ticker}'].get.responses['200'].headers
    assert.ok(headers['X-Balance-USD'] && headers['X-API-Cost-USD'])
  })
})
