import type { Static } from 'typebox'
import { API_VERSION } from '../../contract/openapi.ts'
import type { agenticDisclosureSchema } from '../../contract/ops/discovery.ts'
import { CACHE_TTL_MS } from '../billing/metered-call.ts'
import type { ServiceContext } from '../context.ts'
import { LOGIN_TTL_MS } from '../identity/login.ts'
import { PURGE_AFTER_EXPIRY_MS } from '../identity/retention.ts'
import { SESSION_TTL_S } from '../identity/session.ts'
import { IP_RULES } from '../limits.ts'
import { datasetOf } from '../models.ts'
import { ACCESS_TTL_S, CODE_TTL_MS, REFRESH_TTL_MS } from '../oauth/common.ts'
import type { DiscoveryLinks } from './links.ts'

export type AgenticDisclosure = Static<typeof agenticDisclosureSchema>
type Stored = AgenticDisclosure['data_stored'][number]

/** "15 minutes", "1 hour", "30 days". */
function span(ms: number): string {
  const [n, unit] =
    ms % 86_400_000 === 0 && ms >= 2 * 86_400_000
      ? [ms / 86_400_000, 'day']
      : ms % 3_600_000 === 0
        ? [ms / 3_600_000, 'hour']
        : [ms / 60_000, 'minute']
  return `${n} ${unit}${n === 1 ? '' : 's'}`
}

const KEPT = 'Kept: erm3 has no deletion or purge job for these rows.'

/**
 * Every claim below follows from the code (src/store, src/services, src/platform/mail.ts) and
 * the backends this instance was configured with; review this file whenever storage changes.
 */
function stored(ctx: ServiceContext): Stored[] {
  return [...inTheDatabase(ctx), ...inTheLimitsBackend(ctx), ...inLogsAndMail(ctx)]
}

/** What the account database holds (SQLite file or PostgreSQL). */
function inTheDatabase(ctx: ServiceContext): Stored[] {
  const db = ctx.accounts.backend === 'sqlite' ? 'SQLite database file on the server' : 'PostgreSQL database'
  return [
    {
      category: 'accounts',
      fields: [
        'account id',
        'e-mail address (none for anonymous accounts)',
        'kind',
        'creation time',
        'balance',
      ],
      purpose: 'Identify who pays; passwordless sign-in',
      where: db,
      retention: KEPT,
    },
    {
      category: 'API keys and OAuth access tokens',
      fields: [
        'HMAC-SHA256 of the key (the key itself is shown once and never stored)',
        'display prefix',
        'name',
        'environment and rate tier',
        'created, last-used, revoked and expiry times',
        'OAuth client id (access tokens)',
      ],
      purpose: 'Authenticate requests',
      where: db,
      retention: `${KEPT} Revoked and expired keys stay on record and stay refused; OAuth access tokens expire after ${span(ACCESS_TTL_S * 1000)}.`,
    },
    {
      category: 'ledger',
      fields: [
        'entry id',
        'account',
        'kind (top-up, credit, refund, debit)',
        'amount',
        'capability',
        'request id',
        'key id',
        'top-up reference and note',
        'time',
      ],
      purpose: 'Prepaid balance, charges and invoices',
      where: db,
      retention:
        'Append-only and kept indefinitely: the database refuses updates and deletes. One debit per charged call; calls that cost nothing (free operations, cache hits, 304s, errors, test keys) write no entry.',
    },
    {
      category: 'sign-in links',
      fields: [
        'SHA-256 of the one-time token',
        'e-mail address',
        'SHA-256 of the asking browser’s sign-in nonce',
        'created, expiry and used times',
      ],
      purpose: 'Passwordless sign-in',
      where: db,
      retention: `Usable once within ${span(LOGIN_TTL_MS)}; deleted ${span(PURGE_AFTER_EXPIRY_MS.loginTokens)} after expiry (checked every few minutes while the server runs).`,
    },
    {
      category: 'sign-in sessions',
      fields: [
        'session id',
        'account',
        'SHA-256 of the secret in the session token (the token itself is held by the browser or program)',
        'created, last-seen (to within a few minutes), expiry and signed-out times',
      ],
      purpose: 'Dashboard and account sessions that signing out ends at once',
      where: db,
      retention: `A session lasts ${span(SESSION_TTL_S * 1000)} at most; deleted ${span(PURGE_AFTER_EXPIRY_MS.sessions)} after expiry, signed out or not.`,
    },
    {
      category: 'account audit log',
      fields: [
        'time',
        'who: session e-mail, key id or the operator',
        'action (sign-in, sign-out, key and settings changes …), its target and details',
        'the client IP address of the request',
      ],
      purpose: 'Show the account holder who changed what, when, and from where',
      where: db,
      retention: KEPT,
    },
    {
      category: 'OAuth clients, authorization codes and refresh tokens',
      fields: [
        'client id, client name, redirect URIs, registration time',
        'SHA-256 of each code and refresh token (never the secret)',
        'account, client, redirect URI, PKCE challenge and scope of each grant',
        'created, expiry, used, rotated and revoked times',
      ],
      purpose: 'OAuth 2.0 for agent clients',
      where: db,
      retention: `Codes are usable once within ${span(CODE_TTL_MS)} and deleted ${span(PURGE_AFTER_EXPIRY_MS.codes)} after expiry; refresh tokens live ${span(REFRESH_TTL_MS)}, rotated on every use, and are deleted ${span(PURGE_AFTER_EXPIRY_MS.refreshTokens)} after expiry (so a replayed old token is still recognised). Client registrations are kept.`,
    },
  ]
}

