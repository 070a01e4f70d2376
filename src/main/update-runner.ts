/**
 * The function a scheduled update runs (`erm3 serve --update-at`): engine/update's runUpdate with
 * the options the environment gives (the data directory, the store, the publish target, the
 * vendors' keys). THE MERGE POINT: wire runUpdate in here.
 */
import { AppError } from '../platform/errors.ts'
import type { UpdateRunner } from '../services/updates/scheduler.ts'

export function createUpdateRunner(_env: Record<string, string | undefined>): UpdateRunner {
  throw new AppError(
    'CONFIG_INVALID',
    'the scheduled update is not wired in this build: src/main/update-runner.ts has no update pipeline to run',
  )
}
