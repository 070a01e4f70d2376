/**
 * The one conformance suite every AccountStore passes (SQLite, PostgreSQL). One store serves the
 * whole suite; every case makes its own accounts, so cases never see each other's money. Times are
 * driven by the suite (the interface takes `now`); reconcile cases use times far before the others.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { newId } from '../../src/platform/ids.ts'
import { MIGRATIONS } from '../../src/store/accounts/migrations.ts'
import type { AccountStore, NewApiKey } from '../../src/store/accounts/types.ts'
import { type AccountStoreHarness, newAccount, T0 } from './accounts-herd.ts'
import { moneyCases } from './accounts-money-cases.ts'
import { sessionCases } from './accounts-sessions-cases.ts'

export type { AccountStoreHarness }

function keyFor(accountId: string, createdAt = T0): NewApiKey {
  return {
    id: newId('key'),
    accountId,
    kind: 'agent',
    environment: 'live',
    prefix: 'erm_agent_live_AbCd',
    name: 'ci',
    tier: 'default',
    hash: newId('h').padEnd(64, '0'),
    createdAt,
    expiresAt: null,
    clientId: null,
  }
}

export function accountStoreConformance(
  name: string,
  make: () => Promise<AccountStore>,
  h: AccountStoreHarness,
) {
  describe(`account store conformance: ${name}`, () => {
    let store: AccountStore
    before(async () => {
      store = await make()
      await store.migrate()
    })
    after(async () => {
      await store.close()
      await h.cleanup?.()
    })

    it('migrate is idempotent, also from two instances at once, and keeps data', async () => {
      const a = await newAccount(store)
      const other = await h.another()
      try {
        await Promise.all([store.migrate(), other.migrate(), store.migrate()])
      } finally {
        await other.close()
      }
      const versions = await h.sql('SELECT version FROM schema_migrations ORDER BY version')
      assert.deepEqual(
        versions.map((r) => Number(r.version)),
        MIGRATIONS.map((m) => m.version),
      )
      assert.deepEqual(await store.getAccount(a.id), a)
      assert.equal((await store.health()).ok, true)
    })

    it('accounts: create, get, find by e-mail case-insensitively, e-mail unique', async () => {
      const email = `Ada.${newId('m')}@Example.com`
      const a = await newAccount(store, email)
      assert.deepEqual(await store.getAccount(a.id), { id: a.id, email, kind: 'user', createdAt: T0 })
      assert.deepEqual(await store.findAccountByEmail(email.toLowerCase()), a)
      assert.deepEqual(await store.findAccountByEmail(email.toUpperCase()), a)
      await assert.rejects(newAccount(store, email.toUpperCase()))
      // Anonymous accounts have no e-mail and never collide.
      const [x, y] = [await newAccount(store), await newAccount(store)]
      assert.notEqual(x.id, y.id)
      assert.equal(await store.getAccount('acct_missing'), null)
      assert.equal(await store.findAccountByEmail('nobody@example.com'), null)
    })

    it('accounts: listed oldest first a page at a time, each exactly once', async () => {
      const made = [await newAccount(store), await newAccount(store), await newAccount(store)]
      const seen: string[] = []
      let after: string | null = null
      for (;;) {
        const page = await store.listAccounts({ after, limit: 2 })
        assert.ok(page.length <= 2)
        if (page.length === 0) break
        seen.push(...page.map((a) => a.id))
        after = page.at(-1)?.id ?? null
      }
      const [{ n }] = (await h.sql('SELECT count(*) AS n FROM accounts')) as [{ n: unknown }]
      assert.equal(seen.length, Number(n))
      assert.equal(new Set(seen).size, seen.length)
      assert.deepEqual(seen, [...seen].sort())
      for (const a of made) assert.ok(seen.includes(a.id))
    })

    it('keys: insert, find by hash, list, duplicate hash refused', async () => {
      const a = await newAccount(store)
      const b = await newAccount(store)
      const k1 = keyFor(a.id, T0 + 2)
      const k2 = {
        ...keyFor(a.id, T0 + 1),
        kind: 'user' as const,
        environment: 'test' as const,
        clientId: 'cli_1',
      }
      const rec1 = await store.insertKey(k1)
      await store.insertKey(k2)
      await store.insertKey(keyFor(b.id))
      const { hash: _h, ...public1 } = k1
      assert.deepEqual(rec1, { ...public1, lastUsedAt: null, revokedAt: null })
      assert.deepEqual(await store.findKeyByHash(k1.hash), rec1)
      assert.deepEqual(await store.getKey(k1.id), rec1)
      assert.equal(await store.findKeyByHash('0'.repeat(64)), null)
      assert.deepEqual(
        (await store.listKeys(a.id)).map((k) => [k.id, k.kind, k.environment, k.clientId]),
        [
          [k2.id, 'user', 'test', 'cli_1'],
          [k1.id, 'agent', 'live', null],
        ],
      )
      await assert.rejects(store.insertKey({ ...keyFor(a.id), hash: k1.hash }))
    })

    it('keys: revoke is idempotent (keeps the first time); revoked keys are still found', async () => {
      const k = keyFor((await newAccount(store)).id)
      await store.insertKey(k)
      assert.equal((await store.revokeKey(k.id, T0 + 5))?.revokedAt, T0 + 5)
      assert.equal((await store.revokeKey(k.id, T0 + 9))?.revokedAt, T0 + 5)
      assert.equal((await store.findKeyByHash(k.hash))?.revokedAt, T0 + 5)
      assert.equal(await store.revokeKey('key_missing', T0), null)
    })

    it('keys: touchKeys only moves last_used_at forward', async () => {
      const a = await newAccount(store)
      const [k1, k2] = [keyFor(a.id), keyFor(a.id)]
      await store.insertKey(k1)
      await store.insertKey(k2)
      await store.touchKeys(new Map())
      await store.touchKeys(
        new Map([
          [k1.id, T0 + 100],
          ['key_missing', T0],
        ]),
      )
      await store.touchKeys(
        new Map([
          [k1.id, T0 + 50],
          [k2.id, T0 + 7],
        ]),
      )
      assert.equal((await store.getKey(k1.id))?.lastUsedAt, T0 + 100)
      assert.equal((await store.getKey(k2.id))?.lastUsedAt, T0 + 7)
      await store.touchKeys(new Map([[k1.id, T0 + 200]]))
      assert.equal((await store.getKey(k1.id))?.lastUsedAt, T0 + 200)
    })

    it('login tokens are single-use and expire', async () => {
      const [t1, t2] = [newId('tok'), newId('tok')]
      await store.createLoginToken({
        hash: t1,
        email: 'a@example.com',
        expiresAt: T0 + 600_000,
        createdAt: T0,
      })
      await store.createLoginToken({
        hash: t2,
        email: 'b@example.com',
        expiresAt: T0 + 600_000,
        createdAt: T0,
      })
      assert.equal(await store.consumeLoginToken(t1, T0 + 1), 'a@example.com')
      assert.equal(await store.consumeLoginToken(t1, T0 + 2), null)
      assert.equal(await store.consumeLoginToken(t2, T0 + 600_000), null)
      assert.equal(await store.consumeLoginToken('tok_missing', T0), null)
      await assert.rejects(
        store.createLoginToken({ hash: t1, email: 'x@example.com', expiresAt: T0, createdAt: T0 }),
      )
    })

    moneyCases(() => store, h)
    sessionCases(() => store, h)
  })
}
