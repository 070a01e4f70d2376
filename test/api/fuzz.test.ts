import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { WIRE_ERRORS } from '../../src/contract/errors.ts'
import { type Operation, openApiPath } from '../../src/contract/operation.ts'
import { OPERATIONS } from '../../src/contract/operations.ts'
import { chatTools } from '../../src/services/chat/tools.ts'
import { signSession } from '../../src/services/identity/session.ts'
import { type FakeLlm, type FakeStep, startFakeLlm } from '../helpers/fake-llm.ts'
import { type FakePlaid, startFakePlaid } from '../helpers/fake-plaid.ts'
import { type FakeStripe, startFakeStripe } from '../helpers/fake-stripe.ts'
import * as fc from '../helpers/fc.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/**
 * Fuzzing every operation's parameters through the real stack: whatever arrives — and, for
 * POST /chat, whatever the model answers (text, or calls of real and made-up tools with any
 * arguments) — the answer is never a 5xx, and every 4xx is a problem+json from the closed error table.
 */
const nasty = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.constantFrom(
    '',
    ' ',
    'SPY',
    'spy',
    ' aapl ',
    'BRK-B',
    '..',
    '%',
    '%00',
    'null',
    '-1',
    '0',
    '1e309',
    'NaN',
    'x'.repeat(300),
  ),
  fc.integer().map(String),
  fc.double().map(String),
)

const jsonValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    fc.integer(),
    nasty,
    fc.array(tie('v'), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie('v'), { maxKeys: 4 }),
  ),
})).v

function propertyNames(schema: unknown): string[] {
  const p = (schema as { properties?: Record<string, unknown> } | undefined)?.properties
  return p ? Object.keys(p) : []
}

/** A chat request valid in shape (random content and bounds), so that runs reach the model. */
const chatBody = fc.record(
  {
    messages: fc.array(fc.record({ role: fc.constantFrom('user', 'assistant'), content: nasty }), {
      minLength: 1,
      maxLength: 4,
    }),
    stream: fc.boolean(),
    max_tool_calls: fc.integer({ min: -1, max: 11 }),
    max_tokens: fc.oneof(fc.integer({ min: 1, max: 64 }), fc.integer({ min: -5, max: 5000 })),
  },
  { requiredKeys: ['messages'] },
)

/** A body shaped like the operation's (known keys, random values) or anything at all. */
function bodyFor(op: Operation): fc.Arbitrary<unknown> {
  if (op.id === 'chat') return fc.oneof(chatBody, chatBody, jsonValue)
  const keys = propertyNames(op.body)
  const shaped = fc.record(Object.fromEntries(keys.map((k) => [k, jsonValue])), { requiredKeys: [] })
  return fc.oneof(
    shaped,
    jsonValue,
    fc.record({ tickers: fc.array(nasty, { maxLength: 120 }) }, { requiredKeys: [] }),
  )
}

/**
 * What the model answers a fuzzed POST /chat: text, or tool calls with any name (a real tool or
 * not) and any arguments (JSON or not), which erm3 runs or refuses and hands back to the model.
 */
function modelSteps(op: Operation): fc.Arbitrary<FakeStep[]> {
  if (op.id !== 'chat') return fc.constant([])
  const names = chatTools().map((t) => t.name)
  const call = fc.record({
    name: fc.oneof(fc.constantFrom(...names), fc.constantFrom(...names), nasty),
    arguments: fc.oneof(
      jsonValue.map((v) => JSON.stringify(v)),
      nasty,
    ),
  })
  const step: fc.Arbitrary<FakeStep> = fc.oneof(
    fc.record({ kind: fc.constant('text' as const), content: nasty }),
    fc.record({ kind: fc.constant('tools' as const), calls: fc.array(call, { minLength: 1, maxLength: 3 }) }),
  )
  return fc.array(step, { maxLength: 4 })
}

function queryFor(op: Operation): fc.Arbitrary<Record<string, string>> {
  const keys = [...propertyNames(op.querystring), 'format', 'zzz']
  return fc.dictionary(fc.constantFrom(...keys), nasty, { maxKeys: 5 })
}

