/**
 * Several nodes behind nginx under faults: three `erm3 serve` nodes share a
 * private PostgreSQL, a private Redis and one model store; nginx balances them. Metered load
 * runs through nginx the whole time while (a) a node is SIGKILLed (and later comes back),
 * (b) Redis is restarted, (c) PostgreSQL is crash-restarted, (d) a new build is published into
 * the shared store. Afterwards, from the database itself: every 2xx the clients received has
 * exactly one debit, nothing was charged twice, no balance went negative and the cached balance
 * is the ledger sum; every failure a client saw was a 503 or 429 problem (never a 500, a
 * transport error or a hang). Then, with Redis healthy again, a key's rate limit holds across the
 * three nodes within one request.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { buildStore } from '../../src/engine/build/index.ts'
import { synthesizeDataset } from '../../src/engine/data/synthesize.ts'
import { ModelStore } from '../../src/engine/model-store/reader.ts'
import { openOperator } from '../../src/main/context.ts'
import { createAccountWithBalance, createKeyFor } from '../../src/services/account/admin.ts'
import {
  clusterRoot,
  clusterUnavailable,
  type Erm3Node,
  killNode,
  type Nginx,
  nodeHome,
  type PrivatePostgres,
  type PrivateRedis,
  privatePostgres,
  privateRedis,
  removeRoot,
  sharedEnv,
  startNginx,
  startNode,
  stopNode,
} from '../helpers/cluster.ts'
import { type FixtureStores, fixtureStores } from '../helpers/fixture-store.ts'

const NODES = 3
const LOOPS = 24 // one premium key each: no key nears its burst, so 429s would be real limits
const OPENING_MICROS = 1_000_000_000 // 1,000 USD
const REQUEST_TIMEOUT_MS = 20_000 // a request slower than this is a hang

const skip = clusterUnavailable()
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Outcome {
  status: number
  requestId: string | null
  code: string | null
  contentType: string
  dataAsOf: string | null
  phase: string
}

describe('three nodes behind nginx, under faults', { skip }, () => {
  let root: string
  let fx: FixtureStores
  let pgs: PrivatePostgres
  let redis: PrivateRedis
  let nginx: Nginx
  const nodes: Erm3Node[] = []
  let env: Record<string, string>
  let store: string
  let ticker: string
  let accountId: string
  let keys: string[]

  const nextDataset = () => join(root, 'dataset-next')
  const nodeEnv = (i: number) => ({
    ...env,
    ERM3_HOME: join(root, `node${i}`),
    ERM3_STORE_POLL_SECONDS: '1',
  })

  before(async () => {
    root = clusterRoot()
    fx = await fixtureStores()
    store = join(root, 'store')
    // The shared store: a directory every node reads (object storage is exercised by its own suite).
    const { cpSync } = await import('node:fs')
    cpSync(fx.live, store, { recursive: true })
    const s = await ModelStore.open(store)
    ticker = (s.symbols.flatMap((m) => m.tickers).find((w) => !w.to) as { ticker: string }).ticker
    await s.close()
    pgs = await privatePostgres(root)
    redis = await privateRedis()
    env = sharedEnv(pgs.url, redis.url)
    const op = await openOperator({ ...env, ERM3_HOME: join(root, 'operator') })
    try {
      const { account } = await createAccountWithBalance(op.ctx, {
        email: `cluster-${randomBytes(4).toString('hex')}@example.com`,
        balanceUsd: OPENING_MICROS / 1e6,
      })
      accountId = account.id
      keys = await Promise.all(
        Array.from(
          { length: LOOPS },
          async () =>
            (await createKeyFor(op.ctx, { accountId, environment: 'live', tier: 'premium' })).apiKey,
        ),
      )
    } finally {
      await op.close()
    }
    for (let i = 0; i < NODES; i++) nodeHome(root, `node${i}`, fx.sandbox)
    // The nodes start together, and the dataset of phase (d)'s new build is written meanwhile
    // (only its build and publish belong to the faults).
    const [started] = await Promise.all([
      Promise.all(Array.from({ length: NODES }, (_, i) => startNode(nodeEnv(i), store))),
      synthesizeDataset(nextDataset(), {
        seed: 101,
        stocks: 25,
        start: '2019-01-02',
        end: '2022-02-28',
        fundamentals: true,
      }),
    ])
    nodes.push(...started)
    nginx = await startNginx(
      root,
      nodes.map((n) => n.port),
    )
  })

  after(async () => {
    await nginx?.stop()
    await Promise.all(nodes.map(stopNode))
    await redis?.stop()
    pgs?.stop()
    if (root) removeRoot(root)
  })

  test('money and errors hold through a node kill, Redis and PostgreSQL restarts and a new build', async (t) => {
    const origin = `http://127.0.0.1:${nginx.port}`
    const outcomes: Outcome[] = []
    let phase = 'steady'
    let running = true
    let transportErrors = 0
    let hangs = 0
    const loop = async (key: string) => {
      while (running) {
        try {
          const res = await fetch(`${origin}/metrics/${ticker}`, {
            headers: { authorization: `Bearer ${key}`, 'cache-control': 'no-cache' },
            signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
          })
          const text = await res.text()
          let code: string | null = null
          if (res.status >= 400) {
            try {
              code = (JSON.parse(text) as { code?: string }).code ?? null
            } catch {
              code = null
            }
          }
          outcomes.push({
            status: res.status,
            requestId: res.headers.get('x-request-id'),
            code,
            contentType: res.headers.get('content-type') ?? '',
            dataAsOf: res.headers.get('x-data-as-of'),
            phase,
          })
          if (res.status === 429 || res.status === 503) await sleep(100)
        } catch (e) {
          if ((e as Error).name === 'TimeoutError') hangs++
          else transportErrors++
          await sleep(100)
        }
      }
    }
    const loops = keys.map((k) => loop(k))
    await sleep(2000)

    phase = 'a: node killed'
    const victim = nodes[1] as Erm3Node
    await killNode(victim)
    await sleep(3000)
    nodes[1] = await startNode(nodeEnv(1), store, victim.port)
    phase = 'a: node back'
    await sleep(2000)

    phase = 'b: redis restart'
    await redis.restart(2000)
    phase = 'b: redis back'
    await sleep(3000)

    phase = 'c: postgres restart'
    await pgs.restart(2000)
    phase = 'c: postgres back'
    await sleep(4000)

    phase = 'd: new build'
    const before = outcomes.find((o) => o.status === 200)?.dataAsOf
    await buildStore({ dataset: nextDataset(), store })
    const next = (await ModelStore.open(store).then(async (s) => {
      const d = s.dataAsOf
      await s.close()
      return d
    })) as string
    assert.notEqual(next, before, 'the new build has a new data_as_of')
    for (const [i, n] of nodes.entries())
      assert.equal(n.child.exitCode, null, `node ${i} is still up; it printed:\n${n.output().slice(-3000)}`)
    // Every node notices the new CURRENT (poll: 1 s) and serves it.
    for (let i = 0; i < 60; i++) {
      const seen = await Promise.all(
        nodes.map(async (n) => {
          const r = await fetch(`http://127.0.0.1:${n.port}/health`)
          return JSON.stringify(await r.json()).includes(next)
        }),
      )
      if (seen.every(Boolean)) break
      assert.ok(i < 59, 'every node serves the new build within 30 s')
      await sleep(500)
    }
    await sleep(2000)
    running = false
    await Promise.all(loops)

    // ---- what the clients saw
    const byStatus = new Map<number, number>()
    for (const o of outcomes) byStatus.set(o.status, (byStatus.get(o.status) ?? 0) + 1)
    const perPhase = new Map<string, string>()
    for (const o of outcomes) {
      const k = o.phase
      perPhase.set(k, `${perPhase.get(k) ?? ''} ${o.status}`)
    }
    t.diagnostic(
      `statuses ${JSON.stringify([...byStatus])}; transport errors ${transportErrors}; hangs ${hangs}; ` +
        `per phase ${JSON.stringify(
          [...perPhase].map(([k, v]) => {
            const c = new Map<string, number>()
            for (const s of v.trim().split(' ')) c.set(s, (c.get(s) ?? 0) + 1)
            return [k, [...c]]
          }),
        )}`,
    )
    assert.equal(hangs, 0, 'no request hung')
    assert.equal(transportErrors, 0, 'nginx answered every request (no transport error reached a client)')
    const ok = outcomes.filter((o) => o.status === 200)
    assert.ok(ok.length > 500, `sustained load (${ok.length} 2xx)`)
    for (const o of outcomes.filter((x) => x.status !== 200)) {
      assert.ok(
        o.status === 503 || o.status === 429,
        `only 503/429 failures, got ${o.status} (${o.code}) in ${o.phase}`,
      )
      assert.match(o.contentType, /application\/problem\+json/, `a ${o.status} is a problem document`)
      if (o.status === 503)
        assert.ok(o.code === 'UNAVAILABLE' || o.code === 'MODEL_NOT_READY', String(o.code))
      else assert.ok(o.code === 'RATE_LIMITED' || o.code === 'CONCURRENCY_LIMITED', String(o.code))
    }
    const newBuild = ok.filter((o) => o.dataAsOf === next)
    assert.ok(newBuild.length > 0, 'responses after the publish carry the new data_as_of')

    // ---- what the database holds
    const c = new pg.Client({ connectionString: pgs.url })
    await c.connect()
    try {
      const debits = (
        await c.query<{ request_id: string; n: string }>(
          `SELECT request_id, COUNT(*) AS n FROM ledger WHERE account_id = $1 AND kind = 'debit' GROUP BY request_id`,
          [accountId],
        )
      ).rows
      const perRequest = new Map(debits.map((d) => [d.request_id, Number(d.n)]))
      for (const o of ok)
        assert.equal(perRequest.get(o.requestId ?? ''), 1, `2xx ${o.requestId} has one debit`)
      for (const [id, n] of perRequest) assert.equal(n, 1, `request ${id} charged once`)
      const extra = perRequest.size - ok.length
      t.diagnostic(
        `${ok.length} 2xx, ${perRequest.size} debits (${extra} debits whose response a fault cut off)`,
      )
      assert.ok(extra >= 0)
      type Row = { balance: string; sum: string; negative: string; reserved: string; held: string }
      const { rows } = await c.query<Row>(
        `SELECT a.balance_micros AS balance, a.reserved_micros AS reserved,
                (SELECT COALESCE(SUM(amount_micros), 0) FROM ledger l WHERE l.account_id = a.id) AS sum,
                (SELECT COALESCE(SUM(amount_micros), 0) FROM reservations r WHERE r.account_id = a.id) AS held,
                (SELECT COUNT(*) FROM accounts WHERE balance_micros < 0) AS negative
         FROM accounts a WHERE a.id = $1`,
        [accountId],
      )
      const r = rows[0] as Row
      assert.equal(Number(r.balance), Number(r.sum), 'cached balance = Σ ledger')
      assert.equal(Number(r.negative), 0, 'no balance went negative')
      // Reservation leases (the killed node's stay until reconcile): never more than the balance.
      assert.equal(Number(r.reserved), Number(r.held), 'cached reserved = Σ reservations')
      assert.ok(Number(r.balance) - Number(r.reserved) >= 0, 'never more reserved than the balance')
      assert.equal(Number(r.balance), OPENING_MICROS - 1000 * perRequest.size, 'each debit is 0.001 USD')
      const builds = await c.query<{ n: string }>(
        'SELECT COUNT(*) AS n FROM model_builds WHERE data_as_of = $1',
        [next],
      )
      assert.equal(Number(builds.rows[0]?.n), 1, 'the new data_as_of is recorded once (model.updated once)')
    } finally {
      await c.end()
    }
  })

  test('a key’s rate limit holds across the three nodes within one request', async (t) => {
    // Redis is back: wait until every node has left its local fallback.
    for (let i = 0; i < 60; i++) {
      const degraded = await Promise.all(
        nodes.map(async (n) => {
          const h = (await (await fetch(`http://127.0.0.1:${n.port}/health`)).json()) as {
            limits?: { degraded?: boolean }
          }
          return h.limits?.degraded === true
        }),
      )
      if (!degraded.some(Boolean)) break
      assert.ok(i < 59, 'every node left its local fallback within 30 s of Redis coming back')
      await sleep(500)
    }
    const op = await openOperator({ ...env, ERM3_HOME: join(root, 'operator') })
    let key: string
    try {
      key = (await createKeyFor(op.ctx, { accountId, environment: 'live', tier: 'default' })).apiKey
    } finally {
      await op.close()
    }
    const origin = `http://127.0.0.1:${nginx.port}`
    const started = Date.now()
    const statuses: (number | string)[] = []
    // 8 at a time (under the 10-slot concurrency cap), 200 in all, round-robin over the nodes.
    for (let i = 0; i < 25; i++) {
      const batch = await Promise.all(
        Array.from({ length: 8 }, () =>
          fetch(`${origin}/balance`, { headers: { authorization: `Bearer ${key}` } }).then(async (r) => {
            const body = await r.text()
            return r.status === 429 ? String((JSON.parse(body) as { code?: string }).code) : r.status
          }),
        ),
      )
      statuses.push(...batch)
    }
    const seconds = (Date.now() - started) / 1000
    const allowed = statuses.filter((s) => s === 200).length
    const limited = statuses.filter((s) => s === 'RATE_LIMITED').length
    // A batch can start before a node has given back the previous batch's slot (it goes back
    // when the response closes, then a Redis round trip): such a request spent its rate token.
    const busy = statuses.filter((s) => s === 'CONCURRENCY_LIMITED').length
    t.diagnostic(
      `${allowed} allowed, ${limited} rate-limited, ${busy} at the slot cap in ${seconds.toFixed(2)} s`,
    )
    assert.equal(allowed + limited + busy, statuses.length, 'only 200 or 429')
    // Default tier: burst 100, 60/min. Across all nodes the key's requests take its burst plus what
    // refilled while the test ran, within one request.
    const bound = 100 + Math.ceil(seconds) + 1
    assert.ok(allowed + busy <= bound, `${allowed} + ${busy} ≤ ${bound}`)
    assert.ok(allowed + busy >= 99, `${allowed} + ${busy} ≥ the burst minus one`)
  })
})
