/**
 * Embedded account store on one SQLite file (better-sqlite3, WAL).
 *
 * One server process owns the file; the operator CLI may open it concurrently to create accounts,
 * keys and top-ups, so every write takes the write lock up front (BEGIN IMMEDIATE, busy_timeout)
 * and every reserve reads the balance from the database rather than from a cache.
 *
 * Reservations, the group commit of debits and their durability: sqlite-reservations.ts.
 */
import { chmodSync, closeSync, openSync, statSync } from 'node:fs'
import Database from 'better-sqlite3'
import { newId } from '../../platform/ids.ts'
import { createSqliteOAuthStore } from '../oauth/sqlite.ts'
import type { OAuthStore } from '../oauth/types.ts'
import { MIGRATIONS, SCHEMA_MIGRATIONS_SQLITE } from './migrations.ts'
import { createSqlitePaymentStore } from './payments-sqlite.ts'
import type { PaymentStore } from './payments-types.ts'
import { createSqlitePlaidStore } from './plaid-sqlite.ts'
import type { PlaidStore } from './plaid-types.ts'
import { checkMicros, toAccount, toEntry, toKey, toSummary } from './rows.ts'
import { createSqliteSelfService, prepareSqliteSpend } from './self-service-sqlite.ts'
import type { SelfServiceStore } from './self-service-types.ts'
import { createSqliteSessionStore } from './sessions-sqlite.ts'
import type { SessionStore } from './sessions-types.ts'
import { createSqliteReservations } from './sqlite-reservations.ts'
import { prepareSqlite } from './sqlite-sql.ts'
import type { AccountStore, LedgerEntry } from './types.ts'
import { keyCreatedData, keyRevokedData } from './webhooks-events.ts'
import { createSqliteWebhooks } from './webhooks-sqlite.ts'

/**
 * The database holds key hashes, e-mail addresses, the ledger and sealed secrets: only its owner
 * may read it. The file is created 0600 before SQLite opens it (SQLite gives its -wal and -shm
 * files the database's mode), and files an older erm3 left readable by others are tightened.
 */
function ownerOnly(path: string): void {
  if (path === '' || path === ':memory:') return
  closeSync(openSync(path, 'a', 0o600))
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    let mode: number
    try {
      mode = statSync(file).mode
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue
      throw e
    }
    if (mode & 0o077) chmodSync(file, mode & 0o700)
  }
}

export function createSqliteAccountStore(path: string): AccountStore {
  const db = openSqlite(path)
  let prepared: ReturnType<typeof prepareSqlite> | null = null
  const s = () => {
    prepared ??= prepareSqlite(db)
    return prepared
  }
  let spendPrepared: ReturnType<typeof prepareSqliteSpend> | null = null
  const spend = () => {
    spendPrepared ??= prepareSqliteSpend(db)
    return spendPrepared
  }
  // Webhook events are enqueued inside the transactions below.
  const webhooks = createSqliteWebhooks(db)
  const money = createSqliteReservations({ db, statements: s, spend, hooks: webhooks.hooks })
  /** Inside a credit's transaction: money in re-arms the low-balance alert; a top-up is announced. */
  const moneyIn = (e: LedgerEntry) => {
    webhooks.hooks.rearm(e.accountId)
    if (e.kind === 'topup')
      webhooks.hooks.enqueue(
        e.accountId,
        'balance.topped_up',
        {
          ledger_id: e.id,
          amount_micros: e.amountMicros,
          balance_micros: s().balance.get(e.accountId)?.b ?? 0,
          reference: e.reference,
        },
        e.createdAt,
      )
  }
  const c: SqliteContext = { db, s, webhooks, money, moneyIn }
  return {
    backend: 'sqlite',
    ...schemaMethods(c),
    ...accountAndKeyMethods(c),
    ...moneyMethods(c),
    ...signInMethods(c),
    ...subStores(c),
  }
}

/** What the method groups below share: the connection, its prepared statements, webhooks, money. */
interface SqliteContext {
  db: Database.Database
  s: () => ReturnType<typeof prepareSqlite>
  webhooks: ReturnType<typeof createSqliteWebhooks>
  money: ReturnType<typeof createSqliteReservations>
  moneyIn: (e: LedgerEntry) => void
}

