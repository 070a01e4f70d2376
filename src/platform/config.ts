import { resolve } from 'node:path'
import { parseTrustedProxies } from './client-address.ts'
import { AppError } from './errors.ts'

/**
 * Configuration from the environment, validated once at start: a bad value stops the process
 * with a message naming the variable, instead of failing later in some stage.
 */
export interface Config {
  /** Home of the embedded mode: dataset, model store, database, outbox. */
  home: string
  /** Overrides for the default synthetic dataset created by `erm3 start`. */
  synth: { seed?: number; stocks?: number; end?: string }
  server: ServerConfig
}

export interface ServerConfig {
  host: string
  port: number
  /** Externally visible origin (no trailing slash): links, error `type` URIs, OAuth issuer. */
  publicUrl: string
  /**
   * ERM3_STORE: model store served to live keys (default `<home>/store`): a directory, or a
   * published store at s3://bucket/prefix or http(s)://host/prefix (kept as given).
   */
  store: string | null
  /** How a remote store is read and how often any store's CURRENT is polled. */
  storeAccess: StoreAccessConfig
  databaseUrl: string | null
  redisUrl: string | null
  /** Key-hash pepper and session-signing secret; required with DATABASE_URL (shared by all nodes). */
  pepper: string | null
  sessionSecret: string | null
  /**
   * ERM3_WEBHOOK_KEY: encrypts webhook signing secrets at rest (AES-256-GCM). No default: embedded
   * mode generates one under ERM3_HOME on first run; with DATABASE_URL it must be set (the same on
   * every node) or the webhook endpoints answer 503.
   */
  webhookKey: string | null
  /**
   * ERM3_WEBHOOK_ALLOW_LOOPBACK (default false): webhooks may target loopback addresses (and use
   * plain http to them). For development and tests only; other private ranges stay refused.
   */
  webhookAllowLoopback: boolean
  smtpUrl: string | null
  mailFrom: string
  /** /metrics-prom answers only `Authorization: Bearer <METRICS_TOKEN>`; unset, it is off (404). */
  metricsToken: string | null
  /**
   * TRUST_PROXY: the proxies in front (addresses, CIDR ranges, `loopback`, `linklocal`,
   * `uniquelocal`) whose X-Forwarded-For is believed; the client is the right-most entry not
   * among them. Empty: the socket's peer is the client.
   */
  trustProxy: string[]
  /** ERM3_IPV6_PREFIX (default 64): per-address limits count an IPv6 client by its /N network. */
  ipv6Prefix: number
  /**
   * ERM3_FREE_PROVISION_DAILY_CAP (default 100): free keys given per UTC day by all nodes
   * together (on top of the per-address limit); 0 = POST /auth/provision-free is off.
   */
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

export interface HttpEdgeConfig {
  /** ERM3_HEADERS_TIMEOUT_MS (default 10000): a request's headers must arrive within this. */
  headersTimeoutMs: number
  /** ERM3_REQUEST_TIMEOUT_MS (default 30000): the whole request, headers and body, within this. */
  requestTimeoutMs: number
  /** ERM3_KEEP_ALIVE_TIMEOUT_MS (default 72000): an idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number
  /**
   * ERM3_MAX_CONNECTIONS_PER_ADDRESS (default 64; 0 = no cap): open connections per client
   * address (IPv6 per ERM3_IPV6_PREFIX network); trusted proxies are not counted.
   */
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
  /** PLAID_ENV: the host of PlaidEnvironments (sandbox default). */
  env: 'sandbox' | 'production'
  /** PLAID_API_BASE (tests only): a local fake instead of the PLAID_ENV host. */
  apiBase: string | null
  /** ERM3_PLAID_TOKEN_KEYS, current key first; the others only decrypt (rotation). */
  tokenKeys: PlaidTokenKey[]
  /** PLAID_TIMEOUT_MS: per Plaid API call (default 15 s); past it a holdings call answers 504. */
  timeoutMs: number
}

export interface StripeConfig {
  secretKey: string
  webhookSecret: string
  /**
   * STRIPE_API_BASE (tests only): where the SDK sends API calls instead of api.stripe.com, e.g. a
   * local fake `http://127.0.0.1:12111`. Unset in production.
   */
  apiBase: { protocol: 'http' | 'https'; host: string; port: number } | null
}

/** Reading a shared model store (README "Shared model store"). */
export interface StoreAccessConfig {
  /** ERM3_STORE_CACHE_MB (default 512): in-memory cache of byte ranges read from a remote store. */
  cacheMb: number
  /** ERM3_STORE_POLL_SECONDS (default 30; 0 = off): how often a serving node checks CURRENT for a new build. */
  pollSeconds: number
  /** ERM3_STORE_TIMEOUT_MS (default 10000): one remote read; past it the request answers 503. */
  timeoutMs: number
  s3: {
    /** AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL; null = AWS. */
    endpoint: string | null
    /** AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1. */
    region: string
    /** ERM3_S3_FORCE_PATH_STYLE (default false; most S3-compatible servers want true). */
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
  /** LLM_TIMEOUT_MS (default 60000): per model call. */
  timeoutMs: number
  /** ERM3_CHAT_RPM (default 10) chat requests and ERM3_CHAT_TPM (default 100000) tokens per minute per key. */
  requestsPerMinute: number
  tokensPerMinute: number
  /** ERM3_CHAT_MAX_INPUT_TOKENS (default 200000): input budget of one chat, bounded by request-body bytes. */
  maxInputTokens: number
}

type Env = Record<string, string | undefined>

function storeVar(env: Env): string | null {
  const raw = str(env, 'ERM3_STORE')
  if (raw === null) return null
  if (/^s3:\/\//i.test(raw)) {
    if (!/^s3:\/\/[^/]{3,}/i.test(raw))
      throw new AppError(
        'CONFIG_INVALID',
        `ERM3_STORE must be s3://bucket/prefix, got ${JSON.stringify(raw)}`,
      )
    return raw
  }
  if (/^https?:\/\//i.test(raw)) return urlVar(env, 'ERM3_STORE', ['http:', 'https:'])
  return resolve(raw)
}

/** The shared-store settings alone (erm3 publish needs no server settings). */
export function storeAccess(env: Env): StoreAccessConfig {
  const flag = str(env, 'ERM3_S3_FORCE_PATH_STYLE')
  if (flag !== null && !['true', 'false', '1', '0'].includes(flag))
    throw new AppError(
      'CONFIG_INVALID',
      `ERM3_S3_FORCE_PATH_STYLE must be true or false, got ${JSON.stringify(flag)}`,
    )
  const accessKeyId = str(env, 'AWS_ACCESS_KEY_ID')
  const secretAccessKey = str(env, 'AWS_SECRET_ACCESS_KEY')
  if ((accessKeyId === null) !== (secretAccessKey === null))
    throw new AppError('CONFIG_INVALID', 'AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together')
  const sessionToken = str(env, 'AWS_SESSION_TOKEN')
  return {
    cacheMb: intVar(env, 'ERM3_STORE_CACHE_MB', 0, 1 << 20) ?? 512,
    pollSeconds: intVar(env, 'ERM3_STORE_POLL_SECONDS', 0, 86_400) ?? 30,
    timeoutMs: intVar(env, 'ERM3_STORE_TIMEOUT_MS', 100, 600_000) ?? 10_000,
    s3: {
      endpoint:
        urlVar(env, 'AWS_ENDPOINT_URL_S3', ['http:', 'https:']) ??
        urlVar(env, 'AWS_ENDPOINT_URL', ['http:', 'https:']),
      region: str(env, 'AWS_REGION') ?? str(env, 'AWS_DEFAULT_REGION') ?? 'us-east-1',
      forcePathStyle: flag === 'true' || flag === '1',
      credentials:
        accessKeyId && secretAccessKey
          ? { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) }
          : null,
    },
  }
}

function intVar(env: Env, name: string, lo: number, hi: number): number | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  const n = Number(raw)
  if (!Number.isInteger(n) || n < lo || n > hi) {
    throw new AppError(
      'CONFIG_INVALID',
      `${name} must be an integer in ${lo}..${hi}, got ${JSON.stringify(raw)}`,
    )
  }
  return n
}

function dateVar(env: Env, name: string): string | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  if (!/^\d{4}-\d{2}-\d{2}$/.test(raw))
    throw new AppError('CONFIG_INVALID', `${name} must be a date YYYY-MM-DD, got ${JSON.stringify(raw)}`)
  return raw
}

