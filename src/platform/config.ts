import { resolve } from 'node:path'
import { parseTrustedProxies } from './client-address.ts'
import { AppError } from './errors.ts'

/**
 * Configuration from the environment, validated once at start: a bad value stops the process
 * with a message naming the variable, instead of failing later in some stage. CONFIG_VARS below
 * is the one schema: parsing, defaults, the typed Config and docs/configuration.md derive from it
 * (what each variable means and defaults to is written there, not on the fields here).
 */
export interface Config {
  /** Home of the embedded mode: dataset, model store, database, outbox. */
  home: string
  /** Overrides for the default synthetic dataset created by `erm3 start`. */
  synth: { seed?: number; stocks?: number; end?: string }
  /** LOG_LEVEL: the pino level of the server's logs. */
  logLevel: string
  server: ServerConfig
}

export interface ServerConfig {
  host: string
  port: number
  /** Externally visible origin (no trailing slash): links, error `type` URIs, OAuth issuer. */
  publicUrl: string
  /** ERM3_STORE: a directory (resolved), or s3://bucket/prefix or http(s)://host/prefix as given; null = `<home>/store`. */
  store: string | null
  /** How a remote store is read and how often any store's CURRENT is polled. */
  storeAccess: StoreAccessConfig
  databaseUrl: string | null
  redisUrl: string | null
  /** Key-hash pepper and session-signing secret; required with DATABASE_URL (shared by all nodes). */
  pepper: string | null
  sessionSecret: string | null
  /** ERM3_WEBHOOK_KEY; null: embedded mode generates one under ERM3_HOME, with DATABASE_URL webhooks answer 503. */
  webhookKey: string | null
  webhookAllowLoopback: boolean
  smtpUrl: string | null
  mailFrom: string
  metricsToken: string | null
  /** TRUST_PROXY as a list; empty: the socket's peer is the client. */
  trustProxy: string[]
  ipv6Prefix: number
  freeProvisionDailyCap: number
  /** The listener's defences against slow and greedy clients. */
  http: HttpEdgeConfig
  /** Where a 402 sends a client to add funds: the operator's billing page, else /docs/billing. */
  topUpUrl: string | null
  /** Per-IP limit of every request made without an API key (ERM3_IP_RATE_PER_MINUTE, ERM3_IP_RATE_BURST). */
  ipRate: { perMinute: number; burst: number }
  /** Stripe top-ups: null unless STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET are both set. */
  stripe: StripeConfig | null
  /** POST /chat's model provider: null unless LLM_BASE_URL and LLM_MODEL are set (then 503 UNAVAILABLE). */
  llm: LlmConfig | null
  /** Brokerage holdings through Plaid: null unless PLAID_CLIENT_ID and PLAID_SECRET are set. */
  plaid: PlaidConfig | null
}

interface HttpEdgeConfig {
  headersTimeoutMs: number
  requestTimeoutMs: number
  keepAliveTimeoutMs: number
  /** 0 = no cap. */
  maxConnectionsPerAddress: number
}

export interface PlaidTokenKey {
  /** Recorded beside every ciphertext, so a token sealed under an older key still opens. */
  id: string
  /** 32 raw bytes (AES-256-GCM). */
  key: Buffer
}

export interface PlaidConfig {
  clientId: string
  secret: string
  /** PLAID_ENV: the host of PlaidEnvironments. */
  env: 'sandbox' | 'production'
  apiBase: string | null
  /** ERM3_PLAID_TOKEN_KEYS, current key first; the others only decrypt (rotation). */
  tokenKeys: PlaidTokenKey[]
  timeoutMs: number
}

export interface StripeConfig {
  secretKey: string
  webhookSecret: string
  /** STRIPE_API_BASE (tests only), e.g. a local fake `http://127.0.0.1:12111`. */
  apiBase: { protocol: 'http' | 'https'; host: string; port: number } | null
}

/** Reading a shared model store (docs/model-store.md). */
export interface StoreAccessConfig {
  cacheMb: number
  /** 0 = off. */
  pollSeconds: number
  timeoutMs: number
  s3: {
    /** AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL; null = AWS. */
    endpoint: string | null
    /** AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1. */
    region: string
    forcePathStyle: boolean
    /** AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN); null = the SDK's default chain. */
    credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | null
  }
}

/** An OpenAI-compatible Chat Completions provider (hosted, or llama.cpp / vLLM / Ollama) and chat's limits. */
export interface LlmConfig {
  /** LLM_BASE_URL, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8081/v1`. */
  baseUrl: string
  /** LLM_API_KEY: optional (local servers need none); never logged, never sent to the model. */
  apiKey: string | null
  model: string
  timeoutMs: number
  /** ERM3_CHAT_RPM, ERM3_CHAT_TPM. */
  requestsPerMinute: number
  tokensPerMinute: number
  maxInputTokens: number
}

