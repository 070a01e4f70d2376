import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { buildOpenApi } from '../../src/contract/openapi.ts'
import { WEBHOOK_OPS } from '../../src/contract/ops/webhooks.ts'
import { toolCatalogue } from '../../src/contract/tools.ts'
import { WEBHOOK_EVENT_NAMES } from '../../src/contract/webhook-events.ts'
import { hashKey } from '../../src/services/identity/keys.ts'
import { decryptSecret } from '../../src/services/webhooks/crypto.ts'
import {
  announceServedModel,
  createDispatcher,
  type Dispatcher,
} from '../../src/services/webhooks/dispatcher.ts'
import { WEBHOOK_EVENTS } from '../../src/store/accounts/webhooks-types.ts'
import {
  BACKEND_PAIRS,
  type BackendPair,
  sessionApi,
  startTestApp,
  type TestApp,
} from '../helpers/test-app.ts'
import { startReceiver, verifySignature } from '../helpers/webhook-receiver.ts'
import { stocks } from './analytics-helpers.ts'

// biome-ignore lint/suspicious/noExplicitAny: test bodies are read loosely
type Json = Record<string, any>

/**
 * Webhooks and balance alerts through the HTTP stack on both backend pairs:
 * subscriptions scoped to their account, signed deliveries checked by an independent verifier,
 * retries on the service clock, 24 h → disabled + e-mail, the log and re-delivery, and events
 * enqueued by the store in the transaction of their cause.
 */
