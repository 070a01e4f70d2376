/**
 * The SQLite store's group commit: debits settled in one turn are written in one transaction, the
 * balance and month spend moved once per (account, month) and the balance alert checked once per
 * move. Property: whatever the mix of accounts, months (a batch may straddle a month boundary, in
 * any order) and amounts, the end state is what debiting one at a time gives, computed here
 * directly: balance, the month spend (`spend_month`, `spend_month_micros`), one ledger row per
 * debit, and the low-balance alert disarmed with exactly one e-mail delivery iff the balance
 * crossed the threshold.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import { createSqliteAccountStore } from '../../src/store/accounts/sqlite.ts'
import { charge, newAccount, sqliteSql } from './accounts-herd.ts'

const runs = (n: number) => Math.round(n * Number(process.env.FC_RUNS_FACTOR ?? 1))
const dir = mkdtempSync(join(tmpdir(), 'erm3-group-commit-'))
after(() => rmSync(dir, { recursive: true, force: true }))

/** 2024-01-31 12:00 UTC and 2024-02-01 12:00 UTC: two months a day apart. */
const JAN = Date.UTC(2024, 0, 31, 12)
const FEB = Date.UTC(2024, 1, 1, 12)
const monthNo = (ms: number) => {
  const d = new Date(ms)
  return d.getUTCFullYear() * 12 + d.getUTCMonth()
}

interface Model {
  balance: number
  spendMonth: number | null
  spent: number
  armed: boolean
  alerts: number
}

/** One debit at a time, as the statements read (balance alert: before ≥ threshold > after). */
function debitOne(m: Model, amount: number, at: number, threshold: number): void {
  const month = monthNo(at)
  const before = m.balance
  m.balance -= amount
  if (m.spendMonth === month) m.spent += amount
  else if (m.spendMonth === null || m.spendMonth < month) {
    m.spendMonth = month
    m.spent = amount
  }
  if (m.armed && m.balance < threshold && before >= threshold) {
    m.armed = false
    m.alerts++
  }
}

describe('sqlite group commit', () => {
  it('one turn of settles ends where one-at-a-time debits end (balance, month spend, alert, ledger)', async () => {
    let n = 0
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            account: fc.integer({ min: 0, max: 2 }),
            amount: fc.integer({ min: 1, max: 400 }),
            feb: fc.boolean(),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        fc.array(fc.integer({ min: 0, max: 3000 }), { minLength: 3, maxLength: 3 }),
        fc.array(fc.integer({ min: 1, max: 3000 }), { minLength: 3, maxLength: 3 }),
        fc.array(fc.option(fc.constantFrom(JAN - 86_400_000, JAN, FEB), { nil: null }), {
          minLength: 3,
          maxLength: 3,
        }),
        async (debits, thresholds, extra, lastSpend) => {
          const file = join(dir, `p${n++}.db`)
          const store = createSqliteAccountStore(file)
          const sql = sqliteSql(file)
          try {
            await store.migrate()
            const ids: string[] = []
            const models: Model[] = []
            for (let a = 0; a < 3; a++) {
              const { id } = await newAccount(store, `a${a}@example.com`)
              const need = debits.filter((d) => d.account === a).reduce((s, d) => s + d.amount, 0)
              const funded = need + (extra[a] as number)
              await store.credit(id, { kind: 'topup', amountMicros: funded, reference: null }, JAN)
              const last = lastSpend[a] ?? null
              await sql(
                `UPDATE accounts SET low_balance_micros = ${thresholds[a]}, low_balance_armed = 1,
                   spend_month = ${last === null ? 0 : monthNo(last)}, spend_month_micros = ${last === null ? 0 : 7}
                 WHERE id = '${id}'`,
              )
              ids.push(id)
              models.push({
                balance: funded,
                spendMonth: last === null ? 0 : monthNo(last),
                spent: last === null ? 0 : 7,
                armed: true,
                alerts: 0,
              })
            }
            const held: { account: number; amount: number; at: number; id: string }[] = []
            for (const d of debits) {
              const at = d.feb ? FEB : JAN
              const r = await store.reserve(ids[d.account] as string, d.amount, at)
              assert.ok(r.ok)
              held.push({ ...d, at, id: r.reservationId })
            }
            // Settled in one turn: one batch.
            await Promise.all(held.map((h) => store.settle(h.id, charge(h.amount), h.at)))
            for (const h of held)
              debitOne(models[h.account] as Model, h.amount, h.at, thresholds[h.account] as number)

            for (let a = 0; a < 3; a++) {
              const id = ids[a] as string
              const m = models[a] as Model
              const [row] = await sql(
                `SELECT balance_micros AS b, spend_month AS sm, spend_month_micros AS sp, low_balance_armed AS armed
                 FROM accounts WHERE id = '${id}'`,
              )
              assert.deepEqual(
                { b: row?.b, sm: row?.sm, sp: row?.sp, armed: row?.armed },
                { b: m.balance, sm: m.spendMonth, sp: m.spent, armed: m.armed ? 1 : 0 },
                `account ${a}`,
              )
              const [alerts] = await sql(
                `SELECT count(*) AS n FROM webhook_deliveries WHERE account_id = '${id}' AND event = 'balance.low'`,
              )
              assert.equal(alerts?.n, m.alerts, `alerts of account ${a}`)
              const [rows] = await sql(
                `SELECT count(*) AS n, COALESCE(SUM(amount_micros), 0) AS s FROM ledger WHERE account_id = '${id}' AND kind = 'debit'`,
              )
              const mine = held.filter((h) => h.account === a)
              assert.equal(rows?.n, mine.length)
              assert.equal(rows?.s, 0 - mine.reduce((s, h) => s + h.amount, 0))
            }
          } finally {
            await store.close()
          }
        },
      ),
      { numRuns: runs(40) },
    )
  })
})
