/**
 * Whether a key holds no concurrency slot. A finished request gives its slot back when its
 * response closes, which can come a moment after the client has read the answer (and, with Redis,
 * one round trip later): the check takes every slot at once, gives them back, and tries again for
 * a while before calling a slot leaked.
 */
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import type { TestApp } from './test-app.ts'

export async function assertSlotsFree(
  t: TestApp,
  keyId: string,
  max: number,
  what = 'after the requests',
): Promise<void> {
  const name = `key:${keyId}`
  const deadline = Date.now() + 5000
  for (;;) {
    const leases = []
    for (let i = 0; i < max; i++)
      leases.push(await t.ctx.limits.concurrency.acquire(name, max, 60_000, t.ctx.now()))
    for (const l of leases) if (l.leaseId) await t.ctx.limits.concurrency.release(name, l.leaseId)
    const free = leases.filter((l) => l.ok).length
    if (free === max) return
    if (Date.now() > deadline)
      assert.fail(`${free} of ${max} slots free ${what}: a slot was never given back`)
    await sleep(20)
  }
}
