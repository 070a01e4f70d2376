/**
 * Scale-out account store on PostgreSQL. Several API nodes share the database, so everything that
 * must be consistent across nodes lives in it: balances, the ledger, and every reservation — a
 * node's reservation lease is a reservation row too. A node keeps in memory only what it carves
 * out of its own leases and its queues of settles waiting for the next group commit
 * (postgres-reservations.ts); its connections are in postgres-pool.ts.
 *
 * Hot-path statements (key lookup, reserve, settle, release, balance) are named prepared
 * statements: parsed once per connection.
 */
import { newId } from '../../platform/ids.ts'
import { createPostgresOAuthStore } from '../oauth/postgres.ts'
import type { OAuthStore } from '../oauth/types.ts'
import { MIGRATIONS, SCHEMA_MIGRATIONS_POSTGRES } from './migrations.ts'
import { createPostgresPaymentStore } from './payments-postgres.ts'
import type { PaymentStore } from './payments-types.ts'
import { createPostgresPlaidStore } from './plaid-postgres.ts'
import type { PlaidStore } from './plaid-types.ts'
import { openPostgresPools } from './postgres-pool.ts'
import { createPostgresReservations } from './postgres-reservations.ts'
import * as SQL from './postgres-sql.ts'
import {
  ACCOUNT_COLUMNS,
  type AccountRow,
  checkMicros,
  KEY_COLUMNS,
  type KeyRow,
  LEDGER_COLUMNS,
  type LedgerRow,
  SUMMARY_SELECT,
  type SummaryRow,
  toAccount,
  toEntry,
  toKey,
  toSummary,
} from './rows.ts'
import { createPostgresSelfService } from './self-service-postgres.ts'
import type { SelfServiceStore } from './self-service-types.ts'
import { createPostgresSessionStore } from './sessions-postgres.ts'
import type { SessionStore } from './sessions-types.ts'
import type { AccountStore, LedgerEntry } from './types.ts'
import { createPostgresWebhooks, INSERT_KEY_WITH_EVENT, REVOKE_KEY_WITH_EVENT } from './webhooks-postgres.ts'
import type { WebhookStore } from './webhooks-types.ts'

export function createPostgresAccountStore(url: string, opts: { schema?: string } = {}): AccountStore {
  const { schema } = opts
  const db = openPostgresPools(url, schema)
  const { direct, leases, balanceOf, ...reservations } = createPostgresReservations(db)
  const c: PostgresContext = { db, schema, reservations, leases }
  return {
    backend: 'postgres',
    ...schemaMethods(c),
    ...accountAndKeyMethods(c),
    ...direct,
    inProcess: leases.reservations,
    balance: balanceOf,
    ...ledgerMethods(c),
    ...signInMethods(c),
    ...subStores(c),
  }
}

/** What the method groups below share: the pools and the node's reservations and leases. */
interface PostgresContext {
  db: ReturnType<typeof openPostgresPools>
  schema: string | undefined
  reservations: { close(): Promise<void> }
  leases: ReturnType<typeof createPostgresReservations>['leases']
}

/** The schema's migrations (one node at a time), the health probe, and closing. */
function schemaMethods({ db, schema, reservations }: PostgresContext) {
  const { q, tx } = db
  return {
    async migrate() {
      await tx(async (c) => {
        // Two processes starting at once: the second waits here, then finds nothing to do.
        await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`erm3.accounts.migrate:${schema ?? ''}`])
        if (schema) await c.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
        await c.query(SCHEMA_MIGRATIONS_POSTGRES)
        const rows = await c.query<{ version: number }>('SELECT version FROM schema_migrations')
        const applied = new Set(rows.rows.map((r) => r.version))
        for (const m of MIGRATIONS) {
          if (applied.has(m.version)) continue
          for (const sql of m.postgres) await c.query(sql)
          await c.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
            m.version,
            m.name,
            Date.now(),
          ])
        }
      })
    },

    async close() {
      await reservations.close()
      await db.end()
    },

    async health() {
      try {
        const [row] = await q<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations')
        return { ok: true, detail: `postgres${schema ? ` schema ${schema}` : ''} v${row?.v ?? 0}` }
      } catch (err) {
        return { ok: false, detail: `postgres: ${(err as Error).message}` }
      }
    },
  } satisfies Partial<AccountStore>
}