/** Opens the file owner-only, in WAL mode with full synchronous commits and foreign keys. */
function openSqlite(path: string): Database.Database {
  ownerOnly(path)
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('busy_timeout = 5000')
  db.pragma('foreign_keys = ON')
  return db
}

/** The schema's migrations, the health probe, and closing (after the queued debits commit). */
function schemaMethods({ db, money }: SqliteContext) {
  return {
    async migrate() {
      db.transaction(() => {
        db.exec(SCHEMA_MIGRATIONS_SQLITE)
        const rows = db.prepare<[], { version: number }>('SELECT version FROM schema_migrations').all()
        const applied = new Set(rows.map((r) => r.version))
        for (const m of MIGRATIONS) {
          if (applied.has(m.version)) continue
          for (const sql of m.sqlite) db.exec(sql)
          db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
            m.version,
            m.name,
            Date.now(),
          )
        }
      }).immediate()
    },

    async close() {
      money.flush()
      db.close()
    },

    async health() {
      try {
        const row = db
          .prepare<[], { v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations')
          .get()
        // The file's path is not named: /health is public (the operator knows ERM3_HOME).
        return { ok: true, detail: `sqlite schema v${row?.v ?? 0}` }
      } catch (err) {
        return { ok: false, detail: `sqlite: ${(err as Error).message}` }
      }
    },
  } satisfies Partial<AccountStore>
}

/** Accounts and API keys; key.created and key.revoked commit with the change they announce. */
function accountAndKeyMethods({ db, s, webhooks }: SqliteContext) {
  return {
    async createAccount(input) {
      s().insertAccount.run(input.id, input.email, input.kind, input.createdAt)
      return { ...input }
    },
    async getAccount(id) {
      const r = s().account.get(id)
      return r ? toAccount(r) : null
    },
    async findAccountByEmail(email) {
      const r = s().accountByEmail.get(email)
      return r ? toAccount(r) : null
    },
    async listAccounts(page) {
      return s()
        .accounts.all(page.after ?? '', page.limit)
        .map(toAccount)
    },

    async insertKey(k) {
      const insert = () =>
        s().insertKey.run(
          k.id,
          k.accountId,
          k.kind,
          k.environment,
          k.prefix,
          k.name,
          k.tier,
          k.hash,
          k.createdAt,
          k.expiresAt,
          k.clientId,
        )
      const { hash: _hash, ...rest } = k
      const record = { ...rest, lastUsedAt: null, revokedAt: null }
      // key.created commits with the key (OAuth access tokens, re-issued on every refresh, are not announced).
      if (k.clientId !== null) insert()
      else
        db.transaction(() => {
          insert()
          webhooks.hooks.enqueue(k.accountId, 'key.created', keyCreatedData(record), k.createdAt)
        }).immediate()
      return record
    },
    async findKeyByHash(hash) {
      const r = s().keyByHash.get(hash)
      return r ? toKey(r) : null
    },
    async getKey(id) {
      const r = s().key.get(id)
      return r ? toKey(r) : null
    },
    async listKeys(accountId) {
      return s().keys.all(accountId).map(toKey)
    },
    async revokeKey(id, at) {
      return db
        .transaction(() => {
          const before = s().key.get(id)
          const r = s().revoke.get(at, id)
          if (!r) return null
          const key = toKey(r)
          if (before && before.revoked_at === null && key.clientId === null)
            webhooks.hooks.enqueue(key.accountId, 'key.revoked', keyRevokedData(key), at)
          return key
        })
        .immediate()
    },
    async touchKeys(lastUsed) {
      if (lastUsed.size === 0) return
      db.transaction(() => {
        for (const [id, at] of lastUsed) s().touch.run(at, id, at)
      }).immediate()
    },
  } satisfies Partial<AccountStore>
}

