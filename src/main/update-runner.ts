/**
 * The function a scheduled update runs (`erm3 serve --update-at`): what `erm3 update` does, with
 * the sources, data directory and settings the environment gives. A local live store is built
 * into directly (the reload poll then serves the new build); a remote one (s3://, http(s)://) is
 * built under $ERM3_HOME/store and published to it.
 */
import { join } from 'node:path'
import type { UpdateOutcome } from '../engine/update/types.ts'
import { dataFetchConfig, operatorAlertConfig } from '../platform/config.ts'
import type { Logger } from '../platform/logger.ts'
import { createOutboxMailer, createSmtpMailer } from '../platform/mail.ts'
import { createOperatorAlerts } from '../services/updates/alert.ts'
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
