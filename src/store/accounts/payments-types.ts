/**
 * Stripe payment events on the account store's own connection (schema in
 * payments-schema.ts). The billing service (src/services/billing/stripe.ts) decides what an event
 * means; `applyEvent` applies it exactly once: the processed-event row, the ledger entry, the
 * balance and the payment row commit in ONE transaction, or none of them does.
 *
 * Units as in types.ts: micro-dollars, epoch milliseconds.
 */
import type { LedgerEntry } from './types.ts'

/** What one Stripe event does to the ledger. */
export type PaymentEffect =
  /** Recorded as processed, nothing else (events that never move money, or ignored ones). */
  | { kind: 'none'; accountId: string | null; paymentIntent: string | null }
  /** A paid Checkout Session: credits `amountMicros` once per payment intent (the ledger reference). */
  | {
      kind: 'topup'
      accountId: string
      paymentIntent: string
      sessionId: string | null
      amountMicros: number
    }
  /**
   * A charge refunded, in full or in part: `refundedTotalMicros` is the cumulative amount Stripe
   * reports refunded; only what exceeds the refunds already posted is debited (capped at the payment).
   */
  | { kind: 'refund'; paymentIntent: string; refundedTotalMicros: number }
  /** Funds withdrawn by a dispute: one negative entry per dispute. */
  | { kind: 'chargeback'; paymentIntent: string; disputeId: string; amountMicros: number }
  /**
   * A dispute won: exactly the chargeback posted for `disputeId` comes back, once per dispute.
   * No chargeback posted for it (an inquiry, a dispute opened before erm3 saw the payment): nothing
   * is credited, whatever `amountMicros` Stripe reports.
   */
  | { kind: 'reinstatement'; paymentIntent: string; disputeId: string; amountMicros: number }

/** Why a won dispute credited nothing: erm3 never debited it (so only what was taken comes back). */
export const NO_CHARGEBACK_TO_REVERSE = 'no chargeback was posted for this dispute: nothing to reinstate'

/** Ledger references of a dispute's two entries, unique per account (so each is posted once). */
export const disputeReference = (disputeId: string, side: 'withdrawn' | 'reinstated') =>
  `${disputeId}:${side}`

export interface PaymentEvent {
  /** Stripe event id (`evt_…`): processed at most once. */
  eventId: string
  type: string
  effect: PaymentEffect
}

export type PaymentEventResult =
  /** Committed. `entry` is the ledger entry posted, or null when the event changed nothing
   *  (an effect `none`, a payment already credited by another event, a refund already counted,
   *  a reinstatement with no chargeback to reverse); `note` then says why, when it is not plain. */
  | { outcome: 'applied'; accountId: string | null; entry: LedgerEntry | null; note?: string }
  /** The event id was processed before: nothing changed. */
  | { outcome: 'duplicate_event' }
  /** A refund or dispute of a payment intent this store never credited: nothing recorded. */
  | { outcome: 'unknown_payment' }

export interface PaymentRecord {
  paymentIntent: string
  accountId: string
  sessionId: string | null
  amountMicros: number
  refundedMicros: number
  createdAt: number
}

export interface PaymentStore {
  applyEvent(event: PaymentEvent, now: number): Promise<PaymentEventResult>
  /** Whether an event id was processed (tests, diagnostics). */
  eventProcessed(eventId: string): Promise<boolean>
  payment(paymentIntent: string): Promise<PaymentRecord | null>
}