function str(env: Env, name: string): string | null {
  const raw = env[name]
  return raw === undefined || raw === '' ? null : raw
}

function urlVar(env: Env, name: string, protocols: string[]): string | null {
  const raw = str(env, name)
  if (raw === null) return null
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    throw new AppError('CONFIG_INVALID', `${name} must be a URL, got ${JSON.stringify(raw)}`)
  }
  if (!protocols.includes(u.protocol))
    throw new AppError('CONFIG_INVALID', `${name} must use ${protocols.join(' or ')}, got ${u.protocol}`)
  return raw
}

function boolVar(env: Env, name: string): boolean {
  const raw = str(env, name)
  if (raw !== null && !['true', 'false', '1', '0'].includes(raw))
    throw new AppError('CONFIG_INVALID', `${name} must be true or false, got ${JSON.stringify(raw)}`)
  return raw === 'true' || raw === '1'
}

function secretVar(env: Env, name: string): string | null {
  const raw = str(env, name)
  if (raw !== null && raw.length < 32)
    throw new AppError('CONFIG_INVALID', `${name} must be at least 32 characters of random data`)
  return raw
}

/**
 * Defaults: 10 requests/s sustained with 200 at once per address. Far above what a person (a page
 * with its documents) or an agent discovering the API sends, and above a few of them behind one
 * NAT; a flood from one address costs the node a small fraction of what it serves.
 */
