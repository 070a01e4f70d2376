/**
 * PostgreSQL account store against a real server (DATABASE_URL; CI exports
 * postgres://postgres@127.0.0.1:5432/test): the shared conformance suite — including the money
 * herd through two pools ("nodes") — then what only a shared backend must show. Test files run in
 * parallel, so each run works in its own schema `t_<random>` and drops it at the end.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, describe, it, test } from 'node:test'
import pg from 'pg'
import { withBalanceSnapshots } from '../../src/store/accounts/balance-snapshot.ts'
import { MIGRATIONS } from '../../src/store/accounts/migrations.ts'
import { createPostgresAccountStore } from '../../src/store/accounts/postgres.ts'
import type { AccountStore } from '../../src/store/accounts/types.ts'
import { accountStoreConformance } from './accounts-conformance.ts'
import { charge, newAccount, T0 } from './accounts-herd.ts'

const url = process.env.DATABASE_URL
if (!url) {
  test('PostgreSQL account store', {
    skip: 'DATABASE_URL is not set (CI exports DATABASE_URL=postgres://postgres@127.0.0.1:5432/test)',
  }, () => {})
} else {
  const fresh = () => `t_${randomBytes(6).toString('hex')}`
  const schemas: string[] = []
  const open = (schema: string) => {
    if (!schemas.includes(schema)) schemas.push(schema)
    return createPostgresAccountStore(url, { schema })
  }
  async function sql(schema: string, text: string) {
    const c = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` })
    await c.connect()
    try {
      return (await c.query(text)).rows as Record<string, unknown>[]
    } finally {
      await c.end()
    }
  }
  after(async () => {
    for (const s of schemas) await sql('public', `DROP SCHEMA IF EXISTS ${s} CASCADE`)
  })

  const main = fresh()
  accountStoreConformance('postgres', async () => open(main), {
    another: async () => open(main),
    sql: (text) => sql(main, text),
    sharedReservations: true,
  })
  // The server's store is wrapped for its balance view: exact reads must be untouched by it.
  const snapshots = fresh()
  accountStoreConformance(
    'postgres behind balance snapshots',
    async () => withBalanceSnapshots(open(snapshots)),
    {
      another: async () => open(snapshots),
      sql: (text) => sql(snapshots, text),
      sharedReservations: true,
    },
  )

  describe('postgres account store: several nodes', () => {
    it('two nodes migrating a fresh schema at once: one applies, both succeed', async () => {
      const schema = fresh()
      const [a, b] = [open(schema), open(schema)]
      try {
        await Promise.all([a.migrate(), b.migrate()])
        const rows = await sql(schema, 'SELECT version FROM schema_migrations')
        assert.deepEqual(
          rows.map((r) => Number(r.version)),
          MIGRATIONS.map((m) => m.version),
        )
      } finally {
        await Promise.all([a.close(), b.close()])
      }
    })

    it('a crashed node’s reservations are released by reconcile on another node', async () => {
      const schema = fresh()
      const survivor = open(schema)
      await survivor.migrate()
      const crashed: AccountStore = open(schema)
      try {
        const { id } = await newAccount(survivor)
        await survivor.credit(id, { kind: 'topup', amountMicros: 1000, reference: null }, T0)
        const r = await crashed.reserve(id, 1000, T0)
        assert.ok(r.ok)
        await crashed.close() // the node goes away without settling or releasing
        assert.equal((await survivor.reserve(id, 1, T0 + 1)).ok, false)
        assert.deepEqual(await survivor.reconcile(T0 + 1), { releasedReservations: 1, correctedBalances: 0 })
        assert.equal(await survivor.settle(r.reservationId, charge(1000), T0 + 2), null)
        assert.deepEqual(await survivor.balance(id), { balanceMicros: 1000, reservedMicros: 0 })
        // A reservation made on one node can be settled on another (shared state).
        const r2 = await survivor.reserve(id, 400, T0 + 3)
        assert.ok(r2.ok)
        const node2 = open(schema)
        try {
          assert.equal((await node2.settle(r2.reservationId, charge(400), T0 + 4))?.amountMicros, -400)
        } finally {
          await node2.close()
        }
        assert.deepEqual(await survivor.balance(id), { balanceMicros: 600, reservedMicros: 0 })
      } finally {
        await survivor.close()
      }
    })

    it('a group-committed batch spanning many accounts charges each exactly once', async () => {
      const schema = fresh()
      const [a, b] = [open(schema), open(schema)]
      try {
        await a.migrate()
        const ids: string[] = []
        for (let i = 0; i < 8; i++) {
          const { id } = await newAccount(a)
          await a.credit(id, { kind: 'topup', amountMicros: 10_000, reference: null }, T0)
          ids.push(id)
        }
        // Both nodes settle interleaved batches over all accounts at once (lock order under test).
        const runs = await Promise.all(
          Array.from({ length: 160 }, async (_, i) => {
            const node = i % 2 ? a : b
            const id = ids[i % ids.length] as string
            const r = await node.reserve(id, 1000, T0 + i)
            return r.ok ? (await node.settle(r.reservationId, charge(1000), T0 + i)) !== null : false
          }),
        )
        assert.equal(runs.filter(Boolean).length, 80)
        for (const id of ids) assert.deepEqual(await a.balance(id), { balanceMicros: 0, reservedMicros: 0 })
        assert.deepEqual(await a.reconcile(0), { releasedReservations: 0, correctedBalances: 0 })
      } finally {
        await Promise.all([a.close(), b.close()])
      }
    })
  })
}
