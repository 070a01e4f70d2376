import { Type } from 'typebox'
import { LEVEL_FIELDS } from '../../platform/metric-fields.ts'
import type { NullableNumber } from '../schemas.ts'
import { metricsV3Schema } from './metrics.ts'

/**
 * `full_metrics` of POST /batch/analyze: the MetricsV3 snapshot of GET /metrics/{ticker}, plus
 * the level fields under the long names the specification uses for this block
 * (`full_metrics.l1_market_hr`: the hedge_ratios key `l1_market` + `_hr`). Both spellings are served
 * and neither is deprecated: the short ones are MetricsV3's own.
 */

const LONG = { mkt: 'market', sec: 'sector', sub: 'subsector', res: 'residual' } as const

type Short = (typeof LEVEL_FIELDS)[number]
type Long<F extends string> = F extends `${infer L}_${infer Leg extends keyof typeof LONG}_${infer Kind}`
  ? `${L}_${(typeof LONG)[Leg]}_${Kind}`
  : never

/** `l1_mkt_hr` → `l1_market_hr`, … `l3_res_er` → `l3_residual_er`: every HR and ER field of the levels. */
export const FULL_METRICS_ALIASES = LEVEL_FIELDS.map(
  (f) =>
    [
      f,
      f.replace(/_(mkt|sec|sub|res)_/, (_m, leg: keyof typeof LONG) => `_${LONG[leg]}_`) as Long<Short>,
    ] as const,
)

export const batchFullMetricsSchema = Type.Object(
  {
    ...metricsV3Schema.properties,
    ...(Object.fromEntries(
      FULL_METRICS_ALIASES.map(([short, long]) => [
        long,
        Type.Union([Type.Number(), Type.Null()], { description: `The same value as ${short}` }),
      ]),
    ) as { [K in Long<Short>]: typeof NullableNumber }),
  },
  { $id: 'BatchFullMetrics' },
)
