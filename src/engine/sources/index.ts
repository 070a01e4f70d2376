/**
 * Sources by name (`erm3 data fetch --source tiingo,sec`): each vendor module adds its case here,
 * built from the environment (its API key and base URL variables).
 */
import { AppError } from '../../platform/errors.ts'
import type { Source } from './types.ts'

export function sourcesFromNames(names: readonly string[], _env: NodeJS.ProcessEnv): Source[] {
  if (names.length === 0) throw new AppError('INVALID_REQUEST', 'no --source given')
  return names.map((name) => {
    switch (name) {
      default:
        throw new AppError('INVALID_REQUEST', `unknown source "${name}"`)
    }
  })
}
