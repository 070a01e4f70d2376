/**
 * Group commit for PostgreSQL settles: the settles of one event-loop turn (plus any that arrive
 * while the previous batch commits) become one statement in one commit (one WAL flush), and every promise resolves after that commit — so a resolved settle
 * is a durable debit. The reservation row a batch deletes is its claim, so batches of different
 * nodes cannot charge a reservation twice.
 *
 * A queue in `lease` mode settles charges drawn on reservation leases (postgres-leases.ts): many
 * entries name one lease, each is told apart by its ledger id, and the lease's owner has already
 * made sure each local reservation is settled once and within its amount.
 */
import type pg from 'pg'
import { newId } from '../../platform/ids.ts'
import type { Tx } from '../oauth/postgres.ts'
import { LOCK_BATCH_ACCOUNTS, SETTLE_BATCH, SETTLE_LEASE_BATCH } from './postgres-sql.ts'
import { checkMicros } from './rows.ts'
import { monthOf } from './self-service-types.ts'
import type { Charge, LedgerEntry } from './types.ts'

interface Queued {
  /** The reservation (claim mode) or lease (lease mode) charged. */
  id: string
  charge: Charge
  now: number
  ledgerId: string
  resolve: (entry: LedgerEntry | null) => void
  reject: (err: unknown) => void
}

export function isTransient(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return code === '40P01' || code === '40001'
}

export type SettleMode = 'claim' | 'lease'

export function createSettleQueue(pool: pg.Pool, tx: Tx, mode: SettleMode = 'claim') {
  let queue: Queued[] = []
  let queuedIds = new Set<string>()
  let scheduled = false
  let current: Promise<void> | null = null
  const run = batchCommitter(pool, tx, mode)

  /**
   * One batch in flight per store: settles arriving while it commits wait and go together in the
   * next one. Overlapping batches would each hold the account's row lock through their own fsync,
   * serialising a busy account at one flush per small batch.
   */
  function flush(): void {
    scheduled = false
    if (current || queue.length === 0) return
    const batch = queue
    queue = []
    queuedIds = new Set()
    current = run(batch).finally(() => {
      current = null
      flush()
    })
  }

  return {
    settle(id: string, charge: Charge, now: number): Promise<LedgerEntry | null> {
      try {
        checkMicros(charge.amountMicros, 'charge', 0)
      } catch (err) {
        return Promise.reject(err)
      }
      // The same reservation twice in one turn: the first claims it, the repeat is unknown.
      if (mode === 'claim') {
        if (queuedIds.has(id)) return Promise.resolve(null)
        queuedIds.add(id)
      }
      return new Promise((resolve, reject) => {
        queue.push({ id, charge, now, ledgerId: newId('led', now), resolve, reject })
        if (!scheduled) {
          scheduled = true
          setImmediate(flush)
        }
      })
    },
    /** Waits for queued and in-flight batches (called before the pool closes). */
    async drain(): Promise<void> {
      while (current || queue.length > 0) {
        flush()
        if (current) await current
      }
    },
  }
}

/**
 * Commits one batch and settles its promises: the batch's statement claims what it can (one
 * statement when it names one reservation or lease, else a transaction locking the accounts in
 * order); an unclaimed charge resolves null, or is refused when it exceeds its reservation.
 */
function batchCommitter(pool: pg.Pool, tx: Tx, mode: SettleMode) {
  const statement =
    mode === 'claim'
      ? { name: 'settle', text: SETTLE_BATCH }
      : { name: 'settle_lease', text: SETTLE_LEASE_BATCH }

  /** Writes the batch; returns the account of every charge it claimed, by ledger id. */
  async function write(batch: Queued[]): Promise<Map<string, string>> {
    const ids = batch.map((b) => b.id)
    const one = new Set(ids).size === 1
    const values = [
      ids,
      batch.map((b) => b.charge.amountMicros),
      batch.map((b) => b.ledgerId),
      batch.map((b) => b.charge.requestId),
      batch.map((b) => b.charge.capability),
      batch.map((b) => b.charge.keyId),
      batch.map((b) => b.now),
      batch.map((b) => monthOf(b.now)),
      batch.map((b) => b.charge.paid?.key ?? null),
      batch.map((b) => b.charge.paid?.dataAsOf ?? null),
    ]
    type Row = { ledger_id: string; account_id: string }
    let rows: Row[]
    if (one) {
      // One reservation or lease touches one account row: a single autocommit statement, one round trip.
      rows = await retrying(async () => (await pool.query<Row>({ ...statement, values })).rows)
    } else {
      rows = await tx(async (c) => {
        await c.query({ name: 'settle_lock', text: LOCK_BATCH_ACCOUNTS, values: [[...new Set(ids)]] })
        return (await c.query<Row>({ ...statement, values })).rows
      })
    }
    return new Map(rows.map((r) => [r.ledger_id, r.account_id]))
  }

  /** Of the unclaimed reservations, those that still exist but are smaller than their charge. */
  async function overcharged(unclaimed: Queued[]): Promise<Set<string>> {
    const { rows } = await pool.query<{ id: string; amount: number }>(
      'SELECT id, amount_micros AS amount FROM reservations WHERE id = ANY($1::text[])',
      [unclaimed.map((u) => u.id)],
    )
    const amount = new Map(rows.map((r) => [r.id, r.amount]))
    return new Set(
      unclaimed.filter((u) => u.charge.amountMicros > (amount.get(u.id) ?? Infinity)).map((u) => u.id),
    )
  }

  async function run(batch: Queued[]): Promise<void> {
    try {
      const claimed = await write(batch)
      const unclaimed = batch.filter((b) => !claimed.has(b.ledgerId))
      const over = mode === 'claim' && unclaimed.length > 0 ? await overcharged(unclaimed) : new Set<string>()
      for (const b of batch) {
        const accountId = claimed.get(b.ledgerId)
        if (over.has(b.id))
          b.reject(new RangeError(`charge ${b.charge.amountMicros} exceeds reservation ${b.id}`))
        else if (accountId === undefined || b.charge.amountMicros === 0) b.resolve(null)
        else b.resolve(debitEntry(b, accountId))
      }
    } catch (err) {
      for (const b of batch) b.reject(err)
    }
  }
  return run
}

function debitEntry(b: Queued, accountId: string): LedgerEntry {
  return {
    id: b.ledgerId,
    accountId,
    kind: 'debit',
    amountMicros: -b.charge.amountMicros,
    requestId: b.charge.requestId,
    capability: b.charge.capability,
    reference: null,
    keyId: b.charge.keyId,
    createdAt: b.now,
  }
}

async function retrying<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn()
    } catch (err) {
      if (attempt >= 5 || !isTransient(err)) throw err
    }
  }
}
