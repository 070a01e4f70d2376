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
  /** Lookups whose database read is done (a held one is then waiting for its gate). */
  let reads = 0
  /** While set, a lookup's answer waits for it after the read: a database slower than anything. */
  let gate: Promise<void> | null = null
  let find: AccountStore['findKeyByHash']
  before(async () => {
    t = await startTestApp()
    find = t.ctx.accounts.findKeyByHash.bind(t.ctx.accounts)
    t.ctx.accounts.findKeyByHash = async (hash) => {
      lookups++
      const row = await find(hash)
      reads++
      if (gate) await gate
      return row
    }
  })
  after(async () => {
    await t?.close()
  })

  /** Holds every lookup's answer until the returned function is called. */
  const hold = (): (() => void) => {
    let open = () => {}
    gate = new Promise<void>((resolve) => {
      open = resolve
    })
    return () => {
      gate = null
      open()
    }
  }
  /**
   * The principal, answered while every lookup is held: from the cache. A request that waited for
   * the database would never be answered; the ceiling only turns that into a clear failure.
   */
  const fromCache = async (key: string, what: string) => {
    let timer: NodeJS.Timeout | undefined
    const ceiling = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: the request waited for the database`)), 10_000)
    })
    try {
      return await Promise.race([authenticateKey(t.ctx, key), ceiling])
    } finally {
      clearTimeout(timer)
    }
  }
  /** Waits for a held lookup's read (which takes milliseconds); never forever. */
  const until = async (cond: () => boolean) => {
    const deadline = Date.now() + 10_000
    while (!cond()) {
      if (Date.now() > deadline) throw new Error('the lookup never read the key')
      await sleep(5)
    }
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
    let open = hold()
    try {
      // Past half its lifetime: answered at once, and looked up again meanwhile.
      await sleep(KEY_CACHE_TTL_MS / 2 + 100)
      await fromCache(key, 'an ageing entry')
      assert.equal(lookups, l0 + 2, 'one background lookup')
      await fromCache(key, 'an ageing entry being looked up')
      assert.equal(lookups, l0 + 2, 'not two at once')
      open()
      await until(() => reads === l0 + 2)
      await sleep(50)
      // Past the first entry's lifetime, but the background lookup renewed it.
      await sleep(KEY_CACHE_TTL_MS / 2)
      open = hold()
      await fromCache(key, 'a renewed entry')
    } finally {
      open()
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
    while (code === null) {
      const asked = Date.now()
      code = await refused(key)
      if (code === null) assert.ok(asked < deadline, 'served past KEY_CACHE_TTL_MS after its revocation')
      await sleep(50)
    }
    assert.equal(code, 'REVOKED_KEY')
  })

  it('a revocation made here applies at once, even against a lookup already under way', async () => {
    const key = await t.key(await t.account(1))
    const record = await find(hashKey(t.ctx.secrets.pepper, key))
    assert.ok(record)
    const r0 = reads
    const open = hold()
    let inFlight: Promise<unknown> = Promise.resolve()
    try {
      // A request reads the key (still live), then this process revokes it before the answer.
      inFlight = authenticateKey(t.ctx, key)
      await until(() => reads === r0 + 1)
      await t.ctx.accounts.revokeKey(record.id, Date.now())
      forgetKey(t.ctx, record.id)
    } finally {
      open()
    }
    await inFlight // read before the revocation: that request may pass
    assert.equal(await refused(key), 'REVOKED_KEY', 'what it read was not cached')
  })
})
