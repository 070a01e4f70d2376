/**
 * The money half of the account store conformance suite (credits, reserve/settle/release,
 * reconcile, ranges, the concurrency herd). Registered inside the suite's describe by
 * `accountStoreConformance`; every case makes its own accounts.
 */
import assert from 'node:assert/strict'
import { before, it } from 'node:test'
import type { AccountStore } from '../../src/store/accounts/types.ts'
import { type AccountStoreHarness, charge, moneyHerd, newAccount, T0 } from './accounts-herd.ts'

const ANCIENT = T0 - 1e9
const DAY = 86_400_000

export function moneyCases(current: () => AccountStore, h: AccountStoreHarness): void {
  let store: AccountStore
  before(() => {
    store = current()
  })
  const fund = async (micros: number, at = T0) => {
    const a = await newAccount(store)
    await store.credit(a.id, { kind: 'topup', amountMicros: micros, reference: null }, at)
    return a.id
  }

  it('credit: idempotent per (account, reference); null references never dedupe', async () => {
    const a = await newAccount(store)
    const b = await newAccount(store)
    const first = await store.credit(a.id, { kind: 'topup', amountMicros: 10_000_000, reference: 'cs_1' }, T0)
    const again = await store.credit(
      a.id,
      { kind: 'topup', amountMicros: 10_000_000, reference: 'cs_1' },
      T0 + 1,
    )
    assert.equal(first.duplicate, false)
    assert.deepEqual(again, { entry: first.entry, duplicate: true })
    assert.equal(first.entry.amountMicros, 10_000_000)
    const other = await store.credit(b.id, { kind: 'topup', amountMicros: 5, reference: 'cs_1' }, T0)
    assert.equal(other.duplicate, false)
    await store.credit(a.id, { kind: 'credit', amountMicros: 3, reference: null }, T0)
    await store.credit(a.id, { kind: 'credit', amountMicros: 3, reference: null }, T0)
    assert.equal((await store.balance(a.id)).balanceMicros, 10_000_006)
    assert.equal((await store.balance(b.id)).balanceMicros, 5)
    assert.equal((await store.entries(a.id, { from: 0, to: T0 + DAY, limit: 100 })).length, 3)
    await assert.rejects(
      store.credit(a.id, { kind: 'topup', amountMicros: 0, reference: null }, T0),
      RangeError,
    )
    await assert.rejects(
      store.credit(a.id, { kind: 'topup', amountMicros: 1.5, reference: null }, T0),
      RangeError,
    )
  })

  it('credit: concurrent repeats of one reference add the money once', async () => {
    const a = await newAccount(store)
    const rs = await Promise.all(
      Array.from({ length: 12 }, () =>
        store.credit(a.id, { kind: 'topup', amountMicros: 700, reference: 'pi_9' }, T0),
      ),
    )
    assert.equal(rs.filter((r) => !r.duplicate).length, 1)
    assert.equal(new Set(rs.map((r) => r.entry.id)).size, 1)
    assert.equal((await store.balance(a.id)).balanceMicros, 700)
  })

  it('reserve refuses when balance − reserved < amount and reports balance and available', async () => {
    const id = await fund(1000)
    const r1 = await store.reserve(id, 600, T0)
    assert.equal(r1.ok, true)
    assert.deepEqual(await store.reserve(id, 600, T0), {
      ok: false,
      balanceMicros: 1000,
      availableMicros: 400,
    })
    assert.equal((await store.reserve(id, 400, T0)).ok, true)
    assert.deepEqual(await store.balance(id), { balanceMicros: 1000, reservedMicros: 1000 })
    assert.deepEqual(await store.reserve(id, 1, T0), { ok: false, balanceMicros: 1000, availableMicros: 0 })
    assert.equal((await store.reserve('acct_missing', 1, T0)).ok, false)
    await assert.rejects(store.reserve(id, -1, T0), RangeError)
  })

  it('settle writes exactly one negative ledger row, lowers the balance, frees the reservation', async () => {
    const id = await fund(5000)
    const r = await store.reserve(id, 2000, T0 + 1)
    assert.ok(r.ok)
    const c = charge(1500, 'key_x')
    const e = await store.settle(r.reservationId, c, T0 + 2)
    assert.ok(e)
    assert.match(e.id, /^led_/)
    assert.deepEqual(
      { ...e, id: '' },
      {
        ...{ id: '', accountId: id, kind: 'debit', amountMicros: -1500, requestId: c.requestId },
        ...{ capability: 'metrics', reference: null, keyId: 'key_x', createdAt: T0 + 2 },
      },
    )
    assert.deepEqual(await store.balance(id), { balanceMicros: 3500, reservedMicros: 0 })
    const rows = await store.entries(id, { from: 0, to: T0 + DAY, limit: 100 })
    assert.deepEqual(
      rows.filter((x) => x.kind === 'debit'),
      [e],
    )
    // Settling twice, or settling what was never reserved, charges nothing.
    assert.equal(await store.settle(r.reservationId, charge(1500), T0 + 3), null)
    assert.equal(await store.settle('res_missing', charge(1), T0 + 3), null)
    assert.equal((await store.entries(id, { from: 0, to: T0 + DAY, limit: 100 })).length, 2)
    assert.deepEqual(await store.balance(id), { balanceMicros: 3500, reservedMicros: 0 })
  })

  it('settle of 0 writes no row; a charge above the reservation is refused', async () => {
    const id = await fund(1000)
    const r = await store.reserve(id, 500, T0)
    assert.ok(r.ok)
    assert.equal(await store.settle(r.reservationId, charge(0), T0), null)
    assert.deepEqual(await store.balance(id), { balanceMicros: 1000, reservedMicros: 0 })
    assert.equal((await store.entries(id, { from: 0, to: T0 + DAY, limit: 100 })).length, 1)
    const r2 = await store.reserve(id, 500, T0)
    assert.ok(r2.ok)
    await assert.rejects(store.settle(r2.reservationId, charge(501), T0), RangeError)
    assert.deepEqual(await store.balance(id), { balanceMicros: 1000, reservedMicros: 500 })
    await store.release(r2.reservationId)
    assert.deepEqual(await store.balance(id), { balanceMicros: 1000, reservedMicros: 0 })
  })

  it('release frees; unknown and already-settled ids are harmless', async () => {
    const id = await fund(1000)
    const r = await store.reserve(id, 1000, T0)
    assert.ok(r.ok)
    await store.release(r.reservationId)
    await store.release(r.reservationId)
    await store.release('res_missing')
    assert.deepEqual(await store.balance(id), { balanceMicros: 1000, reservedMicros: 0 })
    const r2 = await store.reserve(id, 1000, T0)
    assert.ok(r2.ok)
    await store.settle(r2.reservationId, charge(400), T0)
    await store.release(r2.reservationId)
    assert.deepEqual(await store.balance(id), { balanceMicros: 600, reservedMicros: 0 })
  })

  it('a top-up through another instance (the CLI, another node) is seen by the next reserve', async () => {
    const a = await newAccount(store)
    assert.equal((await store.reserve(a.id, 100, T0)).ok, false)
    const other = await h.another()
    try {
      await other.credit(a.id, { kind: 'topup', amountMicros: 100, reference: 'cli-1' }, T0)
    } finally {
      await other.close()
    }
    assert.equal((await store.reserve(a.id, 100, T0)).ok, true)
  })

  it('reconcile releases old reservations and corrects a tampered cached balance', async () => {
    const id = await fund(1000, ANCIENT)
    const old = await store.reserve(id, 300, ANCIENT)
    const young = await store.reserve(id, 200, ANCIENT + 5)
    assert.ok(old.ok && young.ok)
    assert.deepEqual(await store.reconcile(ANCIENT + 1), { releasedReservations: 1, correctedBalances: 0 })
    assert.deepEqual(await store.balance(id), { balanceMicros: 1000, reservedMicros: 200 })
    assert.equal(await store.settle(old.reservationId, charge(300), ANCIENT + 9), null)
    await h.sql(`UPDATE accounts SET balance_micros = 999999 WHERE id = '${id}'`)
    assert.equal((await store.balance(id)).balanceMicros, 999_999)
    assert.deepEqual(await store.reconcile(ANCIENT), { releasedReservations: 0, correctedBalances: 1 })
    assert.deepEqual(await store.balance(id), { balanceMicros: 1000, reservedMicros: 200 })
    assert.deepEqual(await store.reconcile(ANCIENT), { releasedReservations: 0, correctedBalances: 0 })
  })

  it('the ledger is append-only in the database itself', async () => {
    const id = await fund(1000)
    await assert.rejects(
      h.sql(`UPDATE ledger SET amount_micros = 5 WHERE account_id = '${id}'`),
      /append-only/,
    )
    await assert.rejects(h.sql(`DELETE FROM ledger WHERE account_id = '${id}'`), /append-only/)
  })

  it('entries and summary by time range [from, to), oldest first, limited', async () => {
    const id = await fund(10_000, T0)
    await store.credit(id, { kind: 'credit', amountMicros: 500, reference: 'promo' }, T0 + 10)
    for (const [amount, at] of [
      [300, T0 + 20],
      [200, T0 + 30],
    ]) {
      const r = await store.reserve(id, amount, at)
      assert.ok(r.ok)
      await store.settle(r.reservationId, charge(amount), at)
    }
    await store.credit(id, { kind: 'refund', amountMicros: 200, reference: null }, T0 + 40)
    const all = await store.entries(id, { from: T0, to: T0 + 41, limit: 100 })
    assert.deepEqual(
      all.map((e) => [e.kind, e.amountMicros, e.createdAt - T0]),
      [
        ['topup', 10_000, 0],
        ['credit', 500, 10],
        ['debit', -300, 20],
        ['debit', -200, 30],
        ['refund', 200, 40],
      ],
    )
    const mid = await store.entries(id, { from: T0 + 10, to: T0 + 30, limit: 100 })
    assert.deepEqual(
      mid.map((e) => e.createdAt - T0),
      [10, 20],
    )
    assert.deepEqual(
      (await store.entries(id, { from: T0, to: T0 + 41, limit: 2 })).map((e) => e.kind),
      ['topup', 'credit'],
    )
    assert.deepEqual(await store.summary(id, { from: T0, to: T0 + 41 }), {
      spentMicros: 500,
      requests: 2,
      topUpsMicros: 10_000,
    })
    assert.deepEqual(await store.summary(id, { from: T0 + 25, to: T0 + 40 }), {
      spentMicros: 200,
      requests: 1,
      topUpsMicros: 0,
    })
    assert.deepEqual(await store.summary(id, { from: 0, to: T0 }), {
      spentMicros: 0,
      requests: 0,
      topUpsMicros: 0,
    })
  })

  it('money invariant: 200 concurrent reserve→settle on funds for 50 → exactly 50, balance 0', async () => {
    const id = await fund(50 * 1000)
    const out = await moneyHerd([store], id, 200, 1000)
    await assertHerd(store, id, out, 50)
  })

  it('money invariant across two instances sharing reservations', {
    skip: !h.sharedReservations && 'reservations are per-process (embedded mode has one server)',
  }, async () => {
    const id = await fund(50 * 1000)
    const node2 = await h.another()
    try {
      const out = await moneyHerd([store, node2], id, 200, 1000)
      await assertHerd(store, id, out, 50)
    } finally {
      await node2.close()
    }
  })
}

async function assertHerd(
  store: AccountStore,
  id: string,
  out: Awaited<ReturnType<typeof moneyHerd>>,
  n: number,
) {
  assert.equal(out.succeeded, n)
  assert.ok(out.samples > 0)
  assert.ok(out.minAvailable >= 0, `balance − reserved went to ${out.minAvailable}`)
  assert.ok(out.minBalance >= 0)
  assert.deepEqual(await store.balance(id), { balanceMicros: 0, reservedMicros: 0 })
  const rows = await store.entries(id, { from: 0, to: T0 + DAY, limit: 1000 })
  const debits = rows.filter((e) => e.kind === 'debit')
  assert.equal(debits.length, n)
  assert.equal(
    debits.reduce((s, e) => s + e.amountMicros, 0),
    -n * 1000,
  )
  assert.equal(
    rows.reduce((s, e) => s + e.amountMicros, 0),
    0,
  )
  assert.deepEqual(await store.reconcile(0), { releasedReservations: 0, correctedBalances: 0 })
}
