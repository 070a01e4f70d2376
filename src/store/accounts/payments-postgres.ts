/**
 * Stripe payment events on the PostgreSQL account store's pool (payments-types.ts). One
 * transaction per event. Inserting the processed-event row first is the claim: a second node
 * handling the same event concurrently waits on that primary key and, once the first commits,
 * finds it taken and changes nothing (if the first rolls back, the second applies the event).
 * Refunds and disputes lock their payment row, so two events of one payment apply one after the
 * other and a partial refund debits only the newly refunded part.
 */
import type pg from 'pg'
import { newId } from '../../platform/ids.ts'
import type { Tx } from '../oauth/postgres.ts'
import { PAYMENT_COLUMNS, type PaymentRow, toPayment, UnknownPayment } from './payments-schema.ts'
import {
  disputeReference,
  NO_CHARGEBACK_TO_REVERSE,
  type PaymentEffect,
  type PaymentEvent,
  type PaymentEventResult,
  type PaymentStore,
} from './payments-types.ts'
import { CREDIT } from './postgres-sql.ts'
import type { LedgerEntry, LedgerKind } from './types.ts'

/**
 * Posts one negative entry (refund, chargeback) unless (account, reference) exists, and moves the
 * balance in the same statement. Money in goes through the account store's own CREDIT statement,
 * which also re-arms the low-balance alert and enqueues `balance.topped_up` (webhooks).
 *
 * When the balance left no longer covers what is reserved, the account's reservation leases
 * (postgres-leases.ts: rows `lse_…`) are revoked with it: a node's unused lease must not pay for
 * calls the account can no longer afford. Their calls in flight then claim nothing and fail
 * uncharged; lease rows are locked before the account's row, as the settles lock them.
 */
const POST_NEGATIVE = `WITH ins AS (
    INSERT INTO ledger (id, account_id, kind, amount_micros, reference, note, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (account_id, reference) WHERE reference IS NOT NULL DO NOTHING
    RETURNING id
  ), revoked AS (
    DELETE FROM reservations WHERE account_id = $2 AND id LIKE 'lse\\_%' AND EXISTS (SELECT 1 FROM ins)
      AND (SELECT balance_micros + $4 - reserved_micros FROM accounts WHERE id = $2) < 0
    RETURNING amount_micros
  ), upd AS (
    UPDATE accounts SET balance_micros = balance_micros + $4,
      reserved_micros = reserved_micros - (SELECT COALESCE(SUM(amount_micros), 0) FROM revoked)::bigint
    WHERE id = $2 AND EXISTS (SELECT 1 FROM ins)
  )
  SELECT id FROM ins`

export function createPostgresPaymentStore(pool: pg.Pool, tx: Tx): PaymentStore {
  return {
    async applyEvent(ev, now) {
      try {
        return await tx((c) => applyInTx(c, ev, now))
      } catch (err) {
        if (err instanceof UnknownPayment) return { outcome: 'unknown_payment' }
        throw err
      }
    },
    async eventProcessed(eventId) {
      const r = await pool.query('SELECT 1 FROM stripe_events WHERE event_id = $1', [eventId])
      return r.rows.length > 0
    },
    async payment(paymentIntent) {
      const r = await pool.query<PaymentRow>(
        `SELECT ${PAYMENT_COLUMNS} FROM stripe_payments WHERE payment_intent = $1`,
        [paymentIntent],
      )
      return r.rows[0] ? toPayment(r.rows[0]) : null
    },
  }
}

/** Claims the event (once, across nodes), applies its effect and records what it did: one transaction. */
async function applyInTx(c: pg.PoolClient, ev: PaymentEvent, now: number): Promise<PaymentEventResult> {
  const claimed = await c.query(
    `INSERT INTO stripe_events (event_id, type, processed_at) VALUES ($1, $2, $3)
     ON CONFLICT (event_id) DO NOTHING RETURNING event_id`,
    [ev.eventId, ev.type, now],
  )
  if (claimed.rows.length === 0) return { outcome: 'duplicate_event' }
  const e = ev.effect
  const { accountId, entry, note } = await applyEffect(c, e, now)
  await c.query(
    'UPDATE stripe_events SET account_id = $1, payment_intent = $2, ledger_id = $3 WHERE event_id = $4',
    [accountId, e.paymentIntent, entry?.id ?? null, ev.eventId],
  )
  return { outcome: 'applied', accountId, entry, ...(note ? { note } : {}) }
}

