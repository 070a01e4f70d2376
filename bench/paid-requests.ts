/**
 * The paid-request record (docs/decisions/money.md, "Pay once") on its two account-store
 * backends: median µs per `hasPaid` lookup — the one extra call a response-cache miss makes —
 * for a key paid for and one not, and per settle with and without the record, on SQLite (a temp
 * file, as embedded) and on PostgreSQL (DATABASE_URL; skipped when unset). One caller.
 * Run: node --import tsx bench/paid-requests.ts [lookups]
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { newId } from '../src/platform/ids.ts'
import { createPostgresAccountStore } from '../src/store/accounts/postgres.ts'
import { createSqliteAccountStore } from '../src/store/accounts/sqlite.ts'
import type { AccountStore } from '../src/store/accounts/types.ts'

const N = Math.max(100, Number(process.argv[2] ?? 2000))
const PAID = 10_000
const key = (i: number) => `resp:${createHash('sha256').update(`k${i}`).digest('base64url')}`

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)] as number
}

async function timed(n: number, f: (i: number) => Promise<unknown>): Promise<number> {
  const us: number[] = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await f(i)
    us.push((performance.now() - t0) * 1000)
  }
  return median(us)
}

async function measure(name: string, store: AccountStore): Promise<void> {
  await store.migrate()
  const now = Date.now()
  const account = (
    await store.createAccount({ id: newId('acct'), email: null, kind: 'anonymous', createdAt: now })
  ).id
  await store.credit(account, { kind: 'credit', amountMicros: 1e12, reference: null }, now)
  const settle = async (i: number, paid: boolean) => {
    const r = await store.reserve(account, 1000, now)
    if (!r.ok) throw new Error('reserve refused')
    const charge = { amountMicros: 1000, requestId: `req_${i}`, capability: 'metrics', keyId: null }
    await store.settle(
      r.reservationId,
      paid ? { ...charge, paid: { key: key(i), dataAsOf: '2026-01-02' } } : charge,
      now,
    )
  }
  for (let i = 0; i < PAID; i++) await settle(i, true)
  const settlePlain = await timed(N / 4, (i) => settle(PAID + i, false))
  const settlePaid = await timed(N / 4, (i) => settle(2 * PAID + i, true))
  const hit = await timed(N, (i) => store.hasPaid(account, key(i % PAID)))
  const miss = await timed(N, (i) => store.hasPaid(account, key(10 * PAID + i)))
  console.log(
    `${name}: hasPaid ${hit.toFixed(1)} µs (paid), ${miss.toFixed(1)} µs (not paid); ` +
      `settle ${settlePlain.toFixed(0)} µs plain, ${settlePaid.toFixed(0)} µs with the record ` +
      `(${PAID} records, median of ${N} lookups)`,
  )
  await store.close()
}

const dir = mkdtempSync(join(tmpdir(), 'erm3-paid-'))
try {
  await measure('SQLite', createSqliteAccountStore(join(dir, 'erm3.db')))
  const url = process.env.DATABASE_URL
  if (url) {
    const schema = `bench_${randomBytes(6).toString('hex')}`
    try {
      await measure('PostgreSQL', createPostgresAccountStore(url, { schema }))
    } finally {
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await c.end()
    }
  } else console.log('PostgreSQL: skipped (DATABASE_URL is not set)')
} finally {
  rmSync(dir, { recursive: true, force: true })
}