type Env = Record<string, string | undefined>

/** The sections of the configuration, in the order the documentation lists them. */
export const CONFIG_GROUPS = {
  home: 'Embedded mode',
  server: 'Server',
  store: 'Model store',
  backends: 'Backends and secrets',
  edge: 'Network edge and per-address limits',
  billing: 'Billing (Stripe)',
  plaid: 'Brokerage holdings (Plaid)',
  chat: 'Chat (LLM provider)',
  mcp: 'MCP client (`erm3 mcp`)',
} as const
export type ConfigGroup = keyof typeof CONFIG_GROUPS

/**
 * One environment variable: how it is parsed and checked, its value when unset (or empty), and
 * its documentation. `parse` gets a non-empty string and throws AppError CONFIG_INVALID with a
 * message that names the variable and what it expects.
 */
export interface ConfigVar<T> {
  group: ConfigGroup
  /** What a valid value is, e.g. "an integer in 0..65535" (documentation). */
  expects: string
  /** The value when the variable is unset or empty. */
  default: T
  /** How the default reads in the documentation when it is not a constant (e.g. `$ERM3_HOME/store`). */
  defaultText?: string
  description: string
  /** Never echoed in a message, never logged. */
  secret?: boolean
  parse(raw: string, name: string): T
}

type Meta = Pick<ConfigVar<unknown>, 'group' | 'description' | 'defaultText' | 'secret'>

const fail = (message: string): never => {
  throw new AppError('CONFIG_INVALID', message)
}
const got = (raw: string) => `, got ${JSON.stringify(raw)}`

function custom<T>(spec: ConfigVar<T>): ConfigVar<T> {
  return spec
}

function text<D extends string | null>(dflt: D, meta: Meta): ConfigVar<string | D> {
  return { ...meta, expects: 'text', default: dflt, parse: (raw) => raw }
}

function int<D extends number | null>(
  lo: number,
  hi: number,
  dflt: D,
  meta: Meta & { also?: { expects: string; check(n: number, name: string): void } },
): ConfigVar<number | D> {
  const { also, ...rest } = meta
  return {
    ...rest,
    expects: `an integer in ${lo}..${hi}${also ? `; ${also.expects}` : ''}`,
    default: dflt,
    parse(raw, name) {
      const n = Number(raw)
      if (!Number.isInteger(n) || n < lo || n > hi)
        fail(`${name} must be an integer in ${lo}..${hi}${got(raw)}`)
      also?.check(n, name)
      return n
    },
  }
}

function bool(meta: Meta): ConfigVar<boolean> {
  return {
    ...meta,
    expects: '`true`, `false`, `1` or `0`',
    default: false,
    parse(raw, name) {
      if (!['true', 'false', '1', '0'].includes(raw)) fail(`${name} must be true or false${got(raw)}`)
      return raw === 'true' || raw === '1'
    },
  }
}

/** `raw` if it is a URL with one of `protocols`; a secret one (with a password) is never echoed. */
function checkUrl(raw: string, name: string, protocols: string[], secret = false): string {
  let u: URL | null = null
  try {
    u = new URL(raw)
  } catch {
    fail(`${name} must be a URL${secret ? '' : got(raw)}`)
  }
  if (u && !protocols.includes(u.protocol))
    fail(`${name} must use ${protocols.join(' or ')}, got ${u.protocol}`)
  return raw
}

