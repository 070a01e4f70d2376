/**
 * Building a source from the environment (docs/configuration.md, "Market data sources"). A missing
 * key is an error that names the variable and where to get one: never a silent fallback to
 * synthetic data.
 */
import { CONFIG_VARS, type ConfigVar } from '../../platform/config-vars.ts'
import { AppError } from '../../platform/errors.ts'
import { polygonSource } from './polygon.ts'
import { tiingoSource } from './tiingo.ts'
import type { Source } from './types.ts'

type Env = Record<string, string | undefined>
type VarName = keyof typeof CONFIG_VARS
type ValueOf<K extends VarName> = (typeof CONFIG_VARS)[K]['default']

/** One variable, parsed by its schema; a secret's value never reaches the message. */
function envVar<K extends VarName>(env: Env, name: K): ValueOf<K> {
  const spec = CONFIG_VARS[name] as ConfigVar<ValueOf<K>>
  const raw = env[name]
  if (raw === undefined || raw === '') return spec.default
  try {
    return spec.parse(raw, name)
  } catch (e) {
    if (spec.secret && e instanceof Error && e.message.includes(raw))
      throw new AppError('CONFIG_INVALID', `${name} must be ${spec.expects}`)
    throw e
  }
}

function requireKey(env: Env, name: 'TIINGO_API_KEY' | 'POLYGON_API_KEY', where: string): string {
  const key = envVar(env, name)?.trim()
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
        baseUrl: envVar(env, 'TIINGO_BASE_URL'),
        tickersUrl: envVar(env, 'TIINGO_TICKERS_URL'),
        ratePerHour: envVar(env, 'TIINGO_RATE_PER_HOUR'),
      })
    case 'polygon':
      return polygonSource({
        apiKey: requireKey(env, 'POLYGON_API_KEY', 'https://polygon.io/dashboard/keys'),
        baseUrl: envVar(env, 'POLYGON_BASE_URL'),
        ratePerMinute: envVar(env, 'POLYGON_RATE_PER_MINUTE'),
      })
    default:
      throw new AppError('CONFIG_INVALID', `unknown price source ${JSON.stringify(name)}: tiingo or polygon`)
  }
}

/**
 * Sources by name (`erm3 data fetch --source tiingo,sec`): each vendor module adds its case here,
 * built from the environment (its API key and base URL variables).
 */
export function sourcesFromNames(names: readonly string[], env: Env = process.env): Source[] {
  if (names.length === 0) throw new AppError('INVALID_REQUEST', 'no --source given')
  return names.map((name) => {
    switch (name) {
      case 'tiingo':
      case 'polygon':
        return priceSourceFromEnv(name, env)
      default:
        throw new AppError('INVALID_REQUEST', `unknown source "${name}": tiingo, polygon`)
    }
  })
}
