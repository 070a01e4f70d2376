import { microsToUsd } from '../contract/pricing.ts'

export type CacheStatus = 'HIT' | 'MISS' | 'BYPASS'

export interface AgentMeta {
  cost_usd: number
  /** The balance after this call's charge (metered data answers; absent where not read). */
  balance_usd?: number
  latency_ms: number
  request_id: string
  confidence: { overall: number; factors: Record<string, number> }
  data_freshness: string
  billing_code: string
  cache_status: CacheStatus
}

/** Last Sunday of a UTC month, as a day of the month. */
function lastSunday(year: number, month: number): number {
  const last = new Date(Date.UTC(year, month + 1, 0))
  return last.getUTCDate() - last.getUTCDay()
}

/** n-th Sunday (1-based) of a UTC month, as a day of the month. */
function nthSunday(year: number, month: number, n: number): number {
  const first = new Date(Date.UTC(year, month, 1)).getUTCDay()
  return 1 + ((7 - first) % 7) + 7 * (n - 1)
}

/**
 * The moment a day's data was final: the 16:00 New York close of `data_as_of`, in UTC.
 * US daylight time runs from the second Sunday of March to the first Sunday of November since
 * 2007, and ran from the first Sunday of April to the last Sunday of October before (the history
 * starts in 2006).
 */
export function dataFreshness(dataAsOf: string): string {
  // Every answer of a build carries the same date: the last one is kept (a few µs a request).
  if (dataAsOf !== lastFreshness.dataAsOf) lastFreshness = { dataAsOf, freshness: closeOf(dataAsOf) }
  return lastFreshness.freshness
}

let lastFreshness = { dataAsOf: '', freshness: '' }

function closeOf(dataAsOf: string): string {
  const [y, m, d] = dataAsOf.split('-').map(Number) as [number, number, number]
  const month = m - 1
  const dst =
    y >= 2007
      ? (month > 2 && month < 10) ||
        (month === 2 && d >= nthSunday(y, 2, 2)) ||
        (month === 10 && d < nthSunday(y, 10, 1))
      : (month > 3 && month < 9) ||
        (month === 3 && d >= nthSunday(y, 3, 1)) ||
        (month === 9 && d < lastSunday(y, 9))
  return new Date(Date.UTC(y, month, d, dst ? 20 : 21)).toISOString()
}

export function agentMeta(input: {
  costMicros: number
  startedAt: number
  now: number
  requestId: string
  confidence: AgentMeta['confidence']
  dataAsOf: string
  billingCode: string
  cacheStatus: CacheStatus
  /** The account's settled balance as the call began; the answer carries it minus the call's cost. */
  balanceBeforeMicros?: number | null
}): AgentMeta {
  const before = input.balanceBeforeMicros
  return {
    cost_usd: microsToUsd(input.costMicros),
    ...(before === undefined || before === null
      ? {}
      : { balance_usd: microsToUsd(before - input.costMicros) }),
    latency_ms: Math.max(0, Math.round(input.now - input.startedAt)),
    request_id: input.requestId,
    confidence: input.confidence,
    data_freshness: dataFreshness(input.dataAsOf),
    billing_code: input.billingCode,
    cache_status: input.cacheStatus,
  }
}
