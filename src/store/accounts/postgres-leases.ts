/**
 * Per-process reservation leases for the PostgreSQL account store.
 *
 * A metered call used to reserve with one statement on the account's row and settle with another;
 * every node's reserves of a busy account queued on that row lock, held by each settle batch
 * through its WAL flush. Here a node reserves a slice of the balance once — a lease, stored as an
 * ordinary reservation row, so `balance − reserved ≥ 0` and the spend cap hold exactly as before —
 * and carves the calls' reservations out of it in memory. Settles draw the charges from the lease
 * in group-committed batches (SETTLE_LEASE_BATCH): a debit is durable before its call's response
 * leaves, as before, and it is claimed only if the lease row still holds it, so nothing is charged
 * beyond what was reserved and nothing twice.
 *
 * Sizes: a lease takes at least what the call needs and at most LEASE_TARGET_MICROS, and no more
 * than a quarter of the account's free money beyond that need (LEASE_TAKE), so a small balance is
 * not locked up in one node. A refusal (402) is exact on one node: the node's own unused lease
 * counts as available. Across nodes, another node's unused lease is unavailable to this one until
 * that node returns it, which it does after LEASE_IDLE_MS without calls. A node that dies leaves
 * its lease to `reconcile` (released after its staleness cutoff; a live lease is touched every
 * LEASE_TOUCH_MS so it never looks stale).
 *
 * A lease whose settle failed (the database went away, or the lease was reconciled away under it)
 * is retired: no more calls are carved from it and, once its calls are done, the database's own
 * row decides what is returned. Reservations too large for a lease take the direct path.
 */
import type pg from 'pg'
import { AppError } from '../../platform/errors.ts'
import { randomBase62 } from '../../platform/ids.ts'
import type { Tx } from '../oauth/postgres.ts'
import { createSettleQueue, isTransient } from './postgres-settle.ts'
import { LEASE_SHRINK, LEASE_TAKE, LEASE_TOUCH, RELEASE } from './postgres-sql.ts'
import { checkMicros } from './rows.ts'
import { monthOf } from './self-service-types.ts'
import type { Charge, LedgerEntry, Reservations, ReserveResult } from './types.ts'

/** The most one lease takes (0.25 USD: 250 calls at 0.001). Larger reservations go direct. */
export const LEASE_TARGET_MICROS = 250_000
/** A lease with no call in flight for this long goes back to the account. */
export const LEASE_IDLE_MS = 1000
/** A lease in use has its created_at moved forward this often (reconcile's cutoff is 10 minutes). */
const LEASE_TOUCH_MS = 60_000

type Run = (text: string, values: unknown[], name: string) => Promise<Record<string, unknown>[]>

interface Lease {
  id: string
  accountId: string
  /** Not yet carved out: what this node may still hand to calls. */
  free: number
  /** Calls carved out and not yet settled or released. */
  outstanding: number
  /** performance.now() of the last carve or completion. */
  lastUsed: number
  /** The caller's clock (`now`) when created_at was last written. */
  touchedAt: number
  /** No more carving; the row is released once `outstanding` is 0. */
  retired: boolean
  /** A LEASE_TAKE for this lease is in flight. */
  growing: boolean
}

interface AccountLeases {
  /** The lease calls are carved from (null: take a new one). */
  active: Lease | null
  /** Every lease of this account whose row this node has not released yet. */
  all: Set<Lease>
  /** The take in flight: other reserves of the account wait for it instead of taking their own. */
  taking: Promise<ReserveResult | null> | null
  /** Releases of retired leases in flight: a new lease waits for them, so their money counts. */
  releasing: Set<Promise<void>>
}

interface Carved {
  lease: Lease
  amount: number
}

export interface LeaseDeps {
  pool: pg.Pool
  tx: Tx
  /** Runs a statement on the synchronous_commit=off pool (reservations are not money). */
  fast: Run
  /** The store's direct reservations, for amounts too large for a lease. */
  direct: Reservations
  /** The 402 of a refused reserve, given what this node holds unused for the account. */
  refusal(accountId: string, amountMicros: number, now: number, own: 'lease' | 'none'): Promise<ReserveResult>
}