/** A URL with one of `protocols`, kept as given (without trailing slashes when `trimSlash`). */
function url(protocols: string[], meta: Meta & { trimSlash?: boolean }): ConfigVar<string | null> {
  const { trimSlash, ...rest } = meta
  return {
    ...rest,
    expects: `a URL (${protocols.map((p) => `\`${p.slice(0, -1)}\``).join(', ')})`,
    default: null,
    parse(raw, name) {
      const ok = checkUrl(raw, name, protocols, meta.secret)
      return trimSlash ? ok.replace(/\/+$/, '') : ok
    },
  }
}

/** A shared secret: long enough to be random data. */
function secret32(meta: Omit<Meta, 'secret'>): ConfigVar<string | null> {
  return {
    ...meta,
    secret: true,
    expects: 'at least 32 characters of random data (e.g. `openssl rand -base64 48`)',
    default: null,
    parse(raw, name) {
      if (raw.length < 32) fail(`${name} must be at least 32 characters of random data`)
      return raw
    },
  }
}

const TRUST_PROXY_HINT =
  'list the proxies in front of erm3, comma-separated: addresses, CIDR ranges or loopback, linklocal, uniquelocal (e.g. TRUST_PROXY=10.0.0.0/8 or TRUST_PROXY=loopback)'

/**
 * TRUST_PROXY as a list of trusted proxies. `true` is refused: believing every hop makes the
 * left-most X-Forwarded-For entry the client, and the client writes that one itself. A hop count is
 * refused too: it cannot tell a proxy from a client that connects directly and sends the header.
 */
function parseTrustProxy(raw: string): string[] {
  if (raw === 'false' || raw === '0') return []
  if (raw === 'true' || /^\d+$/.test(raw))
    fail(
      `TRUST_PROXY=${raw} would let any client choose its own address through X-Forwarded-For; ${TRUST_PROXY_HINT}`,
    )
  const list = raw
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')
  try {
    parseTrustedProxies(list)
  } catch (e) {
    fail(`TRUST_PROXY: ${(e as Error).message}; ${TRUST_PROXY_HINT}`)
  }
  return list
}

const PLAID_KEYS_HINT =
  'ERM3_PLAID_TOKEN_KEYS must be a comma-separated list of id:base64key (32-byte keys, e.g. `openssl rand -base64 32`), the current key first'

/** `id:base64key,…`: never echoes a value (they are secrets), only positions and ids. */
function parsePlaidTokenKeys(raw: string): PlaidTokenKey[] {
  const keys = raw.split(',').map((part, i) => {
    const m = /^([A-Za-z0-9_-]{1,32}):([A-Za-z0-9+/_-]+={0,2})$/.exec(part.trim())
    const key = m ? Buffer.from(m[2] as string, 'base64') : null
    if (!m || !key || key.length !== 32) return fail(`${PLAID_KEYS_HINT}; entry ${i + 1} is not`)
    return { id: m[1] as string, key }
  })
  if (new Set(keys.map((k) => k.id)).size !== keys.length) fail(`${PLAID_KEYS_HINT}; a key id repeats`)
  return keys
}

/** The pino levels. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

/**
 * Every environment variable erm3 reads: the one place that says how each is parsed, what it
 * defaults to and what it means. loadConfig (and storeAccess, mcpClientConfig) read through it,
 * and docs/configuration.md is generated from it (scripts/docs-config.ts).
 */
export const CONFIG_VARS = {
  ERM3_HOME: text('.erm3', {
    group: 'home',
    defaultText: '`./.erm3`',
    description:
      'home of the embedded mode: `dataset/`, `store/`, `sandbox/`, `erm3.db`, `secrets.json`, `webhook-key`, `outbox/` (the database with its `-wal` and `-shm`, the secrets and the outbox are created owner-only, `0600`/`0700`; an older `erm3.db` readable by others is made `0600` when opened)',
  }),
  ERM3_SYNTH_SEED: int(0, 0xffffffff, null, {
    group: 'home',
    defaultText: '`42`',
    description: 'seed of the default synthetic dataset `erm3 start` generates when `$ERM3_HOME` has none',
  }),
  ERM3_SYNTH_STOCKS: int(20, 20000, null, {
    group: 'home',
    defaultText: '`3000`',
    description: 'its number of stocks',
  }),
  ERM3_SYNTH_END: custom<string | null>({
    group: 'home',
    expects: 'a date `YYYY-MM-DD`',
    default: null,
    defaultText: '`2026-10-30`',
    description: 'its last date',
    parse(raw, name) {
      if (!/^\d{4}-\d{2}-\d{2}$/.test(raw)) fail(`${name} must be a date YYYY-MM-DD${got(raw)}`)
      return raw
    },
  }),
  LOG_LEVEL: custom<string>({
    group: 'server',
    expects: LOG_LEVELS.map((l) => `\`${l}\``).join(', '),
    default: 'info',
    description: 'level of the structured (JSON) logs on stderr',
    parse(raw, name) {
      if (!LOG_LEVELS.includes(raw)) fail(`${name} must be one of ${LOG_LEVELS.join(', ')}${got(raw)}`)
      return raw
    },
  }),
  HOST: text('127.0.0.1', { group: 'server', description: 'the address `erm3 serve` listens on' }),
  PORT: int(0, 65535, 8080, { group: 'server', description: 'the port it listens on (`0`: any free port)' }),
  PUBLIC_URL: url(['http:', 'https:'], {
    group: 'server',
    trimSlash: true,
    defaultText: '`http://HOST:PORT`',
    description:
      'externally visible origin (links, error `type` URIs, OAuth issuer); `https://…` also puts `Strict-Transport-Security: max-age=31536000` on every response',
  }),
  ERM3_STORE: custom<string | null>({
    group: 'store',
    expects: 'a directory, `s3://bucket/prefix` or an `http(s)://` URL',
    default: null,
    defaultText: '`$ERM3_HOME/store`',
    description:
      'model store served to live keys (`erm3 serve --store` wins); see [model-store.md](model-store.md)',
    parse(raw, name) {
      if (/^s3:\/\//i.test(raw)) {
        if (!/^s3:\/\/[^/]{3,}/i.test(raw)) fail(`${name} must be s3://bucket/prefix${got(raw)}`)
        return raw
      }
      if (/^https?:\/\//i.test(raw)) return checkUrl(raw, name, ['http:', 'https:'])
      return resolve(raw)
    },
  }),
  ERM3_STORE_POLL_SECONDS: int(0, 86_400, 30, {
    group: 'store',
    description: "how often a serving node checks the store's `CURRENT` for a new build (`0` = never)",
  }),
  ERM3_STORE_CACHE_MB: int(0, 1 << 20, 512, {
    group: 'store',
    description: 'remote stores: memory for the byte ranges read',
  }),
  ERM3_STORE_TIMEOUT_MS: int(100, 600_000, 10_000, {
    group: 'store',
    description: 'remote stores: the time one read may take before the request answers `503`',
  }),
  AWS_ENDPOINT_URL_S3: url(['http:', 'https:'], {
    group: 'store',
    defaultText: '`AWS_ENDPOINT_URL`, else AWS',
    description: 'an `s3://` store: the endpoint of any S3-compatible service',
  }),
  AWS_ENDPOINT_URL: url(['http:', 'https:'], {
    group: 'store',
    defaultText: 'AWS',
    description: 'the same, when `AWS_ENDPOINT_URL_S3` is not set',
  }),
  AWS_REGION: text(null, {
    group: 'store',
    defaultText: '`AWS_DEFAULT_REGION`, else `us-east-1`',
    description: 'an `s3://` store: its region',
  }),
  AWS_DEFAULT_REGION: text(null, {
    group: 'store',
    defaultText: '`us-east-1`',
    description: 'the same, when `AWS_REGION` is not set',
  }),
  AWS_ACCESS_KEY_ID: text(null, {
    group: 'store',
    defaultText: "the SDK's default chain",
    description: 'an `s3://` store: credentials, with `AWS_SECRET_ACCESS_KEY` (both or neither)',
  }),
  AWS_SECRET_ACCESS_KEY: text(null, {
    group: 'store',
    secret: true,
    defaultText: "the SDK's default chain",
    description: 'the secret of `AWS_ACCESS_KEY_ID`',
  }),
  AWS_SESSION_TOKEN: text(null, {
    group: 'store',
    secret: true,
    description: 'temporary credentials: their session token',
  }),
  ERM3_S3_FORCE_PATH_STYLE: bool({
    group: 'store',
    description: 'an `s3://` store: path-style addressing (most non-AWS servers want `true`)',
  }),
  DATABASE_URL: url(['postgres:', 'postgresql:'], {
    group: 'backends',
    secret: true,
    defaultText: '— (SQLite `$ERM3_HOME/erm3.db`)',
    description: 'PostgreSQL for accounts, keys and the ledger',
  }),
  REDIS_URL: url(['redis:', 'rediss:'], {
    group: 'backends',
    secret: true,
    defaultText: '— (in-process)',
    description:
      'Redis for limits and the response cache (falls back to local limits and says so in `/health` if Redis is down)',
  }),
  ERM3_PEPPER: secret32({
    group: 'backends',
    defaultText: 'generated into `$ERM3_HOME/secrets.json`',
    description: 'key-hash pepper; **required** with `DATABASE_URL` (the same on every node)',
  }),
  ERM3_SESSION_SECRET: secret32({
    group: 'backends',
    defaultText: 'generated into `$ERM3_HOME/secrets.json`',
    description: 'session-signing secret; **required** with `DATABASE_URL` (the same on every node)',
  }),
  ERM3_WEBHOOK_KEY: secret32({
    group: 'backends',
    defaultText: 'generated into `$ERM3_HOME/webhook-key`',
    description:
      'encrypts webhook signing secrets at rest (AES-256-GCM); with `DATABASE_URL` set it on every node, else the webhook endpoints answer `503` (see [webhooks.md](webhooks.md))',
  }),
  ERM3_WEBHOOK_ALLOW_LOOPBACK: bool({
    group: 'backends',
    description:
      'development and tests only: webhooks may target loopback (`127.0.0.0/8`, `::1`, `localhost`), also over plain `http`; private, link-local and other non-public ranges stay refused either way',
  }),
  SMTP_URL: url(['smtp:', 'smtps:'], {
    group: 'backends',
    secret: true,
    defaultText: '— (the outbox file `$ERM3_HOME/outbox/mail.jsonl`)',
    description: 'send sign-in links and alerts by SMTP',
  }),
  MAIL_FROM: text('erm3 <no-reply@localhost>', {
    group: 'backends',
    description: 'the sender of those mails',
  }),
  METRICS_TOKEN: text(null, {
    group: 'backends',
    secret: true,
    description: 'turns `/metrics-prom` on, for `Authorization: Bearer <METRICS_TOKEN>` only (unset: `404`)',
  }),
  TRUST_PROXY: custom<string[]>({
    group: 'edge',
    expects: 'addresses, CIDR ranges, `loopback`, `linklocal`, `uniquelocal`, comma-separated',
    default: [],
    defaultText: '— (trust nobody)',
    description:
      'the proxies in front of erm3, whose `X-Forwarded-For` is believed: the client is the right-most entry not among them. `true` and hop counts are refused (every hop trusted makes the client-written left-most entry the address); see [deployment.md](deployment.md)',
    parse: parseTrustProxy,
  }),
  ERM3_IPV6_PREFIX: int(32, 128, 64, {
    group: 'edge',
    description:
      'per-address limits (and the connection cap) count an IPv6 client by its /N network; IPv4 and `::ffff:a.b.c.d` by the IPv4 address',
  }),
  ERM3_FREE_PROVISION_DAILY_CAP: int(0, 1_000_000, 100, {
    group: 'edge',
    description:
      'free keys (`POST /auth/provision-free`) per UTC day for all nodes together, on top of the per-address limit; `0` turns free keys off (`403`)',
  }),
  // Defaults: headers within 10 s and the whole request within 30 s (a 1 MiB body at 35 KB/s), so
  // a client that stalls mid-request is shed; keep-alive 72 s, longer than the 60 s idle timeout of
  // common balancers, so the balancer and not the node closes an idle upstream connection (no race
  // with a request sent on it); 64 connections per address, more than browsers (6) or an agent's
  // pool open, few enough that one address cannot hold the node's sockets.
  ERM3_HEADERS_TIMEOUT_MS: int(100, 600_000, 10_000, {
    group: 'edge',
    description:
      "a request's headers must arrive within this (at most `ERM3_REQUEST_TIMEOUT_MS`), else `408 REQUEST_TIMEOUT` and the connection closes",
  }),
  ERM3_REQUEST_TIMEOUT_MS: int(100, 3_600_000, 30_000, {
    group: 'edge',
    description:
      'the whole request with its body must arrive within this (responses and streams are not timed)',
  }),
  ERM3_KEEP_ALIVE_TIMEOUT_MS: int(100, 600_000, 72_000, {
    group: 'edge',
    description:
      'an idle keep-alive connection is closed after this (longer than the 60 s idle timeout of common balancers)',
  }),
  ERM3_MAX_CONNECTIONS_PER_ADDRESS: int(0, 1_000_000, 64, {
    group: 'edge',
    description:
      'open connections per client address (IPv6: per `ERM3_IPV6_PREFIX` network); one more is closed at once. Trusted proxies are not counted. `0` = no cap',
  }),
  // Defaults: 10 requests/s sustained with 200 at once per address. Far above what a person (a page
  // with its documents) or an agent discovering the API sends, and above a few of them behind one
  // NAT; a flood from one address costs the node a small fraction of what it serves.
  ERM3_IP_RATE_PER_MINUTE: int(1, 60_000, 600, {
    group: 'edge',
    description: 'per-address limit of requests without an API key: the sustained rate',
    // The limiter counts in whole ticks of 1/(n / gcd(60000, n)) ms (store/limits/gcra.ts): that
    // stays exact in a double for any n up to 2000 and for every divisor of 60000.
    also: {
      expects: 'above 2000 a divisor of 60000',
      check(n, name) {
        if (n > 2000 && 60_000 % n !== 0)
          fail(`${name} above 2000 must divide 60000 (e.g. 3000, 6000, 12000), got ${n}`)
      },
    },
  }),
  ERM3_IP_RATE_BURST: int(1, 1_000_000, 200, {
    group: 'edge',
    description: 'how many of those requests may come at once',
  }),
  TOP_UP_URL: url(['https:', 'http:'], {
    group: 'billing',
    defaultText: '`/docs/billing`',
    description: 'your billing page, given as `top_up_url` in a `402`',
  }),
  STRIPE_SECRET_KEY: custom<string | null>({
    group: 'billing',
    expects: 'a Stripe secret key (`sk_live_…`, `sk_test_…`)',
    default: null,
    secret: true,
    description: 'card top-ups with Stripe, with `STRIPE_WEBHOOK_SECRET` (both or neither)',
    parse(raw, name) {
      if (!/^(sk|rk)_(test|live)_\S+$/.test(raw))
        fail(`${name} must be a Stripe secret key (sk_live_… or sk_test_…)`)
      return raw
    },
  }),
  STRIPE_WEBHOOK_SECRET: custom<string | null>({
    group: 'billing',
    expects: 'a webhook signing secret (`whsec_…`)',
    default: null,
    secret: true,
    description: 'the signing secret of the Stripe webhook endpoint `$PUBLIC_URL/billing/stripe/webhook`',
    parse(raw, name) {
      if (!/^whsec_\S+$/.test(raw)) fail(`${name} must be a webhook signing secret (whsec_…)`)
      return raw
    },
  }),
  STRIPE_API_BASE: custom<StripeConfig['apiBase']>({
    group: 'billing',
    expects: 'a URL (`http`, `https`)',
    default: null,
    description: 'tests only: a local fake Stripe API the SDK talks to instead of api.stripe.com',
    parse(raw, name) {
      const u = new URL(checkUrl(raw, name, ['http:', 'https:']))
      const protocol = u.protocol === 'http:' ? 'http' : 'https'
      return {
        protocol,
        host: u.hostname.replace(/^\[|\]$/g, ''),
        port: u.port ? Number(u.port) : protocol === 'http' ? 80 : 443,
      }
    },
  }),
  PLAID_CLIENT_ID: text(null, {
    group: 'plaid',
    description: 'your Plaid API client id, with `PLAID_SECRET` (both or neither)',
  }),
  PLAID_SECRET: text(null, { group: 'plaid', secret: true, description: 'your Plaid API secret' }),
  PLAID_ENV: custom<PlaidConfig['env']>({
    group: 'plaid',
    expects: '`sandbox` or `production`',
    default: 'sandbox',
    description: "Plaid's environment (Plaid retired `development`)",
    parse(raw, name) {
      // Plaid retired its Development environment in 2024 (the SDK lists only sandbox and production).
      if (raw === 'development')
        fail(
          `${name}=development: Plaid retired its Development environment; use sandbox (test credentials) or production`,
        )
      if (raw !== 'sandbox' && raw !== 'production') fail(`${name} must be sandbox or production${got(raw)}`)
      return raw as 'sandbox' | 'production'
    },
  }),
  ERM3_PLAID_TOKEN_KEYS: custom<PlaidTokenKey[] | null>({
    group: 'plaid',
    expects: '`id:base64key,…` (32-byte keys), the current key first',
    default: null,
    secret: true,
    description:
      '**required** with Plaid, no default: the AES-256-GCM keys that encrypt the stored access tokens; the others after the first only decrypt (rotation)',
    parse: parsePlaidTokenKeys,
  }),
  PLAID_TIMEOUT_MS: int(100, 120_000, 15_000, {
    group: 'plaid',
    description: 'per Plaid call; past it a holdings call answers `504 UPSTREAM_TIMEOUT`',
  }),
  PLAID_API_BASE: url(['http:', 'https:'], {
    group: 'plaid',
    trimSlash: true,
    description: 'tests only: a local fake Plaid API instead of the `PLAID_ENV` host',
  }),
  LLM_BASE_URL: url(['http:', 'https:'], {
    group: 'chat',
    trimSlash: true,
    description:
      "`POST /chat`'s OpenAI-compatible provider, up to and including `/v1`, with `LLM_MODEL` (both or neither)",
  }),
  LLM_MODEL: text(null, {
    group: 'chat',
    description: 'the model name the provider knows (it must support tool calls)',
  }),
  LLM_API_KEY: text(null, {
    group: 'chat',
    secret: true,
    description: "the provider's key, when it needs one (never sent to the model)",
  }),
  LLM_TIMEOUT_MS: int(100, 600_000, 60_000, { group: 'chat', description: 'per model call' }),
  ERM3_CHAT_RPM: int(1, 2000, 10, { group: 'chat', description: 'chats a minute per key; `429` past it' }),
  ERM3_CHAT_TPM: int(1000, 2_000_000, 100_000, {
    group: 'chat',
    description: 'tokens a minute per key (counted in thousands); `429` past it',
  }),
  ERM3_CHAT_MAX_INPUT_TOKENS: int(1000, 2_000_000, 200_000, {
    group: 'chat',
    description:
      'input budget of one chat, enforced on the bytes sent to the provider; it sets the token part of the reservation',
  }),
  ERM3_URL: custom<string>({
    group: 'mcp',
    expects: 'an origin, `http(s)://host[:port]`',
    default: 'http://127.0.0.1:8080',
    description: "`erm3 mcp`: the erm3 API's origin (`--url` wins)",
    // erm3 mcp checks it, as it checks --url.
    parse: (raw) => raw,
  }),
  ERM3_API_KEY: custom<string | null>({
    group: 'mcp',
    expects: 'an erm3 key (`erm_agent_live_…`)',
    default: null,
    secret: true,
    description: '`erm3 mcp`: the key its tool calls use (never on the command line, where `ps` shows it)',
    parse: (raw) => raw.trim() || null,
  }),
} satisfies Record<string, ConfigVar<unknown>>

