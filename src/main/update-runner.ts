/**
 * The function a scheduled update runs (`erm3 serve --update-at`): what `erm3 update` does, with
 * the sources, data directory and settings the environment gives. A local live store is built
 * into directly (the reload poll then serves the new build); a remote one (s3://, http(s)://) is
 * built under $ERM3_HOME/store and published to it.
 */
import { join } from 'node:path'
import { sourcesFromNames } from '../engine/sources/index.ts'
import type { UpdateOutcome } from '../engine/update/types.ts'
import { dataFetchConfig, operatorAlertConfig } from '../platform/config.ts'
import { AppError } from '../platform/errors.ts'
import type { Logger } from '../platform/logger.ts'
import { createOutboxMailer, createSmtpMailer } from '../platform/mail.ts'
import { createOperatorAlerts } from '../services/updates/alert.ts'
import type { UpdateRunner } from '../services/updates/scheduler.ts'

type Env = Record<string, string | undefined>

export function createUpdateRunner(env: Env, liveStore: string): UpdateRunner {
  const remote = /^(s3|https?):\/\//i.test(liveStore)
  const c = dataFetchConfig(env)
  if (c.sources.length === 0)
    throw new AppError(
      'CONFIG_INVALID',
      'a scheduled update needs its sources: set ERM3_SOURCES (e.g. polygon,sec,treasury)',
    )
  // Built now, so a missing key or a bad base URL stops the server at start, naming the variable.
  const sources = sourcesFromNames(c.sources, env)
  return async (signal) => {
    const { updateCommand } = await import('../cli/commands/update.ts')
    const store = remote ? join(c.home, 'store') : liveStore
    return updateCommand({ store, publish: remote ? liveStore : undefined, signal }, sources, env)
  }
}

/**
 * `erm3 update` outside a server (cron, a systemd timer, a CronJob): a quarantined or failed
 * outcome goes to the operator's webhook and e-mail, as the in-process schedule sends it.
 */
export async function alertOperator(env: Env, outcome: UpdateOutcome, log: Logger): Promise<void> {
  if (outcome.outcome !== 'quarantined' && outcome.outcome !== 'failed') return
  const c = operatorAlertConfig(env)
  if (!c.webhookUrl && !c.email) return
  const mailer = c.smtpUrl ? createSmtpMailer(c.smtpUrl, c.mailFrom, log) : createOutboxMailer(c.home, log)
  await createOperatorAlerts({ webhookUrl: c.webhookUrl, email: c.email, mailer, log }).send({
    kind: 'update',
    outcome,
  })
}
