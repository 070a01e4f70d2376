/**
 * Balance snapshots (`withBalanceSnapshots`) over the real SQLite store: the wrapped store passes
 * the whole account-store conformance suite (exact reads unchanged), and a snapshot read obeys
 * its freshness rule — it shows a state the account really had, never older than the store's
 * last local write nor than `maxAgeMs` — for any sequence of local writes, writes by another
 * connection and passing time (fast-check, against a history of exact reads).
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { withBalanceSnapshots } from '../../src/store/accounts/balance-snapshot.ts'
import { createSqliteAccountStore } from '../../src/store/accounts/sqlite.ts'
import type { AccountStore, BalanceView } from '../../src/store/accounts/types.ts'
import * as fc from '../helpers/fc.ts'
import { accountStoreConformance } from './accounts-conformance.ts'
import { charge, newAccount, sqliteSql, T0 } from './accounts-herd.ts'

const dir = mkdtempSync(join(tmpdir(), 'erm3-snapshots-'))
after(() => rmSync(dir, { recursive: true, force: true }))

const conformanceFile = join(dir, 'conformance.db')
accountStoreConformance(
  'sqlite behind balance snapshots',
  async () => withBalanceSnapshots(createSqliteAccountStore(conformanceFile)),
  {
    another: async () => createSqliteAccountStore(conformanceFile),
    sql: sqliteSql(conformanceFile),
    sharedReservations: false,
  },
)

const MAX_AGE = 1000

type Op =
  | { kind: 'reserve'; amount: number }
  | { kind: 'settle'; pick: number; amount: number }
  | { kind: 'release'; pick: number }
  | { kind: 'credit'; amount: number }
  | { kind: 'external'; amount: number }
  | { kind: 'tick'; ms: number }
  | { kind: 'read' }

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('reserve' as const), amount: fc.integer({ min: 1, max: 5_000_000 }) }),
  fc.record({
    kind: fc.constant('settle' as const),
    pick: fc.nat(),
    amount: fc.integer({ min: 0, max: 1_000_000 }),
  }),
  fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('credit' as const), amount: fc.integer({ min: 1, max: 9_000_000 }) }),
  fc.record({ kind: fc.constant('external' as const), amount: fc.integer({ min: 1, max: 9_000_000 }) }),
  fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 1500 }) }),
  fc.constant({ kind: 'read' as const }),
  fc.constant({ kind: 'read' as const }),
)

const same = (a: BalanceView, b: BalanceView) =>
  a.balanceMicros === b.balanceMicros && a.reservedMicros === b.reservedMicros

describe('balance snapshots', () => {
  it('a snapshot read shows a real state no older than the last local write nor than maxAgeMs', async () => {
    const file = join(dir, 'property.db')
    const inner = createSqliteAccountStore(file)
    await inner.migrate()
    const other = createSqliteAccountStore(file)
    let clock = 0
    const store = withBalanceSnapshots(inner, () => clock)
    let run = 0
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), async (ops) => {
          const account = await newAccount(store)
          await inner.credit(account.id, { kind: 'topup', amountMicros: 20_000_000, reference: null }, T0)
          const open: { id: string; amount: number }[] = []
          // Exact states after each step (inner reads: no snapshot involved), with their times.
          const history: { at: number; view: BalanceView }[] = [
            { at: clock, view: await inner.balance(account.id) },
          ]
          /** Index in `history` of the state right after the last local write. */
          let lastLocalWrite = 0
          let ref = 0
          for (const o of ops) {
            if (o.kind === 'read') {
              const got = await store.balance(account.id, MAX_AGE)
              // States in force at some moment of [now − maxAgeMs, now] (entry i from its time to the
              // next entry's, inclusive: same-time steps each count), none before the last local write.
              const allowed = history
                .filter((_, i) => i >= lastLocalWrite)
                .filter((_, i, a) => i === a.length - 1 || (a[i + 1] as { at: number }).at >= clock - MAX_AGE)
                .map((h) => h.view)
              assert.ok(
                allowed.some((v) => same(v, got)),
                `read ${JSON.stringify(got)} at ${clock}; allowed ${JSON.stringify(allowed)}`,
              )
              continue
            }
            if (o.kind === 'tick') clock += o.ms
            else if (o.kind === 'external')
              await other.credit(
                account.id,
                { kind: 'credit', amountMicros: o.amount, reference: `x${run}-${ref++}` },
                T0,
              )
            else {
              // A settle or release with nothing open writes nothing: not a local write.
              if (o.kind === 'reserve' || o.kind === 'credit' || open.length > 0)
                lastLocalWrite = history.length
              if (o.kind === 'reserve') {
                const r = await store.reserve(account.id, o.amount, T0)
                if (r.ok) open.push({ id: r.reservationId, amount: o.amount })
              } else if (o.kind === 'credit')
                await store.credit(
                  account.id,
                  { kind: 'credit', amountMicros: o.amount, reference: null },
                  T0,
                )
              else if (open.length > 0) {
                const [held] = open.splice(o.pick % open.length, 1) as [{ id: string; amount: number }]
                if (o.kind === 'settle')
                  await store.settle(held.id, charge(Math.min(o.amount, held.amount)), T0)
                else await store.release(held.id)
              }
            }
            history.push({ at: clock, view: await inner.balance(account.id) })
          }
          run++
        }),
        { numRuns: 150 },
      )
    } finally {
      await other.close()
      await inner.close()
    }
  })

  it('serves repeated reads from the snapshot and an external top-up once maxAgeMs has passed', async () => {
    const file = join(dir, 'external.db')
    const inner = createSqliteAccountStore(file)
    await inner.migrate()
    let clock = 0
    let reads = 0
    const counting: AccountStore = {
      ...inner,
      balance: (id) => {
        reads++
        return inner.balance(id)
      },
    }
    const store = withBalanceSnapshots(counting, () => clock)
    const operator = createSqliteAccountStore(file)
    try {
      const a = await newAccount(store)
      await store.credit(a.id, { kind: 'topup', amountMicros: 10_000_000, reference: 'r1' }, T0)
      assert.equal((await store.balance(a.id, MAX_AGE)).balanceMicros, 10_000_000)
      for (let i = 0; i < 5; i++) await store.balance(a.id, MAX_AGE)
      assert.equal(reads, 1, 'five more reads within maxAgeMs hit the snapshot')
      await operator.credit(a.id, { kind: 'topup', amountMicros: 5_000_000, reference: 'r2' }, T0)
      clock += MAX_AGE - 1
      assert.equal((await store.balance(a.id, MAX_AGE)).balanceMicros, 10_000_000, 'still within the age')
      assert.equal((await store.balance(a.id)).balanceMicros, 15_000_000, 'an exact read is exact')
      clock += MAX_AGE
      assert.equal((await store.balance(a.id, MAX_AGE)).balanceMicros, 15_000_000)
      // This process's own debit shows at once, however fresh the snapshot.
      const r = await store.reserve(a.id, 1_000_000, T0)
      assert.ok(r.ok)
      assert.deepEqual(await store.balance(a.id, MAX_AGE), {
        balanceMicros: 15_000_000,
        reservedMicros: 1_000_000,
      })
      await store.settle(r.reservationId, charge(1_000_000), T0)
      assert.deepEqual(await store.balance(a.id, MAX_AGE), { balanceMicros: 14_000_000, reservedMicros: 0 })
    } finally {
      await operator.close()
      await inner.close()
    }
  })

  it('does not keep a read that overlapped a local write (slow backends)', async () => {
    const file = join(dir, 'race.db')
    const inner = createSqliteAccountStore(file)
    await inner.migrate()
    // Reads that wait for a gate, as a PostgreSQL round trip can outlast a settle.
    let gate: (() => void) | null = null
    const slow: AccountStore = {
      ...inner,
      balance: async (id) => {
        const view = await inner.balance(id)
        await new Promise<void>((resolve) => {
          gate = resolve
        })
        return view
      },
    }
    const store = withBalanceSnapshots(slow, () => 0)
    try {
      const a = await newAccount(store)
      await inner.credit(a.id, { kind: 'topup', amountMicros: 10_000_000, reference: null }, T0)
      const pending = store.balance(a.id, MAX_AGE)
      await new Promise((r) => setImmediate(r))
      await store.credit(a.id, { kind: 'credit', amountMicros: 1_000_000, reference: null }, T0)
      ;(gate as unknown as () => void)()
      assert.equal((await pending).balanceMicros, 10_000_000, 'the overlapping read answers what it read')
      const next = store.balance(a.id, MAX_AGE)
      await new Promise((r) => setImmediate(r))
      ;(gate as unknown as () => void)()
      assert.equal(
        (await next).balanceMicros,
        11_000_000,
        'and was not kept: the next read goes to the store',
      )
    } finally {
      await inner.close()
    }
  })
})
