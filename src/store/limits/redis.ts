/**
 * Redis limits for scale-out (docs/architecture.md §2): every node sees the same buckets, leases and cache.
 * Each limiter operation is one Lua script, so a decision and its write are atomic across nodes.
 * Scripts take the caller's `now` (not Redis TIME) so the conformance suite can drive a clock;
 * nodes are expected to run NTP-synchronised clocks, and GCRA tolerates small skew (TAT = max).
 *
 * Fail fast, never hang a request: no offline queue (a command while disconnected rejects at
 * once), short connect and command timeouts, one retry. The fallback backend turns those
 * failures into local limiting and a degraded /health.
 */
import { Redis } from 'ioredis'
import { gcraDecision, gcraParams } from './gcra.ts'
import { leaseIdGenerator } from './lease-id.ts'
import type { LimitsBackend, RateDecision, RateRule } from './types.ts'

export interface RedisLimitsOptions {
  /** Namespace for every key (default `erm3:`); tests use a random one per run. */
  prefix?: string
  connectTimeoutMs?: number
  commandTimeoutMs?: number
}

/** gcraStep of gcra.ts in Lua. The TAT is stored with its scale; formatted with %.0f because
 * Lua's tostring keeps only 14 significant digits. Idle keys expire when the bucket is full. */
const GCRA_LUA = `
local now = tonumber(ARGV[1])
local scale = tonumber(ARGV[2])
local tolerance = tonumber(ARGV[3])
local increment = tonumber(ARGV[4])
local s = redis.call('HMGET', KEYS[1], 't', 's')
local tat = now
if s[1] then
  local stored = tonumber(s[1])
  local from = tonumber(s[2])
  if from ~= scale then stored = math.ceil(stored * scale / from) end
  if stored > tat then tat = stored end
end
local newTat = tat + increment
if newTat - tolerance <= now then
  redis.call('HSET', KEYS[1], 't', string.format('%.0f', newTat), 's', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], math.ceil((newTat - now) / scale))
  return {1, string.format('%.0f', newTat)}
end
return {0, string.format('%.0f', tat)}
`

