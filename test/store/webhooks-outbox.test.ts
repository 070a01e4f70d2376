/**
 * The webhook outbox on both account stores: claims lease deliveries (a claimed attempt is not
 * claimed again until its lease expires, then as the next attempt with the same delivery id), a
 * late completion of a lost lease records nothing, disabled subscriptions are skipped; on
 * PostgreSQL two dispatchers (two pools, as two nodes) race over the same outbox and never send
 * the same attempt twice; a dispatcher killed with SIGKILL mid-delivery loses no event, and
 * another one finishes it with the same X-Erm3-Delivery.
 */
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { newId } from '../../src/platform/ids.ts'
import { createLogger } from '../../src/platform/logger.ts'
import type { ServiceContext } from '../../src/services/context.ts'
import { encryptSecret } from '../../src/services/webhooks/crypto.ts'
import { createDispatcher } from '../../src/services/webhooks/dispatcher.ts'
import { createPostgresAccountStore } from '../../src/store/accounts/postgres.ts'
import { createSqliteAccountStore } from '../../src/store/accounts/sqlite.ts'
import type { AccountStore } from '../../src/store/accounts/types.ts'
import type { WebhookStore } from '../../src/store/accounts/webhooks-types.ts'
import { startReceiver, verifySignature } from '../helpers/webhook-receiver.ts'
import { newAccount, T0 } from './accounts-herd.ts'

const KEY = randomBytes(32).toString('base64url')

interface Backend {
  name: string
  skip: string | null
  open(): Promise<{
    store: AccountStore
    another(): AccountStore
    childArgs: string[]
    drop(): Promise<void>
  }>
}

const url = process.env.DATABASE_URL
const BACKENDS: Backend[] = [
  {
    name: 'sqlite',
    skip: null,
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'erm3-outbox-'))
      const path = join(dir, 'erm3.db')
      return {
        store: createSqliteAccountStore(path),
        another: () => createSqliteAccountStore(path),
        childArgs: ['sqlite', path],
        drop: async () => rmSync(dir, { recursive: true, force: true }),
      }
    },
  },
  {
    name: 'postgres',
    skip: url ? null : 'DATABASE_URL is not set',
    async open() {
      const schema = `t_${randomBytes(6).toString('hex')}`
      return {
        store: createPostgresAccountStore(url as string, { schema }),
        another: () => createPostgresAccountStore(url as string, { schema }),
        childArgs: ['postgres', url as string, schema],
        async drop() {
          const c = new pg.Client({ connectionString: url })
          await c.connect()
          await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
          await c.end()
        },
      }
    },
  },
]

function contextOf(accounts: AccountStore, clock: () => number = Date.now): ServiceContext {
  return {
    accounts,
    secrets: { pepper: 'p'.repeat(32), sessionSecret: 's'.repeat(32), webhookKey: KEY },
    now: clock,
    log: createLogger('silent'),
    mailer: { kind: 'outbox', send: async () => undefined },
    // The receivers listen on loopback: the development opt-in.
    config: { publicUrl: 'http://erm3.test', topUpUrl: null, webhookAllowLoopback: true },
  } as unknown as ServiceContext
}

async function subscription(store: AccountStore, target: string, events = ['key.created' as const]) {
  const account = await newAccount(store, `${randomBytes(4).toString('hex')}@example.com`)
  const id = newId('whs', T0)
  const secret = `whsec_${randomBytes(16).toString('hex')}`
  await store.webhooks().createSubscription({
    id,
    accountId: account.id,
    url: target,
    events: [...events],
    secretEnc: encryptSecret(KEY, id, secret),
    createdAt: T0,
  })
  return { account: account.id, id, secret }
}

