/**
 * A fake of FRED's `/fred/series/observations` (JSON) for series DTB3: it serves the observations
 * the test gives within observation_start … observation_end, values as strings (`"."` = none), and
 * answers a missing or wrong `api_key` with FRED's 400 `{error_code, error_message}`.
 *
 *   const f = await startFredFake('k'.repeat(32), [{ date: '2024-01-02', value: '5.24' }])
 *   const source = fredSource({ apiKey: 'k'.repeat(32), baseUrl: f.url })
 */
import { type FakeServer, json, startFake } from './ref-server.ts'

export interface FredObservation {
  date: string
  value: string
}

export function startFredFake(apiKey: string, observations: readonly FredObservation[]): Promise<FakeServer> {
  return startFake((url) => {
    if (url.pathname !== '/fred/series/observations') return null
    const q = url.searchParams
    if (q.get('api_key') !== apiKey)
      return {
        status: 400,
        ...json({
          error_code: 400,
          error_message: 'Bad Request.  The value for variable api_key is not registered.',
        }),
      }
    if (q.get('series_id') !== 'DTB3' || q.get('file_type') !== 'json')
      return { status: 400, ...json({ error_code: 400, error_message: 'Bad Request.' }) }
    const start = q.get('observation_start') ?? '0000-00-00'
    const end = q.get('observation_end') ?? '9999-99-99'
    const obs = observations
      .filter((o) => o.date >= start && o.date <= end)
      .map((o) => ({ realtime_start: end, realtime_end: end, ...o }))
    return json({
      realtime_start: end,
      realtime_end: end,
      observation_start: start,
      observation_end: end,
      units: 'lin',
      output_type: 1,
      file_type: 'json',
      order_by: 'observation_date',
      sort_order: 'asc',
      count: obs.length,
      offset: 0,
      limit: 100000,
      observations: obs,
    })
  })
}
