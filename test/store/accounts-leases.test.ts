/**
 * Reservation leases of the PostgreSQL account store (`store.inProcess`, postgres-leases.ts)
 * against a real server: a node reserves a slice of the balance once and carves its calls out of
 * it in memory; settles draw the charges from the lease in group commits.
 *
 * The guarantees are those of reserve/settle without leases, and are checked from the database:
 * no balance below zero and never more reserved than there is (no overdraft), every settle that
 * returned a debit has exactly one ledger row and every other has none (no lost and no double
 * debit), the cached balance equals the ledger sum and the reserved sum the reservation rows. On
 * one node a refusal is exact: the property replays each program against a model of the account
 * (balance, calls in flight, spend cap) and expects every reserve to succeed exactly when the model
 * has room. Across nodes, concurrent programs check the invariants.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, describe, it, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { createPostgresAccountStore } from '../../src/store/accounts/postgres.ts'
import { LEASE_IDLE_MS, LEASE_TARGET_MICROS } from '../../src/store/accounts/postgres-leases.ts'
import type { AccountStore, LedgerEntry } from '../../src/store/accounts/types.ts'
import * as fc from '../helpers/fc.ts'
import { charge, newAccount, T0 } from './accounts-herd.ts'

const url = process.env.DATABASE_URL
type Local = NonNullable<AccountStore['inProcess']>

if (!url) {
  test('PostgreSQL reservation leases', {
    skip: 'DATABASE_URL is not set (CI exports DATABASE_URL=postgres://postgres@127.0.0.1:5432/test)',
  }, () => {})
} else {
  const schema = `t_${randomBytes(6).toString('hex')}`
  const admin = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}`, max: 2 })
  const sql = async (text: string, values: unknown[] = []) => (await admin.query(text, values)).rows
  const stores: AccountStore[] = []
  const open = async () => {
    const s = createPostgresAccountStore(url, { schema })
    await s.migrate()
    stores.push(s)
    return s
  }
  after(async () => {
    await Promise.all(stores.map((s) => s.close().catch(() => undefined)))
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await admin.end()
  })

  const local = (s: AccountStore): Local => {
    assert.ok(s.inProcess, 'the PostgreSQL store offers in-process reservations')
    return s.inProcess
  }
  const fund = async (s: AccountStore, micros: number) => {
    const a = await newAccount(s)
    await s.credit(a.id, { kind: 'topup', amountMicros: micros, reference: null }, T0)
    return a.id
  }
  /** The account as the database holds it, with its ledger and reservation rows summed. */
  const truth = async (id: string) => {
    const [r] = await sql(
      `SELECT a.balance_micros::bigint AS balance, a.reserved_micros::bigint AS reserved,
        (SELECT COALESCE(SUM(amount_micros), 0) FROM ledger WHERE account_id = a.id)::bigint AS ledger,
        (SELECT COALESCE(SUM(amount_micros), 0) FROM reservations WHERE account_id = a.id)::bigint AS held,
        (SELECT COUNT(*) FROM reservations WHERE account_id = a.id)::bigint AS rows,
        (SELECT COUNT(*) FROM ledger WHERE account_id = a.id AND kind = 'debit')::bigint AS debits
       FROM accounts a WHERE a.id = $1`,
      [id],
    )
    const n = (k: string) => Number((r as Record<string, unknown>)[k])
    return {
      balance: n('balance'),
      reserved: n('reserved'),
      ledger: n('ledger'),
      held: n('held'),
      rows: n('rows'),
      debits: n('debits'),
    }
  }
  /** `chargedBack`: a chargeback may take the balance below zero (nothing may be reserved then). */
  const consistent = async (id: string, chargedBack = false) => {
    const t = await truth(id)
    assert.equal(t.balance, t.ledger, 'cached balance = Σ ledger')
    assert.equal(t.reserved, t.held, 'cached reserved = Σ reservations')
    if (chargedBack) assert.equal(t.reserved, 0)
    else assert.ok(t.balance >= 0 && t.balance - t.reserved >= 0, `no overdraft: ${JSON.stringify(t)}`)
    return t
  }
  const debitRows = async (requestId: string) =>
    Number((await sql('SELECT COUNT(*) AS n FROM ledger WHERE request_id = $1', [requestId]))[0]?.n)

  describe('postgres reservation leases', () => {
    it('carves many calls out of one lease, settles them exactly, and returns the lease when idle', async () => {
      const s = await open()
      const id = await fund(s, 10_000_000)
      const calls = await Promise.all(
        Array.from({ length: 200 }, async (_, i) => {
          const r = await local(s).reserve(id, 1000, T0 + i)
          assert.ok(r.ok)
          return local(s).settle(r.reservationId, charge(1000 - (i % 3)), T0 + i)
        }),
      )
      const charged = calls.reduce((sum, e) => sum - (e?.amountMicros ?? 0), 0)
      let expected = 0
      for (let i = 0; i < 200; i++) expected += 1000 - (i % 3)
      assert.equal(charged, expected)
      const t = await consistent(id)
      assert.equal(t.balance, 10_000_000 - charged)
      assert.equal(t.debits, 200)
      assert.equal(t.rows, 1, 'one lease row held every call')
      assert.ok(t.reserved > 0 && t.reserved <= LEASE_TARGET_MICROS)
      assert.deepEqual(await s.balance(id), { balanceMicros: t.balance, reservedMicros: 0 })
      // An idle lease goes back to the account: at the first sweep after LEASE_IDLE_MS unused,
      // later on a busy machine (a bound, not a schedule, is what the test can hold it to).
      const deadline = Date.now() + LEASE_IDLE_MS * 15
      let idle = await consistent(id)
      while ((idle.reserved !== 0 || idle.rows !== 0) && Date.now() < deadline) {
        await sleep(LEASE_IDLE_MS / 4)
        idle = await consistent(id)
      }
      assert.equal(idle.reserved, 0, 'an idle lease goes back to the account')
      assert.equal(idle.rows, 0)
    })

    it('on one node, a reserve is refused exactly when balance − calls in flight cannot cover it', async () => {
      const s = await open()
      const id = await fund(s, 1000)
      const rs = await Promise.all(Array.from({ length: 10 }, (_, i) => local(s).reserve(id, 300, T0 + i)))
      const ok = rs.filter((r) => r.ok)
      assert.equal(ok.length, 3)
      const refused = rs.find((r) => !r.ok)
      assert.ok(refused && !refused.ok)
      assert.equal(refused.availableMicros, 100)
      assert.equal(refused.balanceMicros, 1000)
      assert.deepEqual(await s.balance(id), { balanceMicros: 1000, reservedMicros: 900 })
      for (const r of ok) if (r.ok) await local(s).settle(r.reservationId, charge(300), T0)
      assert.deepEqual(await s.balance(id), { balanceMicros: 100, reservedMicros: 0 })
      const last = await local(s).reserve(id, 100, T0)
      assert.ok(last.ok, 'the last 100 µ$ are reservable')
      assert.equal((await local(s).reserve(id, 1, T0)).ok, false)
      await local(s).release(last.reservationId)
      await consistent(id)
    })

    /** An account of 12 µ$ with two 1 µ$ calls in flight on one node's lease. */
    const twoCallsIn12 = async () => {
      const s = await open()
      const id = await fund(s, 12)
      const a = await local(s).reserve(id, 1, T0)
      const b = await local(s).reserve(id, 1, T0)
      assert.ok(a.ok && b.ok)
      return { s, id, a, b }
    }

    it('after a refused direct reserve retired the lease, money a call gives back is available again (CI counterexample, seed 1936636541)', async () => {
      const { s, id, a, b } = await twoCallsIn12()
      const big = await local(s).reserve(id, LEASE_TARGET_MICROS + 1, T0)
      assert.ok(!big.ok)
      assert.equal(big.availableMicros, 10)
      assert.equal(await local(s).settle(a.reservationId, charge(0), T0), null)
      const again = await local(s).reserve(id, LEASE_TARGET_MICROS + 1, T0)
      assert.ok(!again.ok)
      assert.equal(again.availableMicros, 11)
      assert.deepEqual(await s.balance(id), { balanceMicros: 12, reservedMicros: 1 })
      const c = await local(s).reserve(id, 1, T0)
      assert.ok(c.ok, 'room for 1 of 11')
      await local(s).release(b.reservationId)
      await local(s).release(c.reservationId)
      await consistent(id)
    })

    it('money released into a retired lease is reachable by the next lease take', async () => {
      const { s, id, a, b } = await twoCallsIn12()
      // The refused direct reserve retires the lease (b and a still in flight).
      assert.ok(!(await local(s).reserve(id, LEASE_TARGET_MICROS + 1, T0)).ok)
      await local(s).release(a.reservationId)
      const c = await local(s).reserve(id, 11, T0)
      assert.ok(c.ok, '12 − 1 in flight = 11 is reservable')
      assert.equal((await local(s).reserve(id, 1, T0)).ok, false)
      await local(s).settle(c.reservationId, charge(11), T0)
      await local(s).settle(b.reservationId, charge(1), T0)
      const t = await consistent(id)
      assert.equal(t.balance, 0)
    })

    it('holds the monthly spend cap, counting the calls in flight', async () => {
      const s = await open()
      const id = await fund(s, 10_000_000)
      assert.ok(await s.selfService().setSpendCap(id, 2000))
      const rs = await Promise.all(Array.from({ length: 10 }, (_, i) => local(s).reserve(id, 300, T0 + i)))
      assert.equal(rs.filter((r) => r.ok).length, 6)
      const refused = rs.find((r) => !r.ok)
      assert.ok(refused && !refused.ok)
      assert.equal(refused.reason, 'spend_cap')
      assert.equal(refused.capMicros, 2000)
    })

    it('a reservation larger than a lease goes direct; a direct reserve takes back the node’s unused lease', async () => {
      const s = await open()
      const id = await fund(s, 600_000)
      const small = await local(s).reserve(id, 1000, T0)
      assert.ok(small.ok)
      await local(s).settle(small.reservationId, charge(1000), T0)
      // The lease holds up to a quarter of the free money; the rest is 599,000 − lease.
      const leased = (await truth(id)).reserved
      assert.ok(leased > 0)
      const big = await local(s).reserve(id, 599_000, T0)
      assert.ok(big.ok, 'the node hands its unused lease back to make room')
      assert.deepEqual(await s.balance(id), { balanceMicros: 599_000, reservedMicros: 599_000 })
      const entry = await local(s).settle(big.reservationId, charge(599_000), T0)
      assert.equal(entry?.amountMicros, -599_000)
      assert.equal((await consistent(id)).balance, 0)
    })

    it('settle: once, never above the reservation, zero without a ledger row; release frees', async () => {
      const s = await open()
      const id = await fund(s, 100_000)
      const r = await local(s).reserve(id, 5000, T0)
      assert.ok(r.ok)
      const over = charge(5001)
      await assert.rejects(local(s).settle(r.reservationId, over, T0), RangeError)
      assert.equal(await debitRows(over.requestId), 0)
      await assert.rejects(local(s).settle(r.reservationId, charge(1.5), T0), RangeError)
      const c = charge(4000)
      const [a, b] = await Promise.all([
        local(s).settle(r.reservationId, c, T0),
        local(s).settle(r.reservationId, charge(4000), T0),
      ])
      assert.equal(a?.amountMicros, -4000)
      assert.equal(b, null, 'a second settle of one reservation charges nothing')
      assert.equal(await debitRows(c.requestId), 1)
      const z = await local(s).reserve(id, 5000, T0)
      assert.ok(z.ok)
      const zero = charge(0)
      assert.equal(await local(s).settle(z.reservationId, zero, T0), null)
      assert.equal(await debitRows(zero.requestId), 0)
      const rel = await local(s).reserve(id, 5000, T0)
      assert.ok(rel.ok)
      await local(s).release(rel.reservationId)
      await local(s).release(rel.reservationId)
      assert.equal(await local(s).settle(rel.reservationId, charge(1), T0), null)
      assert.deepEqual(await s.balance(id), { balanceMicros: 96_000, reservedMicros: 0 })
      await consistent(id)
    })

    it('a lease reconciled away under its node: the charge is refused (503), nothing is debited, the node recovers', async () => {
      const s = await open()
      const other = await open()
      const id = await fund(s, 100_000)
      const r = await local(s).reserve(id, 1000, T0)
      assert.ok(r.ok)
      // Another node's reconcile with a cutoff past the lease's time releases it (a stalled node).
      assert.ok((await other.reconcile(T0 + 1)).releasedReservations >= 1)
      assert.equal((await truth(id)).rows, 0)
      const c = charge(1000)
      await assert.rejects(local(s).settle(r.reservationId, c, T0), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'UNAVAILABLE')
        return true
      })
      assert.equal(await debitRows(c.requestId), 0)
      const again = await local(s).reserve(id, 1000, T0 + 2)
      assert.ok(again.ok)
      assert.equal((await local(s).settle(again.reservationId, charge(1000), T0 + 2))?.amountMicros, -1000)
      assert.equal((await consistent(id)).balance, 99_000)
    })

    it('a chargeback that leaves the balance short revokes every node’s leases: no call is served on them', async () => {
      const [a, b] = [await open(), await open()]
      const acct = await newAccount(a)
      const topup = await a.payments().applyEvent(
        {
          eventId: `evt_${randomBytes(6).toString('hex')}`,
          type: 'checkout.session.completed',
          effect: {
            kind: 'topup',
            accountId: acct.id,
            paymentIntent: `pi_${acct.id}`,
            sessionId: null,
            amountMicros: 100_000,
          },
        },
        T0,
      )
      assert.equal(topup.outcome, 'applied')
      // Both nodes hold a lease with money unused (up to a quarter of what was free each).
      for (const n of [a, b]) {
        const r = await local(n).reserve(acct.id, 1000, T0)
        assert.ok(r.ok)
        await local(n).settle(r.reservationId, charge(1000), T0)
      }
      const inFlight = await local(b).reserve(acct.id, 1000, T0)
      assert.ok(inFlight.ok)
      assert.ok((await truth(acct.id)).rows >= 2)
      // The dispute takes all 100,000 back: the balance (98,000) goes below zero.
      const dispute = await a.payments().applyEvent(
        {
          eventId: `evt_${randomBytes(6).toString('hex')}`,
          type: 'charge.dispute.created',
          effect: {
            kind: 'chargeback',
            paymentIntent: `pi_${acct.id}`,
            disputeId: 'dp_1',
            amountMicros: 100_000,
          },
        },
        T0 + 1,
      )
      assert.equal(dispute.outcome, 'applied')
      const t = await consistent(acct.id, true)
      assert.equal(t.rows, 0, 'the leases are revoked with the chargeback')
      assert.equal(t.balance, -2000)
      // The node that applied it refuses at once; the other learns at its next settle (503, uncharged).
      assert.equal((await local(a).reserve(acct.id, 1000, T0 + 2)).ok, false)
      const c = charge(1000)
      await assert.rejects(local(b).settle(inFlight.reservationId, c, T0 + 2), { code: 'UNAVAILABLE' })
      assert.equal(await debitRows(c.requestId), 0)
      assert.equal((await local(b).reserve(acct.id, 1000, T0 + 3)).ok, false)
      assert.equal((await consistent(acct.id, true)).balance, -2000)
    })

    it('close returns the node’s leases; a node that vanished leaves its lease to reconcile', async () => {
      const s = await open()
      const id = await fund(s, 100_000)
      const r = await local(s).reserve(id, 1000, T0)
      assert.ok(r.ok)
      await local(s).settle(r.reservationId, charge(1000), T0)
      assert.ok((await truth(id)).reserved > 0)
      await s.close()
      assert.equal((await consistent(id)).reserved, 0)
      // A crashed node (never closed): its lease row stays until reconcile's cutoff passes it.
      const crashed = createPostgresAccountStore(url, { schema })
      const held = await local(crashed).reserve(id, 2000, T0 + 10)
      assert.ok(held.ok)
      const survivor = await open()
      await survivor.reconcile(T0)
      assert.equal((await truth(id)).rows, 1, 'younger than the cutoff: kept')
      await survivor.reconcile(T0 + 11)
      assert.equal((await truth(id)).rows, 0)
      const t = await consistent(id)
      assert.equal(t.reserved, 0)
      assert.equal(t.balance, 99_000)
      await crashed.close()
    })

    // A program of calls on one node, replayed against a model: every reserve's outcome is
    // predicted exactly (room = balance − in flight, and under the cap, cap − spent − in flight).
    const step = fc.oneof(
      fc.record({ kind: fc.constant('reserve' as const), amount: fc.integer({ min: 1, max: 40_000 }) }),
      fc.record({
        kind: fc.constant('reserve' as const),
        amount: fc.integer({ min: 200_000, max: 400_000 }),
      }),
      fc.record({
        kind: fc.constant('settle' as const),
        pick: fc.nat(),
        frac: fc.double({ min: 0, max: 1, noNaN: true }),
      }),
      fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('credit' as const), amount: fc.integer({ min: 1, max: 300_000 }) }),
      fc.record({ kind: fc.constant('idle' as const) }),
    )

    it('property: one node, any program — refusals exact, debits exact, the database consistent', async () => {
      const s = await open()
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 0, max: 600_000 }),
          fc.option(fc.integer({ min: 0, max: 800_000 }), { nil: null }),
          fc.array(step, { minLength: 1, maxLength: 30 }),
          async (opening, cap, steps) => {
            const id = opening > 0 ? await fund(s, opening) : (await newAccount(s)).id
            if (cap !== null) await s.selfService().setSpendCap(id, cap)
            let balance = opening
            let spent = 0
            const open_: { id: string; amount: number }[] = []
            const inFlight = () => open_.reduce((sum, o) => sum + o.amount, 0)
            for (const st of steps) {
              if (st.kind === 'reserve') {
                const room = Math.min(
                  balance - inFlight(),
                  cap === null ? Number.POSITIVE_INFINITY : cap - spent - inFlight(),
                )
                const r = await local(s).reserve(id, st.amount, T0)
                assert.equal(r.ok, st.amount <= room, `reserve ${st.amount} with room ${room}`)
                if (r.ok) open_.push({ id: r.reservationId, amount: st.amount })
                else {
                  assert.equal(r.balanceMicros, balance)
                  if (r.reason !== 'spend_cap') assert.equal(r.availableMicros, balance - inFlight())
                }
              } else if (st.kind === 'settle' || st.kind === 'release') {
                if (open_.length === 0) continue
                const [o] = open_.splice(st.pick % open_.length, 1) as [{ id: string; amount: number }]
                if (st.kind === 'release') await local(s).release(o.id)
                else {
                  const c = charge(Math.floor(o.amount * st.frac))
                  const e: LedgerEntry | null = await local(s).settle(o.id, c, T0)
                  assert.equal((e?.amountMicros ?? 0) + c.amountMicros, 0, 'the debit is the charge')
                  assert.equal(await debitRows(c.requestId), c.amountMicros > 0 ? 1 : 0)
                  balance -= c.amountMicros
                  spent += c.amountMicros
                }
              } else if (st.kind === 'credit') {
                await s.credit(id, { kind: 'credit', amountMicros: st.amount, reference: null }, T0)
                balance += st.amount
              } else await sleep(5)
              const t = await consistent(id)
              assert.equal(t.balance, balance)
              assert.deepEqual(await s.balance(id), { balanceMicros: balance, reservedMicros: inFlight() })
            }
            for (const o of open_) await local(s).release(o.id)
          },
        ),
        { numRuns: 40 },
      )
    })

    it('property: three nodes at once — no overdraft, every debit once, nothing left reserved', async () => {
      const nodes = [await open(), await open(), await open()]
      const call = fc.record({
        node: fc.integer({ min: 0, max: 2 }),
        amount: fc.integer({ min: 1, max: 30_000 }),
        outcome: fc.constantFrom('settle', 'partial', 'release'),
      })
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 0, max: 300_000 }),
          fc.array(call, { minLength: 1, maxLength: 60 }),
          async (opening, calls) => {
            const id =
              opening > 0
                ? await fund(nodes[0] as AccountStore, opening)
                : (await newAccount(nodes[0] as AccountStore)).id
            let minFree = Number.POSITIVE_INFINITY
            let sampling = true
            const sampler = (async () => {
              while (sampling) {
                const t = await truth(id)
                minFree = Math.min(minFree, t.balance - t.reserved, t.balance)
                await sleep(1)
              }
            })()
            const results = await Promise.all(
              calls.map(async (c, i) => {
                const node = local(nodes[c.node] as AccountStore)
                const r = await node.reserve(id, c.amount, T0 + i)
                if (!r.ok) return { ok: false as const }
                if (c.outcome === 'release') {
                  await node.release(r.reservationId)
                  return { ok: true as const, charged: 0, requestId: null }
                }
                const ch = charge(c.outcome === 'settle' ? c.amount : Math.floor(c.amount / 2))
                const e = await node.settle(r.reservationId, ch, T0 + i)
                assert.equal((e?.amountMicros ?? 0) + ch.amountMicros, 0, 'the debit is the charge')
                return { ok: true as const, charged: ch.amountMicros, requestId: ch.requestId }
              }),
            ).finally(async () => {
              sampling = false
              await sampler
            })
            assert.ok(minFree >= 0, `balance − reserved went to ${minFree}`)
            let charged = 0
            for (const r of results) {
              if (!r.ok || r.requestId === null) continue
              charged += r.charged
              assert.equal(await debitRows(r.requestId), r.charged > 0 ? 1 : 0)
            }
            const t = await consistent(id)
            assert.equal(t.balance, opening - charged)
            assert.equal(t.debits, results.filter((r) => r.ok && r.charged > 0).length)
            // Nothing is in flight: what a node sees reserved is at most the other nodes' unused leases.
            for (const n of nodes) {
              const v = await n.balance(id)
              assert.ok(v.reservedMicros >= 0 && v.reservedMicros <= t.reserved)
            }
          },
        ),
        { numRuns: 25 },
      )
    })
  })
}
