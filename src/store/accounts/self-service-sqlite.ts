/**
 * SQLite side of the self-service store (self-service-types.ts), plus the two statements the
 * account store's money path uses for the monthly spend cap: the reserve check reads balance, cap
 * and this month's spend in one statement, and a settled debit moves balance and month spend in one.
 */
import type Database from 'better-sqlite3'
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

export interface SqliteSpendStatements {
  /** Balance, cap and the month's settled spend of an account (params: month, account). */
  reserveState: Database.Statement<[number, string], { b: number; cap: number | null; spent: number }>
  /** A debit: balance and month spend together (named params amt (negative), month, id). */
  debit: Database.Statement<[{ amt: number; month: number; id: string }]>
}

export function prepareSqliteSpend(db: Database.Database): SqliteSpendStatements {
  return {
    reserveState: db.prepare<[number, string], { b: number; cap: number | null; spent: number }>(
      `SELECT balance_micros AS b, spend_cap_micros AS cap,
         CASE WHEN spend_month = ? THEN spend_month_micros ELSE 0 END AS spent
       FROM accounts WHERE id = ?`,
    ),
    debit: db.prepare<[{ amt: number; month: number; id: string }]>(
      `UPDATE accounts SET balance_micros = balance_micros + @amt,
         spend_month_micros = CASE WHEN spend_month = @month THEN spend_month_micros - @amt
           WHEN spend_month > @month THEN spend_month_micros ELSE -@amt END,
         spend_month = MAX(spend_month, @month)
       WHERE id = @id`,
    ),
  }
}

export function createSqliteSelfService(db: Database.Database): SelfServiceStore {
  const s = {
    rename: db.prepare<[string | null, string, string], KeyRow>(
      `UPDATE api_keys SET name = ? WHERE id = ? AND account_id = ? AND client_id IS NULL RETURNING ${KEY_COLUMNS}`,
    ),
    expire: db.prepare<[{ at: number; id: string; account: string }], KeyRow>(
      `UPDATE api_keys SET expires_at = CASE WHEN revoked_at IS NOT NULL THEN expires_at
           WHEN expires_at IS NULL OR expires_at > @at THEN @at ELSE expires_at END
       WHERE id = @id AND account_id = @account AND client_id IS NULL RETURNING ${KEY_COLUMNS}`,
    ),
    setCap: db.prepare<[number | null, string]>('UPDATE accounts SET spend_cap_micros = ? WHERE id = ?'),
    settings: db.prepare<[number, string], SettingsRow>(
      `SELECT spend_cap_micros AS cap, CASE WHEN spend_month = ? THEN spend_month_micros ELSE 0 END AS spent
       FROM accounts WHERE id = ?`,
    ),
    addUsage: db.prepare(
      `INSERT INTO usage_daily (${USAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (account_id, day, capability, environment) DO UPDATE SET
         requests = requests + excluded.requests, cache_hits = cache_hits + excluded.cache_hits,
         cost_micros = cost_micros + excluded.cost_micros`,
    ),
    usage: db.prepare<[string, number, number], UsageDbRow>(
      `SELECT ${USAGE_COLUMNS} FROM usage_daily WHERE account_id = ? AND day >= ? AND day <= ?
       ORDER BY day, capability, environment`,
    ),
    debits: db.prepare<[string, number, number], DebitGroupRow>(
      `SELECT created_at / ${DAY_MS} AS day, capability, COUNT(*) AS n, -SUM(amount_micros) AS amount
       FROM ledger WHERE account_id = ? AND kind = 'debit' AND created_at >= ? AND created_at < ?
       GROUP BY 1, 2 ORDER BY 1, 2`,
    ),
    nonDebits: db.prepare<[string, number, number, number], NonDebitRow>(
      `SELECT id, kind, amount_micros, reference, created_at FROM ledger
       WHERE account_id = ? AND kind <> 'debit' AND created_at >= ? AND created_at < ?
       ORDER BY created_at, id LIMIT ?`,
    ),
    appendAudit: db.prepare(`INSERT INTO audit_log (${AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    audit: db.prepare<[string, number, number, number], AuditRow>(
      `SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE account_id = ? AND created_at >= ? AND created_at < ?
       ORDER BY created_at DESC, id DESC LIMIT ?`,
    ),
  }
  const addUsageTx = db.transaction((rows: ReturnType<typeof mergeUsage>) => {
    for (const d of rows)
      s.addUsage.run(d.accountId, d.day, d.capability, d.environment, d.requests, d.cacheHits, d.costMicros)
  })

  return {
    async renameKey(accountId, keyId, name) {
      const r = s.rename.get(name, keyId, accountId)
      return r ? toKey(r) : null
    },
    async expireKey(accountId, keyId, at) {
      const r = s.expire.get({ at, id: keyId, account: accountId })
      return r ? toKey(r) : null
    },
    async setSpendCap(accountId, capMicros) {
      return s.setCap.run(capMicros, accountId).changes === 1
    },
    async settings(accountId, now) {
      const r = s.settings.get(monthOf(now), accountId)
      return r ? { spendCapMicros: r.cap, monthSpentMicros: r.spent } : null
    },
    async addUsage(deltas) {
      if (deltas.length === 0) return
      addUsageTx.immediate(mergeUsage(deltas))
    },
    async usage(accountId, { fromDay, toDay }) {
      return s.usage.all(accountId, fromDay, toDay).map(toUsage)
    },
    async debitsByDay(accountId, { from, to }) {
      return s.debits.all(accountId, from, to).map(toDebitGroup)
    },
    async nonDebits(accountId, { from, to, limit }) {
      return s.nonDebits.all(accountId, from, to, limit).map(toNonDebit)
    },
    async appendAudit(e) {
      s.appendAudit.run(
        e.id,
        e.accountId,
        e.createdAt,
        e.actorType,
        e.actorId,
        e.action,
        e.target,
        e.detail === null ? null : JSON.stringify(e.detail),
        e.ip,
      )
    },
    async audit(accountId, { from, to, limit }) {
      return s.audit.all(accountId, from, to, limit).map(toAudit)
    },
  }
}
