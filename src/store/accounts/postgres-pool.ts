/**
 * The PostgreSQL store's connections: one pool for money and everything else, one whose sessions
 * commit with synchronous_commit=off (reservations), and transactions that retry deadlocks and
 * serialisation failures. A `schema` (tests) is every connection's search_path.
 */
import pg from 'pg'
import type { Tx } from '../oauth/postgres.ts'
import { isTransient } from './postgres-settle.ts'

const INT8 = 20
const NUMERIC = 1700

/** BIGINT and SUM() arrive as strings; every such value here is whole micro-dollars or ms (< 2^53). */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === INT8 || oid === NUMERIC
      ? (v: string) => Number(v)
      : pg.types.getTypeParser(
          oid,
          format === 'binary' ? 'binary' : 'text',
        )) as pg.CustomTypesConfig['getTypeParser'],
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/

function ignoreClientError(): void {}

export interface PostgresPools {
  pool: pg.Pool
  /** Rows of a statement on the main pool (`name`: a named prepared statement). */
  q: <R extends pg.QueryResultRow>(text: string, values?: unknown[], name?: string) => Promise<R[]>
  /** Rows of a statement on the synchronous_commit=off pool. */
  qFast: (text: string, values: unknown[], name: string) => Promise<Record<string, unknown>[]>
  /** Runs `fn` in a transaction, retrying deadlocks and serialisation failures (both are transient). */
  tx: Tx
  end(): Promise<void>
}

export function openPostgresPools(url: string, schema: string | undefined): PostgresPools {
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name: ${schema}`)
  // search_path is a startup parameter, so it holds on every connection the pool ever opens.
  const searchPath = schema ? `-c search_path=${schema} ` : ''
  const pool = new pg.Pool({ connectionString: url, types, options: searchPath || undefined })
  // Reservations are not money: a reserve or release lost in a database crash equals a release.
  // Their commits skip the WAL flush, so they do not hold the account's row lock through an fsync
  // (which serialised every request of a busy account). A settle's synchronous commit flushes the
  // WAL past its own reservation's commit record, so a durable debit never has a lost reserve.
  const fast = new pg.Pool({
    connectionString: url,
    types,
    options: `${searchPath}-c synchronous_commit=off`,
  })
  for (const p of [pool, fast]) {
    p.on('error', () => {
      // An idle client lost its connection; the pool replaces it. Queries report their own errors.
    })
  }

  const q = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = [], name?: string) =>
    (await pool.query<R>({ text, values, name })).rows
  const qFast = async (text: string, values: unknown[], name: string) =>
    (await fast.query<Record<string, unknown>>({ text, values, name })).rows

  async function tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const c = await pool.connect()
      // A checked-out client whose connection dies (a database restart) emits 'error'; the pool
      // listens only while a client is idle, and an unheard 'error' ends the process. The query
      // in flight rejects with the same error, so the listener has nothing more to do.
      c.on('error', ignoreClientError)
      let broken = false
      try {
        await c.query('BEGIN')
        const out = await fn(c)
        await c.query('COMMIT')
        return out
      } catch (err) {
        await c.query('ROLLBACK').catch(() => {
          broken = true
        })
        if (attempt < 5 && isTransient(err)) continue
        throw err
      } finally {
        c.off('error', ignoreClientError)
        c.release(broken)
      }
    }
  }

  async function end(): Promise<void> {
    await Promise.all([pool.end(), fast.end()])
  }
  return { pool, q, qFast, tx, end }
}
