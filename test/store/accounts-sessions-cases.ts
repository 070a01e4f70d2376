/**
 * The sign-in half of the account store conformance suite: sign-in links bound to the asking
 * browser (a look that does not use the link), and server-side sessions — found by the hash of
 * their secret, revoked one by one or all of an account's at once (seen at once by another
 * instance on the same database), last-seen moved only forward, purged after expiry.
 */
import assert from 'node:assert/strict'
import { before, it } from 'node:test'
import { newId } from '../../src/platform/ids.ts'
import type { NewSession } from '../../src/store/accounts/sessions-types.ts'
import type { AccountStore } from '../../src/store/accounts/types.ts'
import { type AccountStoreHarness, newAccount, T0 } from './accounts-herd.ts'

const HOUR = 3600_000

export function sessionCases(current: () => AccountStore, h: AccountStoreHarness): void {
  let store: AccountStore
  before(() => {
    store = current()
  })
  const session = (accountId: string, createdAt = T0, ttl = 12 * HOUR): NewSession => ({
    id: newId('ses', createdAt),
    hash: newId('h').padEnd(64, '0'),
    accountId,
    createdAt,
    expiresAt: createdAt + ttl,
  })

  it('login tokens: found without being used, with the asking browser’s state hash', async () => {
    const [bound, unbound] = [newId('tok'), newId('tok')]
    await store.createLoginToken({
      hash: bound,
      email: 'state@example.com',
      expiresAt: T0 + 600_000,
      createdAt: T0,
      stateHash: 'f'.repeat(64),
    })
    await store.createLoginToken({
      hash: unbound,
      email: 'n@example.com',
      expiresAt: T0 + 600_000,
      createdAt: T0,
    })
    assert.deepEqual(await store.findLoginToken(bound, T0 + 1), {
      email: 'state@example.com',
      stateHash: 'f'.repeat(64),
    })
    // Looking twice uses nothing.
    assert.deepEqual(await store.findLoginToken(bound, T0 + 2), {
      email: 'state@example.com',
      stateHash: 'f'.repeat(64),
    })
    assert.deepEqual(await store.findLoginToken(unbound, T0 + 1), { email: 'n@example.com', stateHash: null })
    assert.equal(await store.findLoginToken(bound, T0 + 600_000), null, 'expired')
    assert.equal(await store.findLoginToken('tok_missing', T0), null)
    assert.equal(await store.consumeLoginToken(bound, T0 + 3), 'state@example.com')
    assert.equal(await store.findLoginToken(bound, T0 + 4), null, 'used')
  })

  it('sessions: found by hash; revoked once; another instance sees the revocation at once', async () => {
    const a = await newAccount(store, `s-${newId('x')}@example.com`)
    const s = session(a.id)
    await store.sessions().createSession(s)
    const found = await store.sessions().findSessionByHash(s.hash)
    assert.deepEqual(found, {
      id: s.id,
      accountId: a.id,
      createdAt: T0,
      lastSeenAt: T0,
      expiresAt: T0 + 12 * HOUR,
      revokedAt: null,
    })
    assert.equal(await store.sessions().findSessionByHash('0'.repeat(64)), null)
    await assert.rejects(
      store.sessions().createSession({ ...session(a.id), hash: s.hash }),
      'hashes are unique',
    )
    const other = await h.another()
    try {
      assert.equal((await other.sessions().findSessionByHash(s.hash))?.revokedAt, null)
      assert.equal(await store.sessions().revokeSession(s.id, T0 + 5), true)
      assert.equal(await store.sessions().revokeSession(s.id, T0 + 6), false, 'revoked already')
      assert.equal(await store.sessions().revokeSession('ses_missing', T0 + 6), false)
      assert.equal((await other.sessions().findSessionByHash(s.hash))?.revokedAt, T0 + 5)
    } finally {
      await other.close()
    }
  })

  it('sessions: last_seen_at only moves forward', async () => {
    const a = await newAccount(store, `t-${newId('x')}@example.com`)
    const s = session(a.id)
    await store.sessions().createSession(s)
    await store.sessions().touchSession(s.id, T0 + 100)
    assert.equal((await store.sessions().findSessionByHash(s.hash))?.lastSeenAt, T0 + 100)
    await store.sessions().touchSession(s.id, T0 + 50)
    assert.equal((await store.sessions().findSessionByHash(s.hash))?.lastSeenAt, T0 + 100)
  })

  it('revokeAccountSessions: every live session of the account, no other account’s, counts what it revoked', async () => {
    const [a, b] = [await newAccount(store, `u-${newId('x')}@example.com`), await newAccount(store)]
    const live = [session(a.id), session(a.id, T0 + 1)]
    const revoked = session(a.id)
    const expired = session(a.id, T0 - 13 * HOUR)
    const others = session(b.id)
    for (const s of [...live, revoked, expired, others]) await store.sessions().createSession(s)
    await store.sessions().revokeSession(revoked.id, T0 + 2)
    assert.equal(await store.sessions().revokeAccountSessions(a.id, T0 + 10), 2)
    for (const s of live) assert.equal((await store.sessions().findSessionByHash(s.hash))?.revokedAt, T0 + 10)
    assert.equal(
      (await store.sessions().findSessionByHash(revoked.hash))?.revokedAt,
      T0 + 2,
      'first revocation kept',
    )
    assert.equal(
      (await store.sessions().findSessionByHash(expired.hash))?.revokedAt,
      null,
      'expired: left alone',
    )
    assert.equal((await store.sessions().findSessionByHash(others.hash))?.revokedAt, null, 'another account')
    assert.equal(await store.sessions().revokeAccountSessions(a.id, T0 + 11), 0)
  })

  it('purgeExpiredSessions deletes sessions expired before the cutoff, revoked or not, and nothing else', async () => {
    const a = await newAccount(store, `p-${newId('x')}@example.com`)
    const ancient = T0 - 1000 * HOUR
    const old = session(a.id, ancient, HOUR)
    const oldRevoked = session(a.id, ancient, HOUR)
    const current = session(a.id, ancient + 10 * HOUR, HOUR)
    for (const s of [old, oldRevoked, current]) await store.sessions().createSession(s)
    await store.sessions().revokeSession(oldRevoked.id, ancient + 1)
    // Other cases' sessions all expire later than this cutoff.
    assert.equal(await store.sessions().purgeExpiredSessions(ancient + 5 * HOUR), 2)
    assert.equal(await store.sessions().findSessionByHash(old.hash), null)
    assert.equal(await store.sessions().findSessionByHash(oldRevoked.hash), null)
    assert.equal((await store.sessions().findSessionByHash(current.hash))?.id, current.id)
  })
}
