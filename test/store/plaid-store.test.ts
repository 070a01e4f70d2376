/**
 * The Plaid item store (src/store/accounts/plaid-types.ts) conformance suite, run on both account
 * stores: SQLite on a temp file and PostgreSQL (DATABASE_URL) in its own schema, plain and behind
 * the server's balance snapshots.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { withBalanceSnapshots } from '../../src/store/accounts/balance-snapshot.ts'
import type { PlaidItemRecord } from '../../src/store/accounts/plaid-types.ts'
import { createPostgresAccountStore } from '../../src/store/accounts/postgres.ts'
import { createSqliteAccountStore } from '../../src/store/accounts/sqlite.ts'
import type { AccountStore } from '../../src/store/accounts/types.ts'

function plaidConformance(name: string, open: () => AccountStore) {
  describe(`plaid item store: ${name}`, () => {
    let s: AccountStore
    let a: string
    let b: string
    before(async () => {
      s = open()
      await s.migrate()
      const account = async () =>
        (
          await s.createAccount({
            id: `acct_${randomBytes(6).toString('hex')}`,
            email: `${randomBytes(4).toString('hex')}@x.test`,
            kind: 'user',
            createdAt: Date.now(),
          })
        ).id
      a = await account()
      b = await account()
    })
    after(() => s?.close())
    let seq = 0
    const item = (accountId: string, over: Partial<PlaidItemRecord> = {}): PlaidItemRecord => ({
      id: `pli_${randomBytes(6).toString('hex')}`,
      accountId,
      itemId: `item_${randomBytes(8).toString('hex')}`,
      institutionId: 'ins_1',
      institutionName: 'Vanguard',
      tokenCiphertext: randomBytes(40).toString('base64url'),
      tokenKeyId: 'k1',
      createdAt: 1_700_000_000_000 + ++seq,
      lastError: null,
      ...over,
    })

    test('insert, list oldest first, get: scoped to the owner; one Plaid item links once', async () => {
      const i1 = item(a)
      const i2 = item(a, { institutionId: null, institutionName: null })
      assert.equal(await s.plaid().insertItem(i1), true)
      assert.equal(await s.plaid().insertItem(i2), true)
      assert.equal(await s.plaid().insertItem({ ...item(b), itemId: i1.itemId }), false)
      assert.deepEqual(await s.plaid().listItems(a), [i1, i2])
      assert.deepEqual(await s.plaid().listItems(b), [])
      assert.deepEqual(await s.plaid().getItem(a, i1.id), i1)
      assert.equal(await s.plaid().getItem(b, i1.id), null)
    })

    test('rekey writes only from the expected key id; last_error set and cleared', async () => {
      const i = item(a)
      await s.plaid().insertItem(i)
      assert.equal(await s.plaid().rekeyToken(i.id, 'k0', 'new', 'k2'), false)
      assert.equal(await s.plaid().rekeyToken(i.id, 'k1', 'sealed-k2', 'k2'), true)
      assert.equal(await s.plaid().rekeyToken(i.id, 'k1', 'sealed-again', 'k2'), false)
      const r = await s.plaid().getItem(a, i.id)
      assert.equal(r?.tokenCiphertext, 'sealed-k2')
      assert.equal(r?.tokenKeyId, 'k2')
      await s.plaid().setLastError(i.id, 'ITEM_LOGIN_REQUIRED')
      assert.equal((await s.plaid().getItem(a, i.id))?.lastError, 'ITEM_LOGIN_REQUIRED')
      await s.plaid().setLastError(i.id, null)
      assert.equal((await s.plaid().getItem(a, i.id))?.lastError, null)
    })

    test('items not under a key, across accounts (operator re-keying)', async () => {
      const old = [item(a, { tokenKeyId: 'k-old' }), item(b, { tokenKeyId: 'k-old' })]
      for (const i of old) await s.plaid().insertItem(i)
      const found = await s.plaid().itemsNotUnderKey('k1', 100)
      for (const i of old) assert.ok(found.some((f) => f.id === i.id))
      assert.ok(found.every((f) => f.tokenKeyId !== 'k1'))
      assert.equal((await s.plaid().itemsNotUnderKey('k1', 1)).length, 1)
      for (const i of old) await s.plaid().rekeyToken(i.id, 'k-old', 'x', 'k1')
      assert.ok((await s.plaid().itemsNotUnderKey('k1', 100)).every((f) => !old.some((o) => o.id === f.id)))
    })

    test("delete: only the owner's, once", async () => {
      const i = item(a)
      await s.plaid().insertItem(i)
      assert.equal(await s.plaid().deleteItem(b, i.id), false)
      assert.equal(await s.plaid().deleteItem(a, i.id), true)
      assert.equal(await s.plaid().deleteItem(a, i.id), false)
      assert.equal(await s.plaid().getItem(a, i.id), null)
    })
  })
}

const dir = mkdtempSync(join(tmpdir(), 'erm3-plaid-store-'))
after(() => rmSync(dir, { recursive: true, force: true }))
plaidConformance('sqlite', () => createSqliteAccountStore(join(dir, 'plaid.db')))

const url = process.env.DATABASE_URL
if (!url) {
  test('PostgreSQL plaid item store', { skip: 'DATABASE_URL is not set' }, () => {})
} else {
  const schemas: string[] = []
  after(async () => {
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    for (const schema of schemas) await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await c.end()
  })
  for (const wrapped of [false, true]) {
    const schema = `t_${randomBytes(6).toString('hex')}`
    schemas.push(schema)
    const open = () => createPostgresAccountStore(url, { schema })
    plaidConformance(wrapped ? 'postgres behind balance snapshots' : 'postgres', () =>
      wrapped ? withBalanceSnapshots(open()) : open(),
    )
  }
}