const IP_RATE_DEFAULT = { perMinute: 600, burst: 200 }

function ipRate(env: Env): ServerConfig['ipRate'] {
  const perMinute = intVar(env, 'ERM3_IP_RATE_PER_MINUTE', 1, 60_000) ?? IP_RATE_DEFAULT.perMinute
  // The limiter counts in whole ticks of 1/(n / gcd(60000, n)) ms (store/limits/gcra.ts): that stays
  // exact in a double for any n up to 2000 and for every divisor of 60000.
  if (perMinute > 2000 && 60_000 % perMinute !== 0)
    throw new AppError(
      'CONFIG_INVALID',
      `ERM3_IP_RATE_PER_MINUTE above 2000 must divide 60000 (e.g. 3000, 6000, 12000), got ${perMinute}`,
    )
  return { perMinute, burst: intVar(env, 'ERM3_IP_RATE_BURST', 1, 1_000_000) ?? IP_RATE_DEFAULT.burst }
}

const TRUST_PROXY_HINT =
  'list the proxies in front of erm3, comma-separated: addresses, CIDR ranges or loopback, linklocal, uniquelocal (e.g. TRUST_PROXY=10.0.0.0/8 or TRUST_PROXY=loopback)'

/**
 * TRUST_PROXY as a list of trusted proxies. `true` is refused: believing every hop makes the
 * left-most X-Forwarded-For entry the client, and the client writes that one itself. A hop count is
 * refused too: it cannot tell a proxy from a client that connects directly and sends the header.
 */
function trustProxy(env: Env): string[] {
  const raw = str(env, 'TRUST_PROXY')
  if (raw === null || raw === 'false' || raw === '0') return []
  if (raw === 'true' || /^\d+$/.test(raw))
    throw new AppError(
      'CONFIG_INVALID',
      `TRUST_PROXY=${raw} would let any client choose its own address through X-Forwarded-For; ${TRUST_PROXY_HINT}`,
    )
  const list = raw
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')
  try {
    parseTrustedProxies(list)
  } catch (e) {
    throw new AppError('CONFIG_INVALID', `TRUST_PROXY: ${(e as Error).message}; ${TRUST_PROXY_HINT}`)
  }
  return list
}

/**
 * Defaults: headers within 10 s and the whole request within 30 s (a 1 MiB body at 35 KB/s), so a
 * client that stalls mid-request is shed; keep-alive 72 s, longer than the 60 s idle timeout of
 * common balancers, so the balancer and not the node closes an idle upstream connection (no race
 * with a request sent on it); 64 connections per address, more than browsers (6) or an agent's
 * pool open, few enough that one address cannot hold the node's sockets.
 */
function httpEdge(env: Env): HttpEdgeConfig {
  const headersTimeoutMs = intVar(env, 'ERM3_HEADERS_TIMEOUT_MS', 100, 600_000) ?? 10_000
  const requestTimeoutMs = intVar(env, 'ERM3_REQUEST_TIMEOUT_MS', 100, 3_600_000) ?? 30_000
  // Node refuses a header deadline after the whole request's.
  if (headersTimeoutMs > requestTimeoutMs)
    throw new AppError(
      'CONFIG_INVALID',
      `ERM3_HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must not exceed ERM3_REQUEST_TIMEOUT_MS (${requestTimeoutMs})`,
    )
  return {
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: intVar(env, 'ERM3_KEEP_ALIVE_TIMEOUT_MS', 100, 600_000) ?? 72_000,
    maxConnectionsPerAddress: intVar(env, 'ERM3_MAX_CONNECTIONS_PER_ADDRESS', 0, 1_000_000) ?? 64,
  }
}

