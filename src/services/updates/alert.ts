/**
 * Operator alerts: a failed or quarantined update, and data gone stale. They go to
 * ERM3_OPERATOR_WEBHOOK_URL (a JSON POST whose `text` Slack-style incoming webhooks display) and
 * to ERM3_OPERATOR_EMAIL through the mailer. Sending never blocks or fails the caller: a failure
 * is logged (without the webhook's URL, which often carries a token).
 */
import type { UpdateOutcome } from '../../engine/update/types.ts'
import type { Logger } from '../../platform/logger.ts'
import type { Mailer } from '../../platform/mail.ts'

/** What went wrong with the data (the body's `kind`). */
export type OperatorAlert =
  | { kind: 'update'; outcome: UpdateOutcome }
  | {
      kind: 'stale'
      staleness: { data_as_of: string | null; age_sessions: number; stale_after_sessions: number }
    }

export interface OperatorAlerts {
  /** Sends to every configured channel; resolves when all have answered or failed (never rejects). */
  send(alert: OperatorAlert): Promise<void>
}

const WEBHOOK_TIMEOUT_MS = 10_000

/** The one line people read (the webhook's `text`, the e-mail's subject). */
function alertText(alert: OperatorAlert): string {
  if (alert.kind === 'stale') {
    const s = alert.staleness
    return `erm3: data is stale: ${s.age_sessions} sessions since data_as_of ${s.data_as_of ?? '(none)'} (limit ${s.stale_after_sessions})`
  }
  const o = alert.outcome
  return `erm3 update ${o.outcome}: ${o.message}`
}

function mailBody(alert: OperatorAlert): string {
  const detail = alert.kind === 'stale' ? alert.staleness : alert.outcome
  return `${alertText(alert)}\n\n${JSON.stringify(detail, null, 2)}\n`
}

export function createOperatorAlerts(o: {
  webhookUrl: string | null
  email: string | null
  mailer: Mailer
  log: Logger
}): OperatorAlerts {
  const post = async (url: string, alert: OperatorAlert) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: alertText(alert), ...alert }),
      signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
      redirect: 'manual',
    })
    await res.body?.cancel()
    if (!res.ok) throw new Error(`the receiver answered ${res.status}`)
  }
  return {
    async send(alert) {
      const jobs: Promise<void>[] = []
      if (o.webhookUrl)
        jobs.push(
          post(o.webhookUrl, alert).catch((e: Error) => {
            // fetch's messages may quote the URL: log only the kind of failure.
            const why =
              e.name === 'TimeoutError'
                ? 'timed out'
                : e.message.startsWith('the receiver')
                  ? e.message
                  : 'could not connect'
            o.log.error({ alert: alert.kind, err: why }, 'operator alert: the webhook failed')
          }),
        )
      if (o.email)
        jobs.push(
          o.mailer
            .send({ to: o.email, subject: alertText(alert), text: mailBody(alert) })
            .catch((e: Error) =>
              o.log.error({ alert: alert.kind, err: e.message }, 'operator alert: the e-mail failed'),
            ),
        )
      if (jobs.length === 0)
        o.log.warn({ alert: alert.kind }, `operator alert (no channel configured): ${alertText(alert)}`)
      await Promise.all(jobs)
    },
  }
}
