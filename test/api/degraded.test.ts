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
    // Drain the bucket: the local limiter refuses the 101st request within the minute.
    const statuses = []
    for (let i = 0; i < 100; i++) statuses.push((await t.client.call('getBalance', { key })).status)
    assert.equal(statuses.filter((s) => s === 429).length, 1)
    await t.app.close()
    const [k] = await t.ctx.accounts.listKeys(account)
    assert.ok(k?.lastUsedAt && k.lastUsedAt > Date.now() - 60_000, 'last-used flushed on close')
  })
})
