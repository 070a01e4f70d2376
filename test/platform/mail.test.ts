import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { pino } from 'pino'
import { SMTPServer } from 'smtp-server'
import { createLogger, type Logger } from '../../src/platform/logger.ts'
import { createOutboxMailer, createSmtpMailer, type MailMessage } from '../../src/platform/mail.ts'

const dir = await mkdtemp(join(tmpdir(), 'erm3-mail-'))
after(() => rm(dir, { recursive: true, force: true }))

// As long as a real one: the line exceeds 76 characters, so the body goes quoted-printable.
const LINK =
  'http://localhost:8080/auth/callback?token=q3VnU1x0-_8aQm9kZ2Vyc2F3ZXJlYWxseWxvbmd0b2tlbg&next=%2Fdashboard'
const message = (to: string): MailMessage => ({
  to,
  subject: 'Your erm3 sign-in link',
  text: `Sign in to erm3 by opening this link:\n\n${LINK}\n\nIf you did not ask for it, ignore this e-mail.\n`,
})

/** The decoded text body of a single-part RFC 5322 message (7bit or quoted-printable). */
function textBody(raw: string): { encoding: string; text: string } {
  const split = raw.indexOf('\r\n\r\n')
  const headers = raw.slice(0, split)
  const body = raw.slice(split + 4)
  const encoding = /^Content-Transfer-Encoding:\s*(\S+)/im.exec(headers)?.[1].toLowerCase() ?? '7bit'
  if (encoding !== 'quoted-printable') return { encoding, text: body }
  const bytes = Buffer.from(
    body
      .replace(/=\r\n/g, '')
      .replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16))),
    'latin1',
  )
  return { encoding, text: bytes.toString('utf8') }
}

/** A pino logger that keeps its JSON lines in memory. */
function memoryLogger(): { log: Logger; lines: () => Record<string, unknown>[] } {
  const raw: string[] = []
  const log = pino({ level: 'info' }, { write: (s: string) => void raw.push(s) })
  return { log, lines: () => raw.map((s) => JSON.parse(s) as Record<string, unknown>) }
}

interface Received {
  from: string | false
  to: string[]
  body: string
}

/** A real SMTP server on 127.0.0.1 (plain text, no auth) that records what it receives. */
async function startSmtp(): Promise<{ port: number; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = []
  const server = new SMTPServer({
    secure: false,
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        const env = session.envelope
        received.push({
          from: env.mailFrom === false ? false : env.mailFrom.address,
          to: env.rcptTo.map((r) => r.address),
          body: Buffer.concat(chunks).toString('utf8'),
        })
        callback()
      })
    },
  })
  const port = await new Promise<number>((resolve, reject) => {
    server.on('error', reject)
    const s = server.listen(0, '127.0.0.1', () => {
      const a = s.address()
      if (a && typeof a === 'object') resolve(a.port)
      else reject(new Error('no port'))
    })
  })
  return { port, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const a = server.address()
      if (a && typeof a === 'object') resolve(a.port)
      else reject(new Error('no port'))
    })
  })
}

describe('outbox mailer', () => {
  test('appends one JSON line per message to <home>/outbox/mail.jsonl (0600) and logs the link', async () => {
    const home = join(dir, 'home')
    const { log, lines } = memoryLogger()
    const mailer = createOutboxMailer(home, log)
    assert.equal(mailer.kind, 'outbox')
    await mailer.send(message('a@example.com'))
    await mailer.send({ to: 'b@example.com', subject: 'Receipt', text: 'No link in this one.' })

    const file = join(home, 'outbox', 'mail.jsonl')
    const content = await readFile(file, 'utf8')
    assert.ok(content.endsWith('\n'))
    const entries = content
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    assert.equal(entries.length, 2)
    assert.deepEqual(
      { to: entries[0].to, subject: entries[0].subject, text: entries[0].text },
      message('a@example.com'),
    )
    assert.equal(entries[1].to, 'b@example.com')
    for (const e of entries) {
      assert.equal(typeof e.at, 'string')
      assert.ok(!Number.isNaN(Date.parse(e.at as string)), `at is a timestamp: ${e.at}`)
    }
    if (process.platform !== 'win32') {
      assert.equal((await stat(file)).mode & 0o777, 0o600)
      assert.equal((await stat(join(home, 'outbox'))).mode & 0o077, 0, 'outbox/ is private')
    }

    const logged = lines()
    assert.equal(logged.length, 2)
    assert.equal(logged[0].to, 'a@example.com')
    assert.equal(logged[0].outbox, join(home, 'outbox'))
    assert.match(String(logged[0].msg), new RegExp(`${LINK.replace(/[.?]/g, '\\$&')}$`))
    // Without a link the subject stands in for it.
    assert.match(String(logged[1].msg), /Receipt$/)
  })
})

describe('SMTP mailer', () => {
  test('delivers to a real SMTP server: envelope from/to and the link in the body', async () => {
    const smtp = await startSmtp()
    try {
      const { log, lines } = memoryLogger()
      const mailer = createSmtpMailer(`smtp://127.0.0.1:${smtp.port}`, 'erm3 <noreply@erm3.example>', log)
      assert.equal(mailer.kind, 'smtp')
      await mailer.send(message('user@example.com'))
      assert.equal(smtp.received.length, 1)
      const [m] = smtp.received
      assert.equal(m.from, 'noreply@erm3.example')
      assert.deepEqual(m.to, ['user@example.com'])
      assert.match(m.body, /^Subject: Your erm3 sign-in link\r?$/m)
      // The link arrives intact once the transfer encoding is undone (as a mail client does).
      const body = textBody(m.body)
      assert.equal(body.encoding, 'quoted-printable')
      assert.ok(body.text.includes(LINK), body.text)
      const sent = lines().find((l) => l.msg === 'mail sent')
      assert.ok(sent, 'a "mail sent" log line')
      assert.equal(sent.to, 'user@example.com')
      assert.equal(typeof sent.message_id, 'string')
    } finally {
      await smtp.close()
    }
  })

  test('an SMTP server that refuses connections makes send reject', async () => {
    const probe = createServer()
    const port = await listen(probe)
    await new Promise<void>((resolve) => probe.close(() => resolve()))
    const mailer = createSmtpMailer(
      `smtp://127.0.0.1:${port}`,
      'noreply@erm3.example',
      createLogger('silent'),
    )
    await assert.rejects(mailer.send(message('user@example.com')), /ECONNREFUSED|connect/i)
  })

  test('a server that accepts but never greets makes send reject after the greeting timeout', async () => {
    // A wedged relay must fail the sign-in request, not hold it open; the URL may tune the timeout.
    const sockets: Socket[] = []
    const silent = createServer((s) => void sockets.push(s))
    const port = await listen(silent)
    try {
      const url = `smtp://127.0.0.1:${port}?greetingTimeout=300`
      const mailer = createSmtpMailer(url, 'noreply@erm3.example', createLogger('silent'))
      const t0 = performance.now()
      await assert.rejects(mailer.send(message('user@example.com')), { code: 'ETIMEDOUT' })
      assert.ok(performance.now() - t0 < 5_000)
    } finally {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => silent.close(() => resolve()))
    }
  })
})
