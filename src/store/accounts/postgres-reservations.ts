/**
 * Reservations of the PostgreSQL account store: the direct path (one reservation row per call,
 * settled in group commits) and this node's reservation leases (postgres-leases.ts), which carve
 * calls out of a slice of the balance in memory. A refusal says what is available as this node
 * sees it: its own unused lease money counts for a lease take, not for a direct reservation.
 */
import { newId } from '../../platform/ids.ts'
import { createLeases } from './postgres-leases.ts'
import type { PostgresPools } from './postgres-pool.ts'
import { createSettleQueue } from './postgres-settle.ts'
import * as SQL from './postgres-sql.ts'
import { checkMicros } from './rows.ts'
import { SPEND_STATE } from './self-service-postgres.ts'
import { monthOf } from './self-service-types.ts'
import type { Charge, ReserveResult } from './types.ts'

export function createPostgresReservations({ pool, q, qFast, tx }: PostgresPools) {
  const settles = createSettleQueue(pool, tx)

  /** The account's balance and reservations, as the database holds them (leases in full). */
  async function balanceRow(accountId: string) {
    const [r] = await q<{ b: number; r: number }>(
      'SELECT balance_micros AS b, reserved_micros AS r FROM accounts WHERE id = $1',
      [accountId],
      'balance',
    )
    return { balanceMicros: r?.b ?? 0, reservedMicros: r?.r ?? 0 }
  }

  /**
   * What a refused reserve answers. For a lease take (`own` = 'lease') this node's unused lease
   * money is available to the call; a direct reservation cannot use it.
   */
  async function refusal(accountId: string, amountMicros: number, now: number, own: 'lease' | 'none') {
    const month = monthOf(now)
    const { value, free } = await leases.stable(accountId, () => balanceRow(accountId))
    const { balanceMicros, reservedMicros } = value
    // The caller's own free money when it is lease money (a lease take), else none of it counts.
    const ownFree = own === 'lease' ? free : 0
    const availableMicros = Math.max(0, balanceMicros - reservedMicros + ownFree)
    if (availableMicros >= amountMicros) {
      // Refused with money available: the monthly spend cap (or a race; then balance it is).
      const [c] = await q<{ cap: number | null; spent: number }>(SPEND_STATE, [accountId, month])
      if (c && c.cap !== null && c.spent + reservedMicros - ownFree + amountMicros > c.cap)
        return {
          ok: false as const,
          balanceMicros,
          availableMicros,
          reason: 'spend_cap' as const,
          capMicros: c.cap,
          monthSpentMicros: c.spent,
        }
    }
    return { ok: false as const, balanceMicros, availableMicros }
  }

  const direct = {
    async reserve(accountId: string, amountMicros: number, now: number): Promise<ReserveResult> {
      checkMicros(amountMicros, 'reserve amount', 0)
      const id = newId('res', now)
      const values = [accountId, amountMicros, id, now, monthOf(now)]
      if ((await qFast(SQL.RESERVE, values, 'reserve')).length === 1) return { ok: true, reservationId: id }
      // This node's unused lease money is the account's: hand it back and try once more.
      if (leases.freeOf(accountId) > 0 && (await leases.surrender(accountId))) {
        if ((await qFast(SQL.RESERVE, values, 'reserve')).length === 1) return { ok: true, reservationId: id }
      }
      return refusal(accountId, amountMicros, now, 'none')
    },
    settle(reservationId: string, charge: Charge, now: number) {
      return settles.settle(reservationId, charge, now)
    },
    async release(reservationId: string) {
      await qFast(SQL.RELEASE, [reservationId], 'release')
    },
  }
  const leases = createLeases({ pool, tx, fast: qFast, direct, refusal })

  /** Reserved as seen from this node: its own unused lease money is not held from its calls. */
  async function balanceOf(accountId: string) {
    const { value, free } = await leases.stable(accountId, () => balanceRow(accountId))
    return { balanceMicros: value.balanceMicros, reservedMicros: Math.max(0, value.reservedMicros - free) }
  }

  return {
    direct,
    leases,
    balanceOf,
    /** Returns the leases, then waits for the settles in flight. */
    async close(): Promise<void> {
      await leases.close()
      await settles.drain()
    },
  }
}
