/**
 * Self-service account API on both backend pairs: keys (list, create, rename, rotate
 * with and without overlap, revoke) isolated between accounts (404, never 403), usage per day and
 * capability including free cache hits, the ledger as JSON and CSV, the monthly spend cap (402
 * SPEND_CAP_REACHED), the audit log, bad input as 4xx problems, and no MCP tools for any of it.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { CallResult } from '../../src/contract/client.ts'
import type { OperationId } from '../../src/contract/operations.ts'
import { SELF_SERVICE_OPS } from '../../src/contract/ops/self-service.ts'
import { toolCatalogue } from '../../src/contract/tools.ts'
import { signSession } from '../../src/services/identity/session.ts'
import { BACKEND_PAIRS, startTestApp, type TestApp } from '../helpers/test-app.ts'

function problem(r: CallResult<OperationId>, status: number, code: string) {
  assert.equal(r.status, status, r.text)
  assert.match(r.headers['content-type'] ?? '', /^application\/problem\+json/)
  const p = r.json as Record<string, unknown>
  assert.equal(p.code, code)
  return p
}

test('MCP gets no tools for the self-service operations (none is priced)', () => {
  const ops = new Set(Object.keys(SELF_SERVICE_OPS))
  const tools = toolCatalogue()
  assert.ok(tools.length > 0)
  for (const t of tools) assert.ok(!ops.has(t.operation.id), `${t.name} exposes ${t.operation.id}`)
})

for (const b of BACKEND_PAIRS) {
  describe(`self-service account API: ${b.name}`, { skip: b.skip ?? undefined }, () => {
    let t: TestApp
    let alice: { id: string; session: string; email: string }
    let bob: { id: string; session: string; email: string }
    const user = async (balanceUsd: number) => {
      const email = `u${Math.random().toString(36).slice(2)}@example.com`
      const id = await t.account(balanceUsd, email)
      return { id, email, session: await signSession(t.ctx, { accountId: id, email }) }
    }
    before(async () => {
      t = await startTestApp({ db: b.db, limits: b.limits })
      alice = await user(5)
      bob = await user(5)
    })
    after(() => t?.close())

    test('keys: create (shown once), list, rename, rotate, revoke — and every change is audited', async () => {
      const created = await t.client.call('createAccountKey', {
        key: alice.session,
        body: { name: 'laptop', environment: 'live' },
        headers: { 'x-forwarded-for': '203.0.113.7' },
      })
      assert.equal(created.status, 201, created.text)
      assert.equal(created.headers['cache-control'], 'no-store')
      const c = created.ok()
      assert.match(c.api_key, /^erm_agent_live_/)
      assert.equal(c.key.name, 'laptop')
      assert.equal(c.key.status, 'active')
      assert.ok(c.api_key.startsWith(c.key.prefix.replace('…', '')))
      assert.equal((await t.client.call('getBalance', { key: c.api_key })).status, 200)

      const list = (await t.client.call('listAccountKeys', { key: alice.session })).ok()
      assert.equal(list.account_id, alice.id)
      const listed = list.keys.find((k) => k.id === c.key.id)
      assert.ok(listed)
      assert.ok(!JSON.stringify(list).includes(c.api_key), 'a listing shows a secret')
      // The key itself may read the list (read-only) and sees its own last use.
      const byKey = (await t.client.call('listAccountKeys', { key: c.api_key })).ok()
      assert.deepEqual(
        byKey.keys.map((k) => k.id),
        list.keys.map((k) => k.id),
      )

      const renamed = await t.client.call('renameAccountKey', {
        key: alice.session,
        params: { id: c.key.id },
        body: { name: 'ci' },
      })
      assert.equal(renamed.ok().name, 'ci')

      // Rotation without overlap: the old key stops at once, the new one works and keeps the name.
      const rot = await t.client.call('rotateAccountKey', {
        key: alice.session,
        params: { id: c.key.id },
        body: {},
      })
      assert.equal(rot.status, 201, rot.text)
      const r = rot.ok()
      assert.equal(r.key.name, 'ci')
      assert.equal(r.previous.status, 'revoked')
      problem(await t.client.call('getBalance', { key: c.api_key }), 401, 'REVOKED_KEY')
      assert.equal((await t.client.call('getBalance', { key: r.api_key })).status, 200)
      // A revoked key cannot be rotated.
      problem(
        await t.client.call('rotateAccountKey', { key: alice.session, params: { id: c.key.id }, body: {} }),
        409,
        'CONFLICT',
      )

      // Rotation with an overlap: the old key works until then, then EXPIRED_KEY.
      const rot2 = (
        await t.client.call('rotateAccountKey', {
          key: alice.session,
          params: { id: r.key.id },
          body: { overlap_seconds: 60 },
        })
      ).ok()
      assert.equal(rot2.previous.status, 'active')
      assert.ok(rot2.previous.expires_at)
      assert.equal((await t.client.call('getBalance', { key: r.api_key })).status, 200)
      assert.equal((await t.client.call('getBalance', { key: rot2.api_key })).status, 200)
      t.clock.offsetMs += 61_000
      try {
        problem(await t.client.call('getBalance', { key: r.api_key }), 401, 'EXPIRED_KEY')
        assert.equal((await t.client.call('getBalance', { key: rot2.api_key })).status, 200)
      } finally {
        t.clock.offsetMs -= 61_000
      }

      const revoked = await t.client.call('revokeAccountKey', {
        key: alice.session,
        params: { id: rot2.key.id },
      })
      assert.equal(revoked.ok().status, 'revoked')
      problem(await t.client.call('getBalance', { key: rot2.api_key }), 401, 'REVOKED_KEY')
      // Idempotent.
      assert.equal(
        (await t.client.call('revokeAccountKey', { key: alice.session, params: { id: rot2.key.id } })).status,
        200,
      )

      const audit = (await t.client.call('getAccountAudit', { key: alice.session })).ok()
      assert.deepEqual(
        audit.entries.map((e) => e.action),
        ['key.revoked', 'key.rotated', 'key.rotated', 'key.renamed', 'key.created'],
      )
      const first = audit.entries.at(-1)
      assert.deepEqual(first?.actor, { type: 'session', id: alice.email })
      assert.equal(first?.target, c.key.id)
      assert.equal(typeof first?.ip, 'string')
      assert.deepEqual(audit.entries[3]?.detail, { from: 'laptop', to: 'ci' })
      assert.equal(audit.entries[1]?.detail?.overlap_seconds, 60)
    })

    test('isolation: another account’s keys are 404 to every operation, and never listed', async () => {
      const aliceKey = (
        await t.client.call('createAccountKey', { key: alice.session, body: { environment: 'test' } })
      ).ok()
      for (const call of [
        () =>
          t.client.call('renameAccountKey', {
            key: bob.session,
            params: { id: aliceKey.key.id },
            body: { name: 'x' },
          }),
        () =>
          t.client.call('rotateAccountKey', { key: bob.session, params: { id: aliceKey.key.id }, body: {} }),
        () => t.client.call('revokeAccountKey', { key: bob.session, params: { id: aliceKey.key.id } }),
      ]) {
        const p = problem(await call(), 404, 'NOT_FOUND')
        // Same answer as for a key that does not exist at all.
        assert.match(String(p.detail), /has no API key/)
      }
      problem(
        await t.client.call('revokeAccountKey', { key: bob.session, params: { id: 'key_doesnotexist' } }),
        404,
        'NOT_FOUND',
      )
      assert.equal((await t.client.call('getBalance', { key: aliceKey.api_key })).status, 200)
      const bobKeys = (await t.client.call('listAccountKeys', { key: bob.session })).ok()
      assert.ok(bobKeys.keys.every((k) => k.id !== aliceKey.key.id))
      const bobKey = await t.key(bob.id)
      const viaKey = (await t.client.call('listAccountKeys', { key: bobKey })).ok()
      assert.equal(viaKey.account_id, bob.id)
      assert.ok(viaKey.keys.every((k) => k.id !== aliceKey.key.id))
      // Nothing was written to Alice's audit log by Bob's attempts.
      const audit = (await t.client.call('getAccountAudit', { key: alice.session, query: { limit: 1 } })).ok()
      assert.equal(audit.entries[0]?.action, 'key.created')
    })

    test('keys made by POST /auth/provision are audited like the others', async () => {
      const u = await user(0)
      const r = await t.client.call('provision', {
        key: u.session,
        body: { name: 'agent', environment: 'test' },
        headers: { 'x-forwarded-for': '203.0.113.8' },
      })
      assert.equal(r.status, 201, r.text)
      const audit = (await t.client.call('getAccountAudit', { key: u.session })).ok()
      assert.equal(audit.entries.length, 1)
      assert.equal(audit.entries[0]?.action, 'key.created')
      assert.equal(audit.entries[0]?.target, r.ok().key_id)
      assert.deepEqual(audit.entries[0]?.actor, { type: 'session', id: u.email })
    })

    test('changes need a session: an API key may only read', async () => {
      const key = await t.key(alice.id)
      problem(
        await t.client.call('createAccountKey', { key, body: { environment: 'live' } }),
        401,
        'INVALID_KEY',
      )
      problem(
        await t.client.call('updateAccountSettings', { key, body: { spend_cap_usd: 1 } }),
        401,
        'INVALID_KEY',
      )
      for (const op of [
        'getAccountUsage',
        'getAccountLedger',
        'getAccountSettings',
        'getAccountAudit',
      ] as const)
        assert.equal((await t.client.call(op, { key })).status, 200, op)
      problem(await t.client.call('getAccountSettings', { key: null }), 401, 'MISSING_CREDENTIALS')
      problem(await t.client.call('getAccountSettings', { key: 'not.a.jwt' }), 401, 'INVALID_KEY')
    })

    test('usage per day and capability counts requests, cache hits (free) and cost', async () => {
      const u = await user(5)
      const key = await t.key(u.id)
      const testKey = await t.key(u.id, { env: 'test' })
      for (let i = 0; i < 3; i++)
        assert.equal((await t.client.call('getMetrics', { key, params: { ticker: 'AAPL' } })).status, 200)
      assert.equal(
        (await t.client.call('getMetrics', { key: testKey, params: { ticker: 'AAPL' } })).status,
        200,
      )
      const usage = (await t.client.call('getAccountUsage', { key: u.session })).ok()
      const today = new Date(t.ctx.now()).toISOString().slice(0, 10)
      assert.equal(usage.to, today)
      assert.deepEqual(usage.days, [
        {
          date: today,
          capability: 'metrics',
          environment: 'live',
          requests: 3,
          cache_hits: 2,
          cost_usd: 0.001,
        },
        { date: today, capability: 'metrics', environment: 'test', requests: 1, cache_hits: 0, cost_usd: 0 },
      ])
      assert.deepEqual(usage.totals, { requests: 4, cache_hits: 2, cost_usd: 0.001 })
      // Another range: nothing.
      const old = (
        await t.client.call('getAccountUsage', { key, query: { from: '2020-01-01', to: '2020-01-31' } })
      ).ok()
      assert.deepEqual(old.days, [])
    })

    test('ledger: credits listed, debits grouped per day and capability; CSV export', async () => {
      const u = await user(2)
      const key = await t.key(u.id)
      for (const ticker of ['AAPL', 'AAPL', 'MSFT'])
        await t.client.call('getMetrics', {
          key,
          params: { ticker },
          headers: { 'cache-control': 'no-cache' },
        })
      const today = new Date(t.ctx.now()).toISOString().slice(0, 10)
      const l = (await t.client.call('getAccountLedger', { key: u.session })).ok()
      const charged = l.rows.filter((r) => r.kind === 'debit')
      assert.equal(charged.length, 1)
      assert.equal(charged[0]?.capability, 'metrics')
      assert.equal(charged[0]?.date, today)
      const n = charged[0]?.count ?? 0
      assert.ok(n >= 2, `${n} charged`)
      assert.equal(charged[0]?.amount_usd, -0.001 * n)
      const credit = l.rows.find((r) => r.kind === 'credit')
      assert.equal(credit?.amount_usd, 2)
      assert.equal(credit?.reference, 'opening-balance')
      assert.equal(l.totals.credits_usd, 2)
      assert.equal(l.totals.charged_requests, n)
      assert.equal(l.truncated, false)

      const csv = await t.client.call('getAccountLedger', { key: u.session, query: { format: 'csv' } })
      assert.equal(csv.status, 200, csv.text)
      assert.match(csv.headers['content-type'] ?? '', /^text\/csv/)
      assert.match(csv.headers['content-disposition'] ?? '', /attachment; filename="erm3-ledger-.*\.csv"/)
      const lines = csv.text.trim().split('\r\n')
      assert.equal(lines[0], 'date,kind,capability,count,amount_usd,reference,id,created_at')
      assert.equal(lines.length, 1 + l.rows.length)
      assert.ok(lines.some((x) => x.startsWith(`${today},debit,metrics,${n},`)))
      const byAccept = await t.client.call('getAccountLedger', { key, headers: { accept: 'text/csv' } })
      assert.match(byAccept.headers['content-type'] ?? '', /^text\/csv/)
      problem(
        await t.client.call('getAccountLedger', { key, query: { format: 'xml' } }),
        406,
        'NOT_ACCEPTABLE',
      )
    })

    test('monthly spend cap: 402 SPEND_CAP_REACHED with what to do; null removes it; audited', async () => {
      const u = await user(5)
      const key = await t.key(u.id)
      const s0 = (await t.client.call('getAccountSettings', { key: u.session })).ok()
      assert.equal(s0.spend_cap_usd, null)
      const set = (
        await t.client.call('updateAccountSettings', { key: u.session, body: { spend_cap_usd: 0.0015 } })
      ).ok()
      assert.equal(set.spend_cap_usd, 0.0015)
      const bypass = { 'cache-control': 'no-cache' }
      assert.equal(
        (await t.client.call('getMetrics', { key, params: { ticker: 'AAPL' }, headers: bypass })).status,
        200,
      )
      const before = await t.ctx.accounts.balance(u.id)
      const refused = await t.client.call('getMetrics', { key, params: { ticker: 'AAPL' }, headers: bypass })
      const p = problem(refused, 402, 'SPEND_CAP_REACHED')
      assert.equal(p.spend_cap_usd, 0.0015)
      assert.equal(p.month_spent_usd, 0.001)
      assert.equal(p.required_usd, 0.001)
      assert.match(String(p.detail), /Raise or remove the cap/)
      assert.match(String(p.resets_at), /^\d{4}-\d{2}-01T00:00:00\.000Z$/)
      assert.deepEqual(await t.ctx.accounts.balance(u.id), before)
      // A cached repeat is free and still served.
      assert.equal((await t.client.call('getMetrics', { key, params: { ticker: 'AAPL' } })).status, 200)
      // Test keys are never capped.
      assert.equal(
        (
          await t.client.call('getMetrics', {
            key: await t.key(u.id, { env: 'test' }),
            params: { ticker: 'AAPL' },
            headers: bypass,
          })
        ).status,
        200,
      )
      const s1 = (await t.client.call('getAccountSettings', { key })).ok()
      assert.equal(s1.month_spent_usd, 0.001)
      await t.client.call('updateAccountSettings', { key: u.session, body: { spend_cap_usd: null } })
      assert.equal(
        (await t.client.call('getMetrics', { key, params: { ticker: 'AAPL' }, headers: bypass })).status,
        200,
      )
      const audit = (await t.client.call('getAccountAudit', { key })).ok()
      // Also in the log: the two keys the operator CLI made for this test (actor operator).
      assert.deepEqual(
        audit.entries.filter((e) => e.actor.type === 'operator').map((e) => [e.action, e.actor.id]),
        [
          ['key.created', 'cli'],
          ['key.created', 'cli'],
        ],
      )
      assert.deepEqual(
        audit.entries.filter((e) => e.actor.type !== 'operator').map((e) => [e.action, e.detail]),
        [
          ['spend_cap.set', { from_usd: 0.0015, to_usd: null }],
          ['spend_cap.set', { from_usd: null, to_usd: 0.0015 }],
        ],
      )
    })

    test('spend cap under concurrent calls: never overshot, the rest refused with SPEND_CAP_REACHED', async () => {
      const u = await user(5)
      await t.client.call('updateAccountSettings', { key: u.session, body: { spend_cap_usd: 0.005 } })
      const keys = await Promise.all([1, 2, 3].map(() => t.key(u.id)))
      const results = await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          t.client.call('getMetrics', {
            key: keys[i % keys.length] as string,
            params: { ticker: 'AAPL' },
            headers: { 'cache-control': 'no-cache' },
          }),
        ),
      )
      const codes = results.map((r) => (r.status === 200 ? 'ok' : String((r.json as { code?: string }).code)))
      assert.equal(codes.filter((c) => c === 'ok').length, 5, codes.join(' '))
      assert.deepEqual([...new Set(codes.filter((c) => c !== 'ok'))], ['SPEND_CAP_REACHED'])
      const s = (await t.client.call('getAccountSettings', { key: u.session })).ok()
      assert.equal(s.month_spent_usd, 0.005)
      assert.deepEqual(await t.ctx.accounts.balance(u.id), { balanceMicros: 4_995_000, reservedMicros: 0 })
    })

    test('bad input is a 4xx problem, never a 500', async () => {
      const s = alice.session
      const k = (await t.client.call('createAccountKey', { key: s, body: { environment: 'live' } })).ok().key
      const cases: [() => Promise<CallResult<OperationId>>, number][] = [
        [() => t.client.call('createAccountKey', { key: s, body: { environment: 'prod' as 'live' } }), 400],
        [() => t.client.call('createAccountKey', { key: s, body: { environment: 'live', name: '' } }), 400],
        [
          () =>
            t.client.call('renameAccountKey', {
              key: s,
              params: { id: k.id },
              body: { name: 'x'.repeat(101) },
            }),
          400,
        ],
        [
          () => t.client.call('renameAccountKey', { key: s, params: { id: 'bad id!' }, body: { name: 'x' } }),
          400,
        ],
        [
          () =>
            t.client.call('rotateAccountKey', {
              key: s,
              params: { id: k.id },
              body: { overlap_seconds: 10 ** 9 },
            }),
          400,
        ],
        [
          () =>
            t.client.call('rotateAccountKey', {
              key: s,
              params: { id: k.id },
              body: { overlap_seconds: -1 },
            }),
          400,
        ],
        [() => t.client.call('updateAccountSettings', { key: s, body: { spend_cap_usd: -1 } }), 400],
        [
          () =>
            t.client.call('updateAccountSettings', {
              key: s,
              body: { spend_cap_usd: 'lots' as unknown as number },
            }),
          400,
        ],
        [
          () => t.client.call('getAccountUsage', { key: s, query: { from: '2026-02-01', to: '2026-01-01' } }),
          400,
        ],
        [
          () => t.client.call('getAccountUsage', { key: s, query: { from: '2020-01-01', to: '2026-01-01' } }),
          400,
        ],
        [() => t.client.call('getAccountUsage', { key: s, query: { from: 'yesterday' } }), 400],
        [() => t.client.call('getAccountLedger', { key: s, query: { limit: 0 } }), 400],
        [() => t.client.call('getAccountAudit', { key: s, query: { limit: 5000 } }), 400],
      ]
      for (const [call, status] of cases) {
        const r = await call()
        assert.equal(r.status, status, r.text)
        assert.match(r.headers['content-type'] ?? '', /^application\/problem\+json/)
      }
      // Unchanged by the refusals.
      const still = (await t.client.call('listAccountKeys', { key: s })).ok().keys.find((x) => x.id === k.id)
      assert.equal(still?.status, 'active')
    })
  })
}
