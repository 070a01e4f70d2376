/**
 * PostgreSQL side of the self-service store (self-service-types.ts). The spend-cap part of the
 * money path lives in postgres-sql.ts (RESERVE and SETTLE_BATCH), next to the statements it extends.
 */
import type pg from 'pg'
import type { Tx } from '../oauth/postgres.ts'
import { KEY_COLUMNS, type KeyRow, toKey } from './rows.ts'
import {
  AUDIT_COLUMNS,
  type AuditRow,
  type DebitGroupRow,
  mergeUsage,
  type NonDebitRow,
  type SettingsRow,
  toAudit,
  toDebitGroup,
  toNonDebit,
  toUsage,
  USAGE_COLUMNS,
  type UsageDbRow,
} from './self-service-sql.ts'
import { DAY_MS, monthOf, type SelfServiceStore } from './self-service-types.ts'

/** Cap and this month's settled spend (params: account, month). */
export const SPEND_STATE = `SELECT spend_cap_micros AS cap,
    CASE WHEN spend_month = $2 THEN spend_month_micros ELSE 0 END AS spent
  FROM accounts WHERE id = $1`

export function createPostgresSelfService(pool: pg.Pool, tx: Tx): SelfServiceStore {
  const q = async <R extends pg.QueryResultRow>(text: string, values: unknown[]) =>
    (await pool.query<R>(text, values)).rows
  const c: SelfServiceContext = { pool, tx, q }
  return { ...keyAndCapMethods(c), ...usageMethods(c), ...auditMethods(c) }
}

interface SelfServiceContext {
  pool: pg.Pool
  tx: Tx
  q: <R extends pg.QueryResultRow>(text: string, values: unknown[]) => Promise<R[]>
}

/** The account's own keys (renamed, expired; OAuth tokens untouched) and its monthly spend cap. */
function keyAndCapMethods({ pool, q }: SelfServiceContext) {
  return {
    async renameKey(accountId, keyId, name) {
      const [r] = await q<KeyRow>(
        `UPDATE api_keys SET name = $3 WHERE id = $1 AND account_id = $2 AND client_id IS NULL
         RETURNING ${KEY_COLUMNS}`,
        [keyId, accountId, name],
      )
      return r ? toKey(r) : null
    },
    async expireKey(accountId, keyId, at) {
      const [r] = await q<KeyRow>(
        `UPDATE api_keys SET expires_at = CASE WHEN revoked_at IS NOT NULL THEN expires_at
             WHEN expires_at IS NULL OR expires_at > $3 THEN $3::bigint ELSE expires_at END
         WHERE id = $1 AND account_id = $2 AND client_id IS NULL RETURNING ${KEY_COLUMNS}`,
        [keyId, accountId, at],
      )
      return r ? toKey(r) : null
    },
    async setSpendCap(accountId, capMicros) {
      const r = await pool.query('UPDATE accounts SET spend_cap_micros = $2 WHERE id = $1', [
        accountId,
        capMicros,
      ])
      return r.rowCount === 1
    },
    async settings(accountId, now) {
      const [r] = await q<SettingsRow>(SPEND_STATE, [accountId, monthOf(now)])
      return r ? { spendCapMicros: r.cap, monthSpentMicros: Number(r.spent) } : null
    },
  } satisfies Partial<SelfServiceStore>
}

/** Usage counters (merged, locked in one order across nodes) and the ledger grouped for views. */
function usageMethods({ tx, q }: SelfServiceContext) {
  return {
    async addUsage(deltas) {
      if (deltas.length === 0) return
      const rows = mergeUsage(deltas)
      // Merged and sorted: one row per counter, and two nodes lock counters in the same order.
      await tx((c) =>
        c.query(
          `INSERT INTO usage_daily (${USAGE_COLUMNS})
           SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[])
           ON CONFLICT (account_id, day, capability, environment) DO UPDATE SET
             requests = usage_daily.requests + excluded.requests,
             cache_hits = usage_daily.cache_hits + excluded.cache_hits,
             cost_micros = usage_daily.cost_micros + excluded.cost_micros`,
          [
            rows.map((d) => d.accountId),
            rows.map((d) => d.day),
            rows.map((d) => d.capability),
            rows.map((d) => d.environment),
            rows.map((d) => d.requests),
            rows.map((d) => d.cacheHits),
            rows.map((d) => d.costMicros),
          ],
        ),
      )
    },
    async usage(accountId, { fromDay, toDay }) {
      const rows = await q<UsageDbRow>(
        `SELECT ${USAGE_COLUMNS} FROM usage_daily WHERE account_id = $1 AND day >= $2 AND day <= $3
         ORDER BY day, capability, environment`,
        [accountId, fromDay, toDay],
      )
      return rows.map(toUsage)
    },
    async debitsByDay(accountId, { from, to }) {
      const rows = await q<DebitGroupRow>(
        `SELECT created_at / ${DAY_MS} AS day, capability, COUNT(*) AS n, -SUM(amount_micros) AS amount
         FROM ledger WHERE account_id = $1 AND kind = 'debit' AND created_at >= $2 AND created_at < $3
         GROUP BY 1, 2 ORDER BY 1, 2`,
        [accountId, from, to],
      )
      return rows.map(toDebitGroup)
    },
    async nonDebits(accountId, { from, to, limit }) {
      const rows = await q<NonDebitRow>(
        `SELECT id, kind, amount_micros, reference, created_at FROM ledger
         WHERE account_id = $1 AND kind <> 'debit' AND created_at >= $2 AND created_at < $3
         ORDER BY created_at, id LIMIT $4`,
        [accountId, from, to, limit],
      )
      return rows.map(toNonDebit)
    },
  } satisfies Partial<SelfServiceStore>
}

/** The account's audit log. */
function auditMethods({ pool, q }: SelfServiceContext) {
  return {
    async appendAudit(e) {
      await pool.query(
        `INSERT INTO audit_log (${AUDIT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [
          e.id,
          e.accountId,
          e.createdAt,
          e.actorType,
          e.actorId,
          e.action,
          e.target,
          e.detail === null ? null : JSON.stringify(e.detail),
          e.ip,
        ],
      )
    },
    async audit(accountId, { from, to, limit }) {
      const rows = await q<AuditRow>(
        `SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE account_id = $1 AND created_at >= $2 AND created_at < $3
         ORDER BY created_at DESC, id DESC LIMIT $4`,
        [accountId, from, to, limit],
      )
      return rows.map(toAudit)
    },
  } satisfies Partial<SelfServiceStore>
}