function webhookSuite(backends: BackendPair) {
  describe(`webhooks: ${backends.name}`, { skip: backends.skip ?? undefined }, () => {
    let t: TestApp
    let rx: Awaited<ReturnType<typeof startReceiver>>
    let dispatcher: Dispatcher
    let n = 0
    before(async () => {
      // The receivers listen on loopback: the operator's development opt-in lets webhooks reach them.
      t = await startTestApp({ ...backends, env: { ERM3_WEBHOOK_ALLOW_LOOPBACK: 'true' } })
      t.ctx.secrets.webhookKey = randomBytes(32).toString('base64url')
      rx = await startReceiver()
      dispatcher = createDispatcher(t.ctx, { random: () => 0.5, timeoutMs: 2000 })
    })
    after(async () => {
      await dispatcher?.stop()
      await rx?.close()
      await t?.close()
    })

    async function user(balanceUsd = 0) {
      const email = `wh${++n}-${randomBytes(3).toString('hex')}@example.com`
      const id = await t.account(balanceUsd, email)
      return { id, email }
    }
    const api = sessionApi(() => t)
    async function subscribe(who: { id: string; email: string }, events: string[], url = rx.url) {
      const r = await api(who, 'POST', '/account/webhooks', { url, events })
      assert.equal(r.status, 201, JSON.stringify(r.json))
      return r.json as Json
    }
    const deliveries = async (who: { id: string; email: string }, subId: string) => {
      const r = await api(who, 'GET', `/account/webhooks/${subId}/deliveries`)
      assert.equal(r.status, 200, JSON.stringify(r.json))
      return r.json?.deliveries as Json[]
    }
    const lastReceived = () => {
      const r = rx.received.at(-1)
      assert.ok(r, 'nothing received')
      return r
    }
    const drain = async () => {
      while ((await dispatcher.runOnce()) > 0) {}
    }

    test('CRUD across two accounts: one never sees or touches the other’s subscriptions (404)', async () => {
      const a = await user()
      const b = await user()
      const sub = await subscribe(a, ['key.created', 'balance.low'])
      assert.match(sub.id, /^whs_/)
      assert.match(sub.secret, /^whsec_/)
      assert.deepEqual(sub.events, ['key.created', 'balance.low'])
      assert.equal(sub.enabled, true)
      const list = await api(a, 'GET', '/account/webhooks')
      assert.equal(list.json?.subscriptions.length, 1)
      assert.equal(list.json?.subscriptions[0].secret, undefined, 'the secret is shown once')
      assert.equal((await api(a, 'GET', `/account/webhooks/${sub.id}`)).json?.secret, undefined)
      // b: empty list, and every operation on a's subscription is 404
      assert.deepEqual((await api(b, 'GET', '/account/webhooks')).json?.subscriptions, [])
      for (const [m, u, body] of [
        ['GET', `/account/webhooks/${sub.id}`],
        ['POST', `/account/webhooks/${sub.id}`, { enabled: false }],
        ['DELETE', `/account/webhooks/${sub.id}`],
        ['POST', `/account/webhooks/${sub.id}/rotate-secret`],
        ['POST', `/account/webhooks/${sub.id}/test`],
        ['GET', `/account/webhooks/${sub.id}/deliveries`],
        ['POST', `/account/webhooks/${sub.id}/deliveries/whd_x/redeliver`],
      ] as [string, string, unknown?][]) {
        const r = await api(b, m, u, body)
        assert.equal(r.status, 404, `${m} ${u}: ${JSON.stringify(r.json)}`)
        assert.equal(r.json?.code, 'NOT_FOUND')
      }
      // still intact for a
      assert.equal((await api(a, 'GET', `/account/webhooks/${sub.id}`)).json?.enabled, true)
      const upd = await api(a, 'POST', `/account/webhooks/${sub.id}`, {
        events: ['key.revoked'],
        enabled: false,
      })
      assert.equal(upd.status, 200)
      assert.deepEqual(upd.json?.events, ['key.revoked'])
      assert.equal(upd.json?.enabled, false)
      assert.equal(upd.json?.disabled_reason, 'disabled by the account')
      const del = await api(a, 'DELETE', `/account/webhooks/${sub.id}`)
      assert.deepEqual(del.json, { id: sub.id, deleted: true })
      assert.equal((await api(a, 'GET', `/account/webhooks/${sub.id}`)).status, 404)
      // Every change is in a's audit log, with the session and the client address; none in b's.
      const log = (await api(a, 'GET', '/account/audit')).json?.entries as {
        action: string
        target: string | null
        actor: { type: string; id: string }
        ip: string | null
      }[]
      const mine = log.filter((e) => e.target === sub.id).map((e) => e.action)
      assert.deepEqual(mine.sort(), ['webhook.created', 'webhook.deleted', 'webhook.updated'])
      assert.ok(log.every((e) => e.actor.type === 'session' && e.actor.id === a.email && e.ip !== null))
      const other = (await api(b, 'GET', '/account/audit')).json?.entries as { target: string | null }[]
      assert.ok(!other.some((e) => e.target === sub.id))
      await api(a, 'POST', '/account/balance-alert', { threshold_usd: 3 })
      const alertLog = (await api(a, 'GET', '/account/audit')).json?.entries as { action: string }[]
      assert.ok(alertLog.some((e) => e.action === 'balance_alert.set'))
      // no session → 401; a key is not a session
      assert.equal((await api(null, 'GET', '/account/webhooks')).status, 401)
      const key = await t.key(a.id)
      const withKey = await t.app.fastify.inject({
        method: 'GET',
        url: '/account/webhooks',
        headers: { authorization: `Bearer ${key}` },
      })
      assert.equal(withKey.statusCode, 401)
    })

    test('URL and event rules: https, http only to loopback with the opt-in, known events', async () => {
      const a = await user()
      const bad = [
        { url: 'ftp://example.com/x', events: ['key.created'] },
        { url: 'http://example.com/hook', events: ['key.created'] },
        { url: 'https://user:pw@example.com/hook', events: ['key.created'] },
        { url: 'not a url', events: ['key.created'] },
        { url: 'https://example.com/hook', events: ['key.exploded'] },
        { url: 'https://example.com/hook', events: [] },
        { url: 'https://example.com/hook' },
        { url: 'https://example.com/hook', events: ['key.created'], extra: 1 },
      ]
      for (const body of bad) {
        const r = await api(a, 'POST', '/account/webhooks', body)
        assert.equal(r.status, 400, `${JSON.stringify(body)} → ${r.status} ${JSON.stringify(r.json)}`)
        assert.equal(r.json?.code, 'INVALID_REQUEST')
      }
      assert.equal(
        (
          await api(a, 'POST', '/account/webhooks', {
            url: 'https://example.com/h',
            events: ['model.updated'],
          })
        ).status,
        201,
      )
      assert.equal(
        (await api(a, 'POST', '/account/webhooks', { url: 'http://localhost:9/h', events: ['key.created'] }))
          .status,
        201,
      )
      // private targets stay refused with the opt-in (test/security/webhooks.test.ts has every range)
      for (const url of ['https://10.1.2.3/h', 'http://10.1.2.3/h', 'https://169.254.169.254/h']) {
        const r = await api(a, 'POST', '/account/webhooks', { url, events: ['key.created'] })
        assert.equal(r.status, 400, `${url} → ${r.status}`)
        assert.match(r.json?.detail, /public address/)
      }
      // bad threshold
      assert.equal((await api(a, 'POST', '/account/balance-alert', { threshold_usd: -1 })).status, 400)
      assert.equal((await api(a, 'POST', '/account/balance-alert', { threshold_usd: 'x' })).status, 400)
      // no key configured → 503 with what to do
      const k = t.ctx.secrets.webhookKey
      t.ctx.secrets.webhookKey = null
      try {
        const r = await api(a, 'POST', '/account/webhooks', {
          url: 'https://example.com/h',
          events: ['key.created'],
        })
        assert.equal(r.status, 503)
        assert.match(r.json?.detail, /ERM3_WEBHOOK_KEY/)
      } finally {
        t.ctx.secrets.webhookKey = k
      }
    })

    test('the secret is stored encrypted (AES-256-GCM), bound to its subscription', async () => {
      const a = await user()
      const sub = await subscribe(a, ['key.created'])
      const raw = await t.ctx.accounts.webhooks().subscriptionSecret(a.id, sub.id)
      assert.ok(raw)
      assert.ok(!raw.includes(sub.secret) && !raw.includes(sub.secret.slice(6)), 'no plaintext in the row')
      assert.match(raw, /^v1:/)
      assert.equal(decryptSecret(t.ctx.secrets.webhookKey as string, sub.id, raw), sub.secret)
      assert.throws(
        () => decryptSecret(t.ctx.secrets.webhookKey as string, 'whs_other', raw),
        /does not decrypt/,
      )
      assert.throws(
        () => decryptSecret(randomBytes(32).toString('base64url'), sub.id, raw),
        /does not decrypt/,
      )
    })

    test('test event: signed JSON POST verified independently; rotate; the log; re-delivery', async () => {
      rx.status = 200
      const a = await user()
      const sub = await subscribe(a, ['key.created'])
      const queued = await api(a, 'POST', `/account/webhooks/${sub.id}/test`)
      assert.equal(queued.status, 202, JSON.stringify(queued.json))
      assert.equal(queued.json?.status, 'pending')
      const before = rx.received.length
      await drain()
      assert.equal(rx.received.length, before + 1)
      const got = lastReceived()
      assert.equal(got.headers['content-type'], 'application/json')
      assert.equal(got.headers['x-erm3-event'], 'webhook.test')
      assert.equal(got.headers['x-erm3-delivery'], queued.json?.id)
      const nowS = Math.floor(t.ctx.now() / 1000)
      assert.deepEqual(
        verifySignature(sub.secret, got.headers['x-erm3-signature'] as string, got.body, nowS),
        { ok: true },
      )
      // a replay older than 5 minutes is rejectable: the timestamp is signed
      assert.equal(
        verifySignature(sub.secret, got.headers['x-erm3-signature'] as string, got.body, nowS + 301).why,
        'stale',
      )
      assert.equal(
        verifySignature('whsec_wrong', got.headers['x-erm3-signature'] as string, got.body, nowS).ok,
        false,
      )
      assert.equal(
        verifySignature(sub.secret, got.headers['x-erm3-signature'] as string, `${got.body} `, nowS).ok,
        false,
      )
      const body = JSON.parse(got.body) as Json
      assert.equal(body.type, 'webhook.test')
      assert.equal(body.account_id, a.id)
      assert.match(body.id, /^evt_/)
      assert.deepEqual(body.data, { subscription_id: sub.id })
      // the log
      let log = await deliveries(a, sub.id)
      assert.equal(log.length, 1)
      assert.equal(log[0]?.status, 'delivered')
      assert.equal(log[0]?.attempts, 1)
      assert.equal(log[0]?.response_code, 200)
      assert.equal(typeof log[0]?.latency_ms, 'number')
      assert.equal(log[0]?.next_attempt_at, null)
      assert.equal(log[0]?.log.length, 1)
      assert.equal(log[0]?.log[0].ok, true)
      // rotate: the new secret signs, the old one no longer does
      const rotated = await api(a, 'POST', `/account/webhooks/${sub.id}/rotate-secret`)
      assert.equal(rotated.status, 200)
      assert.notEqual(rotated.json?.secret, sub.secret)
      await api(a, 'POST', `/account/webhooks/${sub.id}/test`)
      await drain()
      const second = lastReceived()
      const sig = second.headers['x-erm3-signature'] as string
      assert.equal(
        verifySignature(rotated.json?.secret, sig, second.body, Math.floor(t.ctx.now() / 1000)).ok,
        true,
      )
      assert.equal(verifySignature(sub.secret, sig, second.body, Math.floor(t.ctx.now() / 1000)).ok, false)
      // re-delivery of the first: a new delivery id, the same event and body
      const re = await api(a, 'POST', `/account/webhooks/${sub.id}/deliveries/${queued.json?.id}/redeliver`)
      assert.equal(re.status, 202, JSON.stringify(re.json))
      assert.equal(re.json?.redelivery_of, queued.json?.id)
      assert.notEqual(re.json?.id, queued.json?.id)
      await drain()
      const third = lastReceived()
      assert.equal(third.headers['x-erm3-delivery'], re.json?.id)
      assert.equal(third.body, got.body, 'the same event body')
      log = await deliveries(a, sub.id)
      assert.equal(log.length, 3)
      assert.equal(log[0]?.id, re.json?.id, 'newest first')
      assert.equal(
        (await api(a, 'POST', `/account/webhooks/${sub.id}/deliveries/whd_nope/redeliver`)).status,
        404,
      )
    })

    test('the documented recipes (Node and Python, /docs/webhooks) verify a real delivery, reject a stale one', async () => {
      const doc = await t.app.fastify.inject({ method: 'GET', url: '/docs/webhooks' })
      assert.equal(doc.statusCode, 200)
      assert.match(doc.headers['content-type'] as string, /^text\/markdown/)
      const js = /```js\n([\s\S]*?)```/.exec(doc.body)?.[1]
      const py = /```python\n([\s\S]*?)```/.exec(doc.body)?.[1]
      assert.ok(js && py, 'both snippets')
      rx.status = 200
      const a = await user()
      const sub = await subscribe(a, ['key.created'])
      await api(a, 'POST', `/account/webhooks/${sub.id}/test`)
      await drain()
      const r = lastReceived()
      const header = r.headers['x-erm3-signature'] as string
      const now = Math.floor(t.ctx.now() / 1000)
      const verifyJs = new Function(
        'createHmac',
        'timingSafeEqual',
        `${js.replace(/^import .*$/m, '')}\nreturn verifyErm3Signature`,
      )(createHmac, timingSafeEqual) as (s: string, h: string, b: string, n: number) => boolean
      assert.equal(verifyJs(sub.secret, header, r.body, now), true)
      assert.equal(verifyJs(sub.secret, header, r.body, now + 301), false, 'older than 5 minutes')
      assert.equal(verifyJs(sub.secret, header, r.body.replace('webhook.test', 'webhook.tesT'), now), false)
      const dir = mkdtempSync(join(tmpdir(), 'erm3-py-'))
      try {
        const file = join(dir, 'verify.py')
        writeFileSync(
          file,
          `${py}\nimport json, sys\na = json.load(sys.stdin)\nb = a["body"].encode()\n` +
            `print(json.dumps([verify_erm3_signature(a["secret"], a["header"], b, a["now"]), ` +
            `verify_erm3_signature(a["secret"], a["header"], b, a["now"] + 301), ` +
            `verify_erm3_signature("whsec_other", a["header"], b, a["now"])]))\n`,
        )
        const out = execFileSync('python3', [file], {
          input: JSON.stringify({ secret: sub.secret, header, body: r.body, now }),
        })
        assert.deepEqual(JSON.parse(String(out)), [true, false, false])
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })

    test('retries: exponential backoff with jitter on the service clock, same delivery id', async () => {
      rx.status = 500
      const a = await user()
      const sub = await subscribe(a, ['key.created'])
      const q = (await api(a, 'POST', `/account/webhooks/${sub.id}/test`)).json as Json
      const start = rx.received.length
      // The next attempt is due `base × jitter` after the attempt, made between these two readings
      // of the service clock (a bound that a busy machine cannot break, unlike ±1 s of the end).
      const due = (at: number, from: number, to: number, base: number) =>
        at >= from + base - 5 && at <= to + base + 5
      try {
        let from = t.ctx.now()
        await drain()
        let log = await deliveries(a, sub.id)
        let to = t.ctx.now()
        assert.equal(log[0]?.status, 'pending')
        assert.equal(log[0]?.attempts, 1)
        assert.equal(log[0]?.response_code, 500)
        assert.equal(log[0]?.error, 'HTTP 500')
        const next1 = Date.parse(log[0]?.next_attempt_at)
        // base 10 s, jitter factor 0.8 + 0.4 × 0.5 = 1
        assert.ok(due(next1, from, to, 10_000), `${next1 - from} after the attempt began`)
        assert.equal(await dispatcher.runOnce(), 0, 'not due yet')
        t.clock.offsetMs += 11_000
        from = t.ctx.now()
        await drain()
        log = await deliveries(a, sub.id)
        to = t.ctx.now()
        assert.equal(log[0]?.attempts, 2)
        const next2 = Date.parse(log[0]?.next_attempt_at)
        assert.ok(due(next2, from, to, 20_000), `${next2 - from} after the attempt began`)
        rx.status = 200
        t.clock.offsetMs += 21_000
        await drain()
        log = await deliveries(a, sub.id)
        assert.equal(log[0]?.status, 'delivered')
        assert.equal(log[0]?.attempts, 3)
        assert.deepEqual(
          log[0]?.log.map((x: Json) => [x.attempt, x.ok, x.response_code]),
          [
            [1, false, 500],
            [2, false, 500],
            [3, true, 200],
          ],
        )
        const ids = rx.received.slice(start).map((r) => r.headers['x-erm3-delivery'])
        assert.deepEqual(ids, [q.id, q.id, q.id])
        // a success clears the failure run
        assert.equal((await api(a, 'GET', `/account/webhooks/${sub.id}`)).json?.failing_since, null)
      } finally {
        rx.status = 200
      }
    })

    test('failing for 24 h: the delivery fails, the subscription is disabled and the account e-mailed', async () => {
      rx.status = 503
      const a = await user()
      const sub = await subscribe(a, ['key.created'])
      const q = (await api(a, 'POST', `/account/webhooks/${sub.id}/test`)).json as Json
      try {
        await drain()
        for (let i = 0; i < 40; i++) {
          t.clock.offsetMs += 3600_000
          await drain()
          const [d] = await deliveries(a, sub.id)
          if (d?.status !== 'pending') break
        }
        const [d] = await deliveries(a, sub.id)
        assert.equal(d?.id, q.id)
        assert.equal(d?.status, 'failed')
        assert.ok(d.attempts > 5, `${d.attempts} attempts`)
        const s = (await api(a, 'GET', `/account/webhooks/${sub.id}`)).json as Json
        assert.equal(s.enabled, false)
        assert.match(s.disabled_reason, /failing since/)
        await drain()
        const mail = t.outbox().filter((m) => m.to === a.email)
        assert.equal(mail.length, 1)
        assert.match(mail[0]?.subject ?? '', /webhook subscription was disabled/)
        assert.match(mail[0]?.text ?? '', new RegExp(sub.id))
        // disabled: new events are not even enqueued; test/redeliver say why
        assert.equal((await api(a, 'POST', `/account/webhooks/${sub.id}/test`)).status, 409)
        await t.key(a.id)
        assert.equal((await deliveries(a, sub.id)).length, 1)
        // re-enabled: the failure run is cleared
        const on = await api(a, 'POST', `/account/webhooks/${sub.id}`, { enabled: true })
        assert.equal(on.json?.enabled, true)
        assert.equal(on.json?.failing_since, null)
        assert.equal(on.json?.disabled_reason, null)
      } finally {
        rx.status = 200
      }
    })

    test('key.created, key.revoked, balance.topped_up: enqueued with the change, nothing for a rolled-back one', async () => {
      rx.status = 200
      const a = await user()
      const other = await user()
      const sub = await subscribe(a, ['key.created', 'key.revoked', 'balance.topped_up'])
      const quiet = await subscribe(other, ['model.updated'])
      const prov = await api(a, 'POST', '/auth/provision', { environment: 'live', name: 'ci' })
      assert.equal(prov.status, 201, JSON.stringify(prov.json))
      const keyId = prov.json?.key_id as string
      assert.ok(await t.ctx.accounts.revokeKey(keyId, t.ctx.now()))
      assert.ok(await t.ctx.accounts.revokeKey(keyId, t.ctx.now()), 'revoking again: no second event')
      await t.ctx.accounts.credit(
        a.id,
        { kind: 'topup', amountMicros: 12_340_000, reference: 'pay_1' },
        t.ctx.now(),
      )
      const dup = await t.ctx.accounts.credit(
        a.id,
        { kind: 'topup', amountMicros: 12_340_000, reference: 'pay_1' },
        t.ctx.now(),
      )
      assert.equal(dup.duplicate, true)
      await t.ctx.accounts.credit(
        a.id,
        { kind: 'credit', amountMicros: 1_000_000, reference: 'promo' },
        t.ctx.now(),
      )
      // rolled back: a key whose hash already exists, a top-up of an account that does not exist
      await assert.rejects(
        t.ctx.accounts.insertKey({
          id: 'key_dupe',
          accountId: a.id,
          kind: 'agent',
          environment: 'live',
          prefix: 'x',
          name: null,
          tier: 'default',
          hash: hashKey(t.ctx.secrets.pepper, prov.json?.api_key as string),
          createdAt: t.ctx.now(),
          expiresAt: null,
          clientId: null,
        }),
      )
      await assert.rejects(
        t.ctx.accounts.credit('acct_nope', { kind: 'topup', amountMicros: 1, reference: 'x' }, t.ctx.now()),
      )
      const log = await deliveries(a, sub.id)
      assert.deepEqual(log.map((d) => d.event).sort(), ['balance.topped_up', 'key.created', 'key.revoked'])
      assert.deepEqual(await deliveries(other, quiet.id), [])
      const start = rx.received.length
      await drain()
      const bodies = Object.fromEntries(
        rx.received.slice(start).map((r) => [r.headers['x-erm3-event'], JSON.parse(r.body) as Json]),
      )
      assert.equal(bodies['key.created']?.data.key_id, keyId)
      assert.equal(bodies['key.created']?.data.name, 'ci')
      assert.match(bodies['key.created']?.data.created_at, /^\d{4}-\d\d-\d\dT/)
      assert.equal(bodies['key.revoked']?.data.key_id, keyId)
      assert.equal(bodies['balance.topped_up']?.data.amount_usd, 12.34)
      assert.equal(bodies['balance.topped_up']?.data.balance_usd, 12.34)
      assert.equal(bodies['balance.topped_up']?.data.reference, 'pay_1')
      for (const r of rx.received.slice(start))
        assert.equal(
          verifySignature(
            sub.secret,
            r.headers['x-erm3-signature'] as string,
            r.body,
            Math.floor(t.ctx.now() / 1000),
          ).ok,
          true,
        )
    })

    test('balance.low: one event and one e-mail per crossing, re-armed by a top-up; threshold via the API', async () => {
      const a = await user(1.5)
      const sub = await subscribe(a, ['balance.low'])
      const alert = await api(a, 'GET', '/account/balance-alert')
      assert.deepEqual(alert.json, { threshold_usd: 1, armed: true })
      const debit = async (micros: number) => {
        const r = await t.ctx.accounts.reserve(a.id, micros, t.ctx.now())
        assert.ok(r.ok)
        await t.ctx.accounts.settle(
          r.reservationId,
          {
            amountMicros: micros,
            requestId: `req_${randomBytes(4).toString('hex')}`,
            capability: 'metrics',
            keyId: null,
          },
          t.ctx.now(),
        )
      }
      await debit(400_000) // 1.5 → 1.1: above
      assert.equal((await deliveries(a, sub.id)).length, 0)
      await Promise.all([debit(200_000), debit(100_000), debit(100_000)]) // → 0.7: one crossing, concurrent settles
      await debit(100_000) // 0.6: no second alert
      let log = await deliveries(a, sub.id)
      assert.equal(log.length, 1)
      assert.equal(log[0]?.event, 'balance.low')
      assert.equal((await api(a, 'GET', '/account/balance-alert')).json?.armed, false)
      // a top-up re-arms
      await t.ctx.accounts.credit(
        a.id,
        { kind: 'topup', amountMicros: 1_000_000, reference: 'p2' },
        t.ctx.now(),
      )
      assert.equal((await api(a, 'GET', '/account/balance-alert')).json?.armed, true)
      await debit(700_000) // 1.6 → 0.9: the second crossing
      log = await deliveries(a, sub.id)
      assert.equal(log.length, 2)
      const start = rx.received.length
      await drain()
      const lows = rx.received.slice(start).map((r) => JSON.parse(r.body) as Json)
      assert.equal(lows.length, 2)
      // The first crossing's balance depends on how the concurrent settles were grouped (0.7–0.9).
      for (const b of lows) {
        assert.equal(b.type, 'balance.low')
        assert.equal(b.data.threshold_usd, 1)
        assert.ok(b.data.balance_usd >= 0.7 && b.data.balance_usd <= 0.9, JSON.stringify(b.data))
      }
      assert.ok(lows.some((b) => b.data.balance_usd === 0.9))
      const mail = t.outbox().filter((m) => m.to === a.email)
      assert.equal(mail.length, 2)
      assert.match(mail[0]?.subject ?? '', /balance is below 1 USD/)
      // the threshold is the account's: 5 USD now, armed
      const set = await api(a, 'POST', '/account/balance-alert', { threshold_usd: 5 })
      assert.deepEqual(set.json, { threshold_usd: 5, armed: true })
      await t.ctx.accounts.credit(
        a.id,
        { kind: 'topup', amountMicros: 5_000_000, reference: 'p3' },
        t.ctx.now(),
      )
      await debit(1_000_000) // 5.9 → 4.9
      assert.equal((await deliveries(a, sub.id)).filter((d) => d.event === 'balance.low').length, 3)
    })

    test('balance.low through a metered request: the crossing debit of GET /metrics enqueues it', async () => {
      const a = await user(1.0005)
      const sub = await subscribe(a, ['balance.low'])
      const key = await t.key(a.id)
      const call = () =>
        t.client.call('getMetrics', {
          key,
          params: { ticker: 'AAPL' },
          headers: { 'cache-control': 'no-cache' },
        })
      const first = await call() // 1.0005 → 0.9995: crosses 1.00
      assert.equal(first.status, 200, first.text)
      assert.equal((await call()).status, 200) // 0.9985: no second alert
      const log = await deliveries(a, sub.id)
      assert.deepEqual(
        log.map((d) => [d.event, d.status]),
        [['balance.low', 'pending']],
      )
    })

    test('model.updated: once per data_as_of, across nodes', async () => {
      const a = await user()
      const sub = await subscribe(a, ['model.updated'])
      const first = await announceServedModel(t.ctx)
      // The fixture store may have been announced by an earlier test run on this database: at most once.
      const again = await announceServedModel(t.ctx)
      assert.equal(again, false)
      const other = t.anotherStore()
      try {
        const live = t.ctx.models.peek('live')
        assert.ok(live)
        assert.equal(await other.webhooks().recordModelBuild(live.dataAsOf, 'x', t.ctx.now()), false)
        assert.equal(await other.webhooks().recordModelBuild('2099-01-02', 'v-next', t.ctx.now()), true)
        assert.equal(await other.webhooks().recordModelBuild('2099-01-02', 'v-next', t.ctx.now()), false)
      } finally {
        await other.close()
      }
      const log = await deliveries(a, sub.id)
      assert.equal(log.length, first ? 2 : 1)
      const start = rx.received.length
      await drain()
      const types = rx.received.slice(start).map((r) => JSON.parse(r.body) as Json)
      assert.ok(types.some((b) => b.type === 'model.updated' && b.data.data_as_of === '2099-01-02'))
    })

    test('batch.completed: one signed event per answered batch, with counts, cost and failures', async () => {
      rx.status = 200
      const a = await user(5)
      const other = await user(5)
      const key = await t.key(a.id)
      const sub = await subscribe(a, ['batch.completed'])
      await subscribe(other, ['batch.completed'])
      const [s1, s2, s3] = stocks(t.ctx.models.store('live'), 3)
      assert.ok(s1 && s2 && s3)
      // Four distinct positions (a padded lower-case repeat counts once), one unknown.
      const tickers = [s1.ticker, s2.ticker, ` ${s1.ticker.toLowerCase()} `, 'ZZZZQ', s3.ticker]
      const batch = async () => {
        const r = await t.app.fastify.inject({
          method: 'POST',
          url: '/batch/lstar',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          payload: JSON.stringify({ tickers }),
        })
        assert.equal(r.statusCode, 200, r.body)
        return r.json() as Json
      }
      const received = async () => {
        const start = rx.received.length
        await drain()
        return rx.received.slice(start).filter((r) => r.headers['x-erm3-event'] === 'batch.completed')
      }
      await received() // whatever earlier tests left in the outbox
      const first = await batch()
      const got = await received()
      assert.equal(got.length, 1, 'exactly one event, to the caller’s subscription only')
      const ev = got[0] as (typeof got)[number]
      // The signature as a client checks it: HMAC-SHA256(secret, t + "." + raw body), hex, in time.
      const sig = Object.fromEntries(
        String(ev.headers['x-erm3-signature'])
          .split(',')
          .map((kv) => kv.split('=', 2) as [string, string]),
      )
      assert.ok(Math.abs(Number(sig.t) - t.ctx.now() / 1000) < 300)
      const mac = createHmac('sha256', sub.secret).update(`${sig.t}.${ev.body}`).digest()
      assert.ok(timingSafeEqual(mac, Buffer.from(String(sig.v1), 'hex')), 'signature verifies')
      const body = JSON.parse(ev.body) as Json
      assert.equal(body.type, 'batch.completed')
      assert.equal(body.account_id, a.id)
      // 3 tickers answered at 0.005 USD each (above the 0.01 minimum), the unknown one free.
      const expectedCost = 3 * 0.005
      assert.equal(first._agent.cost_usd, expectedCost)
      assert.deepEqual(body.data, {
        operation: 'batchLstar',
        request_id: first._agent.request_id,
        data_as_of: first._metadata.data_as_of,
        cache_status: 'MISS',
        positions: 4,
        positions_ok: 3,
        positions_failed: 1,
        cost_usd: expectedCost,
        failures: [{ ticker: 'ZZZZQ', code: 'TICKER_NOT_FOUND' }],
      })
      // The same batch again: a free cached answer, and its own event with the same failures.
      const again = await batch()
      const hit = await received()
      assert.equal(hit.length, 1)
      const hitData = (JSON.parse((hit[0] as (typeof hit)[number]).body) as Json).data
      assert.equal(hitData.cache_status, 'HIT')
      assert.equal(hitData.cost_usd, 0)
      assert.equal(hitData.request_id, again._agent.request_id)
      assert.deepEqual(hitData.failures, [{ ticker: 'ZZZZQ', code: 'TICKER_NOT_FOUND' }])
      // A batch that fails as a whole (404, no charge) announces nothing.
      const none = await t.app.fastify.inject({
        method: 'POST',
        url: '/batch/analyze',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ tickers: ['ZZZZQ'] }),
      })
      assert.equal(none.statusCode, 404)
      assert.equal((await received()).length, 0)
    })
  })
}