/**
 * This node's leases: what the lifecycle below (take, retire, release, shrink, sweep), the
 * reservations carved from them and the balance views all read and change.
 */
interface LeaseBook {
  deps: LeaseDeps
  /** deps.fast, run again on a deadlock or serialisation failure (it changed nothing). */
  fast: Run
  queue: ReturnType<typeof createSettleQueue>
  accounts: Map<string, AccountLeases>
  carved: Map<string, Carved>
  /** Leases whose release failed (the database was away): retried by the sweep. */
  orphans: Set<Lease>
  /** Every reservation id carved here starts with it: settle and release tell them from direct ones. */
  prefix: string
  sequence: number
  /** Counts releases started: a read that saw one start under it is taken again. */
  releases: number
  sweeper: NodeJS.Timeout | null
  closed: boolean
}

export function createLeases(deps: LeaseDeps) {
  const b = newLeaseBook(deps)
  const { accounts, orphans, carved } = b
  return {
    reservations: leaseReservations(b),
    /**
     * Reads the account with this node's unused lease money as it stood during the read: a lease
     * release committing under the read would pair a row without the lease with a free amount
     * that still counts it, so such a read is taken again.
     */
    async stable<T>(accountId: string, read: () => Promise<T>): Promise<{ value: T; free: number }> {
      for (;;) {
        const st = accounts.get(accountId)
        if (st && st.releasing.size > 0) {
          await Promise.all(st.releasing)
          continue
        }
        const before = b.releases
        const value = await read()
        const busy = accounts.get(accountId)?.releasing.size ?? 0
        if (b.releases === before && busy === 0) return { value, free: this.freeOf(accountId) }
      }
    },
    /** Unused lease money this node holds for the account (balance views subtract it from reserved). */
    freeOf(accountId: string): number {
      const st = accounts.get(accountId)
      if (!st) return 0
      let free = 0
      for (const l of st.all) free += l.free
      return free
    },
    /**
     * Retires the account's active lease and waits for the releases that can run now (leases with
     * calls in flight go back when those finish). True if anything was handed back.
     */
    async surrender(accountId: string): Promise<boolean> {
      const st = accounts.get(accountId)
      if (!st) return false
      if (st.taking) await st.taking.catch(() => null)
      if (st.active) retire(b, st.active)
      const releasing = [...st.releasing]
      const shrunk = await handBack(b, st)
      await Promise.all(releasing)
      return shrunk || releasing.length > 0
    },
    /** Waits for the settles in flight, then returns every lease (called before the pools close). */
    async close(): Promise<void> {
      b.closed = true
      if (b.sweeper) clearInterval(b.sweeper)
      b.sweeper = null
      await b.queue.drain()
      const all = [...accounts.values()].flatMap((st) => [...st.all])
      await Promise.all([...all, ...orphans].map((l) => releaseRow(b, l)))
      accounts.clear()
      carved.clear()
    },
  }
}

function newLeaseBook(deps: LeaseDeps): LeaseBook {
  const fast: Run = async (text, values, name) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await deps.fast(text, values, name)
      } catch (err) {
        if (attempt >= 5 || !isTransient(err)) throw err
      }
    }
  }
  return {
    deps,
    fast,
    queue: createSettleQueue(deps.pool, deps.tx, 'lease'),
    accounts: new Map(),
    carved: new Map(),
    orphans: new Set(),
    prefix: `lres_${randomBase62(6)}`,
    sequence: 0,
    releases: 0,
    sweeper: null,
    closed: false,
  }
}

function stateOf(b: LeaseBook, accountId: string): AccountLeases {
  let st = b.accounts.get(accountId)
  if (!st) {
    st = { active: null, all: new Set(), taking: null, releasing: new Set() }
    b.accounts.set(accountId, st)
  }
  return st
}

/** Tracks a write that changes the account's reserved sum, for `stable` reads. */
function returning(b: LeaseBook, lease: Lease, write: () => Promise<void>): Promise<void> {
  const st = b.accounts.get(lease.accountId)
  b.releases++
  const p = write()
  if (st) {
    st.releasing.add(p)
    void p.finally(() => {
      st.releasing.delete(p)
      const idle = st.all.size === 0 && !st.taking && st.releasing.size === 0
      if (idle && b.accounts.get(lease.accountId) === st) b.accounts.delete(lease.accountId)
    })
  }
  return p
}

