/**
 * Money survives a crash: a real `erm3 serve` child under metered load is SIGKILLed mid-flight,
 * then the ledger is read straight from the database. The rule (docs/decisions/money.md): a debit
 * is durable before its response leaves, so every 2xx the client saw has exactly one debit row;
 * a debit whose response died with the process stands. A restart reconciles and serves the
 * ledger-derived balance.
 */
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { before, describe, test } from 'node:test'
import pg from 'pg'
import { ModelStore } from '../../src/engine/model-store/reader.ts'
import { openOperator } from '../../src/main/context.ts'
import { createAccountWithBalance, createKeyFor } from '../../src/services/account/admin.ts'
import type { LedgerEntry } from '../../src/store/accounts/types.ts'
import { startNode } from '../helpers/cluster.ts'
import { type FixtureStores, fixtureStores } from '../helpers/fixture-store.ts'

const KEYS = 6
const PER_KEY = 8 // under the 10-slot concurrency limit of a key
const LOAD_MS = 1500
/** The kill waits for this many 2xx (up to 30 s on a busy machine), so there is load to lose. */
const MIN_OK = 200
const OPENING_MICROS = 100_000_000

type Env = Record<string, string | undefined>

/** `erm3 serve` as a child (the cluster helper's); resolves with its origin once it is serving. */
async function startServer(env: Env, store: string): Promise<{ child: ChildProcess; origin: string }> {
  const n = await startNode({ ...env, LOG_LEVEL: 'warn' }, store)
  return { child: n.child, origin: `http://127.0.0.1:${n.port}` }
}

function killed(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    child.once('exit', () => resolve())
    child.kill('SIGKILL')
  })
}

/**
 * Metered load until SIGKILL: PER_KEY loops per key, each a keep-alive `no-cache` GET. Returns
 * the X-Request-ID of every 2xx received, and how many calls failed at the transport.
 */
