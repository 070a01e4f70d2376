/**
 * What an event costs the request that causes it (budget: ≤ 0.2 ms). The outbox row is written
 * inside the change's own transaction/statement, so the cost is the extra INSERT … SELECT fan-out.
 * Measured on SQLite (temp file) and PostgreSQL (DATABASE_URL, own schema; skipped when unset):
 *
 * - key creation (insertKey) on an account with a subscription to key.created vs one without;
 * - a debit that crosses the low-balance threshold (reserve → settle: balance.low to a
 *   subscription and the e-mail row) vs a crossing debit on an account with no subscription and
 *   no e-mail address (the crossing is still detected, nothing is written).
 *
 * The two sides alternate call by call (drift hits both alike); medians of per-call latency.
 * Run: node --import tsx bench/webhooks.ts [calls]   (default 400 per side)
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { newId } from '../src/platform/ids.ts'
import { createPostgresAccountStore } from '../src/store/accounts/postgres.ts'
import { createSqliteAccountStore } from '../src/store/accounts/sqlite.ts'
import type { AccountStore } from '../src/store/accounts/types.ts'

const LIMIT_MS = 0.2
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN

async function account(store: AccountStore, subscribed: boolean, email: boolean): Promise<string> {
  const id = newId('acct')
  await store.createAccount({
    id,
    email: email ? `${id}@example.com` : null,
    kind: email ? 'user' : 'anonymous',
    createdAt: Date.now(),
  })
  await store.credit(id, { kind: 'credit', amountMicros: 1e12, reference: null }, Date.now())
  if (subscribed)
    await store.webhooks().createSubscription({
      id: newId('whs'),
      accountId: id,
      url: 'https://hooks.example.com/bench',
      events: ['key.created', 'balance.low'],
      secretEnc: 'v1:bench',
      createdAt: Date.now(),
    })
  return id
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  await fn()
  return performance.now() - t0
}

async function insertKey(store: AccountStore, accountId: string) {
  await store.insertKey({
    id: newId('key'),
    accountId,
    kind: 'agent',
    environment: 'live',
    prefix: 'erm_agent_live_Bn…',
    name: 'bench',
    tier: 'default',
    hash: randomBytes(32).toString('hex'),
    createdAt: Date.now(),
    expiresAt: null,
    clientId: null,
  })
}

/** Arms the alert just at the balance, so the next debit crosses it; returns the timed debit. */
async function crossingDebit(store: AccountStore, accountId: string): Promise<number> {
  const { balanceMicros } = await store.balance(accountId)
  await store.webhooks().setBalanceAlert(accountId, balanceMicros)
  return timed(async () => {
    const now = Date.now()
    const r = await store.reserve(accountId, 1000, now)
    if (!r.ok) throw new Error('bench account ran out of funds')
    await store.settle(
      r.reservationId,
      { amountMicros: 1000, requestId: 'req_b', capability: 'bench', keyId: null },
      now,
    )
  })
}

async function bench(name: string, store: AccountStore, calls: number) {
  await store.migrate()
  const plain = await account(store, false, false)
  const hooked = await account(store, true, true)
  const rows: { case: string; without: number; with: number }[] = []
  for (const [label, op] of [
    ['key creation (key.created)', (a: string) => timed(() => insertKey(store, a))],
    ['crossing debit (balance.low + e-mail)', (a: string) => crossingDebit(store, a)],
  ] as const) {
    for (let i = 0; i < 20; i++) await Promise.all([op(plain), op(hooked)].map((p) => p.catch(() => 0)))
    const without: number[] = []
    const withSub: number[] = []
    for (let i = 0; i < calls; i++) {
      // alternate the order too
      if (i % 2) {
        without.push(await op(plain))
        withSub.push(await op(hooked))
      } else {
        withSub.push(await op(hooked))
        without.push(await op(plain))
      }
    }
    rows.push({ case: label, without: median(without), with: median(withSub) })
  }
  for (const r of rows) {
    const delta = r.with - r.without
    console.log(
      `${name.padEnd(9)} ${r.case.padEnd(38)} without ${r.without.toFixed(3)} ms  with ${r.with.toFixed(3)} ms  ` +
        `→ +${delta.toFixed(3)} ms ${delta <= LIMIT_MS ? 'ok' : `OVER ${LIMIT_MS} ms`}`,
    )
  }
  return rows.every((r) => r.with - r.without <= LIMIT_MS)
}

const calls = Number(process.argv[2] ?? 400)
let ok = true
const dir = mkdtempSync(join(tmpdir(), 'erm3-bench-wh-'))
const sqlite = createSqliteAccountStore(join(dir, 'erm3.db'))
try {
  ok = (await bench('sqlite', sqlite, calls)) && ok
} finally {
  await sqlite.close()
  rmSync(dir, { recursive: true, force: true })
}
const url = process.env.DATABASE_URL
if (url) {
  const schema = `bench_${randomBytes(5).toString('hex')}`
  const store = createPostgresAccountStore(url, { schema })
  try {
    ok = (await bench('postgres', store, calls)) && ok
  } finally {
    await store.close()
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await c.end()
  }
} else console.log('postgres: skipped (DATABASE_URL is not set)')
process.exit(ok ? 0 : 1)
