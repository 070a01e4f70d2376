/**
 * The money invariant under concurrency, shared by the account store suites: many concurrent
 * reserve→settle attempts against one account (through one or several store instances), while a
 * sampler watches balance − reserved. Also the helpers the suites share.
 */
import { setImmediate as nextTurn } from 'node:timers/promises'
import Database from 'better-sqlite3'
import { newId } from '../../src/platform/ids.ts'
import type { AccountStore, Charge } from '../../src/store/accounts/types.ts'

export const T0 = 1_700_000_000_000

export interface AccountStoreHarness {
  /** Another instance on the same database: the operator CLI (SQLite) or a second node (PostgreSQL). */
  another(): Promise<AccountStore>
  /** Raw SQL on the same database behind the store's back (tampering, inspection). */
  sql(text: string): Promise<Record<string, unknown>[]>
  /** Reservations are visible across instances (PostgreSQL): the herd also runs across two nodes. */
  sharedReservations: boolean
  cleanup?(): Promise<void>
}

export const charge = (amountMicros: number, keyId: string | null = null): Charge => ({
  amountMicros,
  requestId: newId('req'),
  capability: 'metrics',
  keyId,
})

export async function newAccount(store: AccountStore, email: string | null = null, createdAt = T0) {
  return store.createAccount({ id: newId('acct'), email, kind: email ? 'user' : 'anonymous', createdAt })
}

export interface HerdOutcome {
  succeeded: number
  /** Smallest balance − reserved any sample saw (every store, every turn). */
  minAvailable: number
  minBalance: number
  samples: number
}

export async function moneyHerd(
  stores: readonly AccountStore[],
  accountId: string,
  attempts: number,
  priceMicros: number,
): Promise<HerdOutcome> {
  let running = true
  let minAvailable = Number.POSITIVE_INFINITY
  let minBalance = Number.POSITIVE_INFINITY
  let samples = 0
  const sampler = (async () => {
    while (running) {
      for (const s of stores) {
        const b = await s.balance(accountId)
        minAvailable = Math.min(minAvailable, b.balanceMicros - b.reservedMicros)
        minBalance = Math.min(minBalance, b.balanceMicros)
        samples++
      }
      await nextTurn()
    }
  })()
  const outcomes = await Promise.all(
    Array.from({ length: attempts }, async (_, i) => {
      const store = stores[i % stores.length] as AccountStore
      const r = await store.reserve(accountId, priceMicros, T0 + i)
      if (!r.ok) return false
      const entry = await store.settle(r.reservationId, charge(priceMicros), T0 + i)
      return entry !== null
    }),
  )
  running = false
  await sampler
  return { succeeded: outcomes.filter(Boolean).length, minAvailable, minBalance, samples }
}

/** The harness's raw SQL on a SQLite file: its own short-lived connection (as the operator would). */
export function sqliteSql(file: string): AccountStoreHarness['sql'] {
  return async (text) => {
    const db = new Database(file)
    try {
      db.pragma('busy_timeout = 5000')
      const st = db.prepare(text)
      if (st.reader) return st.all() as Record<string, unknown>[]
      st.run()
      return []
    } finally {
      db.close()
    }
  }
}