/** Drops expired leases, then adds one if a slot is free. The set expires with its last lease. */
const ACQUIRE_LUA = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[3]) then return {0, n} end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
local ttl = math.ceil(tonumber(last[2]) - tonumber(ARGV[1]))
if ttl < 1 then ttl = 1 end
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, n + 1}
`

/** Moves a live lease's expiry (a lease at or before now is gone); the set lives as its last lease. */
const RENEW_LUA = `
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s or tonumber(s) <= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
local ttl = math.ceil(tonumber(last[2]) - tonumber(ARGV[2]))
if ttl < 1 then ttl = 1 end
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
`

/** The commands `defineCommand` adds to the client. */
interface Scripts {
  erm3Gcra(
    key: string,
    now: number,
    scale: number,
    tolerance: number,
    increment: number,
  ): Promise<[number, string]>
  erm3Acquire(
    key: string,
    now: number,
    expiresAt: number,
    max: number,
    leaseId: string,
  ): Promise<[number, number]>
  erm3Renew(key: string, leaseId: string, now: number, expiresAt: number): Promise<number>
}

export function createRedisLimits(url: string, opts: RedisLimitsOptions = {}): LimitsBackend {
  const prefix = opts.prefix ?? 'erm3:'
  const nextLeaseId = leaseIdGenerator()
  const { client, ready } = connectRedis(url, opts)

  return {
    backend: 'redis',
    rate: {
      async take(key: string, rule: RateRule, now: number, cost = 1): Promise<RateDecision> {
        const p = gcraParams(rule, now, cost)
        await ready()
        const [allowed, tat] = await client.erm3Gcra(
          `${prefix}r:${key}`,
          p.nowTicks,
          p.scale,
          p.tolerance,
          p.increment,
        )
        return gcraDecision(allowed === 1, Number(tat), p)
      },
    },
    concurrency: {
      async acquire(key: string, max: number, ttlMs: number, now: number) {
        await ready()
        const leaseId = nextLeaseId()
        const [ok, active] = await client.erm3Acquire(`${prefix}k:${key}`, now, now + ttlMs, max, leaseId)
        return ok === 1 ? { ok: true, leaseId, active } : { ok: false, leaseId: null, active }
      },
      async release(key: string, leaseId: string): Promise<void> {
        await ready()
        await client.zrem(`${prefix}k:${key}`, leaseId)
      },
      async renew(key: string, leaseId: string, ttlMs: number, now: number): Promise<boolean> {
        await ready()
        return (await client.erm3Renew(`${prefix}k:${key}`, leaseId, now, now + ttlMs)) === 1
      },
    },
    cache: {
      async get(key: string): Promise<Buffer | null> {
        await ready()
        return client.getBuffer(`${prefix}c:${key}`)
      },
      async set(key: string, value: Buffer, ttlMs: number): Promise<void> {
        if (ttlMs <= 0) return
        await ready()
        await client.set(`${prefix}c:${key}`, value, 'PX', Math.ceil(ttlMs))
      },
    },
    async health() {
      try {
        await ready()
        await client.ping()
        return { ok: true, degraded: false, detail: 'redis' }
      } catch (e) {
        return { ok: false, degraded: false, detail: `redis unreachable: ${(e as Error).message}` }
      }
    },
    async close() {
      if (client.status === 'ready') {
        try {
          await client.quit()
          return
        } catch {
          // fall through: drop the socket
        }
      }
      client.disconnect()
    },
  }
}

/**
 * Opens the client with its Lua scripts. `ready` waits (bounded) for the first connection; after
 * that a client that is not ready fails at once, and the fallback serves while ioredis reconnects.
 */
function connectRedis(url: string, opts: RedisLimitsOptions) {
  const connectTimeout = opts.connectTimeoutMs ?? 1000
  let lastError = ''
  const client = new Redis(url, {
    connectTimeout,
    commandTimeout: opts.commandTimeoutMs ?? 1000,
    // Commands issued in the same event-loop turn (the rate tokens, leases and releases of many
    // concurrent requests) share one write and one round trip.
    enableAutoPipelining: true,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    // How long close() waits for a half-dead socket before destroying it (default 2 s keeps a
    // process alive after close on a refused connection).
    disconnectTimeout: 200,
    // Keep reconnecting in the background (capped back-off) so the fallback's probe finds it.
    retryStrategy: (times) => Math.min(times * 200, 2000),
  }) as Redis & Scripts
  // Without a listener ioredis reports every failed reconnect as an unhandled error.
  client.on('error', (e: Error) => {
    lastError = e.message
  })
  client.defineCommand('erm3Gcra', { numberOfKeys: 1, lua: GCRA_LUA })
  client.defineCommand('erm3Acquire', { numberOfKeys: 1, lua: ACQUIRE_LUA })
  client.defineCommand('erm3Renew', { numberOfKeys: 1, lua: RENEW_LUA })

  // The first connection is worth a bounded wait (a node starting up); after that a client that
  // is not ready fails immediately and the fallback serves while ioredis reconnects.
  const firstConnect = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('redis connect timeout')), connectTimeout + 100)
    timer.unref()
    client.once('ready', () => {
      clearTimeout(timer)
      resolve()
    })
    client.once('close', () => {
      clearTimeout(timer)
      reject(new Error(`redis connection closed: ${lastError}`))
    })
  })
  firstConnect.catch(() => {})
  // A function, not an inline test: TypeScript would keep the narrowed status across the await.
  const status = (): string => client.status
  const ready = async (): Promise<void> => {
    if (status() === 'ready') return
    if (status() === 'connecting' || status() === 'connect') await firstConnect
    if (status() !== 'ready') throw new Error(`redis ${client.status}: ${lastError || 'not connected'}`)
  }
  return { client, ready }
}
