/**
 * Durable debits per second: reserve → settle, each awaited, by 1 and 50 concurrent callers, on
 * SQLite (temp file) and PostgreSQL (DATABASE_URL, own schema; skipped when unset). The baseline,
 * measured in the same run on the same database, is the bare commit floor: one single-row INSERT
 * per durable commit, back to back. Group commit is what lets 50 callers beat that floor.
 * Run: node --import tsx bench/ledger.ts [runs]   (median of `runs`, default 3)
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import Database from 'better-sqlite3'
import pg from 'pg'
import { newId } from '../src/platform/ids.ts'
import { createPostgresAccountStore } from '../src/store/accounts/postgres.ts'
import { createSqliteAccountStore } from '../src/store/accounts/sqlite.ts'
import type { AccountStore } from '../src/store/accounts/types.ts'

export interface LedgerBenchRow {
  backend: 'sqlite' | 'postgres'
  callers: number
  debitsPerSecond: number
  /** Bare durable commits per second on the same database (one INSERT each, serial). */
  floorPerSecond: number
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN
const PRICE = 1000

async function debitsPerSecond(store: AccountStore, accountId: string, callers: number, total: number) {
  let left = total
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (left-- > 0) {
        const now = Date.now()
        const r = await store.reserve(accountId, PRICE, now)
        if (!r.ok) throw new Error('bench account ran out of funds')
        await store.settle(
          r.reservationId,
          { amountMicros: PRICE, requestId: 'req_bench', capability: 'bench', keyId: null },
          now,
        )
      }
    }),
  )
  return (total / (performance.now() - t0)) * 1000
}

async function measure(
  backend: LedgerBenchRow['backend'],
  store: AccountStore,
  floor: () => Promise<number>,
  runs: number,
): Promise<LedgerBenchRow[]> {
  await store.migrate()
  const id = newId('acct')
  await store.createAccount({ id, email: null, kind: 'anonymous', createdAt: Date.now() })
  await store.credit(id, { kind: 'topup', amountMicros: 1e15, reference: null }, Date.now())
  const floors: number[] = []
  for (let i = 0; i < runs; i++) floors.push(await floor())
  const rows: LedgerBenchRow[] = []
  for (const callers of [1, 50]) {
    const total = callers === 1 ? 300 : 3000
    await debitsPerSecond(store, id, callers, Math.ceil(total / 10)) // warm-up
    const xs: number[] = []
    for (let i = 0; i < runs; i++) xs.push(await debitsPerSecond(store, id, callers, total))
    rows.push({ backend, callers, debitsPerSecond: median(xs), floorPerSecond: median(floors) })
  }
  await store.close()
  return rows
}

async function sqliteRows(runs: number): Promise<LedgerBenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'erm3-bench-ledger-'))
  try {
    const raw = new Database(join(dir, 'floor.db'))
    raw.pragma('journal_mode = WAL')
    raw.pragma('synchronous = FULL')
    raw.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)')
    const ins = raw.prepare('INSERT INTO t (v) VALUES (?)')
    const floor = async () => {
      const t0 = performance.now()
      for (let i = 0; i < 300; i++) ins.run(i)
      return (300 / (performance.now() - t0)) * 1000
    }
    const rows = await measure('sqlite', createSqliteAccountStore(join(dir, 'ledger.db')), floor, runs)
    raw.close()
    return rows
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function postgresRows(url: string, runs: number): Promise<LedgerBenchRow[]> {
  const schema = `bench_${randomBytes(5).toString('hex')}`
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`CREATE SCHEMA ${schema}`)
    await client.query(`CREATE TABLE ${schema}.t (id SERIAL PRIMARY KEY, v INTEGER)`)
    const floor = async () => {
      const t0 = performance.now()
      for (let i = 0; i < 300; i++) await client.query(`INSERT INTO ${schema}.t (v) VALUES ($1)`, [i])
      return (300 / (performance.now() - t0)) * 1000
    }
    return await measure('postgres', createPostgresAccountStore(url, { schema }), floor, runs)
  } finally {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await client.end()
  }
}

/** Measures every available backend; PostgreSQL only when `databaseUrl` is given. */
export async function benchLedger(
  opts: { runs?: number; databaseUrl?: string } = {},
): Promise<LedgerBenchRow[]> {
  const runs = opts.runs ?? 3
  const rows = await sqliteRows(runs)
  if (opts.databaseUrl) rows.push(...(await postgresRows(opts.databaseUrl, runs)))
  return rows
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const databaseUrl = process.env.DATABASE_URL
  const rows = await benchLedger({ runs: Number(process.argv[2] ?? 3), databaseUrl })
  console.log('backend    callers  debits/s  floor commits/s  ratio')
  for (const r of rows) {
    const cells = [
      r.backend.padEnd(9),
      String(r.callers).padStart(8),
      r.debitsPerSecond.toFixed(0).padStart(9),
    ]
    cells.push(
      r.floorPerSecond.toFixed(0).padStart(16),
      `${(r.debitsPerSecond / r.floorPerSecond).toFixed(2)}×`.padStart(6),
    )
    console.log(cells.join('  '))
  }
  if (!databaseUrl) console.log('postgres: skipped (DATABASE_URL is not set)')
}
