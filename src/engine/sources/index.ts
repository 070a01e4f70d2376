/**
 * Building a source from the environment (docs/configuration.md, "Market data sources"). A missing
 * setting is an error naming the variable: never a silent fallback to synthetic data.
 */
import { AppError } from '../../platform/errors.ts'
import type { SourceEnv } from './env.ts'
import { fredFromEnv } from './fred.ts'
import { holdingsFromEnv } from './holdings.ts'
import { secFromEnv } from './sec.ts'
import { treasuryFromEnv } from './treasury.ts'
import type { Source, SourceFinding } from './types.ts'

export type ReferenceSourceName = 'sec' | 'treasury' | 'fred' | 'holdings'

/** A free reference source (docs/sources/reference.md), configured from `env`. */
export function referenceSourceFromEnv(
  name: ReferenceSourceName,
  env: SourceEnv = process.env,
  onFinding?: (f: SourceFinding) => void,
): Source {
  switch (name) {
    case 'sec':
      return secFromEnv(env, onFinding)
    case 'treasury':
      return treasuryFromEnv(env, onFinding)
    case 'fred':
      return fredFromEnv(env, onFinding)
    case 'holdings':
      return holdingsFromEnv(env, onFinding)
    default:
      throw new AppError(
        'CONFIG_INVALID',
        `unknown reference source ${JSON.stringify(name)}: sec, treasury, fred or holdings`,
      )
  }
}
