/**
 * The per-process key cache (services/identity/keys.ts): a key in steady use is looked up again in
 * the background once its entry is half its lifetime old, so no request waits for the database;
 * an entry is never served past KEY_CACHE_TTL_MS without a lookup, so a revocation made elsewhere
 * applies within it; and a revocation made here applies at once, even against a lookup that was
 * already reading the key when it happened. Real time throughout (the cache runs on it).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { AppError } from '../../src/platform/errors.ts'
import { authenticateKey, forgetKey, hashKey, KEY_CACHE_TTL_MS } from '../../src/services/identity/keys.ts'
import type { AccountStore } from '../../src/store/accounts/types.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

describe('key cache', () => {
  let t: TestApp
  let lookups = 0
  let delayMs = 0
  let find: AccountStore['findKeyByHash']
  before(async () => {
    t = await startTestApp()
    find = t.ctx.accounts.findKeyByHash.bind(t.ctx.accounts)
    // Counts the database lookups, and can make their answers slow (read first, answered later).
    t.ctx.accounts.findKeyByHash = async (hash) => {
      lookups++
      const row = await find(hash)
      if (delayMs > 0) await sleep(delayMs)
      return row
    }
  })
  after(async () => {
    await t?.close()
  })

  const timed = async (key: string) => {
    const t0 = performance.now()
    const p = await authenticateKey(t.ctx, key)
    return { p, ms: performance.now() - t0 }
  }
  const refused = async (key: string) => {
    try {
      await authenticateKey(t.ctx, key)
      return null
    } catch (e) {
      return e instanceof AppError ? e.code : String(e)
    }
  }

  it('a key in steady use is looked up again in the background: no request waits for the database', async () => {
    const key = await t.key(await t.account(1))
    const l0 = lookups
    await authenticateKey(t.ctx, key)
    assert.equal(lookups, l0 + 1, 'the first request looks the key up')
    await authenticateKey(t.ctx, key)
    assert.equal(lookups, l0 + 1, 'a fresh entry answers')
    delayMs = 300
    try {
      // Past half its lifetime: answered at once, and looked up again meanwhile.
      await sleep(KEY_CACHE_TTL_MS / 2 + 100)
      const aged = await timed(key)
      assert.ok(aged.ms < 150, `answered from the cache in ${aged.ms.toFixed(1)} ms`)
      assert.equal(lookups, l0 + 2, 'one background lookup')
      await timed(key)
      assert.equal(lookups, l0 + 2, 'not two at once')
      await sleep(delayMs + 100)
      // Past the first entry's lifetime, but the background lookup renewed it.
      await sleep(KEY_CACHE_TTL_MS / 2)
      const renewed = await timed(key)
      assert.ok(renewed.ms < 150, `still answered from the cache (${renewed.ms.toFixed(1)} ms)`)
    } finally {
      delayMs = 0
    }
  })

  it('a revocation made elsewhere applies within KEY_CACHE_TTL_MS, background lookups or not', async () => {
    const key = await t.key(await t.account(1))
    await authenticateKey(t.ctx, key)
    const record = await find(hashKey(t.ctx.secrets.pepper, key))
    assert.ok(record)
    const operator = t.anotherStore()
    try {
      await operator.revokeKey(record.id, Date.now())
    } finally {
      await operator.close()
    }
    // Used all along, as a polling agent would: refused within the lifetime, never after it.
    const deadline = Date.now() + KEY_CACHE_TTL_MS
    let code: string | null = null
    while (code === null && Date.now() < deadline + 500) {
      code = await refused(key)
      if (code === null) assert.ok(Date.now() < deadline, 'served past KEY_CACHE_TTL_MS after its revocation')
      await sleep(50)
    }
    assert.equal(code, 'REVOKED_KEY')
  })

  it('a revocation made here applies at once, even against a lookup already under way', async () => {
    const key = await t.key(await t.account(1))
    const record = await find(hashKey(t.ctx.secrets.pepper, key))
    assert.ok(record)
    delayMs = 200
    try {
      // A request reads the key (still live) while this process revokes it.
      const inFlight = authenticateKey(t.ctx, key)
      await sleep(50)
      await t.ctx.accounts.revokeKey(record.id, Date.now())
      forgetKey(t.ctx, record.id)
      await inFlight // read before the revocation: that request may pass
    } finally {
      delayMs = 0
    }
    assert.equal(await refused(key), 'REVOKED_KEY', 'what it read was not cached')
  })
})
