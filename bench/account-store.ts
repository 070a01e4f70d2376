/**
 * The OAuth store (src/store/oauth) on its two account-store backends: median µs per call of its
 * calls on SQLite (a temp file, as embedded) and on PostgreSQL (DATABASE_URL; skipped when unset),
 * one caller, measured in interleaved rounds. The figures behind docs/decisions/account-stores.md:
 * the calls of a plain read/write store, what a query builder in front of them would be weighed
 * against.
 * Run: node --import tsx bench/account-store.ts [runs]
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { newId } from '../src/platform/ids.ts'
import { createPostgresAccountStore } from '../src/store/accounts/postgres.ts'
import { createSqliteAccountStore } from '../src/store/accounts/sqlite.ts'
import type { AccountStore } from '../src/store/accounts/types.ts'
import type { OAuthStore } from '../src/store/oauth/types.ts'

const RUNS = Math.max(3, Number(process.argv[2] ?? 5))
const T0 = 1_700_000_000_000
const DAY = 86_400_000
const hash = () => randomBytes(32).toString('hex')

/** A store to measure, taken from an opened and migrated account store. */
interface Variant {
  name: string
  oauth(accounts: AccountStore): OAuthStore
}
const VARIANTS: Variant[] = [{ name: 'hand-written', oauth: (a) => a.oauth() }]

/** One measured call: `prepare` runs untimed before the round, `call(i)` is timed. */
interface Op {
  name: string
  prepare(o: OAuthStore, n: number): Promise<void>
  call(o: OAuthStore, i: number): Promise<unknown>
}

async function fixture(accounts: AccountStore) {
  const account = await accounts.createAccount({
    id: newId('acct'),
    email: null,
    kind: 'anonymous',
    createdAt: T0,
  })
  const o = accounts.oauth()
  const client = await o.registerClient({
    clientId: newId('cli'),
    clientName: 'bench agent',
    redirectUris: ['http://127.0.0.1:33418/callback'],
    createdAt: T0,
  })
  await o.recordApproval({
    accountId: account.id,
    clientId: client.clientId,
    redirectUri: 'http://127.0.0.1:33418/callback',
    scope: 'mcp:read',
    at: T0,
  })
  // The grant list reads an account of its own whose rows stay the same: three grants, each with
  // a live refresh token and a pending code (the measured account's codes grow with every round).
  const lister = await accounts.createAccount({
    id: newId('acct'),
    email: null,
    kind: 'anonymous',
    createdAt: T0,
  })
  for (let g = 0; g < 3; g++) {
    const c = await o.registerClient({
      clientId: newId('cli'),
      clientName: `bench agent ${g}`,
      redirectUris: ['http://127.0.0.1:33418/callback'],
      createdAt: T0,
    })
    const base = {
      clientId: c.clientId,
      accountId: lister.id,
      scope: 'mcp:read',
      createdAt: T0,
      expiresAt: T0 + DAY,
    }
    await o.recordApproval({ ...base, redirectUri: 'http://127.0.0.1:33418/callback', at: T0 })
    await o.createRefreshToken({ ...base, hash: hash(), familyId: newId('fam') })
    await o.createCode({
      ...base,
      hash: hash(),
      redirectUri: 'http://127.0.0.1:33418/callback',
      codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    })
  }
  return { accountId: account.id, clientId: client.clientId, listerId: lister.id }
}