/** Reserve, settle and release (sqlite-reservations.ts), balances, credits and the ledger. */
function moneyMethods({ db, s, money, moneyIn }: SqliteContext) {
  return {
    reserve: money.reserve,
    settle: money.settle,
    release: money.release,
    async hasPaid(accountId, key) {
      return s().hasPaid.get(accountId, key) !== undefined
    },
    async prunePaid(dataAsOf) {
      return s().prunePaid.run(dataAsOf).changes
    },

    async balance(accountId) {
      return {
        balanceMicros: s().balance.get(accountId)?.b ?? 0,
        reservedMicros: money.reservedOf(accountId),
      }
    },

    async credit(accountId, input, now) {
      checkMicros(input.amountMicros, 'credit amount', 1)
      return db
        .transaction(() => {
          const id = newId('led', now)
          const args = [
            input.kind,
            input.amountMicros,
            null,
            null,
            input.reference,
            null,
            input.note ?? null,
            now,
          ]
          const { changes } = s().insertLedger.run(id, accountId, ...args)
          if (changes === 0 && input.reference !== null) {
            const first = s().byReference.get(accountId, input.reference)
            if (first) return { entry: toEntry(first), duplicate: true }
          }
          s().addBalance.run(input.amountMicros, accountId)
          const entry: LedgerEntry = {
            id,
            accountId,
            kind: input.kind,
            amountMicros: input.amountMicros,
            requestId: null,
            capability: null,
            reference: input.reference,
            keyId: null,
            createdAt: now,
          }
          moneyIn(entry)
          return { entry, duplicate: false }
        })
        .immediate()
    },

    async entries(accountId, { from, to, limit }) {
      return s().entries.all(accountId, from, to, limit).map(toEntry)
    },
    async summary(accountId, { from, to }) {
      return toSummary(s().summary.get(accountId, from, to))
    },

    async reconcile(reservationsBefore) {
      const releasedReservations = money.releaseOlderThan(reservationsBefore)
      // Queued (uncommitted) debits are in neither the ledger nor the cached balance: consistent.
      const correctedBalances = db
        .transaction(() => {
          const bad = s().mismatched.all()
          for (const r of bad) s().setBalance.run(r.actual, r.id)
          return bad.length
        })
        .immediate()
      return { releasedReservations, correctedBalances }
    },
  } satisfies Partial<AccountStore>
}

/** One-time sign-in tokens, and the purge of every expired one-time secret. */
function signInMethods({ db, s }: SqliteContext) {
  return {
    async createLoginToken({ hash, email, expiresAt, createdAt, stateHash }) {
      s().insertToken.run(hash, email, expiresAt, createdAt, stateHash ?? null)
    },
    async findLoginToken(hash, now) {
      const r = s().findToken.get(hash, now)
      return r ? { email: r.email, stateHash: r.state_hash } : null
    },
    async consumeLoginToken(hash, now) {
      return s().consumeToken.get(now, hash, now)?.email ?? null
    },
    async purgeExpired(c) {
      const del = (table: string, before: number) =>
        db.prepare(`DELETE FROM ${table} WHERE expires_at < ?`).run(before).changes
      return db.transaction(() => ({
        loginTokens: del('login_tokens', c.loginTokens),
        codes: del('oauth_codes', c.codes),
        refreshTokens: del('oauth_refresh_tokens', c.refreshTokens),
      }))()
    },
  } satisfies Partial<AccountStore>
}

/** The stores that share this connection, each made on first use. */
function subStores({ db, webhooks, moneyIn }: SqliteContext) {
  let oauth: OAuthStore | null = null
  let selfService: SelfServiceStore | null = null
  let payments: PaymentStore | null = null
  let plaid: PlaidStore | null = null
  let sessions: SessionStore | null = null
  return {
    oauth() {
      oauth ??= createSqliteOAuthStore(db)
      return oauth
    },

    payments() {
      // Money in from Stripe is announced like credit()'s.
      payments ??= createSqlitePaymentStore(db, moneyIn)
      return payments
    },

    webhooks() {
      return webhooks.store
    },

    selfService() {
      selfService ??= createSqliteSelfService(db)
      return selfService
    },

    plaid() {
      plaid ??= createSqlitePlaidStore(db)
      return plaid
    },

    sessions() {
      sessions ??= createSqliteSessionStore(db)
      return sessions
    },
  } satisfies Partial<AccountStore>
}
