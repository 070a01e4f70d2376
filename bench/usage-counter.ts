/**
 * Hot-path cost of the per-(account, day, capability) usage counter (services/billing/usage.ts):
 * what `recordUsage` adds to every metered call, against a baseline call that does nothing but
 * read the same arguments; and the off-path cost of one flush (one upsert batch) on SQLite and
 * PostgreSQL (DATABASE_URL; skipped when unset).
 * Run: node --import tsx bench/usage-counter.ts
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { CAPABILITIES } from '../src/contract/pricing.ts'
import { newId } from '../src/platform/ids.ts'
import { flushUsage, recordUsage } from '../src/services/billing/usage.ts'
import type { ServiceContext } from '../src/services/context.ts'
import type { Principal } from '../src/services/identity/keys.ts'
import { createPostgresAccountStore } from '../src/store/accounts/postgres.ts'
import { createSqliteAccountStore } from '../src/store/accounts/sqlite.ts'
import type { AccountStore } from '../src/store/accounts/types.ts'

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN
const N = 1_000_000
const log = { warn: () => undefined } as unknown as ServiceContext['log']

function principals(n: number): Principal[] {
  return Array.from({ length: n }, (_, i) => ({
    keyId: `key_${i}`,
    accountId: `acct_${i}`,
    environment: 'live',
    kind: 'agent',
    tier: 'default',
  }))
}

async function hotPath(store: AccountStore, ps: Principal[]) {
  const ctx = { accounts: store, log, now: () => Date.now() } as unknown as ServiceContext
  const caps = CAPABILITIES.slice(0, 5)
  let sink = 0
  const baseline = (p: Principal, c: (typeof caps)[number], cost: number, hit: boolean) => {
    sink += p.accountId.length + c.id.length + cost + (hit ? 1 : 0) + ctx.now()
  }
  const run = (fn: typeof baseline) => {
    const t0 = performance.now()
    for (let i = 0; i < N; i++)
      fn(ps[i % ps.length] as Principal, caps[i % caps.length] as (typeof caps)[number], 1000, (i & 3) === 0)
    return ((performance.now() - t0) * 1e6) / N
  }
  const base: number[] = []
  const rec: number[] = []
  for (let r = 0; r < 5; r++) {
    base.push(run(baseline))
    rec.push(run((p, c, cost, hit) => recordUsage(ctx, p, c, cost, hit)))
    // Off the measured loop: the counters go to the database as the timer would send them.
    await flushUsage(ctx)
  }
  if (sink === -1) console.log(sink)
  return { baselineNs: median(base), recordNs: median(rec) }
}

async function flushCost(store: AccountStore, accounts: string[]) {
  const ctx = { accounts: store, log, now: () => Date.now() } as unknown as ServiceContext
  const caps = CAPABILITIES.slice(0, 5)
  const xs: number[] = []
  for (let r = 0; r < 7; r++) {
    for (const a of accounts)
      for (const c of caps)
        recordUsage(
          ctx,
          { keyId: 'k', accountId: a, environment: 'live', kind: 'agent', tier: 'default' },
          c,
          1000,
          false,
        )
    const t0 = performance.now()
    await flushUsage(ctx)
    xs.push(performance.now() - t0)
  }
  return { counters: accounts.length * caps.length, flushMs: median(xs) }
}

async function bench(name: string, store: AccountStore) {
  await store.migrate()
  const accounts: string[] = []
  for (let i = 0; i < 100; i++) {
    const id = newId('acct')
    await store.createAccount({ id, email: null, kind: 'anonymous', createdAt: Date.now() })
    accounts.push(id)
  }
  const ps = principals(100).map((p, i) => ({ ...p, accountId: accounts[i] as string }))
  const hot = await hotPath(store, ps)
  const flush = await flushCost(store, accounts)
  console.log(
    `${name}: recordUsage ${hot.recordNs.toFixed(0)} ns/call vs baseline ${hot.baselineNs.toFixed(0)} ns ` +
      `(+${(hot.recordNs - hot.baselineNs).toFixed(0)} ns); one flush of ${flush.counters} counters ` +
      `${flush.flushMs.toFixed(2)} ms (off the request path, every 2 s)`,
  )
  await store.close()
}

const dir = mkdtempSync(join(tmpdir(), 'erm3-bench-usage-'))
try {
  await bench('sqlite', createSqliteAccountStore(join(dir, 'usage.db')))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
const url = process.env.DATABASE_URL
if (url) {
  const schema = `bench_${randomBytes(5).toString('hex')}`
  try {
    await bench('postgres', createPostgresAccountStore(url, { schema }))
  } finally {
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await c.end()
  }
} else console.log('postgres: skipped (DATABASE_URL is not set)')
