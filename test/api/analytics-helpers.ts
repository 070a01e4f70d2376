import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance, DuckDBTimestampTZValue } from '@duckdb/node-api'
import { parse } from 'csv-parse/sync'
import { parquetMetadata, parquetReadObjects } from 'hyparquet'
import type { ModelStore } from '../../src/engine/model-store/reader.ts'
import type { TestApp } from '../helpers/test-app.ts'

/**
 * Shared by the analytics API tests (lstar, decomposition, batch): the expected window and test
 * stocks written independently of src/, raw requests that keep binary bodies, and checks that a Parquet body reads back identically in DuckDB and hyparquet and a CSV
 * body in csv-parse (nulls included), with the declared column types.
 */

export interface Raw {
  status: number
  headers: Record<string, string>
  bytes: Buffer
  text: string
}

export async function raw(
  t: TestApp,
  method: 'GET' | 'POST',
  url: string,
  key: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Raw> {
  const res = await t.app.fastify.inject({
    method,
    url,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  })
  const h: Record<string, string> = {}
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h[k] = String(v)
  return { status: res.statusCode, headers: h, bytes: res.rawPayload, text: res.body }
}

/** A column as the test expects it: dates as ISO days, nulls as null. */
export interface ExpectedColumn {
  name: string
  kind: 'text' | 'double' | 'date'
  values: (string | number | null)[]
}

const DUCK_TYPES = { text: 'VARCHAR', double: 'DOUBLE', date: 'TIMESTAMP WITH TIME ZONE' } as const
const PARQUET_TYPES = { text: 'BYTE_ARRAY', double: 'DOUBLE', date: 'INT64' } as const

const isoOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)

function same(got: unknown, want: string | number | null, where: string): void {
  assert.ok(got === want, `${where}: got ${String(got)}, expected ${String(want)}`)
}

export async function checkParquet(bytes: Buffer, expected: ExpectedColumn[]): Promise<void> {
  const rows = expected[0]?.values.length ?? 0
  // hyparquet
  const ab = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer
  const meta = parquetMetadata(ab)
  const leaves = meta.schema.slice(1)
  assert.deepEqual(
    leaves.map((s) => [s.name, s.type]),
    expected.map((c) => [c.name, PARQUET_TYPES[c.kind]]),
  )
  for (const [i, c] of expected.entries()) {
    const s = leaves[i]
    if (c.kind === 'date') assert.equal(s?.converted_type, 'TIMESTAMP_MILLIS')
    if (c.kind === 'text') assert.equal(s?.converted_type, 'UTF8')
  }
  const objs = await parquetReadObjects({ file: ab })
  assert.equal(objs.length, rows)
  for (const c of expected) {
    objs.forEach((o, i) => {
      const v = o[c.name]
      const got =
        c.kind === 'date' && v !== null ? isoOf(v instanceof Date ? v.getTime() : Number(v)) : (v ?? null)
      same(got, c.values[i] ?? null, `hyparquet ${c.name}[${i}]`)
    })
  }
  // DuckDB
  const dir = mkdtempSync(join(tmpdir(), 'erm3-analytics-'))
  const path = join(dir, 't.parquet')
  writeFileSync(path, bytes)
  const db = await DuckDBInstance.create(':memory:')
  const duck = await db.connect()
  try {
    const described = await duck.runAndReadAll(
      `select column_name, column_type from (describe select * from '${path}')`,
    )
    assert.deepEqual(
      described.getRows(),
      expected.map((c) => [c.name, DUCK_TYPES[c.kind]]),
    )
    const r = await duck.runAndReadAll(`select * from read_parquet('${path}')`)
    const cols = r.getColumns()
    expected.forEach((c, k) => {
      const values = cols[k] ?? []
      assert.equal(values.length, rows)
      values.forEach((v, i) => {
        const got = v instanceof DuckDBTimestampTZValue ? isoOf(Number(v.micros / 1000n)) : v
        same(got, c.values[i] ?? null, `duckdb ${c.name}[${i}]`)
      })
    })
  } finally {
    duck.closeSync()
    rmSync(dir, { recursive: true, force: true })
  }
}

export function checkCsv(text: string, expected: ExpectedColumn[]): void {
  const [header, ...body] = parse(text, { record_delimiter: '\r\n' }) as string[][]
  assert.deepEqual(
    header,
    expected.map((c) => c.name),
  )
  assert.equal(body.length, expected[0]?.values.length ?? 0)
  body.forEach((row, i) => {
    expected.forEach((c, k) => {
      const cell = row[k] ?? ''
      const got = cell === '' ? null : c.kind === 'double' ? Number(cell) : cell
      same(got, c.values[i] ?? null, `csv ${c.name}[${i}]`)
    })
  })
}

/** The window of a `years` request, written independently of src/services/analytics/window.ts. */
export async function expectedWindow(store: ModelStore, i: number, years: number) {
  const p = (await store.history(i, ['price_close'])).price_close as Float64Array
  let end = p.length - 1
  while (end >= 0 && Number.isNaN(p[end])) end--
  const endIso = store.date(end)
  const cutoff = `${Number(endIso.slice(0, 4)) - years}${endIso.slice(4)}`
  let from = 0
  while (store.date(from) <= cutoff) from++
  // Not before the first price; a day without a close inside the listed life still counts.
  return {
    from: Math.max(
      from,
      p.findIndex((v) => !Number.isNaN(v)),
    ),
    to: end + 1,
  }
}

/** Stocks of a store with a model, by their current ticker. */
export function stocks(store: ModelStore, count: number): { ticker: string; index: number }[] {
  return store.symbols
    .map((s, index) => ({ ticker: s.tickers[s.tickers.length - 1]?.ticker ?? '', index, s }))
    .filter((x) => x.s.asset_type === 'stock' && x.ticker !== '')
    .slice(0, count)
    .map(({ ticker, index }) => ({ ticker, index }))
}