/** The effect on the ledger: a top-up credited, a refund or chargeback debited, a won dispute reversed. */
async function applyEffect(
  c: pg.PoolClient,
  e: PaymentEffect,
  now: number,
): Promise<{ accountId: string | null; entry: LedgerEntry | null; note?: string }> {
  let accountId: string | null = null
  let entry: LedgerEntry | null = null
  let note: string | undefined
  switch (e.kind) {
    case 'none':
      accountId = e.accountId
      break
    case 'topup':
      accountId = e.accountId
      await c.query(
        `INSERT INTO stripe_payments (payment_intent, account_id, session_id, amount_micros, created_at)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (payment_intent) DO NOTHING`,
        [e.paymentIntent, e.accountId, e.sessionId, e.amountMicros, now],
      )
      entry = await post(c, e.accountId, 'topup', e.amountMicros, e.paymentIntent, 'stripe', now)
      break
    case 'refund': {
      const p = await known(c, e.paymentIntent)
      accountId = p.account_id
      const total = Math.min(e.refundedTotalMicros, p.amount_micros)
      if (total > p.refunded_micros) {
        await c.query('UPDATE stripe_payments SET refunded_micros = $1 WHERE payment_intent = $2', [
          total,
          p.payment_intent,
        ])
        const ref = `${p.payment_intent}:refund:${total}`
        const delta = total - p.refunded_micros
        entry = await post(c, p.account_id, 'payment_refund', -delta, ref, 'stripe refund', now)
      }
      break
    }
    case 'chargeback': {
      const p = await known(c, e.paymentIntent)
      accountId = p.account_id
      const ref = disputeReference(e.disputeId, 'withdrawn')
      entry = await post(c, accountId, 'chargeback', -e.amountMicros, ref, 'stripe dispute', now)
      break
    }
    case 'reinstatement': {
      // The payment row's lock (known) orders this after a chargeback of the same payment.
      const p = await known(c, e.paymentIntent)
      accountId = p.account_id
      // Only what the dispute took comes back: the chargeback posted for it, negated.
      const taken = await c.query<{ amount_micros: string | number }>(
        'SELECT amount_micros FROM ledger WHERE account_id = $1 AND reference = $2',
        [accountId, disputeReference(e.disputeId, 'withdrawn')],
      )
      const row = taken.rows[0]
      if (!row) {
        note = NO_CHARGEBACK_TO_REVERSE
        break
      }
      const ref = disputeReference(e.disputeId, 'reinstated')
      const amount = -Number(row.amount_micros)
      entry = await post(c, accountId, 'credit', amount, ref, 'stripe dispute won', now)
      break
    }
  }
  return { accountId, entry, note }
}

/** The payment a refund or dispute refers to, locked; an unknown one rolls the transaction back. */
async function known(c: pg.PoolClient, paymentIntent: string): Promise<PaymentRow> {
  const r = await c.query<PaymentRow>(
    `SELECT ${PAYMENT_COLUMNS} FROM stripe_payments WHERE payment_intent = $1 FOR UPDATE`,
    [paymentIntent],
  )
  const p = r.rows[0]
  if (!p) throw new UnknownPayment(paymentIntent)
  return { ...p, amount_micros: Number(p.amount_micros), refunded_micros: Number(p.refunded_micros) }
}

/** Posts one entry (CREDIT for money in, POST_NEGATIVE for money out); null if its reference is posted. */
async function post(
  c: pg.PoolClient,
  accountId: string,
  kind: LedgerKind,
  amountMicros: number,
  reference: string,
  note: string,
  now: number,
): Promise<LedgerEntry | null> {
  const id = newId('led', now)
  const r =
    amountMicros > 0
      ? await c.query(CREDIT, [id, accountId, kind, amountMicros, reference, note, now, newId('evt', now)])
      : await c.query(POST_NEGATIVE, [id, accountId, kind, amountMicros, reference, note, now])
  if (r.rows.length === 0) return null
  return {
    ...{ id, accountId, kind, amountMicros, reference, createdAt: now },
    ...{ requestId: null, capability: null, keyId: null },
  }
}
