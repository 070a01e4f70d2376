/**
 * The account store: accounts, API keys (hashed), the append-only money ledger with
 * reserve-then-settle, one-time sign-in tokens and sign-in sessions. One interface, two implementations
 * (SQLite embedded, PostgreSQL scale-out), one conformance suite (test/store/accounts-conformance.ts).
 *
 * Units: money is integer micro-dollars (1 USD = 1_000_000), named `…Micros`; times are epoch
 * milliseconds. Ids are prefixed and sortable (`acct_`, `key_`, `led_`, `res_`).
 */
import type { OAuthStore } from '../oauth/types.ts'
import type { PaymentStore } from './payments-types.ts'
import type { PlaidStore } from './plaid-types.ts'
import type { SelfServiceStore } from './self-service-types.ts'
import type { SessionStore } from './sessions-types.ts'
import type { WebhookStore } from './webhooks-types.ts'

export type Environment = 'live' | 'test'
type KeyKind = 'agent' | 'user'
export type RateTier = 'default' | 'premium'
export type AccountKind = 'user' | 'anonymous'

export interface Account {
  id: string
  email: string | null
  kind: AccountKind
  createdAt: number
}

export interface ApiKeyRecord {
  id: string
  accountId: string
  kind: KeyKind
  environment: Environment
  /** Display prefix only (e.g. `erm_agent_live_AbCd…`); never enough to use the key. */
  prefix: string
  name: string | null
  tier: RateTier
  createdAt: number
  lastUsedAt: number | null
  revokedAt: number | null
  expiresAt: number | null
  /** OAuth client the key was issued to (access tokens), else null. */
  clientId: string | null
}

export interface NewApiKey {
  id: string
  accountId: string
  kind: KeyKind
  environment: Environment
  prefix: string
  name: string | null
  tier: RateTier
  /** HMAC-SHA256(pepper, key) as lowercase hex; the only form of the secret that is stored. */
  hash: string
  createdAt: number
  expiresAt: number | null
  clientId: string | null
}

/**
 * `payment_refund` (a card payment refunded to the payer) and `chargeback` (funds withdrawn by a
 * dispute) are negative like `debit`, and the only entries that can take a balance below zero
 * (payments-schema.ts).
 */
export type LedgerKind = 'topup' | 'credit' | 'refund' | 'debit' | 'payment_refund' | 'chargeback'

export interface LedgerEntry {
  id: string
  accountId: string
  kind: LedgerKind
  /** Signed: positive for topup/credit/refund, negative for debit/payment_refund/chargeback. */
  amountMicros: number
  requestId: string | null
  capability: string | null
  /** Idempotency reference of a top-up/credit (unique per account), else null. */
  reference: string | null
  keyId: string | null
  createdAt: number
}

interface CreditInput {
  kind: 'topup' | 'credit' | 'refund'
  amountMicros: number
  reference: string | null
  note?: string | null
}

export interface Charge {
  /** Final amount, 0 ≤ amountMicros ≤ the reserved amount. 0 settles without a ledger row. */
  amountMicros: number
  requestId: string
  capability: string
  keyId: string | null
  /**
   * The request paid for (docs/decisions/money.md, "pay once"): recorded in paid_requests in the
   * same transaction as the debit, so the record exists exactly when the charge does.
   */
  paid?: PaidRequest
}

/** A request an account paid for: its canonical key and the data_as_of it was answered on. */
export interface PaidRequest {
  key: string
  dataAsOf: string
}

export type ReserveResult =
  | { ok: true; reservationId: string }
  | {
      ok: false
      balanceMicros: number
      availableMicros: number
      /** Why: the balance, or the account's monthly spend cap. Absent means balance. */
      reason?: 'balance' | 'spend_cap'
      /** With reason spend_cap: the cap and what this UTC month has spent (settled) so far. */
      capMicros?: number
      monthSpentMicros?: number
    }

export interface BalanceView {
  balanceMicros: number
  reservedMicros: number
}

interface SpendSummary {
  spentMicros: number
  /** Number of debit entries (charged requests). */
  requests: number
  topUpsMicros: number
}

interface LoginTokenView {
  email: string
  /** SHA-256 (hex) of the asking browser's state nonce, or null. */
  stateHash: string | null
}

export interface PurgeCutoffs {
  loginTokens: number
  codes: number
  refreshTokens: number
}

export interface PurgeReport {
  loginTokens: number
  codes: number
  refreshTokens: number
}

interface ReconcileReport {
  /** Reservations older than the cutoff released (their requests never settled). */
  releasedReservations: number
  /** Accounts whose cached balance disagreed with the ledger sum and were corrected. */
  correctedBalances: number
}

export interface AccountStore {
  readonly backend: 'sqlite' | 'postgres'

  /** Applies pending migrations (idempotent); called once at start. */
  migrate(): Promise<void>
  close(): Promise<void>
  health(): Promise<{ ok: boolean; detail: string }>

  // accounts
  createAccount(input: {
    id: string
    email: string | null
    kind: AccountKind
    createdAt: number
  }): Promise<Account>
  getAccount(id: string): Promise<Account | null>
  /** Case-insensitive on the e-mail address. */
  findAccountByEmail(email: string): Promise<Account | null>
  /**
   * Accounts oldest first (by id: ids sort by creation), at most `limit`, after the id `after`
   * (exclusive; null: from the first). The operator's `erm3 accounts list`.
   */
  listAccounts(page: { after: string | null; limit: number }): Promise<Account[]>

