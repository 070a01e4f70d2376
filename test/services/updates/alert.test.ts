import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, test } from 'node:test'
import { SMTPServer } from 'smtp-server'
import { createSmtpMailer } from '../../../src/platform/mail.ts'
import { createOperatorAlerts } from '../../../src/services/updates/alert.ts'
import { memoryLogger, outcomeOf } from './helpers.ts'

/** A webhook receiver on loopback that records each POST and answers `status`. */
async function receiver(status = 200) {
  const got: { headers: Record<string, unknown>; body: Record<string, unknown> }[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      got.push({ headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) })
      res.writeHead(status).end('ok')
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  after(() => new Promise<void>((r) => server.close(() => r())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/T000?token=s3cret`, got }
}

/** A real SMTP server on loopback that keeps the messages it receives. */
async function smtp() {
  const mails: { to: string[]; body: string }[] = []
  const server = new SMTPServer({
    secure: false,
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        mails.push({
          to: session.envelope.rcptTo.map((r) => r.address),
          body: Buffer.concat(chunks).toString('utf8'),
        })
        callback()
      })
    },
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  after(() => new Promise<void>((r) => server.close(() => r())))
  const port = (server.server.address() as AddressInfo).port
  return { url: `smtp://127.0.0.1:${port}`, mails }
}

test('an update alert goes to the webhook as JSON with a text line, and by e-mail', async () => {
  const hook = await receiver()
  const mail = await smtp()
  const { log } = memoryLogger()
  const alerts = createOperatorAlerts({
    webhookUrl: hook.url,
    email: 'ops@example.test',
    mailer: createSmtpMailer(mail.url, 'erm3 <erm3@example.test>', log),
    log,
  })
  const outcome = outcomeOf('quarantined')
  await alerts.send({ kind: 'update', outcome })
  assert.equal(hook.got.length, 1)
  const body = hook.got[0]?.body ?? {}
  assert.equal(hook.got[0]?.headers['content-type'], 'application/json')
  assert.equal(body.text, 'erm3 update quarantined: quarantined for the test')
  assert.equal(body.kind, 'update')
  assert.deepEqual(body.outcome, outcome)
  assert.equal(mail.mails.length, 1)
  assert.deepEqual(mail.mails[0]?.to, ['ops@example.test'])
  assert.match(mail.mails[0]?.body ?? '', /Subject: erm3 update quarantined: quarantined for the test/)
  assert.match(mail.mails[0]?.body ?? '', /"large_move"/)
})

test('a stale-data alert carries the staleness', async () => {
  const hook = await receiver()
  const { log } = memoryLogger()
  const alerts = createOperatorAlerts({ webhookUrl: hook.url, email: null, mailer: failingMailer, log })
  const staleness = { data_as_of: '2025-07-01', age_sessions: 3, stale_after_sessions: 2 }
  await alerts.send({ kind: 'stale', staleness })
  assert.equal(
    hook.got[0]?.body.text,
    'erm3: data is stale: 3 sessions since data_as_of 2025-07-01 (limit 2)',
  )
  assert.deepEqual(hook.got[0]?.body.staleness, staleness)
})

const failingMailer = {
  kind: 'smtp' as const,
  send: async () => {
    throw new Error('connect ECONNREFUSED')
  },
}

test('failures are logged, never thrown, and never quote the webhook URL', async () => {
  const hook = await receiver(500)
  const { log, lines } = memoryLogger()
  const alerts = createOperatorAlerts({
    webhookUrl: hook.url,
    email: 'ops@example.test',
    mailer: failingMailer,
    log,
  })
  await alerts.send({ kind: 'update', outcome: outcomeOf('failed') })
  const errs = lines().filter((l) => l.level === 50)
  assert.deepEqual(errs.map((l) => [l.msg, l.err]).sort(), [
    ['operator alert: the e-mail failed', 'connect ECONNREFUSED'],
    ['operator alert: the webhook failed', 'the receiver answered 500'],
  ])
  // Nothing listens on port 9 of loopback: a connection failure.
  const down = createOperatorAlerts({
    webhookUrl: 'http://127.0.0.1:9/x?token=s3cret',
    email: null,
    mailer: failingMailer,
    log,
  })
  await down.send({ kind: 'update', outcome: outcomeOf('failed') })
  const all = JSON.stringify(lines())
  assert.ok(!all.includes('s3cret'), 'the webhook URL (and its token) never reaches the log')
  assert.ok(lines().some((l) => l.err === 'could not connect'))
})