for (const b of BACKEND_PAIRS) webhookSuite(b)

describe('webhooks in the contract', () => {
  test('OpenAPI: webhook payloads are components and the 3.1 `webhooks` map lists every event', () => {
    const doc = buildOpenApi({ publicUrl: 'http://erm3.test' }) as Json
    assert.equal(doc.openapi, '3.1.0')
    // The contract's list (which the dashboard reads) and the store's are one list.
    assert.deepEqual([...WEBHOOK_EVENT_NAMES], [...WEBHOOK_EVENTS])
    for (const e of WEBHOOK_EVENTS) {
      const op = doc.webhooks[e]?.post
      assert.ok(op, e)
      assert.deepEqual(
        op.parameters.map((p: Json) => p.name),
        ['X-Erm3-Event', 'X-Erm3-Delivery', 'X-Erm3-Signature'],
      )
      const ref = op.requestBody.content['application/json'].schema.$ref as string
      assert.ok(doc.components.schemas[ref.split('/').at(-1) as string], ref)
    }
    assert.ok(doc.components.schemas.WebhookBalanceLow)
    assert.ok(doc.components.schemas.WebhookSubscription)
    assert.deepEqual(doc.paths['/account/webhooks'].post.security, [{ sessionJwt: [] }])
  })
  test('MCP: no tools for webhook administration (unpriced operations are not tools)', () => {
    const ops = new Set(toolCatalogue().map((t) => t.operation.id))
    assert.ok(ops.has('getMetrics'), 'the catalogue lists priced operations')
    for (const id of Object.keys(WEBHOOK_OPS)) assert.ok(!ops.has(id), id)
  })
})
