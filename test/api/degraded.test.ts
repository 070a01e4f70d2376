import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

describe('Redis down: the node limits locally and says so (never fails open silently)', () => {
  let t: TestApp
  before(async () => {
    t = await startTestApp({ limits: 'dead-redis' })
  })
  after(() => t?.close())

  test('requests are still limited, /health is degraded, key last-used is recorded', async () => {
    const account = await t.account(1)
    const key = await t.key(account)
    const r = await t.client.call('getBalance', { key })
    assert.equal(r.status, 200, r.text)
    assert.equal(r.headers['x-ratelimit-remaining'], '99')
    const h = (await t.client.call('getHealth')).ok()
    assert.equal(h.status, 'degraded')
    assert.equal(h.limits.degraded, true)
    assert.match(h.limits.detail, /redis unreachable/)
    // Drain the bucket: the local limiter refuses once its 99 tokens left (and the one a second
    // refilled meanwhile) are spent.
    const t0 = Date.now()
    let allowed = 0
    let status = 200
    while (status === 200 && allowed < 1000) {
      status = (await t.client.call('getBalance', { key })).status
      if (status === 200) allowed++
    }
    assert.equal(status, 429)
    const refilled = Math.ceil((Date.now() - t0) / 1000)
    assert.ok(allowed >= 99 && allowed <= 99 + refilled, `${allowed} allowed (${refilled} refilled)`)
    await t.app.close()
    const [k] = await t.ctx.accounts.listKeys(account)
    assert.ok(k?.lastUsedAt && k.lastUsedAt > Date.now() - 60_000, 'last-used flushed on close')
  })
})
