import { microsToUsd } from '../contract/pricing.ts'

export type CacheStatus = 'HIT' | 'MISS' | 'BYPASS'

export interface AgentMeta {
  cost_usd: number
  latency_ms: number
  request_id: string
  confidence: { overall: number; factors: Record<string, number> }
  data_freshness: string
  billing_code: string
  cache_status: CacheStatus
}

/** n-th Sunday (1-based) of a UTC month, as a day of the month. */
function nthSunday(year: number, month: number, n: number): number {
  const first = new Date(Date.UTC(year, month, 1)).getUTCDay()
  return 1 + ((7 - first) % 7) + 7 * (n - 1)
}

/**
 * The moment a day's data was final: the 16:00 New York close of `data_as_of`, in UTC.
 * US daylight time runs from the second Sunday of March to the first Sunday of November.
 */
export function dataFreshness(dataAsOf: string): string {
  const [y, m, d] = dataAsOf.split('-').map(Number) as [number, number, number]
  const month = m - 1
  const dst =
    (month > 2 && month < 10) ||
    (month === 2 && d >= nthSunday(y, 2, 2)) ||
    (month === 10 && d < nthSunday(y, 10, 1))
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
}): AgentMeta {
  return {
    cost_usd: microsToUsd(input.costMicros),
    latency_ms: Math.max(0, Math.round(input.now - input.startedAt)),
    request_id: input.requestId,
    confidence: input.confidence,
    data_freshness: dataFreshness(input.dataAsOf),
    billing_code: input.billingCode,
    cache_status: input.cacheStatus,
  }
}