function operations(f: { accountId: string; clientId: string; listerId: string }): Op[] {
  const codes: string[] = []
  let token = ''
  const code = (h: string) => ({
    hash: h,
    clientId: f.clientId,
    accountId: f.accountId,
    redirectUri: 'http://127.0.0.1:33418/callback',
    codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    scope: 'mcp:read',
    createdAt: T0,
    expiresAt: T0 + DAY,
  })
  return [
    { name: 'getClient', prepare: async () => undefined, call: (o) => o.getClient(f.clientId) },
    {
      name: 'listGrants',
      prepare: async () => undefined,
      call: (o) => o.listGrants(f.listerId, T0 + 1000),
    },
    {
      name: 'recordApproval',
      prepare: async () => undefined,
      call: (o, i) =>
        o.recordApproval({
          accountId: f.accountId,
          clientId: f.clientId,
          redirectUri: 'http://127.0.0.1:33418/callback',
          scope: 'mcp:read',
          at: T0 + i,
        }),
    },
    { name: 'createCode', prepare: async () => undefined, call: (o) => o.createCode(code(hash())) },
    {
      name: 'consumeCode',
      async prepare(o, n) {
        codes.length = 0
        for (let i = 0; i < n; i++) {
          const h = hash()
          await o.createCode(code(h))
          codes.push(h)
        }
      },
      call: (o, i) => o.consumeCode(codes[i] as string, T0 + 1000),
    },
    {
      name: 'rotateRefreshToken',
      async prepare(o) {
        token = hash()
        await o.createRefreshToken({
          hash: token,
          familyId: newId('fam'),
          clientId: f.clientId,
          accountId: f.accountId,
          scope: 'mcp:read',
          createdAt: T0,
          expiresAt: T0 + DAY,
        })
      },
      async call(o) {
        const next = hash()
        const r = await o.rotateRefreshToken(
          token,
          f.clientId,
          { hash: next, createdAt: T0, expiresAt: T0 + DAY },
          T0 + 1,
        )
        if (r.status !== 'ok') throw new Error(`rotation: ${r.status}`)
        token = next
      },
    },
  ]
}

interface Backend {
  name: string
  calls: number
  open(): AccountStore
  drop(): Promise<void>
}

function backends(root: string): Backend[] {
  const out: Backend[] = [
    {
      name: 'sqlite',
      calls: 500,
      open: () => createSqliteAccountStore(join(root, 'accounts.db')),
      drop: async () => undefined,
    },
  ]
  const url = process.env.DATABASE_URL
  if (url) {
    const schema = `bench_${randomBytes(5).toString('hex')}`
    out.push({
      name: 'postgres',
      calls: 200,
      open: () => createPostgresAccountStore(url, { schema }),
      async drop() {
        const { default: pg } = await import('pg')
        const c = new pg.Client({ connectionString: url })
        await c.connect()
        await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
        await c.end()
      },
    })
  } else console.log('postgres: skipped (DATABASE_URL is not set)')
  return out
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN

async function measure(b: Backend, variants: Variant[]): Promise<void> {
  const accounts = b.open()
  await accounts.migrate()
  try {
    const f = await fixture(accounts)
    const stores = variants.map((v) => v.oauth(accounts))
    const ops = operations(f)
    /** Wall and CPU µs per call, per op, per variant, per round. */
    const us = ops.map(() => variants.map((): number[] => []))
    const cpu = ops.map(() => variants.map((): number[] => []))
    for (let r = -1; r < RUNS; r++) {
      // Round -1 warms up (JIT, statement caches) and is not counted.
      for (const [k, op] of ops.entries()) {
        const order = r % 2 ? stores.map((_, i) => i) : stores.map((_, i) => i).reverse()
        for (const v of order) {
          const o = stores[v] as OAuthStore
          await op.prepare(o, b.calls)
          const c0 = process.cpuUsage()
          const t0 = performance.now()
          for (let i = 0; i < b.calls; i++) await op.call(o, i)
          const t = ((performance.now() - t0) * 1000) / b.calls
          const c = process.cpuUsage(c0)
          if (r >= 0) {
            us[k]?.[v]?.push(t)
            cpu[k]?.[v]?.push((c.user + c.system) / b.calls)
          }
        }
      }
    }
    console.log(
      `${b.name}: median over ${RUNS} rounds of ${b.calls} calls (one caller), µs per call: wall / CPU of this process`,
    )
    console.log(`  ${''.padEnd(20)}${variants.map((v) => v.name.padStart(20)).join('')}`)
    const cell = (k: number, v: number) =>
      `${median(us[k]?.[v] ?? []).toFixed(1)} / ${median(cpu[k]?.[v] ?? []).toFixed(1)}`.padStart(20)
    for (const [k, op] of ops.entries())
      console.log(`  ${op.name.padEnd(20)}${variants.map((_, v) => cell(k, v)).join('')}`)
  } finally {
    await accounts.close()
    await b.drop()
  }
}

async function main(variants: Variant[]): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'erm3-bench-accounts-'))
  try {
    for (const b of backends(root)) await measure(b, variants)
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

await main(VARIANTS)