type ConfigVarName = keyof typeof CONFIG_VARS
type Values = { [K in ConfigVarName]: (typeof CONFIG_VARS)[K]['default'] }

/** What went wrong, all of it, and which variables failed to parse. */
class Problems {
  readonly messages: string[] = []
  readonly failed = new Set<string>()
  add(message: string): void {
    this.messages.push(message)
  }
  /** None of `names` failed to parse (a rule over them would only repeat the problem). */
  ok(...names: ConfigVarName[]): boolean {
    return names.every((n) => !this.failed.has(n))
  }
  throwIfAny(): void {
    const m = this.messages
    if (m.length === 1) throw new AppError('CONFIG_INVALID', m[0] as string)
    if (m.length > 1)
      throw new AppError(
        'CONFIG_INVALID',
        `${m.length} configuration problems:\n${m.map((s) => `  - ${s}`).join('\n')}`,
      )
  }
}

/** The variables `names`, each parsed or defaulted; a bad value is recorded and takes the default. */
function read<K extends ConfigVarName>(env: Env, names: readonly K[], problems: Problems): Pick<Values, K> {
  const out: Partial<Values> = {}
  for (const name of names) {
    const spec = CONFIG_VARS[name] as ConfigVar<unknown>
    const raw = env[name]
    let value = spec.default
    if (raw !== undefined && raw !== '') {
      try {
        value = spec.parse(raw, name)
      } catch (e) {
        if (!(e instanceof AppError) || e.code !== 'CONFIG_INVALID') throw e
        problems.failed.add(name)
        // A secret's value never appears in a message, whatever its parser wrote.
        problems.add(spec.secret && e.message.includes(raw) ? `${name} must be ${spec.expects}` : e.message)
      }
    }
    ;(out as Record<string, unknown>)[name] = value
  }
  return out as Pick<Values, K>
}