/** Accounts and API keys; key.created and key.revoked commit in the statement that makes the change. */
function accountAndKeyMethods({ db }: PostgresContext) {
  const { q } = db
  return {
    async createAccount(input) {
      await q('INSERT INTO accounts (id, email, kind, created_at) VALUES ($1, $2, $3, $4)', [
        input.id,
        input.email,
        input.kind,
        input.createdAt,
      ])
      return { ...input }
    },
    async getAccount(id) {
      const [r] = await q<AccountRow>(
        `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1`,
        [id],
        'acct_get',
      )
      return r ? toAccount(r) : null
    },
    async findAccountByEmail(email) {
      const [r] = await q<AccountRow>(
        `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE lower(email) = lower($1)`,
        [email],
      )
      return r ? toAccount(r) : null
    },
    async listAccounts(page) {
      const rows = await q<AccountRow>(
        `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id COLLATE "C" > $1 ORDER BY id COLLATE "C" LIMIT $2`,
        [page.after ?? '', page.limit],
      )
      return rows.map(toAccount)
    },

    async insertKey(k) {
      // One statement: the key and its key.created deliveries (webhooks-postgres.ts) commit together.
      await q(INSERT_KEY_WITH_EVENT, [
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
        newId('evt', k.createdAt),
      ])
      const { hash: _hash, ...rest } = k
      return { ...rest, lastUsedAt: null, revokedAt: null }
    },
    async findKeyByHash(hash) {
      const [r] = await q<KeyRow>(
        `SELECT ${KEY_COLUMNS} FROM api_keys WHERE hash = $1`,
        [hash],
        'key_by_hash',
      )
      return r ? toKey(r) : null
    },
    async getKey(id) {
      const [r] = await q<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1`, [id])
      return r ? toKey(r) : null
    },
    async listKeys(accountId) {
      const rows = await q<KeyRow>(
        `SELECT ${KEY_COLUMNS} FROM api_keys WHERE account_id = $1 ORDER BY created_at, id`,
        [accountId],
      )
      return rows.map(toKey)
    },
    async revokeKey(id, at) {
      // Revokes once; key.revoked is enqueued by the same statement when this call revoked it.
      const [r] = await q<KeyRow>(REVOKE_KEY_WITH_EVENT, [id, at, newId('evt', at)])
      return r ? toKey(r) : null
    },
    async touchKeys(lastUsed) {
      if (lastUsed.size === 0) return
      await q(
        `UPDATE api_keys k SET last_used_at = t.at FROM unnest($1::text[], $2::bigint[]) AS t(id, at)
       WHERE k.id = t.id AND (k.last_used_at IS NULL OR k.last_used_at < t.at)`,
        [[...lastUsed.keys()], [...lastUsed.values()]],
      )
    },
  } satisfies Partial<AccountStore>
}

/** Credits, the ledger and reconcile (reserve, settle and release: postgres-reservations.ts). */
function ledgerMethods({ db }: PostgresContext) {
  const { q, tx } = db
  return {
    async credit(accountId, input, now) {
      checkMicros(input.amountMicros, 'credit amount', 1)
      const id = newId('led', now)
      const { kind, amountMicros, reference } = input
      const inserted = await q(SQL.CREDIT, [
        id,
        accountId,
        kind,
        amountMicros,
        reference,
        input.note ?? null,
        now,
        newId('evt', now),
      ])
      const entry: LedgerEntry = {
        ...{ id, accountId, kind, amountMicros, reference, createdAt: now },
        ...{ requestId: null, capability: null, keyId: null },
      }
      if (inserted.length === 1 || reference === null) return { entry, duplicate: false }
      const [first] = await q<LedgerRow>(
        `SELECT ${LEDGER_COLUMNS} FROM ledger WHERE account_id = $1 AND reference = $2`,
        [accountId, reference],
      )
      if (!first) throw new Error(`credit ${reference} on ${accountId} neither inserted nor found`)
      return { entry: toEntry(first), duplicate: true }
    },

    async hasPaid(accountId, key) {
      const rows = await q(SQL.HAS_PAID, [accountId, key])
      return rows.length > 0
    },
    async prunePaid(dataAsOf) {
      return (await q<{ n: number }>(SQL.PRUNE_PAID, [dataAsOf])).length
    },

    async entries(accountId, { from, to, limit }) {
      const rows = await q<LedgerRow>(
        `SELECT ${LEDGER_COLUMNS} FROM ledger WHERE account_id = $1 AND created_at >= $2 AND created_at < $3
       ORDER BY created_at, id LIMIT $4`,
        [accountId, from, to, limit],
      )
      return rows.map(toEntry)
    },
    async summary(accountId, { from, to }) {
      const [r] = await q<SummaryRow>(
        `${SUMMARY_SELECT} WHERE account_id = $1 AND created_at >= $2 AND created_at < $3`,
        [accountId, from, to],
      )
      return toSummary(r)
    },

    async reconcile(reservationsBefore) {
      const [released] = await tx((c) =>
        c.query<{ released: number }>(SQL.RELEASE_OLD, [reservationsBefore]).then((r) => r.rows),
      )
      let correctedBalances = 0
      for (const { id } of await q<{ id: string }>(SQL.MISMATCHED)) {
        const fixed = await tx(async (c) => {
          const [cached] = (await c.query<{ b: number; r: number }>(SQL.LOCK_ACCOUNT, [id])).rows
          const [truth] = (await c.query<{ b: number; r: number }>(SQL.ACCOUNT_TRUTH, [id])).rows
          if (!cached || !truth || (cached.b === truth.b && cached.r === truth.r)) return false
          await c.query('UPDATE accounts SET balance_micros = $2, reserved_micros = $3 WHERE id = $1', [
            id,
            truth.b,
            truth.r,
          ])
          return true
        })
        if (fixed) correctedBalances++
      }
      return { releasedReservations: released?.released ?? 0, correctedBalances }
    },
  } satisfies Partial<AccountStore>
}

/** One-time sign-in tokens, and the purge of every expired one-time secret. */
function signInMethods({ db }: PostgresContext) {
  const { q, pool } = db
  return {
    async createLoginToken({ hash, email, expiresAt, createdAt, stateHash }) {
      await q(
        'INSERT INTO login_tokens (hash, email, expires_at, created_at, state_hash) VALUES ($1, $2, $3, $4, $5)',
        [hash, email, expiresAt, createdAt, stateHash ?? null],
      )
    },
    async findLoginToken(hash, now) {
      const [r] = await q<{ email: string; state_hash: string | null }>(
        'SELECT email, state_hash FROM login_tokens WHERE hash = $1 AND used_at IS NULL AND expires_at > $2',
        [hash, now],
      )
      return r ? { email: r.email, stateHash: r.state_hash } : null
    },
    async consumeLoginToken(hash, now) {
      const [r] = await q<{ email: string }>(
        `UPDATE login_tokens SET used_at = $2 WHERE hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING email`,
        [hash, now],
      )
      return r?.email ?? null
    },
    async purgeExpired(c) {
      const del = async (table: string, before: number) =>
        (await pool.query(`DELETE FROM ${table} WHERE expires_at < $1`, [before])).rowCount ?? 0
      return {
        loginTokens: await del('login_tokens', c.loginTokens),
        codes: await del('oauth_codes', c.codes),
        refreshTokens: await del('oauth_refresh_tokens', c.refreshTokens),
      }
    },
  } satisfies Partial<AccountStore>
}

/** The stores that share these pools, each made on first use. */
function subStores({ db, leases }: PostgresContext) {
  const { pool, tx } = db
  let oauth: OAuthStore | null = null
  let webhooks: WebhookStore | null = null
  let payments: PaymentStore | null = null
  let plaid: PlaidStore | null = null
  let selfService: SelfServiceStore | null = null
  let sessions: SessionStore | null = null
  return {
    oauth() {
      oauth ??= createPostgresOAuthStore(pool, tx)
      return oauth
    },

    payments() {
      if (!payments) {
        const inner = createPostgresPaymentStore(pool, tx)
        payments = {
          ...inner,
          // A refund or chargeback may have revoked the account's leases (POST_NEGATIVE): this
          // node stops carving from its own at once, so its next call is refused, not served.
          async applyEvent(ev, now) {
            const r = await inner.applyEvent(ev, now)
            const negative = r.outcome === 'applied' && r.entry !== null && r.entry.amountMicros < 0
            if (negative && r.accountId) await leases.surrender(r.accountId)
            return r
          },
        }
      }
      return payments
    },

    webhooks() {
      webhooks ??= createPostgresWebhooks(pool, tx)
      return webhooks
    },

    selfService() {
      selfService ??= createPostgresSelfService(pool, tx)
      return selfService
    },

    plaid() {
      plaid ??= createPostgresPlaidStore(pool)
      return plaid
    },

    sessions() {
      sessions ??= createPostgresSessionStore(pool)
      return sessions
    },
  } satisfies Partial<AccountStore>
}