/** Deletes the lease row, handing whatever it still holds back to the account. */
function releaseRow(b: LeaseBook, lease: Lease): Promise<void> {
  return returning(b, lease, async () => {
    try {
      await b.fast(RELEASE, [lease.id], 'release')
      b.orphans.delete(lease)
      b.accounts.get(lease.accountId)?.all.delete(lease)
    } catch {
      b.orphans.add(lease)
    }
  })
}

/**
 * Hands a retired lease's unused money back while its calls are still in flight. The amount
 * leaves `free` at once, so two hand-backs of one lease never return the same money twice; it
 * comes back if the row did not give it up. Resolves true when the account has it again.
 */
function shrink(b: LeaseBook, lease: Lease): Promise<boolean> {
  const amount = lease.free
  lease.free = 0
  let returned = false
  return returning(b, lease, async () => {
    try {
      returned = (await b.fast(LEASE_SHRINK, [lease.id, amount], 'lease_shrink')).length === 1
    } catch {
      // Kept: the row goes back whole once the calls are done.
    }
    if (!returned) lease.free += amount
  }).then(() => returned)
}

/**
 * Gives the account back what this node's retired leases hold unused (money a call released or
 * did not spend after its lease was retired): a refusal counts that money as available, so it
 * must be reachable. True if any came back.
 */
async function handBack(b: LeaseBook, st: AccountLeases): Promise<boolean> {
  const shrinking = [...st.all]
    .filter((l) => l.retired && !l.growing && l.outstanding > 0 && l.free > 0)
    .map((l) => shrink(b, l))
  return (await Promise.all(shrinking)).some(Boolean)
}

/** Stops carving from the lease; its row goes back once its calls are done. */
function retire(b: LeaseBook, lease: Lease): void {
  lease.retired = true
  const st = b.accounts.get(lease.accountId)
  if (st?.active === lease) st.active = null
  if (lease.outstanding === 0 && !lease.growing) void releaseRow(b, lease)
}

function done(b: LeaseBook, lease: Lease): void {
  lease.outstanding--
  lease.lastUsed = performance.now()
  if (lease.retired && lease.outstanding === 0 && !lease.growing) void releaseRow(b, lease)
}

/** Every LEASE_IDLE_MS while any lease is held: retires idle leases and retries failed releases. */
function sweep(b: LeaseBook): void {
  const now = performance.now()
  for (const st of b.accounts.values()) {
    const l = st.active
    if (l && l.outstanding === 0 && !l.growing && now - l.lastUsed >= LEASE_IDLE_MS) retire(b, l)
  }
  for (const l of b.orphans) void releaseRow(b, l)
  if (b.accounts.size === 0 && b.orphans.size === 0 && b.sweeper) {
    clearInterval(b.sweeper)
    b.sweeper = null
  }
}

/**
 * Takes a new lease or grows the active one by at least `amount − free`. Resolves null when the
 * account now has room for the caller to retry its carve, or with the refusal.
 */
async function take(b: LeaseBook, st: AccountLeases, accountId: string, amount: number, now: number) {
  const lease: Lease = st.active ?? {
    id: `lse_${randomBase62(22)}`,
    accountId,
    free: 0,
    outstanding: 0,
    lastUsed: performance.now(),
    touchedAt: now,
    retired: false,
    growing: false,
  }
  const need = amount - lease.free
  lease.growing = true
  try {
    const rows = await b.fast(
      LEASE_TAKE,
      [accountId, need, Math.max(need, LEASE_TARGET_MICROS), lease.id, now, monthOf(now)],
      'lease_take',
    )
    const taken = rows[0]?.take as number | undefined
    if (taken === undefined) {
      // Money of a retired lease that has come back unused since: return it and try again.
      if (await handBack(b, st)) return null
      return await b.deps.refusal(accountId, amount, now, 'lease')
    }
    lease.free += taken
    st.all.add(lease)
    if (!lease.retired) st.active ??= lease
    b.sweeper ??= setInterval(() => sweep(b), LEASE_IDLE_MS).unref()
    return null
  } finally {
    lease.growing = false
    // Retired while the take was in flight (a settle failed): its row, whatever it holds now, goes back.
    if (lease.retired && lease.outstanding === 0 && st.all.has(lease)) void releaseRow(b, lease)
  }
}

