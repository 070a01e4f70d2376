/**
 * Request-limiting state (src/store/limits): operations per second of a rate-limit take, a
 * concurrency acquire+release and a response-cache hit, on the in-process backend and on Redis
 * (REDIS_URL; skipped when unset), with 1 caller and with 50 concurrent callers. Medians of
 * several runs. Redis figures carry a ratio to a bare PING at the same concurrency, measured in
 * the same run: the network round trip is the floor every script pays, so the ratio shows what
 * the Lua work itself costs.
 * Run: node --import tsx bench/limits.ts [runs]
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { createMemoryLimits } from '../src/store/limits/memory.ts'
import { createRedisLimits } from '../src/store/limits/redis.ts'
import type { LimitsBackend } from '../src/store/limits/types.ts'

const RUNS = Math.max(3, Number(process.argv[2] ?? 5))
const KEYS = 1000
const T0 = 1_700_000_000_000
const RULE = { limit: 300, periodMs: 60_000, burst: 500 }
const CACHED = Buffer.alloc(2048, 'x')

type Op = (i: number) => Promise<unknown>

/** Ops per second of `ops` calls of `op`, spread over `callers` concurrent loops. */
async function throughput(op: Op, ops: number, callers: number): Promise<number> {
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (next < ops) await op(next++)
    }),
  )
  return ops / ((performance.now() - started) / 1000)
}

async function median(op: Op, ops: number, callers: number): Promise<number> {
  await throughput(op, Math.ceil(ops / 10), callers) // warm-up: JIT, script cache, connections
  const rates: number[] = []
  for (let r = 0; r < RUNS; r++) rates.push(await throughput(op, ops, callers))
  rates.sort((a, b) => a - b)
  return rates[Math.floor(rates.length / 2)] ?? 0
}

function ops(b: LimitsBackend): Record<string, Op> {
  return {
    'rate.take': (i) => b.rate.take(`k${i % KEYS}`, RULE, T0 + i),
    'acquire+release': async (i) => {
      const d = await b.concurrency.acquire(`k${i % KEYS}`, 10, 60_000, T0 + i)
      if (d.leaseId) await b.concurrency.release(`k${i % KEYS}`, d.leaseId)
    },
    'cache.get (hit)': (i) => b.cache.get(`k${i % KEYS}`),
  }
}

const fmt = (n: number) => `${Math.round(n).toLocaleString('en-US').padStart(11)} ops/s`

async function run(
  name: string,
  b: LimitsBackend,
  count: number,
  baseline?: (callers: number) => Promise<number>,
) {
  for (let i = 0; i < KEYS; i++) await b.cache.set(`k${i}`, CACHED, 600_000)
  for (const callers of [1, 50]) {
    const floor = baseline ? await baseline(callers) : 0
    const head = `${name}, ${String(callers).padStart(2)} caller${callers > 1 ? 's' : ' '}`
    if (baseline) console.log(`${head}  PING (baseline)    ${fmt(floor)}`)
    for (const [label, op] of Object.entries(ops(b))) {
      const rate = await median(op, count, callers)
      const ratio = baseline ? `   ${(rate / floor).toFixed(2)}× PING` : ''
      console.log(`${head}  ${label.padEnd(18)} ${fmt(rate)}${ratio}`)
    }
  }
}

console.log(`median of ${RUNS} runs; ${KEYS} keys round-robin; rule ${RULE.limit}/min burst ${RULE.burst}`)
const memory = createMemoryLimits()
await run('memory', memory, 200_000)
await memory.close()

const url = process.env.REDIS_URL
if (!url) {
  console.log('redis: skipped (REDIS_URL is not set)')
} else {
  const redis = createRedisLimits(url, { prefix: `erm3bench:${randomUUID()}:` })
  const raw = new Redis(url)
  await run('redis ', redis, 10_000, (callers) => median(() => raw.ping(), 10_000, callers))
  await Promise.all([redis.close(), raw.quit()])
}
