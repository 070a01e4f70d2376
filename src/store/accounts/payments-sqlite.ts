/**
 * Stripe payment events on the SQLite account store's connection (payments-types.ts). One
 * BEGIN IMMEDIATE transaction per event: the processed-event row first (its primary key is the
 * event's idempotency), then the ledger entry and the balance; a failure anywhere rolls all back.
 */
import type Database from 'better-sqlite3'
import { newId } from '../../platform/ids.ts'
import { PAYMENT_COLUMNS, type PaymentRow, toPayment, UnknownPayment } from './payments-schema.ts'
import {
  disputeReference,
  NO_CHARGEBACK_TO_REVERSE,
  type PaymentEffect,
  type PaymentEvent,
  type PaymentEventResult,
  type PaymentStore,
} from './payments-types.ts'
import type { LedgerEntry, LedgerKind } from './types.ts'

function prepare(db: Database.Database) {
  return {
    insertEvent: db.prepare(
      `INSERT INTO stripe_events (event_id, type, account_id, payment_intent, ledger_id, processed_at)
       VALUES (?, ?, NULL, NULL, NULL, ?) ON CONFLICT (event_id) DO NOTHING`,
    ),
    finishEvent: db.prepare<[string | null, string | null, string | null, string]>(
      'UPDATE stripe_events SET account_id = ?, payment_intent = ?, ledger_id = ? WHERE event_id = ?',
    ),
    eventExists: db.prepare<[string], { one: number }>(
      'SELECT 1 AS one FROM stripe_events WHERE event_id = ?',
    ),
    payment: db.prepare<[string], PaymentRow>(
      `SELECT ${PAYMENT_COLUMNS} FROM stripe_payments WHERE payment_intent = ?`,
    ),
    insertPayment: db.prepare(
      `INSERT INTO stripe_payments (payment_intent, account_id, session_id, amount_micros, created_at)
       VALUES (?, ?, ?, ?, ?) ON CONFLICT (payment_intent) DO NOTHING`,
    ),
    setRefunded: db.prepare<[number, string]>(
      'UPDATE stripe_payments SET refunded_micros = ? WHERE payment_intent = ?',
    ),
    insertLedger: db.prepare(
      `INSERT INTO ledger (id, account_id, kind, amount_micros, request_id, capability, reference, key_id, note, created_at)
       VALUES (?, ?, ?, ?, NULL, NULL, ?, NULL, ?, ?)
       ON CONFLICT (account_id, reference) WHERE reference IS NOT NULL DO NOTHING`,
    ),
    postedAmount: db.prepare<[string, string], { amount_micros: number }>(
      'SELECT amount_micros FROM ledger WHERE account_id = ? AND reference = ?',
    ),
    addBalance: db.prepare<[number, string]>(
      'UPDATE accounts SET balance_micros = balance_micros + ? WHERE id = ?',
    ),
  }
}

/**
 * @param onCredit called inside the transaction after money came in (a top-up, a dispute won): the
 *   account store re-arms the balance alert and enqueues `balance.topped_up` there, as credit() does.
 */
export function createSqlitePaymentStore(
  db: Database.Database,
  onCredit: (entry: LedgerEntry) => void = () => {},
): PaymentStore {
  const s = prepare(db)

  /** Posts one entry unless its reference exists; returns it, or null for a duplicate. */
  const post = (
    accountId: string,
    kind: LedgerKind,
    amountMicros: number,
    reference: string,
    note: string,
    now: number,
  ): LedgerEntry | null => {
    const id = newId('led', now)
    const { changes } = s.insertLedger.run(id, accountId, kind, amountMicros, reference, note, now)
    if (changes === 0) return null
    s.addBalance.run(amountMicros, accountId)
    const entry: LedgerEntry = {
      ...{ id, accountId, kind, amountMicros, reference, createdAt: now },
      ...{ requestId: null, capability: null, keyId: null },
    }
    if (amountMicros > 0) onCredit(entry)
    return entry
  }

  /** The payment a refund or dispute refers to; an unknown one rolls the transaction back. */
  const known = (paymentIntent: string): PaymentRow => {
    const p = s.payment.get(paymentIntent)
    if (!p) throw new UnknownPayment(paymentIntent)
    return p
  }

  const apply = db.transaction((ev: PaymentEvent, now: number): PaymentEventResult => {
    if (s.insertEvent.run(ev.eventId, ev.type, now).changes === 0) return { outcome: 'duplicate_event' }
    const e = ev.effect
    const { accountId, entry, note } = applyEffect({ s, post, known }, e, now)
    s.finishEvent.run(accountId, e.paymentIntent, entry?.id ?? null, ev.eventId)
    return { outcome: 'applied', accountId, entry, ...(note ? { note } : {}) }
  })

  return {
    async applyEvent(ev, now) {
      try {
        return apply.immediate(ev, now)
      } catch (err) {
        if (err instanceof UnknownPayment) return { outcome: 'unknown_payment' }
        throw err
      }
    },
    async eventProcessed(eventId) {
      return s.eventExists.get(eventId) !== undefined
    },
    async payment(paymentIntent) {
      const r = s.payment.get(paymentIntent)
      return r ? toPayment(r) : null
    },
  }
}

/** The statements, and posting an entry / finding the payment an event refers to (see above). */
interface PaymentLedger {
  s: ReturnType<typeof prepare>
  post(
    accountId: string,
    kind: LedgerKind,
    amountMicros: number,
    reference: string,
    note: string,
    now: number,
  ): LedgerEntry | null
  known(paymentIntent: string): PaymentRow
}

/** The effect on the ledger: a top-up credited, a refund or chargeback debited, a won dispute reversed. */
function applyEffect(
  { s, post, known }: PaymentLedger,
  e: PaymentEffect,
  now: number,
): { accountId: string | null; entry: LedgerEntry | null; note?: string } {
  let accountId: string | null = null
  let entry: LedgerEntry | null = null
  let note: string | undefined
  switch (e.kind) {
    case 'none':
      accountId = e.accountId
      break
    case 'topup':
      accountId = e.accountId
      s.insertPayment.run(e.paymentIntent, e.accountId, e.sessionId, e.amountMicros, now)
      entry = post(e.accountId, 'topup', e.amountMicros, e.paymentIntent, 'stripe', now)
      break
    case 'refund': {
      const p = known(e.paymentIntent)
      accountId = p.account_id
      const total = Math.min(e.refundedTotalMicros, p.amount_micros)
      if (total > p.refunded_micros) {
        s.setRefunded.run(total, p.payment_intent)
        const ref = `${p.payment_intent}:refund:${total}`
        entry = post(p.account_id, 'payment_refund', -(total - p.refunded_micros), ref, 'stripe refund', now)
      }
      break
    }
    case 'chargeback': {
      const p = known(e.paymentIntent)
      accountId = p.account_id
      const ref = disputeReference(e.disputeId, 'withdrawn')
      entry = post(p.account_id, 'chargeback', -e.amountMicros, ref, 'stripe dispute', now)
      break
    }
    case 'reinstatement': {
      const p = known(e.paymentIntent)
      accountId = p.account_id
      // Only what the dispute took comes back: the chargeback posted for it, negated.
      const taken = s.postedAmount.get(p.account_id, disputeReference(e.disputeId, 'withdrawn'))
      if (!taken) {
        note = NO_CHARGEBACK_TO_REVERSE
        break
      }
      const ref = disputeReference(e.disputeId, 'reinstated')
      entry = post(p.account_id, 'credit', -taken.amount_micros, ref, 'stripe dispute won', now)
      break
    }
  }
  return { accountId, entry, note }
}
