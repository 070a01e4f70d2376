/**
 * Self-service conformance, run on every AccountStore: key rename and expiry scoped
 * to the owning account, the monthly spend cap enforced in reserve (also under concurrency, also
 * across two instances where reservations are shared), usage counters, ledger views and the audit log.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { newId } from '../../src/platform/ids.ts'
import { dayOf, monthOf } from '../../src/store/accounts/self-service-types.ts'
import type { AccountStore, NewApiKey } from '../../src/store/accounts/types.ts'
import { type AccountStoreHarness, charge, newAccount, T0 } from './accounts-herd.ts'

function keyFor(accountId: string, o: Partial<NewApiKey> = {}): NewApiKey {
  return {
    id: newId('key'),
    accountId,
    kind: 'agent',
    environment: 'live',
    prefix: 'erm_agent_live_AbCd',
    name: 'ci',
    tier: 'default',
    hash: newId('h').padEnd(64, '0'),
    createdAt: T0,
    expiresAt: null,
    clientId: null,
    ...o,
  }
}

/** 2023-11-14 (T0) is mid-month; the next month starts here. */
const NEXT_MONTH = Date.UTC(2023, 11, 1)

export function selfServiceConformance(
  name: string,
  make: () => Promise<AccountStore>,
  h: AccountStoreHarness,
) {
  describe(`self-service store conformance: ${name}`, () => {
    let store: AccountStore
    before(async () => {
      store = await make()
      await store.migrate()
    })
    after(async () => {
      await store.close()
      await h.cleanup?.()
    })

    async function funded(micros: number) {
      const a = await newAccount(store)
      await store.credit(a.id, { kind: 'topup', amountMicros: micros, reference: null }, T0)
      return a.id
    }

    it('rename and expire touch only the owning account’s keys, never OAuth tokens', async () => {
      const a = await newAccount(store)
      const b = await newAccount(store)
      const k = await store.insertKey(keyFor(a.id))
      const oauth = await store.insertKey(
        keyFor(a.id, { kind: 'user', clientId: 'cl_x', expiresAt: T0 + 3600e3 }),
      )
      const ss = store.selfService()
      assert.equal(await ss.renameKey(b.id, k.id, 'stolen'), null)
      assert.equal((await store.getKey(k.id))?.name, 'ci')
      assert.equal((await ss.renameKey(a.id, k.id, 'prod'))?.name, 'prod')
      assert.equal((await ss.renameKey(a.id, k.id, null))?.name, null)
      assert.equal(await ss.renameKey(a.id, oauth.id, 'x'), null)
      assert.equal(await ss.renameKey(a.id, 'key_nope', 'x'), null)

      assert.equal(await ss.expireKey(b.id, k.id, T0 + 10), null)
      assert.equal((await ss.expireKey(a.id, k.id, T0 + 100))?.expiresAt, T0 + 100)
      // Never later than an expiry it already has.
      assert.equal((await ss.expireKey(a.id, k.id, T0 + 500))?.expiresAt, T0 + 100)
      assert.equal((await ss.expireKey(a.id, k.id, T0 + 50))?.expiresAt, T0 + 50)
      const revoked = await store.insertKey(keyFor(a.id))
      await store.revokeKey(revoked.id, T0 + 1)
      const after = await ss.expireKey(a.id, revoked.id, T0 + 5)
      assert.equal(after?.expiresAt, null)
      assert.equal(after?.revokedAt, T0 + 1)
      assert.equal(await ss.expireKey(a.id, oauth.id, T0 + 5), null)
    })

    it('spend cap: settings, reserve refuses past the cap with reason spend_cap, null removes it', async () => {
      const id = await funded(10_000_000)
      const ss = store.selfService()
      assert.deepEqual(await ss.settings(id, T0), { spendCapMicros: null, monthSpentMicros: 0 })
      assert.equal(await ss.setSpendCap('acct_nope', 1), false)
      assert.equal(await ss.setSpendCap(id, 2500), true)
      const r1 = await store.reserve(id, 1000, T0)
      assert.ok(r1.ok)
      await store.settle(r1.reservationId, charge(1000), T0)
      assert.deepEqual(await ss.settings(id, T0), { spendCapMicros: 2500, monthSpentMicros: 1000 })
      const r2 = await store.reserve(id, 1000, T0 + 1)
      assert.ok(r2.ok)
      // 1000 spent + 1000 held + 1000 asked > 2500
      const refused = await store.reserve(id, 1000, T0 + 2)
      assert.equal(refused.ok, false)
      assert.ok(!refused.ok)
      assert.equal(refused.reason, 'spend_cap')
      assert.equal(refused.capMicros, 2500)
      assert.equal(refused.monthSpentMicros, 1000)
      assert.equal(refused.balanceMicros, 9_999_000)
      // The exact remainder fits.
      const r3 = await store.reserve(id, 500, T0 + 3)
      assert.ok(r3.ok)
      await store.release(r2.reservationId)
      await store.release(r3.reservationId)
      // A release frees cap room: the settled part alone counts.
      const r4 = await store.reserve(id, 1500, T0 + 4)
      assert.ok(r4.ok)
      await store.settle(r4.reservationId, charge(700), T0 + 4)
      assert.equal((await ss.settings(id, T0 + 5))?.monthSpentMicros, 1700)
      // A new UTC month starts from zero.
      assert.deepEqual(await ss.settings(id, NEXT_MONTH), { spendCapMicros: 2500, monthSpentMicros: 0 })
      const r5 = await store.reserve(id, 2500, NEXT_MONTH)
      assert.ok(r5.ok)
      await store.settle(r5.reservationId, charge(2000), NEXT_MONTH + 1)
      assert.equal((await ss.settings(id, NEXT_MONTH + 2))?.monthSpentMicros, 2000)
      assert.equal((await store.reserve(id, 501, NEXT_MONTH + 3)).ok, false)
      // Removing the cap: only the balance limits.
      await ss.setSpendCap(id, null)
      const r6 = await store.reserve(id, 5_000_000, NEXT_MONTH + 4)
      assert.ok(r6.ok)
      await store.release(r6.reservationId)
      // A balance refusal says balance (or nothing), not spend_cap.
      const poor = await funded(100)
      await ss.setSpendCap(poor, 1_000_000)
      const r7 = await store.reserve(poor, 200, T0)
      assert.ok(!r7.ok)
      assert.notEqual(r7.reason, 'spend_cap')
      // The money invariants are untouched.
      assert.deepEqual(await store.reconcile(0), { releasedReservations: 0, correctedBalances: 0 })
    })

    it('spend cap under a herd: concurrent reserves never overshoot the cap', async () => {
      const id = await funded(1_000_000_000)
      await store.selfService().setSpendCap(id, 10_000)
      const other = h.sharedReservations ? await h.another() : null
      try {
        const nodes = other ? [store, other] : [store]
        const results = await Promise.all(
          Array.from({ length: 60 }, async (_, i) => {
            const node = nodes[i % nodes.length] as AccountStore
            const r = await node.reserve(id, 1000, T0 + i)
            if (!r.ok) return 0
            await node.settle(r.reservationId, charge(1000), T0 + i)
            return 1
          }),
        )
        assert.equal(
          results.reduce((a: number, b) => a + b, 0),
          10,
        )
        assert.equal((await store.selfService().settings(id, T0 + 100))?.monthSpentMicros, 10_000)
        assert.deepEqual(await store.balance(id), {
          balanceMicros: 1_000_000_000 - 10_000,
          reservedMicros: 0,
        })
      } finally {
        await other?.close()
      }
    })

    it('usage counters: upserts add up per (day, capability, environment)', async () => {
      const a = await newAccount(store)
      const b = await newAccount(store)
      const ss = store.selfService()
      const d = dayOf(T0)
      const row = (o: Partial<Parameters<typeof ss.addUsage>[0][number]>) => ({
        accountId: a.id,
        day: d,
        capability: 'metrics',
        environment: 'live' as const,
        requests: 1,
        cacheHits: 0,
        costMicros: 1000,
        ...o,
      })
      await ss.addUsage([
        row({}),
        row({ cacheHits: 1, costMicros: 0 }),
        row({ capability: 'snapshot', costMicros: 250_000 }),
        row({ environment: 'test', costMicros: 0 }),
        row({ day: d + 1 }),
        row({ accountId: b.id }),
      ])
      await ss.addUsage([row({ requests: 3, costMicros: 3000 })])
      await ss.addUsage([])
      const rows = await ss.usage(a.id, { fromDay: d, toDay: d + 1 })
      assert.deepEqual(
        rows.map((r) => [r.day - d, r.capability, r.environment, r.requests, r.cacheHits, r.costMicros]),
        [
          [0, 'metrics', 'live', 5, 1, 4000],
          [0, 'metrics', 'test', 1, 0, 0],
          [0, 'snapshot', 'live', 1, 0, 250_000],
          [1, 'metrics', 'live', 1, 0, 1000],
        ],
      )
      assert.equal((await ss.usage(a.id, { fromDay: d + 1, toDay: d + 1 })).length, 1)
      assert.equal((await ss.usage(b.id, { fromDay: d, toDay: d + 5 })).length, 1)
    })

    it('ledger views: debits grouped per day and capability, top-ups/credits/refunds listed', async () => {
      const id = await funded(1_000_000)
      const ss = store.selfService()
      await store.credit(id, { kind: 'refund', amountMicros: 5, reference: 'r1' }, T0 + 10)
      const spend = async (amount: number, at: number, capability: string) => {
        const r = await store.reserve(id, amount, at)
        assert.ok(r.ok)
        await store.settle(r.reservationId, { ...charge(amount), capability }, at)
      }
      await spend(100, T0 + 1, 'metrics')
      await spend(200, T0 + 2, 'metrics')
      await spend(300, T0 + 3, 'snapshot')
      await spend(400, T0 + 86_400_000, 'metrics')
      const groups = await ss.debitsByDay(id, { from: 0, to: T0 + 2 * 86_400_000 })
      const d = dayOf(T0)
      assert.deepEqual(
        groups.map((g) => [g.day - d, g.capability, g.count, g.amountMicros]),
        [
          [0, 'metrics', 2, 300],
          [0, 'snapshot', 1, 300],
          [1, 'metrics', 1, 400],
        ],
      )
      assert.deepEqual((await ss.debitsByDay(id, { from: T0 + 2, to: T0 + 4 })).length, 2)
      const others = await ss.nonDebits(id, { from: 0, to: T0 + 100, limit: 10 })
      assert.deepEqual(
        others.map((e) => [e.kind, e.amountMicros, e.reference]),
        [
          ['topup', 1_000_000, null],
          ['refund', 5, 'r1'],
        ],
      )
      assert.equal((await ss.nonDebits(id, { from: 0, to: T0 + 100, limit: 1 })).length, 1)
      assert.equal(monthOf(T0), 2023 * 12 + 10)
    })

    it('audit log: appended, read newest first per account within a range', async () => {
      const a = await newAccount(store)
      const b = await newAccount(store)
      const ss = store.selfService()
      const entry = (at: number, action: string, accountId = a.id) => ({
        id: newId('aud', at),
        accountId,
        createdAt: at,
        actorType: 'session' as const,
        actorId: 'ada@example.com',
        action,
        target: 'key_1',
        detail: { name: 'prod', n: 1 },
        ip: '203.0.113.9',
      })
      const first = entry(T0, 'key.created')
      await ss.appendAudit(first)
      await ss.appendAudit(entry(T0 + 1, 'key.renamed'))
      await ss.appendAudit({ ...entry(T0 + 2, 'spend_cap.set'), target: null, detail: null, ip: null })
      await ss.appendAudit(entry(T0 + 3, 'key.created', b.id))
      const rows = await ss.audit(a.id, { from: 0, to: T0 + 10, limit: 10 })
      assert.deepEqual(
        rows.map((r) => r.action),
        ['spend_cap.set', 'key.renamed', 'key.created'],
      )
      assert.deepEqual(rows[2], first)
      assert.equal(rows[0]?.detail, null)
      assert.deepEqual(
        (await ss.audit(a.id, { from: T0 + 1, to: T0 + 2, limit: 10 })).map((r) => r.action),
        ['key.renamed'],
      )
      assert.equal((await ss.audit(a.id, { from: 0, to: T0 + 10, limit: 1 })).length, 1)
    })
  })
}
