/**
 * FRED (`fred`): the 3-month Treasury bill rate, series DTB3 (secondary market, discount basis,
 * percent), from `/fred/series/observations?series_id=DTB3&file_type=json…`. Observations carry
 * their value as a string, `"."` on days without one (holidays). The API key travels in the query,
 * which the HTTP client never puts in a message.
 */
import { AppError } from '../../platform/errors.ts'
import { publishedNumber } from './csv-rows.ts'
import { configValue, type SourceEnv } from './env.ts'
import { HttpClient, type HttpClientOptions, SourceError } from './http.ts'
import { dayRange } from './treasury.ts'
import type { RatePoint, Source, SourceFinding } from './types.ts'

export interface FredOptions {
  apiKey: string
  baseUrl?: string
  onFinding?: (f: SourceFinding) => void
  http?: Partial<HttpClientOptions>
}

interface Observations {
  observations?: { date?: unknown; value?: unknown }[]
}

export function fredSource(opts: FredOptions): Source {
  if (opts.apiKey.trim() === '') throw new AppError('CONFIG_INVALID', 'FRED_API_KEY is not set')
  const http = new HttpClient({
    source: 'fred',
    baseUrl: opts.baseUrl ?? 'https://api.stlouisfed.org',
    query: { api_key: opts.apiKey.trim() },
    // FRED allows 120 requests a minute per key.
    ratePerSecond: 2,
    ...opts.http,
  })
  return {
    name: 'fred',
    rates: {
      async tbill3m(from, to, o) {
        dayRange('fred', from, to)
        const doc = await http.getJson<Observations>('fred/series/observations', {
          query: { series_id: 'DTB3', file_type: 'json', observation_start: from, observation_end: to },
          signal: o?.signal,
        })
        return ratesFromObservations(doc, (detail) => opts.onFinding?.({ source: 'fred', detail }))
      },
    },
  }
}

/** Percent strings to fractions; `"."` (no value that day) is skipped, anything else unreadable is a finding. */
function ratesFromObservations(doc: Observations | null, finding: (detail: string) => void): RatePoint[] {
  if (!Array.isArray(doc?.observations))
    throw new SourceError('fred', 200, 'series/observations: the answer has no "observations" array')
  const out: RatePoint[] = []
  for (const ob of doc.observations) {
    const date = typeof ob?.date === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(ob.date) ? ob.date : null
    const value = typeof ob?.value === 'string' ? publishedNumber(ob.value) : Number.NaN
    if (ob?.value === '.') continue
    if (date === null || Number.isNaN(value)) {
      finding(`DTB3: observation skipped: ${JSON.stringify(ob).slice(0, 100)}`)
      continue
    }
    out.push({ date, value: value / 100 })
  }
  return out.sort((a, b) => a.date.localeCompare(b.date))
}

/** The `fred` source from FRED_API_KEY and FRED_BASE_URL; without a key it is not built. */
export function fredFromEnv(env: SourceEnv, onFinding?: (f: SourceFinding) => void): Source {
  const apiKey = configValue(env, 'FRED_API_KEY')
  if (apiKey === null)
    throw new AppError(
      'CONFIG_INVALID',
      'FRED_API_KEY is not set (the fred source needs a free FRED API key)',
    )
  return fredSource({ apiKey, baseUrl: configValue(env, 'FRED_BASE_URL') ?? undefined, onFinding })
}