for (const b of BACKENDS) {
  describe(`webhook outbox: ${b.name}`, { skip: b.skip ?? undefined }, () => {
    let db: Awaited<ReturnType<Backend['open']>>
    let w: WebhookStore
    before(async () => {
      db = await b.open()
      await db.store.migrate()
      w = db.store.webhooks()
    })
    after(async () => {
      await db?.store.close()
      await db?.drop()
    })

    it('claims lease: no second claim before expiry; then the next attempt, same id; a lost lease records nothing', async () => {
      const s = await subscription(db.store, 'http://127.0.0.1:9/a')
      const queued = await Promise.all([1, 2, 3].map(() => w.enqueueTest(s.account, s.id, T0)))
      const ids = queued.map((d) => d?.id).sort()
      const first = await w.claim('A', T0, 1000, 10)
      assert.deepEqual(first.map((d) => d.id).sort(), ids)
      assert.ok(first.every((d) => d.attempt === 1 && d.url === 'http://127.0.0.1:9/a' && d.secretEnc))
      assert.deepEqual(await w.claim('B', T0 + 999, 1000, 10), [])
      const second = await w.claim('B', T0 + 1000, 1000, 10)
      assert.deepEqual(second.map((d) => d.id).sort(), ids, 'lease expired: claimed again')
      assert.ok(second.every((d) => d.attempt === 2))
      const d0 = second[0]
      assert.ok(d0)
      const outcome = {
        deliveryId: d0.id,
        startedAt: T0 + 1000,
        latencyMs: 3,
        statusCode: 200,
        error: null,
        ok: true,
        nextAttemptAt: null,
        disableIfFailingSince: 0,
        now: T0 + 1003,
      }
      // A's completion arrives late (its lease was lost): nothing is recorded
      assert.deepEqual(await w.finish({ ...outcome, owner: 'A', attempt: 1 }), {
        recorded: false,
        disabled: false,
      })
      assert.deepEqual(await w.finish({ ...outcome, owner: 'B', attempt: 2 }), {
        recorded: true,
        disabled: false,
      })
      assert.deepEqual(await w.finish({ ...outcome, owner: 'B', attempt: 2 }), {
        recorded: false,
        disabled: false,
      })
      const [row] = (await w.listDeliveries(s.account, s.id, 10)).filter((d) => d.id === d0.id)
      assert.equal(row?.status, 'delivered')
      assert.deepEqual(
        row?.log.map((a) => [a.attempt, a.ok]),
        [[2, true]],
      )
      // the other two: B's lease lapses, C picks them up as attempt 3
      const third = await w.claim('C', T0 + 2000, 1000, 10)
      assert.deepEqual(
        third.map((d) => [d.attempt]),
        [[3], [3]],
      )
      // the log keeps finished deliveries until purged; pending ones are never purged
      assert.equal(await w.purgeDeliveries(T0), 0, 'created at T0: not before it')
      assert.equal(await w.purgeDeliveries(T0 + 1), 1)
      assert.deepEqual(
        (await w.listDeliveries(s.account, s.id, 10)).map((d) => d.status),
        ['pending', 'pending'],
      )
    })

    it('deliveries of a disabled subscription (or, on a node without the key, any webhook) are not claimed; other accounts never see them', async () => {
      const s = await subscription(db.store, 'http://127.0.0.1:9/b')
      const d = await w.enqueueTest(s.account, s.id, T0 + 10_000)
      assert.ok(d)
      await w.updateSubscription(s.account, s.id, { enabled: false, updatedAt: T0 })
      assert.ok(!(await w.claim('A', T0 + 20_000, 1000, 100)).some((c) => c.id === d.id))
      const other = await newAccount(db.store)
      assert.equal(await w.getSubscription(other.id, s.id), null)
      assert.deepEqual(await w.listDeliveries(other.id, s.id, 10), [])
      assert.equal(await w.redeliver(other.id, s.id, d.id, T0), null)
      assert.equal(await w.deleteSubscription(other.id, s.id), false)
      await w.updateSubscription(s.account, s.id, { enabled: true, updatedAt: T0 })
      // a node without the webhook key claims e-mails only
      assert.ok(!(await w.claim('E', T0 + 20_000, 1000, 100, true)).some((c) => c.id === d.id))
      assert.ok((await w.claim('A', T0 + 20_000, 1000, 100)).some((c) => c.id === d.id))
    })

    if (b.name === 'postgres')
      it('two dispatchers (two nodes) racing over 120 deliveries never send the same attempt twice', async () => {
        const rx = await startReceiver()
        const node2 = db.another()
        try {
          const s = await subscription(db.store, rx.url)
          const ids = new Set<string>()
          for (let i = 0; i < 120; i++) {
            const d = await w.enqueueTest(s.account, s.id, Date.now() - 1000)
            ids.add(d?.id as string)
          }
          const a = createDispatcher(contextOf(db.store), { batch: 7, owner: 'node1' })
          const c = createDispatcher(contextOf(node2), { batch: 7, owner: 'node2' })
          const drain = async (x: typeof a) => {
            while ((await x.runOnce()) > 0) {}
          }
          await Promise.all([drain(a), drain(c), drain(a), drain(c)])
          const got = rx.received.map((r) => r.headers['x-erm3-delivery'] as string)
          assert.equal(got.length, 120, 'one request per delivery')
          assert.equal(new Set(got).size, 120, 'no delivery sent twice')
          assert.deepEqual(new Set(got), ids)
          const log = await w.listDeliveries(s.account, s.id, 200)
          assert.ok(log.every((d) => d.status === 'delivered' && d.attempts === 1 && d.log.length === 1))
        } finally {
          await node2.close()
          await rx.close()
        }
      })

    it('SIGKILL mid-delivery: no event lost, the next dispatcher sends it again with the same delivery id', {
      timeout: 60_000,
    }, async () => {
      const rx = await startReceiver()
      let child: ChildProcess | null = null
      try {
        const s = await subscription(db.store, rx.url, ['key.created'])
        // an event caused by a change: the key and its delivery commit together
        await db.store.insertKey({
          id: newId('key'),
          accountId: s.account,
          kind: 'agent',
          environment: 'live',
          prefix: 'erm_agent_live_Ab…',
          name: 'sigkill',
          tier: 'default',
          hash: randomBytes(32).toString('hex'),
          createdAt: Date.now() - 1000,
          expiresAt: null,
          clientId: null,
        })
        rx.status = null // hang: the child is mid-delivery when it dies
        const first = rx.next()
        child = spawn(
          process.execPath,
          ['--import', 'tsx', 'test/store/webhooks-dispatch-child.ts', ...db.childArgs],
          {
            env: { ...process.env, ERM3_WEBHOOK_KEY: KEY },
            stdio: ['ignore', 'pipe', 'inherit'],
          },
        )
        const r1 = await first
        child.kill('SIGKILL')
        await new Promise((r) => child?.once('exit', r))
        const [pending] = await w.listDeliveries(s.account, s.id, 10)
        assert.equal(pending?.status, 'pending', 'the killed attempt recorded nothing')
        rx.status = 200
        // another node, after the child's lease (1.5 s) expired
        const late = () => Date.now() + 2000
        const survivor = db.another()
        const d = createDispatcher(contextOf(survivor, late), { owner: 'survivor' })
        while ((await d.runOnce()) > 0) {}
        await survivor.close()
        assert.equal(rx.received.length, 2)
        const r2 = rx.received[1]
        assert.ok(r2)
        assert.equal(r2.headers['x-erm3-delivery'], r1.headers['x-erm3-delivery'])
        assert.equal(r2.body, r1.body, 'the same event')
        for (const r of [r1, r2])
          assert.ok(
            verifySignature(
              s.secret,
              r.headers['x-erm3-signature'] as string,
              r.body,
              Math.floor(late() / 1000),
            ).ok,
          )
        const [done] = await w.listDeliveries(s.account, s.id, 10)
        assert.equal(done?.status, 'delivered')
        assert.equal(done?.attempts, 2)
        assert.deepEqual(
          done?.log.map((a) => [a.attempt, a.ok]),
          [[2, true]],
        )
      } finally {
        child?.kill('SIGKILL')
        await rx.close()
      }
    })
  })
}
