/**
 * A local fake of the Stripe API on loopback, for the real `stripe` SDK (its host/port/protocol
 * options, STRIPE_API_BASE in erm3's config). It implements only what erm3 calls —
 * POST /v1/checkout/sessions — records every request, and builds and sends events to erm3's
 * webhook endpoint signed the way Stripe signs them:
 *   Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + raw body)>
 * The signer is written here from that scheme, independently of the SDK erm3 verifies with.
 */
import { createHmac, randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface RecordedRequest {
  method: string
  path: string
  headers: IncomingMessage['headers']
  /** The form-encoded body as the SDK sent it, flat (`line_items[0][price_data][unit_amount]` → '1000'). */
  form: Record<string, string>
}

export interface FakeSession {
  id: string
  object: 'checkout.session'
  mode: string
  url: string
  status: 'open' | 'complete'
  payment_status: 'unpaid' | 'paid'
  amount_total: number
  currency: string
  client_reference_id: string | null
  metadata: Record<string, string>
  payment_intent: string | null
  expires_at: number
  created: number
}

export interface StripeEventJson {
  id: string
  object: 'event'
  type: string
  api_version: string
  created: number
  livemode: false
  pending_webhooks: number
  request: { id: null; idempotency_key: null }
  data: { object: Record<string, unknown> }
}

const rid = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`

/** Stripe's signature scheme, from its definition (not the SDK). */
export function signStripePayload(payload: string, secret: string, timestampS: number): string {
  const v1 = createHmac('sha256', secret).update(`${timestampS}.${payload}`, 'utf8').digest('hex')
  return `t=${timestampS},v1=${v1}`
}

/** erm3's configuration for card top-ups against `fake`, with `webhookSecret` as the endpoint's secret. */
export const stripeEnv = (
  fake: FakeStripe,
  webhookSecret: string,
  secretKey = 'sk_test_fake_0123456789abcdef',
) => ({
  STRIPE_SECRET_KEY: secretKey,
  STRIPE_WEBHOOK_SECRET: webhookSecret,
  STRIPE_API_BASE: fake.url,
})

export interface FakeStripe {
  /** `http://127.0.0.1:<port>`: STRIPE_API_BASE. */
  url: string
  requests: RecordedRequest[]
  sessions: Map<string, FakeSession>
  /** Answers the next checkout creation with this HTTP status and a Stripe error body. */
  failNext(status: number): void
  /** Marks a session paid (or, for an async method, still unpaid) and gives it a payment intent. */
  complete(sessionId: string, opts?: { paid?: boolean }): FakeSession
  event(type: string, object: Record<string, unknown>, id?: string): StripeEventJson
  /** POSTs an event to `endpoint`, signed with `secret` at `timestampS` (default now). */
  send(
    endpoint: string,
    event: StripeEventJson,
    opts: { secret: string; timestampS?: number; signature?: string | null },
  ): Promise<{ status: number; body: Record<string, unknown> }>
  close(): Promise<void>
}

export async function startFakeStripe(): Promise<FakeStripe> {
  const requests: RecordedRequest[] = []
  const sessions = new Map<string, FakeSession>()
  let failStatus: number | null = null

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8')
      const form = Object.fromEntries(new URLSearchParams(raw))
      const path = (req.url ?? '/').split('?')[0] as string
      requests.push({ method: req.method ?? '', path, headers: req.headers, form })
      const reply = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json', 'request-id': rid('req') })
        res.end(JSON.stringify(body))
      }
      if (req.method === 'POST' && path === '/v1/checkout/sessions') {
        if (failStatus !== null) {
          const status = failStatus
          failStatus = null
          return reply(status, { error: { type: 'api_error', message: 'fake failure' } })
        }
        const quantity = Number(form['line_items[0][quantity]'] ?? '1')
        const unit = Number(form['line_items[0][price_data][unit_amount]'])
        const metadata: Record<string, string> = {}
        for (const [k, v] of Object.entries(form)) {
          const m = /^metadata\[(.+)\]$/.exec(k)
          if (m) metadata[m[1] as string] = v
        }
        const id = rid('cs_test')
        const now = Math.floor(Date.now() / 1000)
        const session: FakeSession = {
          id,
          object: 'checkout.session',
          mode: form.mode ?? 'payment',
          url: `https://checkout.stripe.test/c/pay/${id}`,
          status: 'open',
          payment_status: 'unpaid',
          amount_total: unit * quantity,
          currency: form['line_items[0][price_data][currency]'] ?? 'usd',
          client_reference_id: form.client_reference_id ?? null,
          metadata,
          payment_intent: null,
          expires_at: now + 24 * 3600,
          created: now,
        }
        sessions.set(id, session)
        return reply(200, session)
      }
      return reply(404, {
        error: { type: 'invalid_request_error', message: `no route ${req.method} ${path}` },
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    sessions,
    failNext(status) {
      failStatus = status
    },
    complete(sessionId, opts = {}) {
      const s = sessions.get(sessionId)
      if (!s) throw new Error(`no session ${sessionId}`)
      s.status = 'complete'
      s.payment_status = opts.paid === false ? 'unpaid' : 'paid'
      s.payment_intent ??= rid('pi')
      return { ...s, metadata: { ...s.metadata } }
    },
    event(type, object, id = rid('evt')) {
      return {
        id,
        object: 'event',
        type,
        api_version: '2025-01-01',
        created: Math.floor(Date.now() / 1000),
        livemode: false,
        pending_webhooks: 1,
        request: { id: null, idempotency_key: null },
        data: { object },
      }
    },
    async send(endpoint, event, opts) {
      const payload = JSON.stringify(event, null, 2)
      const t = opts.timestampS ?? Math.floor(Date.now() / 1000)
      const headers: Record<string, string> = {
        'content-type': 'application/json; charset=utf-8',
        'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
      }
      const sig = opts.signature === undefined ? signStripePayload(payload, opts.secret, t) : opts.signature
      if (sig !== null) headers['stripe-signature'] = sig
      const res = await fetch(endpoint, { method: 'POST', headers, body: payload })
      const text = await res.text()
      let body: Record<string, unknown> = {}
      try {
        body = JSON.parse(text) as Record<string, unknown>
      } catch {
        body = { text }
      }
      return { status: res.status, body }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