function stripeConfig(env: Env): StripeConfig | null {
  const secretKey = str(env, 'STRIPE_SECRET_KEY')
  const webhookSecret = str(env, 'STRIPE_WEBHOOK_SECRET')
  if (secretKey === null && webhookSecret === null) return null
  if (secretKey === null || webhookSecret === null)
    throw new AppError(
      'CONFIG_INVALID',
      `Stripe top-ups need both STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET; ${secretKey === null ? 'STRIPE_SECRET_KEY' : 'STRIPE_WEBHOOK_SECRET'} is not set`,
    )
  // Never echo the values: they are secrets.
  if (!/^(sk|rk)_(test|live)_\S+$/.test(secretKey))
    throw new AppError(
      'CONFIG_INVALID',
      'STRIPE_SECRET_KEY must be a Stripe secret key (sk_live_… or sk_test_…)',
    )
  if (!/^whsec_\S+$/.test(webhookSecret))
    throw new AppError('CONFIG_INVALID', 'STRIPE_WEBHOOK_SECRET must be a webhook signing secret (whsec_…)')
  const base = urlVar(env, 'STRIPE_API_BASE', ['http:', 'https:'])
  let apiBase: StripeConfig['apiBase'] = null
  if (base !== null) {
    const u = new URL(base)
    const protocol = u.protocol === 'http:' ? 'http' : 'https'
    apiBase = {
      protocol,
      host: u.hostname.replace(/^\[|\]$/g, ''),
      port: u.port ? Number(u.port) : protocol === 'http' ? 80 : 443,
    }
  }
  return { secretKey, webhookSecret, apiBase }
}

const PLAID_KEYS_HINT =
  'ERM3_PLAID_TOKEN_KEYS must be a comma-separated list of id:base64key (32-byte keys, e.g. `openssl rand -base64 32`), the current key first'

/** `id:base64key,…`: never echoes a value (they are secrets), only positions and ids. */
function plaidTokenKeys(raw: string): PlaidTokenKey[] {
  const keys = raw.split(',').map((part, i) => {
    const m = /^([A-Za-z0-9_-]{1,32}):([A-Za-z0-9+/_-]+={0,2})$/.exec(part.trim())
    const key = m ? Buffer.from(m[2] as string, 'base64') : null
    if (!m || !key || key.length !== 32)
      throw new AppError('CONFIG_INVALID', `${PLAID_KEYS_HINT}; entry ${i + 1} is not`)
    return { id: m[1] as string, key }
  })
  const ids = new Set(keys.map((k) => k.id))
  if (ids.size !== keys.length) throw new AppError('CONFIG_INVALID', `${PLAID_KEYS_HINT}; a key id repeats`)
  return keys
}

function plaidConfig(env: Env): PlaidConfig | null {
  const clientId = str(env, 'PLAID_CLIENT_ID')
  const secret = str(env, 'PLAID_SECRET')
  if (clientId === null && secret === null) return null
  if (clientId === null || secret === null)
    throw new AppError(
      'CONFIG_INVALID',
      `Plaid needs both PLAID_CLIENT_ID and PLAID_SECRET; ${clientId === null ? 'PLAID_CLIENT_ID' : 'PLAID_SECRET'} is not set`,
    )
  const keys = str(env, 'ERM3_PLAID_TOKEN_KEYS')
  if (keys === null)
    throw new AppError(
      'CONFIG_INVALID',
      `Plaid is configured but ERM3_PLAID_TOKEN_KEYS is not set (it encrypts access tokens at rest; there is no default): ${PLAID_KEYS_HINT}`,
    )
  const plaidEnv = str(env, 'PLAID_ENV') ?? 'sandbox'
  // Plaid retired its Development environment in 2024 (the SDK lists only sandbox and production).
  if (plaidEnv === 'development')
    throw new AppError(
      'CONFIG_INVALID',
      'PLAID_ENV=development: Plaid retired its Development environment; use sandbox (test credentials) or production',
    )
  if (plaidEnv !== 'sandbox' && plaidEnv !== 'production')
    throw new AppError(
      'CONFIG_INVALID',
      `PLAID_ENV must be sandbox or production, got ${JSON.stringify(plaidEnv)}`,
    )
  return {
    clientId,
    secret,
    env: plaidEnv,
    apiBase: urlVar(env, 'PLAID_API_BASE', ['http:', 'https:'])?.replace(/\/+$/, '') ?? null,
    tokenKeys: plaidTokenKeys(keys),
    timeoutMs: intVar(env, 'PLAID_TIMEOUT_MS', 100, 120_000) ?? 15_000,
  }
}