/** Carves a call's reservation out of the lease's free money (the caller checked there is enough). */
function carve(b: LeaseBook, lease: Lease, amountMicros: number, now: number): ReserveResult {
  lease.free -= amountMicros
  lease.outstanding++
  lease.lastUsed = performance.now()
  if (now - lease.touchedAt >= LEASE_TOUCH_MS) {
    lease.touchedAt = now
    b.fast(LEASE_TOUCH, [lease.id, now], 'lease_touch').catch(() => {
      // The next call touches it again; reconcile's cutoff is ten touches away.
    })
  }
  const reservationId = `${b.prefix}${(++b.sequence).toString(36)}`
  b.carved.set(reservationId, { lease, amount: amountMicros })
  return { ok: true, reservationId }
}

/**
 * Reserve carves from the account's active lease, taking or growing one when it is short (one
 * take per account at a time); settle draws the charge from the lease through the settle queue;
 * release hands the carve back. Reservations too large for a lease, and any after close, go direct.
 */
function leaseReservations(b: LeaseBook): Reservations {
  const { deps, accounts, carved, queue } = b
  const { direct } = deps
  return {
    async reserve(accountId, amountMicros, now) {
      checkMicros(amountMicros, 'reserve amount', 0)
      if (amountMicros > LEASE_TARGET_MICROS || b.closed) return direct.reserve(accountId, amountMicros, now)
      for (;;) {
        // Looked up each time round: a refused account's state is dropped while others wait on it.
        const st = stateOf(b, accountId)
        const lease = st.active
        if (lease && lease.free >= amountMicros) return carve(b, lease, amountMicros, now)
        if (st.taking) {
          await st.taking
          continue
        }
        if (!st.active && st.releasing.size > 0) {
          await Promise.all(st.releasing)
          continue
        }
        st.taking = take(b, st, accountId, amountMicros, now)
        try {
          const refused = await st.taking
          if (refused) return refused
        } finally {
          st.taking = null
          // An account refused (or failed) before it ever held a lease keeps no state here.
          const empty = !st.active && st.all.size === 0 && st.releasing.size === 0
          if (empty && accounts.get(accountId) === st) accounts.delete(accountId)
        }
      }
    },

    async settle(reservationId, charge, now): Promise<LedgerEntry | null> {
      if (!reservationId.startsWith(b.prefix)) return direct.settle(reservationId, charge, now)
      checkMicros(charge.amountMicros, 'charge', 0)
      const c = carved.get(reservationId)
      if (!c) return null
      if (charge.amountMicros > c.amount)
        throw new RangeError(`charge ${charge.amountMicros} exceeds reservation ${reservationId}`)
      carved.delete(reservationId)
      const { lease } = c
      lease.free += c.amount - charge.amountMicros
      if (charge.amountMicros === 0) {
        done(b, lease)
        return null
      }
      let entry: LedgerEntry | null
      try {
        entry = await queue.settle(lease.id, charge as Charge, now)
      } catch (err) {
        retire(b, lease)
        done(b, lease)
        throw err
      }
      if (entry === null) {
        // The lease row is gone or short (reconciled or released behind this node's back).
        retire(b, lease)
        done(b, lease)
        throw new AppError(
          'UNAVAILABLE',
          'The charge for this call could not be recorded, so it was not charged and its answer is withheld; retry it',
          { retryAfterSeconds: 1 },
        )
      }
      done(b, lease)
      return entry
    },

    async release(reservationId) {
      if (!reservationId.startsWith(b.prefix)) return direct.release(reservationId)
      const c = carved.get(reservationId)
      if (!c) return
      carved.delete(reservationId)
      c.lease.free += c.amount
      done(b, c.lease)
    },
  }
}
