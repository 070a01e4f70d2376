/**
 * Schema of Stripe top-ups, migration 4 of the account store.
 *
 * - Two new ledger kinds, both negative: `payment_refund` (money a card payment returned to the
 *   payer) and `chargeback` (money withdrawn by a dispute). With `debit` they are the only entries
 *   that may be negative, and they are the only way a balance can go below zero: a refund or a
 *   dispute takes back money the account may already have spent. (A debit never can: it is
 *   reserved first.) A negative balance blocks every metered call until a top-up covers it.
 *   SQLite cannot alter a CHECK constraint, so there the ledger is rebuilt (new table, copy, drop,
 *   rename, indexes and append-only triggers again) inside the migration's transaction; PostgreSQL
 *   swaps the constraints.
 * - `stripe_events`: every Stripe event id processed (credited, debited or deliberately ignored),
 *   written in the same transaction as its ledger entry: a redelivered event finds its row and
 *   changes nothing, an event whose transaction never committed finds none and is applied then.
 * - `stripe_payments`: one row per credited payment intent (its account, Checkout Session, amount
 *   and the cumulative amount refunded so far), so refunds and disputes, which name only the
 *   payment, find the account, and a partial refund debits only what was newly refunded.
 */

import type { PaymentRecord } from './payments-types.ts'

const LEDGER_KINDS_V4 = ['topup', 'credit', 'refund', 'debit', 'payment_refund', 'chargeback'] as const
const NEGATIVE_KINDS_V4 = ['debit', 'payment_refund', 'chargeback'] as const

const list = (xs: readonly string[]) => xs.map((x) => `'${x}'`).join(', ')
const KIND_CHECK = `kind IN (${list(LEDGER_KINDS_V4)})`
const SIGN_CHECK = `(kind IN (${list(NEGATIVE_KINDS_V4)}) AND amount_micros < 0) OR (kind NOT IN (${list(NEGATIVE_KINDS_V4)}) AND amount_micros > 0)`

function stripeTables(time: 'INTEGER' | 'BIGINT'): string[] {
  return [
    `CREATE TABLE stripe_events (
      event_id TEXT PRIMARY KEY,
      type TEXT NOT NULL,
      account_id TEXT,
      payment_intent TEXT,
      ledger_id TEXT,
      processed_at ${time} NOT NULL
    )`,
    `CREATE TABLE stripe_payments (
      payment_intent TEXT PRIMARY KEY,
      account_id TEXT NOT NULL REFERENCES accounts (id),
      session_id TEXT,
      amount_micros ${time} NOT NULL CHECK (amount_micros > 0),
      refunded_micros ${time} NOT NULL DEFAULT 0 CHECK (refunded_micros >= 0),
      created_at ${time} NOT NULL
    )`,
    'CREATE INDEX stripe_payments_account ON stripe_payments (account_id, created_at)',
  ]
}

export function paymentTables(dialect: 'sqlite' | 'postgres'): string[] {
  if (dialect === 'postgres') {
    return [
      // The CHECKs of migration 1 got PostgreSQL's default names: `ledger_kind_check` for the kind
      // list, `ledger_check` for the sign rule (it names two columns, so it is a table constraint).
      'ALTER TABLE ledger DROP CONSTRAINT IF EXISTS ledger_kind_check',
      'ALTER TABLE ledger DROP CONSTRAINT IF EXISTS ledger_check',
      `ALTER TABLE ledger ADD CONSTRAINT ledger_kind_check CHECK (${KIND_CHECK})`,
      `ALTER TABLE ledger ADD CONSTRAINT ledger_sign_check CHECK (${SIGN_CHECK})`,
      ...stripeTables('BIGINT'),
    ]
  }
  return [
    `CREATE TABLE ledger_v4 (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL REFERENCES accounts (id),
      kind TEXT NOT NULL CHECK (${KIND_CHECK}),
      amount_micros INTEGER NOT NULL CHECK (${SIGN_CHECK}),
      request_id TEXT,
      capability TEXT,
      reference TEXT,
      key_id TEXT,
      note TEXT,
      created_at INTEGER NOT NULL
    )`,
    `INSERT INTO ledger_v4 (id, account_id, kind, amount_micros, request_id, capability, reference, key_id, note, created_at)
     SELECT id, account_id, kind, amount_micros, request_id, capability, reference, key_id, note, created_at FROM ledger`,
    // Dropping a table drops its indexes and triggers; the implicit delete fires no trigger.
    'DROP TABLE ledger',
    'ALTER TABLE ledger_v4 RENAME TO ledger',
    'CREATE UNIQUE INDEX ledger_reference ON ledger (account_id, reference) WHERE reference IS NOT NULL',
    'CREATE INDEX ledger_account_time ON ledger (account_id, created_at)',
    `CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger
      BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END`,
    `CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger
      BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END`,
    ...stripeTables('INTEGER'),
  ]
}

/** A row of `stripe_payments` as both dialects read it. */
export interface PaymentRow {
  payment_intent: string
  account_id: string
  session_id: string | null
  amount_micros: number
  refunded_micros: number
  created_at: number
}

export const PAYMENT_COLUMNS =
  'payment_intent, account_id, session_id, amount_micros, refunded_micros, created_at'

export const toPayment = (r: PaymentRow): PaymentRecord => ({
  paymentIntent: r.payment_intent,
  accountId: r.account_id,
  sessionId: r.session_id,
  amountMicros: Number(r.amount_micros),
  refundedMicros: Number(r.refunded_micros),
  createdAt: Number(r.created_at),
})

/** Thrown inside the transaction to roll it back: a refund or dispute of an unknown payment. */
export class UnknownPayment extends Error {}
