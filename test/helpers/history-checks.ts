import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance, DuckDBTimestampTZValue } from '@duckdb/node-api'
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import { parse } from 'csv-parse/sync'
import { parquetMetadata, parquetReadObjects } from 'hyparquet'
import { anonymous } from '../../src/api/validation.ts'
import { OPS, type OperationId } from '../../src/contract/operations.ts'
import type { TestApp } from './test-app.ts'

/** Shared by the history-endpoint tests: schema checks, raw (binary) requests, Parquet/CSV readers. */

const ajv = new Ajv({ allErrors: true, strict: false })
addFormats.default(ajv)

/** Asserts that a body matches the operation's declared success schema (every field, no extras checked by the schema). */
export function assertResponseShape(id: OperationId, body: unknown): void {
  const validate = ajv.compile(anonymous(OPS[id].response) as object)
  assert.ok(validate(body), `${id}: ${ajv.errorsText(validate.errors)}`)
}

export interface RawResponse {
  status: number
  headers: Record<string, string>
  bytes: Buffer
  text: string
}

/** A request whose body is kept as bytes (the typed client decodes bodies as UTF-8 text). */
export async function rawCall(
  t: TestApp,
  method: 'GET' | 'POST',
  url: string,
  key: string,
  headers: Record<string, string> = {},
  body?: unknown,
): Promise<RawResponse> {
  const res = await t.app.fastify.inject({
    method,
    url,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  })
  const h: Record<string, string> = {}
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h[k] = String(v)
  return { status: res.statusCode, headers: h, bytes: res.rawPayload, text: res.body }
}

export type Cell = number | string | null

function arrayBufferOf(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
}

/** Column name → [physical type, converted type] as hyparquet reads the footer. */
export function parquetTypes(bytes: Uint8Array): Record<string, [string | undefined, string | undefined]> {
  const md = parquetMetadata(arrayBufferOf(bytes))
  return Object.fromEntries(md.schema.slice(1).map((e) => [e.name, [e.type, e.converted_type]]))
}

/** Rows read by hyparquet; timestamps as epoch ms. */
export async function readHyparquet(bytes: Uint8Array): Promise<Record<string, Cell>[]> {
  const rows = await parquetReadObjects({ file: arrayBufferOf(bytes) })
  return rows.map((r) =>
    Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v instanceof Date ? v.getTime() : (v as Cell)])),
  )
}

/** Rows and DuckDB column types of a Parquet file; timestamps as epoch ms. */
export async function readDuckDB(
  bytes: Uint8Array,
): Promise<{ rows: Record<string, Cell>[]; types: Record<string, string> }> {
  const dir = await mkdtemp(join(tmpdir(), 'erm3-hist-'))
  const db = await DuckDBInstance.create(':memory:')
  const duck = await db.connect()
  try {
    const path = join(dir, 't.parquet')
    await writeFile(path, bytes)
    const r = await duck.runAndReadAll(`select * from read_parquet('${path}')`)
    const names = r.columnNames()
    const rows = r
      .getRows()
      .map((row) =>
        Object.fromEntries(
          row.map((v, i) => [
            names[i] as string,
            v instanceof DuckDBTimestampTZValue ? Number(v.micros / 1000n) : (v as Cell),
          ]),
        ),
      )
    const d = await duck.runAndReadAll(
      `select column_name, column_type from (describe select * from '${path}')`,
    )
    const types = Object.fromEntries(d.getRows().map(([n, ty]) => [String(n), String(ty)]))
    return { rows, types }
  } finally {
    duck.closeSync()
    db.closeSync()
    await rm(dir, { recursive: true, force: true })
  }
}

export function readCsv(text: string): string[][] {
  return parse(text, { record_delimiter: '\r\n' }) as string[][]
}

export const dayMs = (iso: string) => Date.parse(`${iso}T00:00:00Z`)

/** The debits of an account: [micros, capability]. */
export async function debits(t: TestApp, account: string): Promise<[number, string | null][]> {
  const ledger = await t.ctx.accounts.entries(account, { from: 0, to: Date.now() + 1, limit: 1000 })
  return ledger.filter((e) => e.kind === 'debit').map((e) => [e.amountMicros, e.capability])
}