async function loadThenKill(
  origin: string,
  keys: string[],
  ticker: string,
  child: ChildProcess,
): Promise<{ ok: string[]; other: number; dropped: number }> {
  const ok: string[] = []
  let other = 0
  let dropped = 0
  let stop = false
  const loop = async (key: string) => {
    while (!stop) {
      try {
        const res = await fetch(`${origin}/metrics/${ticker}`, {
          headers: { authorization: `Bearer ${key}`, 'cache-control': 'no-cache' },
        })
        await res.arrayBuffer()
        if (res.status >= 200 && res.status < 300) ok.push(res.headers.get('x-request-id') ?? '')
        else other++
      } catch {
        dropped++
        return // the server is gone
      }
    }
  }
  const loops = keys.flatMap((k) => Array.from({ length: PER_KEY }, () => loop(k)))
  const deadline = Date.now() + 30_000
  await new Promise((r) => setTimeout(r, LOAD_MS))
  while (ok.length < MIN_OK && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  await killed(child) // mid-flight: every loop has a request outstanding
  stop = true
  await Promise.all(loops)
  return { ok, other, dropped }
}

async function ledgerOf(env: Env, accountId: string): Promise<{ rows: LedgerEntry[]; balance: number }> {
  const op = await openOperator(env)
  try {
    const rows = await op.ctx.accounts.entries(accountId, {
      from: 0,
      to: Date.now() + 86_400_000,
      limit: 1e7,
    })
    const { balanceMicros } = await op.ctx.accounts.balance(accountId)
    return { rows, balance: balanceMicros }
  } finally {
    await op.close()
  }
}

async function firstLiveTicker(store: string): Promise<string> {
  const s = await ModelStore.open(store)
  try {
    const live = s.symbols.flatMap((m) => m.tickers).find((w) => !w.to)
    assert.ok(live, 'the fixture store has a listed ticker')
    return live.ticker
  } finally {
    await s.close()
  }
}

interface Backend {
  env: Env
  drop(): Promise<void>
}

async function sqliteBackend(home: string): Promise<Backend> {
  return { env: { ERM3_HOME: home }, drop: async () => undefined }
}

/** A throwaway database: the server takes its schema from DATABASE_URL only. */
async function postgresBackend(home: string): Promise<Backend> {
  const base = process.env.DATABASE_URL as string
  const name = `erm3_dur_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: base })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(base)
  url.pathname = `/${name}`
  return {
    env: {
      ERM3_HOME: home,
      DATABASE_URL: url.toString(),
      ERM3_PEPPER: randomBytes(32).toString('base64url'),
      ERM3_SESSION_SECRET: randomBytes(32).toString('base64url'),
    },
    async drop() {
      const c = new pg.Client({ connectionString: base })
      await c.connect()
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await c.end()
    },
  }
}

const backends: [string, (home: string) => Promise<Backend>, string | false][] = [
  ['sqlite', sqliteBackend, false],
  ['postgres', postgresBackend, process.env.DATABASE_URL ? false : 'DATABASE_URL is not set (CI exports it)'],
]

let fx: FixtureStores
let ticker: string
before(async () => {
  fx = await fixtureStores()
  ticker = await firstLiveTicker(fx.live)
})

for (const [name, open, skip] of backends) {
  describe(`durability under SIGKILL (${name})`, { skip }, () => {
    test('every 2xx has exactly one debit, the balance is the ledger sum, a restart serves it', async (t) => {
      const home = mkdtempSync(join(tmpdir(), 'erm3-dur-'))
      // A pre-built sandbox: `serve` would otherwise synthesise one on first start (~10 s).
      cpSync(fx.sandbox, join(home, 'sandbox', 'store'), { recursive: true })
      const backend = await open(home)
      const children: ChildProcess[] = []
      try {
        const op = await openOperator(backend.env)
        let accountId: string
        let keys: string[]
        try {
          const { account } = await createAccountWithBalance(op.ctx, {
            email: `dur-${randomBytes(4).toString('hex')}@example.com`,
            balanceUsd: OPENING_MICROS / 1e6,
          })
          accountId = account.id
          keys = []
          for (let i = 0; i < KEYS; i++) {
            const k = await createKeyFor(op.ctx, { accountId, environment: 'live', tier: 'premium' })
            keys.push(k.apiKey)
          }
        } finally {
          await op.close()
        }

        const first = await startServer(backend.env, fx.live)
        children.push(first.child)
        const load = await loadThenKill(first.origin, keys, ticker, first.child)
        assert.ok(load.ok.length >= MIN_OK, `sustained load reached the server (${load.ok.length} 2xx)`)
        assert.ok(load.dropped > 0, 'the kill caught requests in flight')

        const { rows, balance } = await ledgerOf(backend.env, accountId)
        const debits = rows.filter((r) => r.kind === 'debit')
        t.diagnostic(
          `${load.ok.length} 2xx, ${load.other} other, ${load.dropped} dropped by the kill; ${debits.length} debits`,
        )
        const byRequest = new Map<string, number>()
        for (const d of debits) byRequest.set(d.requestId ?? '', (byRequest.get(d.requestId ?? '') ?? 0) + 1)
        for (const id of load.ok) assert.equal(byRequest.get(id), 1, `request ${id} has exactly one debit`)
        assert.equal(byRequest.size, debits.length, 'no request was charged twice')
        assert.ok(debits.length >= load.ok.length, `${debits.length} debits ≥ ${load.ok.length} 2xx received`)
        const spent = debits.reduce((s, d) => s + d.amountMicros, 0)
        assert.equal(balance, OPENING_MICROS + spent, 'cached balance = opening + Σ debits')
        assert.equal(
          balance,
          rows.reduce((s, r) => s + r.amountMicros, 0),
          'cached balance = Σ ledger',
        )

        const second = await startServer(backend.env, fx.live)
        children.push(second.child)
        const res = await fetch(`${second.origin}/balance`, {
          headers: { authorization: `Bearer ${keys[0]}` },
        })
        assert.equal(res.status, 200)
        const body = (await res.json()) as { balance_usd: number }
        assert.equal(Math.round(body.balance_usd * 1e6), balance, '/balance after restart = ledger balance')
      } finally {
        await Promise.all(children.map(killed))
        await backend.drop()
        rmSync(home, { recursive: true, force: true })
      }
    })
  })
}