function llmConfig(env: Env): LlmConfig | null {
  const baseUrl = urlVar(env, 'LLM_BASE_URL', ['http:', 'https:'])
  const model = str(env, 'LLM_MODEL')
  if (baseUrl === null && model === null) return null
  if (baseUrl === null || model === null)
    throw new AppError(
      'CONFIG_INVALID',
      `POST /chat needs both LLM_BASE_URL and LLM_MODEL; ${baseUrl === null ? 'LLM_BASE_URL' : 'LLM_MODEL'} is not set`,
    )
  return {
    baseUrl: baseUrl.replace(/\/+$/, ''),
    apiKey: str(env, 'LLM_API_KEY'),
    model,
    timeoutMs: intVar(env, 'LLM_TIMEOUT_MS', 100, 600_000) ?? 60_000,
    requestsPerMinute: intVar(env, 'ERM3_CHAT_RPM', 1, 2000) ?? 10,
    tokensPerMinute: intVar(env, 'ERM3_CHAT_TPM', 1000, 2_000_000) ?? 100_000,
    maxInputTokens: intVar(env, 'ERM3_CHAT_MAX_INPUT_TOKENS', 1000, 2_000_000) ?? 200_000,
  }
}

function serverConfig(env: Env): ServerConfig {
  const host = str(env, 'HOST') ?? '127.0.0.1'
  const port = intVar(env, 'PORT', 0, 65535) ?? 8080
  const publicUrl = (
    urlVar(env, 'PUBLIC_URL', ['http:', 'https:']) ??
    `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  ).replace(/\/+$/, '')
  const databaseUrl = urlVar(env, 'DATABASE_URL', ['postgres:', 'postgresql:'])
  const pepper = secretVar(env, 'ERM3_PEPPER')
  const sessionSecret = secretVar(env, 'ERM3_SESSION_SECRET')
  if (databaseUrl && (!pepper || !sessionSecret)) {
    throw new AppError(
      'CONFIG_INVALID',
      'with DATABASE_URL, ERM3_PEPPER and ERM3_SESSION_SECRET must be set (the same on every node; e.g. `openssl rand -base64 48`)',
    )
  }
  return {
    host,
    port,
    publicUrl,
    store: storeVar(env),
    storeAccess: storeAccess(env),
    databaseUrl,
    redisUrl: urlVar(env, 'REDIS_URL', ['redis:', 'rediss:']),
    pepper,
    sessionSecret,
    webhookKey: secretVar(env, 'ERM3_WEBHOOK_KEY'),
    webhookAllowLoopback: boolVar(env, 'ERM3_WEBHOOK_ALLOW_LOOPBACK'),
    smtpUrl: urlVar(env, 'SMTP_URL', ['smtp:', 'smtps:']),
    mailFrom: str(env, 'MAIL_FROM') ?? 'erm3 <no-reply@localhost>',
    metricsToken: str(env, 'METRICS_TOKEN'),
    trustProxy: trustProxy(env),
    ipv6Prefix: intVar(env, 'ERM3_IPV6_PREFIX', 32, 128) ?? 64,
    freeProvisionDailyCap: intVar(env, 'ERM3_FREE_PROVISION_DAILY_CAP', 0, 1_000_000) ?? 100,
    http: httpEdge(env),
    topUpUrl: urlVar(env, 'TOP_UP_URL', ['https:', 'http:']),
    ipRate: ipRate(env),
    stripe: stripeConfig(env),
    llm: llmConfig(env),
    plaid: plaidConfig(env),
  }
}

export function loadConfig(env: Env = process.env): Config {
  return {
    server: serverConfig(env),
    home: resolve(env.ERM3_HOME && env.ERM3_HOME !== '' ? env.ERM3_HOME : '.erm3'),
    synth: {
      seed: intVar(env, 'ERM3_SYNTH_SEED', 0, 0xffffffff),
      stocks: intVar(env, 'ERM3_SYNTH_STOCKS', 20, 20000),
      end: dateVar(env, 'ERM3_SYNTH_END'),
    },
  }
}
