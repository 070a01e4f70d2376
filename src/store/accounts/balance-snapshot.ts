/**
 * Per-process balance snapshots in front of an account store, for read-only views.
 *
 * `balance(id)` stays exact (a database read). `balance(id, maxAgeMs)` may answer from a snapshot
 * taken at most `maxAgeMs` ago: the free `GET /balance` asks for that, so a busy key polling its
 * balance costs no database round trip (three system calls on SQLite, a network hop on
 * PostgreSQL). Money is never decided from a snapshot: reserve checks the database as before.
 *
 * Freshness rule: every change this process makes to an account (reserve, settle, release,
 * credit, reconcile) drops the account's snapshot before and after the write, so this process's
 * own debits and top-ups show at once; changes made elsewhere (another node, the operator CLI)
 * show within `maxAgeMs`. A read that overlaps a local write is returned but not kept (a version
 * per account), so a snapshot is never older than the last local write it could have missed.
 */
import type { AccountStore, BalanceView, Reservations } from './types.ts'

interface Snapshot {
  view: BalanceView
  at: number
}

/** Accounts tracked at once (snapshots, versions, open reservations) before a reset. */
const MAX_TRACKED = 10_000

/**
 * @param clock milliseconds, monotonic (real elapsed time: a test's frozen `ctx.now` must not
 *   make a snapshot live forever)
 */
export function withBalanceSnapshots(
  inner: AccountStore,
  clock: () => number = () => performance.now(),
): AccountStore {
  const b = snapshotBook(clock)
  return {
    ...inner,

    async balance(accountId, maxAgeMs) {
      if (maxAgeMs !== undefined && maxAgeMs > 0) {
        const kept = b.snapshotOf(accountId, maxAgeMs)
        if (kept) return kept
      }
      const now = clock()
      const version = b.versions.get(accountId) ?? 0
      const atEpoch = b.state.epoch
      const view = await inner.balance(accountId)
      if ((b.versions.get(accountId) ?? 0) === version && b.state.epoch === atEpoch)
        b.keep(accountId, { ...view }, now)
      return view
    },

    ...tracked(b, inner),
    ...(inner.inProcess ? { inProcess: tracked(b, inner.inProcess) } : {}),

    async credit(accountId, input, now) {
      return b.around(accountId, () => inner.credit(accountId, input, now))
    },

    payments() {
      const inner_ = inner.payments()
      return {
        ...inner_,
        // A refund or dispute names only its payment: the account is known once it is applied.
        async applyEvent(ev, now) {
          const before = ev.effect.kind === 'topup' || ev.effect.kind === 'none' ? ev.effect.accountId : null
          if (before) b.changed(before)
          const r = await inner_.applyEvent(ev, now)
          if (r.outcome === 'applied' && r.accountId) b.changed(r.accountId)
          return r
        },
      }
    },

    async reconcile(reservationsBefore) {
      b.reset()
      try {
        return await inner.reconcile(reservationsBefore)
      } finally {
        b.reset()
      }
    },
  }
}

type SnapshotBook = ReturnType<typeof snapshotBook>

/** The snapshots and per-account versions, and the writes that void them (see the freshness rule). */
function snapshotBook(clock: () => number) {
  const snapshots = new Map<string, Snapshot>()
  const versions = new Map<string, number>()
  /** Bumped by reconcile, which may change any account. */
  const state = { epoch: 0 }
  /** Open reservations of this process, so settle/release know their account. */
  const accountOf = new Map<string, string>()

  /** Forgets everything; the epoch bump voids reads in flight (they are returned, not kept). */
  const reset = () => {
    snapshots.clear()
    versions.clear()
    state.epoch++
  }
  const changed = (accountId: string) => {
    snapshots.delete(accountId)
    if (versions.size >= MAX_TRACKED && !versions.has(accountId)) reset()
    versions.set(accountId, (versions.get(accountId) ?? 0) + 1)
  }
  const keep = (accountId: string, view: BalanceView, at: number) => {
    if (snapshots.size >= MAX_TRACKED && !snapshots.has(accountId)) reset()
    snapshots.set(accountId, { view, at })
  }
  const around = async <T>(accountId: string | undefined, write: () => Promise<T>): Promise<T> => {
    if (accountId === undefined) return write()
    changed(accountId)
    try {
      return await write()
    } finally {
      changed(accountId)
    }
  }

  /** A copy of the account's snapshot if it is at most `maxAgeMs` old. */
  const snapshotOf = (accountId: string, maxAgeMs: number): BalanceView | null => {
    const s = snapshots.get(accountId)
    return s && clock() - s.at < maxAgeMs ? { ...s.view } : null
  }
  return { state, versions, accountOf, reset, changed, keep, around, snapshotOf }
}

/** Reserve, settle and release that drop the account's snapshot around each write. */
function tracked(b: SnapshotBook, r: Reservations): Reservations {
  const { accountOf, around } = b
  return {
    async reserve(accountId, amountMicros, now) {
      const res = await around(accountId, () => r.reserve(accountId, amountMicros, now))
      if (res.ok) {
        // Reservations abandoned without settle or release (reconcile frees them) must not pile up.
        if (accountOf.size >= MAX_TRACKED * 10) accountOf.clear()
        accountOf.set(res.reservationId, accountId)
      }
      return res
    },

    async settle(reservationId, charge, now) {
      const accountId = accountOf.get(reservationId)
      try {
        return await around(accountId, () => r.settle(reservationId, charge, now))
      } finally {
        accountOf.delete(reservationId)
      }
    },

    async release(reservationId) {
      const accountId = accountOf.get(reservationId)
      accountOf.delete(reservationId)
      return around(accountId, () => r.release(reservationId))
    },
  }
}
