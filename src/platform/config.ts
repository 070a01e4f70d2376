import { join, resolve } from 'node:path'
import { CONFIG_VARS, type ConfigGroup, type ConfigVar, PLAID_KEYS_HINT } from './config-vars.ts'
import { AppError } from './errors.ts'

/**
 * Configuration from the environment, validated once at start: a bad value stops the process
 * with a message naming the variable, instead of failing later in some stage. CONFIG_VARS
 * (config-vars.ts) is the one schema: parsing, defaults, the typed Config and docs/configuration.md derive from it
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
  /** The scheduled daily update, staleness and operator alerts. */
  updates: UpdatesConfig
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
  /** ERM3_MCP_ALLOWED_ORIGINS: browser origins besides PUBLIC_URL's that may call /mcp. */
  mcpAllowedOrigins: string[]
  ipv6Prefix: number
  freeProvisionDailyCap: number
  /** The listener's defences against slow and greedy clients. */
  http: HttpEdgeConfig
  /** Where a 402 sends a client to add funds: the operator's billing page, else /docs/billing. */
  topUpUrl: string | null
  /** ERM3_SIGNUP_CREDIT_USD in integer micro-dollars (0: no sign-up credit). */
  signupCreditMicros: number
  /** Per-IP limit of every request made without an API key (ERM3_IP_RATE_PER_MINUTE, ERM3_IP_RATE_BURST). */
  ipRate: { perMinute: number; burst: number }
  /** Stripe top-ups: null unless STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET are both set. */
  stripe: StripeConfig | null
  /** POST /chat's model provider: null unless LLM_BASE_URL and LLM_MODEL are set (then 503 UNAVAILABLE). */
  llm: LlmConfig | null
  /** Brokerage holdings through Plaid: null unless PLAID_CLIENT_ID and PLAID_SECRET are set. */
  plaid: PlaidConfig | null
}

interface UpdatesConfig {
  /** ERM3_UPDATE_AT as given (services/updates/schedule.ts parses it at start-up); null = none. */
  at: string | null
  staleAfterSessions: number
  operatorWebhookUrl: string | null
  operatorEmail: string | null
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
  (n) => CONFIG_VARS[n].group !== 'mcp' && CONFIG_VARS[n].group !== 'data',
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

/** The settings of `erm3 update` (and of the scheduled update of `erm3 serve`). */
export function updateSettings(env: Env): {
  policy: 'quarantine' | 'drop'
  graceMinutes: number
  maxLogMove: number
  maxShrink: number
  restateTolerance: number
} {
  const p = new Problems()
  const v = read(env, names('update'), p)
  p.throwIfAny()
  return {
    policy: v.ERM3_UPDATE_POLICY,
    graceMinutes: v.ERM3_UPDATE_GRACE_MINUTES,
    maxLogMove: v.ERM3_UPDATE_MAX_MOVE,
    maxShrink: v.ERM3_UPDATE_MAX_SHRINK_PCT / 100,
    restateTolerance: v.ERM3_UPDATE_RESTATE_TOLERANCE,
  }
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
    updates: {
      at: v.ERM3_UPDATE_AT,
      staleAfterSessions: v.ERM3_STALE_AFTER_SESSIONS,
      operatorWebhookUrl: v.ERM3_OPERATOR_WEBHOOK_URL,
      operatorEmail: v.ERM3_OPERATOR_EMAIL,
    },
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
    mcpAllowedOrigins: v.ERM3_MCP_ALLOWED_ORIGINS,
    ipv6Prefix: v.ERM3_IPV6_PREFIX,
    freeProvisionDailyCap: v.ERM3_FREE_PROVISION_DAILY_CAP,
    http: {
      headersTimeoutMs: v.ERM3_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: v.ERM3_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: v.ERM3_KEEP_ALIVE_TIMEOUT_MS,
      maxConnectionsPerAddress: v.ERM3_MAX_CONNECTIONS_PER_ADDRESS,
    },
    topUpUrl: v.TOP_UP_URL,
    signupCreditMicros: Math.round(v.ERM3_SIGNUP_CREDIT_USD * 1_000_000),
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

/** The data directory and universe lists of `erm3 data fetch` (flags win over these). */
/** `tiingo, sec` → ['tiingo', 'sec']. */
export function sourceNames(list: string): string[] {
  return list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
}

export function dataFetchConfig(env: Env): {
  dataDir: string
  /** ERM3_HOME, resolved (the local model store defaults to `<home>/store`). */
  home: string
  sources: string[]
  include: string | null
  exclude: string | null
  overrides: string | null
} {
  const p = new Problems()
  const v = read(env, names('data'), p)
  const home = read(env, ['ERM3_HOME'], p)
  p.throwIfAny()
  return {
    dataDir: resolve(v.ERM3_DATA_DIR ?? join(home.ERM3_HOME, 'data')),
    home: resolve(home.ERM3_HOME),
    sources: sourceNames(v.ERM3_SOURCES ?? ''),
    include: v.ERM3_UNIVERSE_INCLUDE,
    exclude: v.ERM3_UNIVERSE_EXCLUDE,
    overrides: v.ERM3_CLASSIFICATION_OVERRIDES,
  }
}

/** Where `erm3 update` (run by cron, outside a server) sends its operator alerts. */
export function operatorAlertConfig(env: Env): {
  webhookUrl: string | null
  email: string | null
  smtpUrl: string | null
  mailFrom: string
  home: string
} {
  const p = new Problems()
  const v = read(
    env,
    ['ERM3_OPERATOR_WEBHOOK_URL', 'ERM3_OPERATOR_EMAIL', 'SMTP_URL', 'MAIL_FROM', 'ERM3_HOME'],
    p,
  )
  p.throwIfAny()
  return {
    webhookUrl: v.ERM3_OPERATOR_WEBHOOK_URL,
    email: v.ERM3_OPERATOR_EMAIL,
    smtpUrl: v.SMTP_URL,
    mailFrom: v.MAIL_FROM,
    home: resolve(v.ERM3_HOME),
  }
}

/** What `erm3 mcp` reads from the environment (it checks the key and the origin itself). */
export function mcpClientConfig(env: Env): { url: string; apiKey: string | null } {
  const p = new Problems()
  const v = read(env, names('mcp'), p)
  p.throwIfAny()
  return { url: v.ERM3_URL, apiKey: v.ERM3_API_KEY }
}