  // keys
  insertKey(key: NewApiKey): Promise<ApiKeyRecord>
  /** The key and its account by hash, or null. Returns revoked/expired keys too (the caller decides). */
  findKeyByHash(hash: string): Promise<ApiKeyRecord | null>
  getKey(id: string): Promise<ApiKeyRecord | null>
  listKeys(accountId: string): Promise<ApiKeyRecord[]>
  /** Sets revoked_at if not yet revoked; returns the (possibly already revoked) record or null. */
  revokeKey(id: string, at: number): Promise<ApiKeyRecord | null>
  /** Batched last-used updates: only ever moves last_used_at forward. */
  touchKeys(lastUsed: ReadonlyMap<string, number>): Promise<void>

  // money
  /**
   * Reserves `amountMicros` if balance − reserved ≥ amount, atomically with respect to every
   * other reserve on the account (across processes for PostgreSQL). A reservation that is never
   * settled or released is released by `reconcile` after its expiry.
   */
  reserve(accountId: string, amountMicros: number, now: number): Promise<ReserveResult>
  /**
   * Turns a reservation into a debit (ledger row + balance update) and frees it. Resolves only
   * when the debit is durable (implementations may group-commit concurrent settles).
   */
  settle(reservationId: string, charge: Charge, now: number): Promise<LedgerEntry | null>
  /** Frees a reservation without charging (failed request). Unknown ids are ignored. */
  release(reservationId: string): Promise<void>
  /** Whether the account has paid for this request key (a settle carrying `paid` recorded it). */
  hasPaid(accountId: string, key: string): Promise<boolean>
  /** Deletes the paid-request records of data older than `dataAsOf` (YYYY-MM-DD); returns how many. */
  prunePaid(dataAsOf: string): Promise<number>
  /**
   * Reserve, settle and release for calls settled by the process that reserved them (a metered
   * request): the PostgreSQL store serves small ones from per-process reservation leases
   * (postgres-leases.ts), with no database round trip per reserve. Same results and guarantees as
   * the methods above, except that such a reservation is unknown to other processes. Absent:
   * use the methods above.
   */
  readonly inProcess?: Reservations
  /**
   * The account's balance and reservations. Exact (read from the database) unless `maxAgeMs` is
   * given and the store keeps snapshots (`withBalanceSnapshots`): then possibly a snapshot at most
   * that old, for views only — never to decide money.
   */
  balance(accountId: string, maxAgeMs?: number): Promise<BalanceView>
  /** Adds money. Idempotent per (account, reference): a repeat returns the first entry, duplicate=true. */
  credit(
    accountId: string,
    input: CreditInput,
    now: number,
  ): Promise<{ entry: LedgerEntry; duplicate: boolean }>
  /** Ledger rows of an account in [from, to), oldest first, at most `limit`. */
  entries(accountId: string, range: { from: number; to: number; limit: number }): Promise<LedgerEntry[]>
  summary(accountId: string, range: { from: number; to: number }): Promise<SpendSummary>
  /** Releases reservations created before `reservationsBefore` and re-derives cached balances from the ledger. */
  reconcile(reservationsBefore: number): Promise<ReconcileReport>

  // passwordless sign-in
  /**
   * Stores a one-time sign-in token by hash, with the hash of the state nonce held by the browser
   * that asked for it (null or absent: asked for outside a browser).
   */
  createLoginToken(input: {
    hash: string
    email: string
    expiresAt: number
    createdAt: number
    stateHash?: string | null
  }): Promise<void>
  /** A token that exists, is unused and unexpired, without using it (the confirmation page), else null. */
  findLoginToken(hash: string, now: number): Promise<LoginTokenView | null>
  /** Consumes a token once: returns its e-mail if it exists, is unused and unexpired, else null. */
  consumeLoginToken(hash: string, now: number): Promise<string | null>
  /**
   * Deletes one-time secrets (hashed) whose expiry is before the given cutoffs: sign-in tokens,
   * OAuth authorization codes and OAuth refresh tokens (used, rotated and revoked ones included).
   */
  purgeExpired(cutoffs: PurgeCutoffs): Promise<PurgeReport>

  /** The OAuth store on this store's own connection/pool (same database; needs migrate() first). */
  oauth(): OAuthStore

  /** Webhook subscriptions, the delivery outbox and balance alerts (webhooks-types.ts), on this store's connection/pool. */
  webhooks(): WebhookStore

  /** Self-service account data (spend cap, usage counters, ledger views, audit log; self-service-types.ts). */
  selfService(): SelfServiceStore

  /** Stripe payment events applied exactly once (payments-types.ts), on this store's connection/pool. */
  payments(): PaymentStore

  /** Linked Plaid Items with their encrypted access tokens (plaid-types.ts), on this store's connection/pool. */
  plaid(): PlaidStore

  /** Server-side sign-in sessions (sessions-types.ts), on this store's connection/pool. */
  sessions(): SessionStore
}

/** The reserve-then-settle part of an account store (also what `inProcess` offers). */
export type Reservations = Pick<AccountStore, 'reserve' | 'settle' | 'release'>
