/**
 * Scale-out account store on PostgreSQL (`pg` Pool). Several API nodes share the database, so
 * everything that must be consistent across nodes — reservations included — lives in it; a node
 * keeps nothing but its queue of settles waiting for the next group commit.
 *
 * Hot-path statements (key lookup, reserve, settle, release, balance) are named prepared
 * statements: parsed once per connection.
 */
import pg from 'pg'
import { newId } from '../../platform/ids.ts'
import { createPostgresOAuthStore } from '../oauth/postgres.ts'
import type { OAuthStore } from '../oauth/types.ts'
import { MIGRATIONS, SCHEMA_MIGRATIONS_POSTGRES } from './migrations.ts'
import { createPostgresPaymentStore } from './payments-postgres.ts'
import type { PaymentStore } from './payments-types.ts'
import { createPostgresPlaidStore } from './plaid-postgres.ts'
import type { PlaidStore } from './plaid-types.ts'
import { createLeases } from './postgres-leases.ts'
import { createSettleQueue, isTransient } from './postgres-settle.ts'
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
import { createPostgresSelfService, SPEND_STATE } from './self-service-postgres.ts'
import { monthOf, type SelfServiceStore } from './self-service-types.ts'
import type { AccountStore, Charge, LedgerEntry, ReserveResult } from './types.ts'
import { createPostgresWebhooks, INSERT_KEY_WITH_EVENT, REVOKE_KEY_WITH_EVENT } from './webhooks-postgres.ts'
import type { WebhookStore } from './webhooks-types.ts'

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

export function createPostgresAccountStore(url: string, opts: { schema?: string } = {}): AccountStore {
  const { schema } = opts
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

  /** Runs `fn` in a transaction, retrying deadlocks and serialisation failures (both are transient). */
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

  const settles = createSettleQueue(pool, tx)
  let oauth: OAuthStore | null = null
  let webhooks: WebhookStore | null = null
  let payments: PaymentStore | null = null
  let plaid: PlaidStore | null = null
  let selfService: SelfServiceStore | null = null

  /** The account's balance and reservations, as the database holds them (leases in full). */
  async function balanceRow(accountId: string) {
    const [r] = await q<{ b: number; r: number }>(
      'SELECT balance_micros AS b, reserved_micros AS r FROM accounts WHERE id = $1',
      [accountId],
      'balance',
    )
    return { balanceMicros: r?.b ?? 0, reservedMicros: r?.r ?? 0 }
  }

  /**
   * What a refused reserve answers. For a lease take (`own` = 'lease') this node's unused lease
   * money is available to the call; a direct reservation cannot use it.
   */
  async function refusal(accountId: string, amountMicros: number, now: number, own: 'lease' | 'none') {
    const month = monthOf(now)
    const { value, free } = await leases.stable(accountId, () => balanceRow(accountId))
    const { balanceMicros, reservedMicros } = value
    // The caller's own free money when it is lease money (a lease take), else none of it counts.
    const ownFree = own === 'lease' ? free : 0
    const availableMicros = Math.max(0, balanceMicros - reservedMicros + ownFree)
    if (availableMicros >= amountMicros) {
      // Refused with money available: the monthly spend cap (or a race; then balance it is).
      const [c] = await q<{ cap: number | null; spent: number }>(SPEND_STATE, [accountId, month])
      if (c && c.cap !== null && c.spent + reservedMicros - ownFree + amountMicros > c.cap)
        return {
          ok: false as const,
          balanceMicros,
          availableMicros,
          reason: 'spend_cap' as const,
          capMicros: c.cap,
          monthSpentMicros: c.spent,
        }
    }
    return { ok: false as const, balanceMicros, availableMicros }
  }

  const direct = {
    async reserve(accountId: string, amountMicros: number, now: number): Promise<ReserveResult> {
      checkMicros(amountMicros, 'reserve amount', 0)
      const id = newId('res', now)
      const values = [accountId, amountMicros, id, now, monthOf(now)]
      if ((await qFast(SQL.RESERVE, values, 'reserve')).length === 1) return { ok: true, reservationId: id }
      // This node's unused lease money is the account's: hand it back and try once more.
      if (leases.freeOf(accountId) > 0 && (await leases.surrender(accountId))) {
        if ((await qFast(SQL.RESERVE, values, 'reserve')).length === 1) return { ok: true, reservationId: id }
      }
      return refusal(accountId, amountMicros, now, 'none')
    },
    settle(reservationId: string, charge: Charge, now: number) {
      return settles.settle(reservationId, charge, now)
    },
    async release(reservationId: string) {
      await qFast(SQL.RELEASE, [reservationId], 'release')
    },
  }
  const leases = createLeases({ pool, tx, fast: qFast, direct, refusal })

  /** Reserved as seen from this node: its own unused lease money is not held from its calls. */
  async function balanceOf(accountId: string) {
    const { value, free } = await leases.stable(accountId, () => balanceRow(accountId))
    return { balanceMicros: value.balanceMicros, reservedMicros: Math.max(0, value.reservedMicros - free) }
  }

  return {
    backend: 'postgres',

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
      await leases.close()
      await settles.drain()
      await Promise.all([pool.end(), fast.end()])
    },

    async health() {
      try {
        const [row] = await q<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations')
        return { ok: true, detail: `postgres${schema ? ` schema ${schema}` : ''} v${row?.v ?? 0}` }
      } catch (err) {
        return { ok: false, detail: `postgres: ${(err as Error).message}` }
      }
    },

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

    ...direct,
    inProcess: leases.reservations,
    balance: balanceOf,

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

    async createLoginToken({ hash, email, expiresAt, createdAt }) {
      await q('INSERT INTO login_tokens (hash, email, expires_at, created_at) VALUES ($1, $2, $3, $4)', [
        hash,
        email,
        expiresAt,
        createdAt,
      ])
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
  }
}
