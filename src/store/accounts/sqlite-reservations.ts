/**
 * The embedded store's reservations and debits (sqlite.ts): reservations are held in memory —
 * they are not money, and losing them in a crash is the same as releasing them — and a
 * reservation stays counted until its debit has committed, so "available" never double-counts
 * money that a queued settle is about to take.
 *
 * Durability: synchronous=FULL fsyncs the WAL on every commit, so an acknowledged debit survives
 * kill -9 and power loss. The fsync is paid once per event-loop turn: settles are queued and
 * written together in one transaction (group commit), and their promises resolve after it.
 * Committing at NORMAL and fsyncing the WAL on the thread pool, and writing the debits on a
 * worker thread with its own connection, were both slower or no faster, so the commit stays here
 * (docs/performance.md, "Design experiments").
 */
import type Database from 'better-sqlite3'
import { newId } from '../../platform/ids.ts'
import { checkMicros } from './rows.ts'
import type { prepareSqliteSpend } from './self-service-sqlite.ts'
import { monthOf } from './self-service-types.ts'
import type { prepareSqlite } from './sqlite-sql.ts'
import type { Charge, LedgerEntry, PaidRequest, Reservations } from './types.ts'
import type { SqliteWebhookHooks } from './webhooks-sqlite.ts'

interface Held {
  accountId: string
  amount: number
  createdAt: number
  settling: boolean
}

interface QueuedSettle {
  id: string
  held: Held
  entry: LedgerEntry
  /** The request paid for, recorded in the debit's transaction. */
  paid: PaidRequest | undefined
  resolve: (entry: LedgerEntry) => void
  reject: (err: unknown) => void
}

export interface SqliteMoneyDeps {
  db: Database.Database
  statements: () => ReturnType<typeof prepareSqlite>
  spend: () => ReturnType<typeof prepareSqliteSpend>
  hooks: SqliteWebhookHooks
}

export function createSqliteReservations(deps: SqliteMoneyDeps) {
  const holds = newHolds()
  const debits = debitQueue(deps, holds)
  const reservations = sqliteReservations(deps, holds, debits)
  return {
    ...reservations,
    /** Held for the account: calls in flight and debits queued but not yet committed. */
    reservedOf(accountId: string): number {
      return holds.reservedBy.get(accountId) ?? 0
    },
    /** Frees reservations older than the cutoff (a call that never settled); queued debits stay. */
    releaseOlderThan(before: number): number {
      let releasedReservations = 0
      for (const [id, h] of holds.held) {
        if (!h.settling && h.createdAt < before) {
          holds.free(id, h)
          releasedReservations++
        }
      }
      return releasedReservations
    },
    /** Commits the queued debits now (before the database closes). */
    flush: debits.flush,
  }
}

type Holds = ReturnType<typeof newHolds>

/** The reservations held (in memory: one process owns the file), by id and summed per account. */
function newHolds() {
  const held = new Map<string, Held>()
  const reservedBy = new Map<string, number>()
  const free = (id: string, h: Held) => {
    if (!held.delete(id)) return
    const left = (reservedBy.get(h.accountId) ?? 0) - h.amount
    if (left > 0) reservedBy.set(h.accountId, left)
    else reservedBy.delete(h.accountId)
  }
  return { held, reservedBy, free }
}

/**
 * The group commit of debits: the settles of one turn are written in one transaction at the next
 * setImmediate, and each settle's promise resolves once its debit is durable.
 */