const names = (group: ConfigGroup) =>
  (Object.keys(CONFIG_VARS) as ConfigVarName[]).filter((n) => CONFIG_VARS[n].group === group)
const SERVER_VARS = (Object.keys(CONFIG_VARS) as ConfigVarName[]).filter(
  (n) => CONFIG_VARS[n].group !== 'mcp',
)
const STORE_ACCESS_VARS = names('store').filter((n) => n !== 'ERM3_STORE')

/** Rules over several variables, and the typed object the rest of erm3 reads. */
function storeAccessFrom(
  v: Pick<Values, (typeof STORE_ACCESS_VARS)[number]>,
  p: Problems,
): StoreAccessConfig {
  const accessKeyId = v.AWS_ACCESS_KEY_ID
  const secretAccessKey = v.AWS_SECRET_ACCESS_KEY
  if ((accessKeyId === null) !== (secretAccessKey === null))
    p.add('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together')
  const sessionToken = v.AWS_SESSION_TOKEN
  return {
    cacheMb: v.ERM3_STORE_CACHE_MB,
    pollSeconds: v.ERM3_STORE_POLL_SECONDS,
    timeoutMs: v.ERM3_STORE_TIMEOUT_MS,
    s3: {
      endpoint: v.AWS_ENDPOINT_URL_S3 ?? v.AWS_ENDPOINT_URL,
      region: v.AWS_REGION ?? v.AWS_DEFAULT_REGION ?? 'us-east-1',
      forcePathStyle: v.ERM3_S3_FORCE_PATH_STYLE,
      credentials:
        accessKeyId && secretAccessKey
          ? { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) }
          : null,
    },
  }
}