/** What the limits backend holds (Redis, or the serving process's memory). */
function inTheLimitsBackend(ctx: ServiceContext): Stored[] {
  const limits = ctx.limits.backend === 'redis' ? 'Redis' : "the serving process's memory (lost on restart)"
  const longestIpRule = Math.max(...Object.values(IP_RULES).map((r) => r.periodMs))
  return [
    {
      category: 'response cache',
      fields: [
        'the response body of a metered call (live or test key)',
        'under a SHA-256 of account, environment, request, data_as_of and format',
      ],
      purpose: 'Serve identical repeats for free',
      where: limits,
      retention: `At most ${span(CACHE_TTL_MS)}; may be evicted earlier.`,
    },
    {
      category: 'rate-limit counters',
      fields: [
        'per key: key id',
        'sign-in, anonymous provisioning and OAuth registration: the client IP address',
        'sign-in: the e-mail address asked for',
      ],
      purpose: 'Rate and concurrency limits',
      where: limits,
      retention:
        ctx.limits.backend === 'redis'
          ? `Expire once the counter has refilled (at most ${span(longestIpRule)} for the per-IP counters).`
          : `Dropped by a later sweep once the counter has refilled (per-IP counters refill within ${span(longestIpRule)}), and on restart.`,
    },
  ]
}

/** What leaves in the logs, and the mail outbox of embedded mode. */
function inLogsAndMail(ctx: ServiceContext): Stored[] {
  const out: Stored[] = [
    {
      category: 'logs',
      fields: [
        'per request: request id, the client’s own correlation id when it sent one, operation id, method, status, duration, key id (the line carries no URL, query, body or IP)',
        'OAuth registrations, code grants and revocations: client id and account id',
        'e-mails sent: recipient and subject (in embedded mode also the sign-in link)',
      ],
      purpose: 'Operations and debugging',
      where: 'Standard error as JSON lines; where they go is the operator’s choice',
      retention: 'Decided by the operator; erm3 writes no log files of its own.',
    },
  ]
  if (ctx.mailer.kind === 'outbox')
    out.push({
      category: 'mail outbox (embedded mode)',
      fields: ['recipient', 'subject', 'text including the sign-in link', 'time'],
      purpose: 'Deliver sign-in links without a mail server (the local user reads them)',
      where: 'outbox/mail.jsonl under ERM3_HOME, and the log line of each mail',
      retention: 'Kept: erm3 never truncates the outbox.',
    })
  return out
}