function debitQueue({ db, statements: s, spend, hooks }: SqliteMoneyDeps, { free }: Holds) {
  let queue: QueuedSettle[] = []
  let flushScheduled = false
  // One wrapper for the store's life (creating a transaction function per flush showed in profiles).
  const writeDebitsTx = db.transaction((batch: QueuedSettle[]) => {
    // Per (account, month): the summed debit moves balance and month spend once, and the balance
    // alert is checked once over the whole move — the same end state as one debit at a time, in
    // any order (a later month's spend replaces an earlier one's and is never replaced by it; the
    // balance only falls, so it crosses the alert's threshold in one move at most).
    const sums = new Map<string, { accountId: string; month: number; amount: number; at: number }>()
    for (const q of batch) {
      const e = q.entry
      s().insertLedger.run(
        e.id,
        e.accountId,
        'debit',
        e.amountMicros,
        e.requestId,
        e.capability,
        null,
        e.keyId,
        null,
        e.createdAt,
      )
      if (q.paid) s().insertPaid.run(e.accountId, q.paid.key, q.paid.dataAsOf, e.createdAt)
      const month = monthOf(e.createdAt)
      const k = `${e.accountId}\n${month}`
      const sum = sums.get(k)
      if (sum) {
        sum.amount += e.amountMicros
        sum.at = Math.max(sum.at, e.createdAt)
      } else sums.set(k, { accountId: e.accountId, month, amount: e.amountMicros, at: e.createdAt })
    }
    for (const m of sums.values()) {
      // Balance and the month's spend (the spend cap's measure) move together.
      spend().debit.run({ amt: m.amount, month: m.month, id: m.accountId })
      hooks.afterDebit(m.accountId, -m.amount, m.at)
    }
  })
  const writeDebits = (batch: QueuedSettle[]) => writeDebitsTx.immediate(batch)

  const flush = () => {
    flushScheduled = false
    const batch = queue
    queue = []
    if (batch.length === 0) return
    try {
      writeDebits(batch)
    } catch {
      // One bad debit must not fail the turn's others: fall back to one transaction each.
      for (const q of batch) {
        try {
          writeDebits([q])
          free(q.id, q.held)
          q.resolve(q.entry)
        } catch (err) {
          free(q.id, q.held)
          q.reject(err)
        }
      }
      return
    }
    for (const q of batch) {
      free(q.id, q.held)
      q.resolve(q.entry)
    }
  }
  /** Queues a settle's debit for the next group commit. */
  const push = (q: QueuedSettle) => {
    queue.push(q)
    if (!flushScheduled) {
      flushScheduled = true
      setImmediate(flush)
    }
  }
  return { push, flush }
}

/**
 * Reserve checks the balance (read through to the file) and the monthly spend cap against what
 * is held; settle queues the debit; release frees a hold that is not settling.
 */
function sqliteReservations(
  { spend }: SqliteMoneyDeps,
  { held, reservedBy, free }: Holds,
  debits: ReturnType<typeof debitQueue>,
): Reservations {
  return {
    async reserve(accountId, amountMicros, now) {
      checkMicros(amountMicros, 'reserve amount', 0)
      // Read through to the file each time: the operator CLI may have topped up since.
      const row = spend().reserveState.get(monthOf(now), accountId)
      const balance = row?.b ?? 0
      const reserved = reservedBy.get(accountId) ?? 0
      const available = balance - reserved
      if (!row || available < amountMicros) {
        return { ok: false, balanceMicros: balance, availableMicros: Math.max(0, available) }
      }
      // The monthly spend cap: settled this month + held (queued debits included) + this call.
      if (row.cap !== null && row.spent + reserved + amountMicros > row.cap) {
        return {
          ok: false,
          balanceMicros: balance,
          availableMicros: Math.max(0, available),
          reason: 'spend_cap',
          capMicros: row.cap,
          monthSpentMicros: row.spent,
        }
      }
      const id = newId('res', now)
      held.set(id, { accountId, amount: amountMicros, createdAt: now, settling: false })
      reservedBy.set(accountId, reserved + amountMicros)
      return { ok: true, reservationId: id }
    },

    settle(reservationId: string, charge: Charge, now: number): Promise<LedgerEntry | null> {
      try {
        checkMicros(charge.amountMicros, 'charge', 0)
      } catch (err) {
        return Promise.reject(err)
      }
      const h = held.get(reservationId)
      if (!h || h.settling) return Promise.resolve(null)
      if (charge.amountMicros > h.amount) {
        return Promise.reject(new RangeError(`charge ${charge.amountMicros} exceeds reservation ${h.amount}`))
      }
      if (charge.amountMicros === 0) {
        free(reservationId, h)
        return Promise.resolve(null)
      }
      h.settling = true
      const entry: LedgerEntry = {
        id: newId('led', now),
        accountId: h.accountId,
        kind: 'debit',
        amountMicros: -charge.amountMicros,
        requestId: charge.requestId,
        capability: charge.capability,
        reference: null,
        keyId: charge.keyId,
        createdAt: now,
      }
      return new Promise((resolve, reject) =>
        debits.push({ id: reservationId, held: h, entry, paid: charge.paid, resolve, reject }),
      )
    },

    async release(reservationId) {
      const h = held.get(reservationId)
      // A settling reservation belongs to its queued debit; it is freed when that commits.
      if (h && !h.settling) free(reservationId, h)
    },
  }
}