/** The shared-store settings alone (erm3 publish needs no server settings). */
export function storeAccess(env: Env): StoreAccessConfig {
  const p = new Problems()
  const access = storeAccessFrom(read(env, STORE_ACCESS_VARS, p), p)
  p.throwIfAny()
  return access
}

/** Two variables that make sense only together: null when neither is set. */
function pair<A, B>(a: [string, A | null], b: [string, B | null], what: string, p: Problems): [A, B] | null {
  if (a[1] === null && b[1] === null) return null
  if (a[1] === null || b[1] === null) {
    p.add(`${what} both ${a[0]} and ${b[0]}; ${a[1] === null ? a[0] : b[0]} is not set`)
    return null
  }
  return [a[1], b[1]]
}

function serverFrom(v: Values, p: Problems): ServerConfig {
  const host = v.HOST
  const port = v.PORT
  if (
    v.DATABASE_URL &&
    p.ok('ERM3_PEPPER', 'ERM3_SESSION_SECRET') &&
    (!v.ERM3_PEPPER || !v.ERM3_SESSION_SECRET)
  )
    p.add(
      'with DATABASE_URL, ERM3_PEPPER and ERM3_SESSION_SECRET must be set (the same on every node; e.g. `openssl rand -base64 48`)',
    )
  // Node refuses a header deadline after the whole request's.
  if (v.ERM3_HEADERS_TIMEOUT_MS > v.ERM3_REQUEST_TIMEOUT_MS)
    p.add(
      `ERM3_HEADERS_TIMEOUT_MS (${v.ERM3_HEADERS_TIMEOUT_MS}) must not exceed ERM3_REQUEST_TIMEOUT_MS (${v.ERM3_REQUEST_TIMEOUT_MS})`,
    )
  const stripe = p.ok('STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET')
    ? pair(
        ['STRIPE_SECRET_KEY', v.STRIPE_SECRET_KEY],
        ['STRIPE_WEBHOOK_SECRET', v.STRIPE_WEBHOOK_SECRET],
        'Stripe top-ups need',
        p,
      )
    : null
  const plaid = pair(
    ['PLAID_CLIENT_ID', v.PLAID_CLIENT_ID],
    ['PLAID_SECRET', v.PLAID_SECRET],
    'Plaid needs',
    p,
  )
  if (plaid && v.ERM3_PLAID_TOKEN_KEYS === null && p.ok('ERM3_PLAID_TOKEN_KEYS'))
    p.add(
      `Plaid is configured but ERM3_PLAID_TOKEN_KEYS is not set (it encrypts access tokens at rest; there is no default): ${PLAID_KEYS_HINT}`,
    )
  const llm = p.ok('LLM_BASE_URL')
    ? pair(['LLM_BASE_URL', v.LLM_BASE_URL], ['LLM_MODEL', v.LLM_MODEL], 'POST /chat needs', p)
    : null
  return {
    host,
    port,
    publicUrl: v.PUBLIC_URL ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    store: v.ERM3_STORE,
    storeAccess: storeAccessFrom(v, p),
    databaseUrl: v.DATABASE_URL,
    redisUrl: v.REDIS_URL,
    pepper: v.ERM3_PEPPER,
    sessionSecret: v.ERM3_SESSION_SECRET,
    webhookKey: v.ERM3_WEBHOOK_KEY,
    webhookAllowLoopback: v.ERM3_WEBHOOK_ALLOW_LOOPBACK,
    smtpUrl: v.SMTP_URL,
    mailFrom: v.MAIL_FROM,
    metricsToken: v.METRICS_TOKEN,
    trustProxy: v.TRUST_PROXY,
    ipv6Prefix: v.ERM3_IPV6_PREFIX,
    freeProvisionDailyCap: v.ERM3_FREE_PROVISION_DAILY_CAP,
    http: {
      headersTimeoutMs: v.ERM3_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: v.ERM3_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: v.ERM3_KEEP_ALIVE_TIMEOUT_MS,
      maxConnectionsPerAddress: v.ERM3_MAX_CONNECTIONS_PER_ADDRESS,
    },
    topUpUrl: v.TOP_UP_URL,
    ipRate: { perMinute: v.ERM3_IP_RATE_PER_MINUTE, burst: v.ERM3_IP_RATE_BURST },
    stripe: stripe && { secretKey: stripe[0], webhookSecret: stripe[1], apiBase: v.STRIPE_API_BASE },
    llm: llm && {
      baseUrl: llm[0],
      apiKey: v.LLM_API_KEY,
      model: llm[1],
      timeoutMs: v.LLM_TIMEOUT_MS,
      requestsPerMinute: v.ERM3_CHAT_RPM,
      tokensPerMinute: v.ERM3_CHAT_TPM,
      maxInputTokens: v.ERM3_CHAT_MAX_INPUT_TOKENS,
    },
    plaid:
      plaid && v.ERM3_PLAID_TOKEN_KEYS
        ? {
            clientId: plaid[0],
            secret: plaid[1],
            env: v.PLAID_ENV,
            apiBase: v.PLAID_API_BASE,
            tokenKeys: v.ERM3_PLAID_TOKEN_KEYS,
            timeoutMs: v.PLAID_TIMEOUT_MS,
          }
        : null,
  }
}

/**
 * The configuration from the environment. Every variable is checked; any problem stops here with
 * AppError CONFIG_INVALID naming each bad variable and what it expects (all of them at once).
 */
export function loadConfig(env: Env = process.env): Config {
  const p = new Problems()
  const v = read(env, SERVER_VARS, p) as Values
  const config: Config = {
    server: serverFrom(v, p),
    home: resolve(v.ERM3_HOME),
    logLevel: v.LOG_LEVEL,
    synth: {
      seed: v.ERM3_SYNTH_SEED ?? undefined,
      stocks: v.ERM3_SYNTH_STOCKS ?? undefined,
      end: v.ERM3_SYNTH_END ?? undefined,
    },
  }
  p.throwIfAny()
  return config
}

/** What `erm3 mcp` reads from the environment (it checks the key and the origin itself). */
export function mcpClientConfig(env: Env): { url: string; apiKey: string | null } {
  const p = new Problems()
  const v = read(env, names('mcp'), p)
  p.throwIfAny()
  return { url: v.ERM3_URL, apiKey: v.ERM3_API_KEY }
}