const NOT_STORED = [
  'API keys, refresh tokens, authorization codes and sign-in tokens in clear: only their hashes',
  'Request bodies and query strings, except as part of the response cache key hash',
  'IP addresses, except in the per-IP rate-limit counters and the account audit log above',
  'MCP sessions: only the account and environment that opened each, in the limits backend (Redis when nodes scale out, else process memory), forgotten after 30 idle minutes',
  'Payment card data: this version has no payment integration; top-ups are recorded by the operator',
]

function llmHost(baseUrl: string): string {
  try {
    return new URL(baseUrl).host
  } catch {
    return 'its host'
  }
}

/**
 * Whether a language model is in the loop is configuration: POST /chat with a live key sends the
 * conversation and tool results to the operator's provider when LLM_BASE_URL is set.
 */
function automatedProcessing(ctx: ServiceContext): AgenticDisclosure['automated_processing'] {
  const computed =
    'Every number is computed deterministically from the dataset (end-of-day prices and classifications) by the published methodology; no language model produces or alters results, and nothing is decided about users beyond key validity, balance and rate limits.'
  if (!ctx.config.llm)
    return { llm_in_the_loop: false, automated_decisions_about_people: false, description: computed }
  return {
    llm_in_the_loop: true,
    automated_decisions_about_people: false,
    description: `${computed} POST /chat (only when a caller asks for it) has a language model at ${llmHost(ctx.config.llm.baseUrl)} (model ${ctx.config.llm.model}, configured by the operator) answer in words by calling those same operations; its text is the model's, the numbers it quotes come from the tools. Test keys chat with erm3's own scripted sandbox model, which calls no provider.`,
  }
}

export function buildDisclosure(ctx: ServiceContext, l: DiscoveryLinks): AgenticDisclosure {
  return {
    service: 'erm3',
    version: API_VERSION,
    base_url: l.base,
    operator: {
      url: l.base,
      contact: null,
      note: 'erm3 is self-hosted software: the operator is whoever runs this instance. No contact address is configured.',
    },
    software: { name: 'erm3', license: 'Apache-2.0', self_hostable: true },
    automated_processing: automatedProcessing(ctx),
    training_on_request_data: false,
    third_party_sharing: {
      sells_or_shares_data: false,
      processors: [
        ...(ctx.mailer.kind === 'smtp'
          ? [
              'The SMTP relay configured by the operator (SMTP_URL) receives the recipient address and the sign-in link',
            ]
          : []),
        ...(ctx.config.llm
          ? [
              `The language model provider configured by the operator (${llmHost(ctx.config.llm.baseUrl)}, LLM_BASE_URL) receives, for POST /chat with a live key, the conversation and the results of the tools the model calls`,
            ]
          : []),
      ],
    },
    data_stored: stored(ctx),
    not_stored: NOT_STORED,
    market_data: {
      description:
        "Results derive only from the model store built from the operator's dataset: erm3's deterministic synthetic market (the default embedded mode; not real prices), price files the operator imported, or market data the operator's `erm3 data fetch` / `erm3 update` fetched from data vendors. Answering a data request never calls a third party.",
      this_instance: 'not_built',
    },
    links: { agent_manifest: l.agentManifest, methodology: l.methodology, openapi: l.openapi },
  }
}

/** The source of the live store at this moment (a rebuild may swap it while serving). */
export function liveDataSource(ctx: ServiceContext): AgenticDisclosure['market_data']['this_instance'] {
  const store = ctx.models.peek('live')
  if (!store) return 'not_built'
  return datasetOf(store).kind
}
