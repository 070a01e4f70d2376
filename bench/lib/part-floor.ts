/**
 * A `node:http` floor that also does the one part of an erm3 request the bench's targets cannot
 * take away without changing what erm3 promises (bench/http.ts):
 *
 * - `sqlite`: reserve and a durable, group-committed debit on erm3's own SQLite account store
 *   (synchronous=FULL, one ledger row per call), before answering the `/metrics/` bytes;
 * - `postgres`: the same on erm3's PostgreSQL account store (reservation leases, group commit);
 * - `redis`: the key's rate token and a concurrency slot through erm3's Redis limiter, in one
 *   round trip, before answering the `/balance` bytes (the limits hold across nodes, §3); the slot
 *   goes back once answered, as erm3's does.
 *
 * No framework, authentication, key lookup, metering logic or encoding: the request is answered
 * with the bytes erm3 sent (captured by bench/http.ts, as for the plain floors) once the part is
 * done. Its throughput over its plain floor's is the most any server doing that part per request
 * could reach on the machine that day — the ceiling under the ratio a target asks of erm3.
 *
 * Run by bench/http.ts as a child: `node --import tsx bench/lib/part-floor.ts <part>`, with PORT,
 * FLOOR (the captured routes, JSON), and FLOOR_DIR (sqlite), DATABASE_URL (postgres) or REDIS_URL.
 */
import { createServer } from 'node:http'
import { join } from 'node:path'
import { newId } from '../../src/platform/ids.ts'
import type { AccountStore } from '../../src/store/accounts/types.ts'
import type { FloorRoute } from './serve.ts'

/** A part of the request: true when it lets the request through (a refusal answers 429). */
type Part = (bearer: string) => Promise<boolean>

const PRICE_MICROS = 1000

async function moneyPart(store: AccountStore): Promise<Part> {
  await store.migrate()
  const now = Date.now()
  const account = await store.createAccount({
    id: newId('acct'),
    email: null,
    kind: 'anonymous',
    createdAt: now,
  })
  await store.credit(
    account.id,
    { kind: 'topup', amountMicros: 10_000 * 1e6, reference: `bench-floor-${account.id}` },
    now,
  )
  // What erm3's metering uses (services/billing/meter.ts): PostgreSQL's reservation leases.
  const money = store.inProcess ?? store
  let n = 0
  return async () => {
    const at = Date.now()
    const r = await money.reserve(account.id, PRICE_MICROS, at)
    if (!r.ok) return false
    await money.settle(
      r.reservationId,
      { amountMicros: PRICE_MICROS, requestId: `req_floor_${n++}`, capability: 'metrics', keyId: null },
      at,
    )
    return true
  }
}

async function limitsPart(url: string): Promise<Part> {
  const { createRedisLimits } = await import('../../src/store/limits/redis.ts')
  const { KEY_RULES, MAX_CONCURRENT } = await import('../../src/services/limits.ts')
  const limits = createRedisLimits(url)
  return async (bearer) => {
    const now = Date.now()
    const key = `bench-floor:${bearer}`
    const [token, slot] = await Promise.all([
      limits.rate.take(key, KEY_RULES.premium, now),
      limits.concurrency.acquire(key, MAX_CONCURRENT, 60_000, now),
    ])
    // Given back without waiting, as erm3 gives a request's slot back when its response is done.
    if (slot.leaseId) void limits.concurrency.release(key, slot.leaseId)
    return token.allowed && slot.ok
  }
}

async function partOf(kind: string | undefined): Promise<Part> {
  const env = (name: string) => {
    const v = process.env[name]
    if (!v) throw new Error(`part-floor ${kind}: ${name} is not set`)
    return v
  }
  if (kind === 'sqlite') {
    const { createSqliteAccountStore } = await import('../../src/store/accounts/sqlite.ts')
    return moneyPart(createSqliteAccountStore(join(env('FLOOR_DIR'), 'part-floor.db')))
  }
  if (kind === 'postgres') {
    const { createPostgresAccountStore } = await import('../../src/store/accounts/postgres.ts')
    return moneyPart(createPostgresAccountStore(env('DATABASE_URL')))
  }
  if (kind === 'redis') return limitsPart(env('REDIS_URL'))
  throw new Error(`part-floor: unknown part ${kind}`)
}

const part = await partOf(process.argv[2])
const routes = (JSON.parse(process.env.FLOOR ?? '[]') as FloorRoute[]).map((r) => ({
  ...r,
  data: Buffer.from(r.body, 'base64'),
}))
createServer((q, s) => {
  const bearer = q.headers.authorization
  const r = routes.find((x) => q.url?.startsWith(x.prefix))
  // bench/lib/serve.ts waitReady asks for `/`: answered without doing the part.
  if (!bearer || !r) {
    s.writeHead(404).end()
    return
  }
  part(bearer).then(
    (ok) => {
      if (!ok) s.writeHead(429).end()
      else {
        s.writeHead(r.status, r.headers)
        s.end(r.data)
      }
    },
    (err: Error) => {
      console.error(`part-floor: ${err.message}`)
      s.writeHead(503).end()
    },
  )
}).listen(Number(process.env.PORT), '127.0.0.1')
