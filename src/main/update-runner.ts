/**
 * The function a scheduled update runs (`erm3 serve --update-at`): what `erm3 update` does, with
 * the sources, data directory and settings the environment gives. A local live store is built
 * into directly (the reload poll then serves the new build); a remote one (s3://, http(s)://) is
 * built under $ERM3_HOME/store and published to it.
 */
import { join } from 'node:path'
import { dataFetchConfig } from '../platform/config.ts'
import type { UpdateRunner } from '../services/updates/scheduler.ts'

type Env = Record<string, string | undefined>

export function createUpdateRunner(env: Env, liveStore: string): UpdateRunner {
  const remote = /^(s3|https?):\/\//i.test(liveStore)
  return async (signal) => {
    const { configuredSources, updateCommand } = await import('../cli/commands/update.ts')
    const sources = await configuredSources(undefined, env)
    const store = remote ? join(dataFetchConfig(env).home, 'store') : liveStore
    return updateCommand({ store, publish: remote ? liveStore : undefined, signal }, sources, env)
  }
}
