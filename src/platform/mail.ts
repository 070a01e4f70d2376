import { appendFile, mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { createTransport } from 'nodemailer'
import type { Logger } from './logger.ts'

/** An outgoing e-mail (sign-in links, receipts). */
export interface MailMessage {
  to: string
  subject: string
  text: string
}

export interface Mailer {
  readonly kind: 'outbox' | 'smtp'
  send(message: MailMessage): Promise<void>
}

/**
 * Embedded mode: mail goes to `<home>/outbox/mail.jsonl` (one JSON object per line) and to the
 * log, so a local user can follow a sign-in link with no mail server. The log line carries the
 * link on purpose: on a laptop the log is the user's own console.
 */
export function createOutboxMailer(home: string, log: Logger): Mailer {
  const dir = join(home, 'outbox')
  return {
    kind: 'outbox',
    async send(m) {
      await mkdir(dir, { recursive: true, mode: 0o700 })
      const entry = { ...m, at: new Date().toISOString() }
      await appendFile(join(dir, 'mail.jsonl'), `${JSON.stringify(entry)}\n`, { mode: 0o600 })
      log.info(
        { to: m.to, subject: m.subject, outbox: dir },
        `mail (outbox): ${m.text.match(/https?:\/\/\S+/)?.[0] ?? m.subject}`,
      )
    },
  }
}

/**
 * nodemailer waits up to 2 minutes for a connection and 10 for a silent socket; a sign-in request
 * awaits the send, so an unreachable relay must fail it within the time a client still waits.
 * Query parameters of the URL (e.g. `?greetingTimeout=5000`) override these.
 */
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 }

/** Scale-out: SMTP through nodemailer (`SMTP_URL`, e.g. smtp://user:pass@mail:587). */
export function createSmtpMailer(url: string, from: string, log: Logger): Mailer {
  const transport = createTransport({ ...SMTP_TIMEOUTS, url })
  return {
    kind: 'smtp',
    async send(m) {
      const info = await transport.sendMail({ from, to: m.to, subject: m.subject, text: m.text })
      log.info({ to: m.to, subject: m.subject, message_id: info.messageId }, 'mail sent')
    },
  }
}