describe('fuzz: every operation, random parameters', () => {
  let t: TestApp
  let keys: string[]
  let stripe: FakeStripe
  let plaid: FakePlaid
  let llm: FakeLlm
  before(async () => {
    // Chat against a loopback OpenAI-compatible fake whose answers the property scripts.
    llm = await startFakeLlm()
    // Brokerage holdings too (a loopback fake Plaid, one linked item), fuzzed past the 503.
    plaid = await startFakePlaid()
    // Card top-ups configured against a loopback fake, so their routes are fuzzed past the 503.
    stripe = await startFakeStripe()
    t = await startTestApp({
      env: {
        STRIPE_SECRET_KEY: 'sk_test_fuzz_0000',
        STRIPE_WEBHOOK_SECRET: 'whsec_fuzz_0000',
        STRIPE_API_BASE: stripe.url,
        PLAID_CLIENT_ID: plaid.clientId,
        PLAID_SECRET: plaid.secret,
        PLAID_API_BASE: plaid.url,
        ERM3_PLAID_TOKEN_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
        LLM_BASE_URL: llm.url,
        LLM_MODEL: 'fuzz-model',
        // The fake never hangs here: the timeout fires only on an overloaded machine (test/api/chat.test.ts
        // tests the timeout itself), so it is as generous as the chat suite's.
        LLM_TIMEOUT_MS: '30000',
      },
    })
    const email = `fuzz-${Date.now()}@example.com`
    const account = await t.account(100, email)
    const linked = await t.app.fastify.inject({
      method: 'POST',
      url: '/plaid/exchange',
      headers: { authorization: `Bearer ${await signSession(t.ctx, { accountId: account, email })}` },
      payload: { public_token: plaid.publicToken() },
    })
    assert.equal(linked.statusCode, 201, linked.body)
    // Many keys so the per-key rate limit does not turn the fuzz into a 429 test.
    keys = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        t.key(account, { env: i % 4 === 0 ? 'test' : 'live', tier: 'premium' }),
      ),
    )
  })
  after(async () => {
    await t?.close()
    await stripe?.close()
    await plaid?.close()
    await llm?.close()
  })

  let n = 0
  for (const op of OPERATIONS) {
    // An authenticated GET of an MCP stream stays open by design: fuzzed by the MCP tests instead.
    const skip = op.streaming && op.method === 'GET' ? 'a long-lived event stream' : undefined
    test(`${op.method} ${openApiPath(op.path)}`, { skip }, async () => {
      const params = op.path.match(/:(\w+)/g)?.map((p) => p.slice(1)) ?? []
      await fc.assert(
        fc.asyncProperty(
          fc.array(nasty, { minLength: params.length, maxLength: params.length }),
          queryFor(op),
          op.method === 'GET' ? fc.constant(undefined) : bodyFor(op),
          fc.constantFrom(
            'application/json',
            'application/json',
            'text/plain',
            'application/x-www-form-urlencoded',
          ),
          // `live`: a live key (test keys chat with the sandbox model, which never reaches the fake).
          fc.constantFrom('key', 'key', 'key', 'live', 'none', 'garbage'),
          fc.constantFrom(
            undefined,
            'application/json',
            'text/csv',
            'application/vnd.apache.parquet',
            'application/xml',
            '*/*',
          ),
          modelSteps(op),
          async (values, query, body, contentType, auth, accept, steps) => {
            llm.queue.length = 0
            llm.script(...steps)
            let path = op.path
            params.forEach((p, i) => {
              path = path.replace(`:${p}`, encodeURIComponent(values[i] ?? ''))
            })
            const qs = new URLSearchParams(query).toString()
            const headers: Record<string, string> = {}
            if (auth === 'key') headers.authorization = `Bearer ${keys[n++ % keys.length]}`
            // Keys 0, 4, 8, … are test keys: 1 + 4j is live.
            if (auth === 'live') headers.authorization = `Bearer ${keys[(1 + 4 * n++) % keys.length]}`
            if (auth === 'garbage') headers.authorization = 'Bearer erm_agent_live_nope'
            if (accept) headers.accept = accept
            let payload: string | undefined
            if (body !== undefined) {
              headers['content-type'] = contentType
              payload = JSON.stringify(body)
            }
            const r = await t.transport({
              method: op.method,
              url: qs ? `${path}?${qs}` : path,
              headers,
              body: payload,
            })
            assert.ok(
              r.status < 500,
              `${op.method} ${path}?${qs} ${payload ?? ''} → ${r.status} ${r.body.slice(0, 300)}`,
            )
            if (r.status >= 400 && op.errorStyle === 'oauth') {
              // RFC 6749 errors, or problem+json for what fails before the OAuth handler (401, 415 …).
              const e = JSON.parse(r.body) as { error?: unknown; code?: unknown }
              assert.ok(typeof e.error === 'string' || typeof e.code === 'string', r.body)
            } else if (
              r.status >= 400 &&
              op.contentType?.startsWith('text/html') &&
              /text\/html/.test(r.headers['content-type'] ?? '')
            ) {
              assert.match(r.body, /<html/i)
            } else if (
              r.status >= 400 &&
              op.streaming &&
              /^application\/json/.test(r.headers['content-type'] ?? '')
            ) {
              assert.equal((JSON.parse(r.body) as { jsonrpc?: string }).jsonrpc, '2.0', r.body)
            } else if (r.status >= 400) {
              assert.match(r.headers['content-type'] ?? '', /^application\/problem\+json/, r.body)
              const p = JSON.parse(r.body) as { code: keyof typeof WIRE_ERRORS; status: number }
              assert.ok(p.code in WIRE_ERRORS, p.code)
              assert.equal(WIRE_ERRORS[p.code].status, r.status)
            }
          },
        ),
        {
          numRuns: 40,
          // Random runs reach the model's tool round only now and then (a valid body, JSON, a key,
          // an acceptable Accept and a first step that calls tools): one run always does, so the
          // check below depends on the code, not on the seed.
          examples:
            op.id === 'chat'
              ? [
                  [
                    [],
                    {},
                    { messages: [{ role: 'user', content: 'hedge ratios of AAPL?' }], max_tokens: 64 },
                    'application/json',
                    'live',
                    undefined,
                    [{ kind: 'tools', calls: [{ name: chatTools()[0]?.name ?? 'x', arguments: '{}' }] }],
                  ],
                ]
              : [],
        },
      )
      if (op.id === 'chat') {
        // Not refused before the model every time: some runs reached it and ran its tool calls.
        assert.ok(llm.requests.length > 0, 'the fuzzed chat calls reached the model')
        assert.ok(
          llm.requests.some((r) => r.body.messages.some((m) => m.role === 'tool')),
          'and handed tool results back to it',
        )
      }
    })
  }
})
