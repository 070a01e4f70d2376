/**
 * Building a source from the environment (docs/configuration.md, "Market data sources"). A missing
 * key is an error that names the variable and where to get one: never a silent fallback to
 * synthetic data.
 */
import { AppError } from '../../platform/errors.ts'
import { configValue, type SourceEnv } from './env.ts'
import { fredFromEnv } from './fred.ts'
import { holdingsFromEnv } from './holdings.ts'
import { polygonSource } from './polygon.ts'
import { secFromEnv } from './sec.ts'
import { tiingoSource } from './tiingo.ts'
import { treasuryFromEnv } from './treasury.ts'
import type { Source, SourceFinding } from './types.ts'

type Env = SourceEnv

function requireKey(env: Env, name: 'TIINGO_API_KEY' | 'POLYGON_API_KEY', where: string): string {
  const key = configValue(env, name)?.trim()
  if (!key)
    throw new AppError(
      'CONFIG_INVALID',
      `${name} is not set: get a key at ${where} or choose another --source`,
    )
  return key
}

export type PriceSourceName = 'tiingo' | 'polygon'

/** The named price vendor, configured from `env` (process.env by default). */
export function priceSourceFromEnv(name: PriceSourceName, env: Env = process.env): Source {
  switch (name) {
    case 'tiingo':
      return tiingoSource({
        apiKey: requireKey(env, 'TIINGO_API_KEY', 'https://www.tiingo.com/account/api/token'),
        baseUrl: configValue(env, 'TIINGO_BASE_URL'),
        tickersUrl: configValue(env, 'TIINGO_TICKERS_URL'),
        ratePerHour: configValue(env, 'TIINGO_RATE_PER_HOUR'),
      })
    case 'polygon':
      return polygonSource({
        apiKey: requireKey(env, 'POLYGON_API_KEY', 'https://polygon.io/dashboard/keys'),
        baseUrl: configValue(env, 'POLYGON_BASE_URL'),
        ratePerMinute: configValue(env, 'POLYGON_RATE_PER_MINUTE'),
      })
    default:
      throw new AppError('CONFIG_INVALID', `unknown price source ${JSON.stringify(name)}: tiingo or polygon`)
  }
}

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

/**
 * Sources by name (`erm3 data fetch --source tiingo,sec`), each built from the environment (its
 * key, base URL and rate variables).
 */
export function sourcesFromNames(
  names: readonly string[],
  env: Env = process.env,
  onFinding?: (f: SourceFinding) => void,
): Source[] {
  if (names.length === 0) throw new AppError('INVALID_REQUEST', 'no --source given')
  return names.map((name) => {
    switch (name) {
      case 'tiingo':
      case 'polygon':
        return priceSourceFromEnv(name, env)
      case 'sec':
      case 'treasury':
      case 'fred':
      case 'holdings':
        return referenceSourceFromEnv(name, env, onFinding)
      default:
        throw new AppError(
          'INVALID_REQUEST',
          `unknown source "${name}": tiingo, polygon, sec, treasury, fred or holdings`,
        )
    }
  })
}
