import { resolve } from 'node:path'
import { parseTrustedProxies } from './client-address.ts'
import type { PlaidConfig, PlaidTokenKey, StripeConfig } from './config.ts'
import { AppError } from './errors.ts'
import { parseUpdateAt } from './update-at.ts'

/**
 * The configuration schema: every environment variable erm3 reads, with its group, what it
 * accepts, its default, its meaning and its parser. src/platform/config.ts builds the typed Config
 * from it; scripts/docs-config.ts renders docs/configuration.md from it.
 */

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
  data: 'Market data: the data directory and the universe (`erm3 data fetch`, `erm3 update`)',
  sources: 'Market data sources: keys, base URLs and request rates',
  update: 'Daily update (`erm3 update`, `erm3 serve --update-at`) and operator alerts',
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

/** Like `url`, with a default (a vendor's public endpoint). */
function urlOr(dflt: string, meta: Meta & { trimSlash?: boolean }): ConfigVar<string> {
  const { parse, ...rest } = url(['http:', 'https:'], meta)
  return { ...rest, default: dflt, parse: (raw, name) => parse(raw, name) ?? dflt }
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

/** A comma-separated list of origins (scheme://host[:port], nothing after), normalised as browsers send them. */
function parseOrigins(raw: string): string[] {
  const out: string[] = []
  for (const e of raw.split(',').map((x) => x.trim())) {
    if (e === '') continue
    let origin = 'null'
    try {
      origin = new URL(e).origin
    } catch {
      // not a URL: refused below
    }
    if (origin === 'null' || origin !== e.replace(/\/$/, '').toLowerCase())
      fail(
        `ERM3_MCP_ALLOWED_ORIGINS: ${JSON.stringify(e)} is not an origin (scheme://host[:port], e.g. https://app.example)`,
      )
    out.push(origin)
  }
  return out
}

export const PLAID_KEYS_HINT =
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

/** A finite number in [lo, hi] (documentation shows the bounds). */
function num(lo: number, hi: number, dflt: number, meta: Meta): ConfigVar<number> {
  return {
    ...meta,
    expects: `a number in ${lo}..${hi}`,
    default: dflt,
    parse(raw, name) {
      const n = Number(raw)
      if (!Number.isFinite(n) || n < lo || n > hi) fail(`${name} must be a number in ${lo}..${hi}${got(raw)}`)
      return n
    },
  }
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
  ERM3_DATA_DIR: text(null, {
    group: 'data',
    defaultText: '`$ERM3_HOME/data`',
    description:
      'the data directory `erm3 data fetch` fills (bars, identity registry, shares, facts, rates) and assembles `dataset/` in (`--data-dir` wins)',
  }),
  ERM3_SOURCES: text(null, {
    group: 'data',
    description:
      'comma-separated sources `erm3 update` and the schedule of `erm3 serve --update-at` use, e.g. `polygon,sec,treasury` (`--source` wins)',
  }),
  ERM3_UNIVERSE_INCLUDE: text(null, {
    group: 'data',
    description:
      'a file of tickers (one a line, `#` comments) fetched whatever the listing says (`--include` wins)',
  }),
  ERM3_UNIVERSE_EXCLUDE: text(null, {
    group: 'data',
    description: 'a file of tickers never fetched (`--exclude` wins)',
  }),
  ERM3_CLASSIFICATION_OVERRIDES: text(null, {
    group: 'data',
    description:
      'a `ticker,sector,industry` CSV whose rows win over ETF holdings and SIC codes in `erm3 data fetch` (`--classification` wins)',
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
  ERM3_UPDATE_AT: custom<string | null>({
    group: 'update',
    expects: '`HH:MM`, optionally followed by an IANA time zone (e.g. `18:30 America/New_York`)',
    default: null,
    defaultText: '— (no scheduled update)',
    description:
      '`erm3 serve` runs the daily update at this time on NYSE session days (the zone defaults to `America/New_York`); one node at a time across a cluster (see [deployment.md](deployment.md)). `--update-at` wins over it',
    parse(raw, name) {
      parseUpdateAt(raw, name)
      return raw
    },
  }),
  ERM3_STALE_AFTER_SESSIONS: int(0, 1000, 2, {
    group: 'update',
    description:
      "`/health`'s `data` is stale (status `degraded`, one operator alert per episode) when more sessions than this have closed since `data_as_of`",
  }),
  ERM3_OPERATOR_WEBHOOK_URL: url(['http:', 'https:'], {
    group: 'update',
    secret: true,
    description:
      'operator alerts (a failed or quarantined update, stale data) are POSTed here as JSON with a short `text` field (Slack-style incoming webhooks show it)',
  }),
  ERM3_OPERATOR_EMAIL: custom<string | null>({
    group: 'update',
    expects: 'an e-mail address',
    default: null,
    description: 'operator alerts are also e-mailed here (through `SMTP_URL`, else the outbox)',
    parse(raw, name) {
      if (!/^[^\s@]+@[^\s@]+$/.test(raw)) fail(`${name} must be an e-mail address${got(raw)}`)
      return raw
    },
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
  ERM3_MCP_ALLOWED_ORIGINS: custom<string[]>({
    group: 'edge',
    expects: 'origins (`https://app.example`), comma-separated',
    default: [],
    defaultText: '— (PUBLIC_URL only)',
    description:
      "browser origins, besides `PUBLIC_URL`'s, whose pages may call `/mcp`: a request with any other `Origin` header is refused `403` (DNS-rebinding protection); requests without `Origin` (every non-browser client) are unaffected",
    parse: parseOrigins,
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
  ERM3_SIGNUP_CREDIT_USD: custom<number>({
    group: 'billing',
    expects: 'a number of USD in 0..1000, at most 6 decimals',
    default: 0,
    defaultText: '`0`; `5` under `erm3 start` serving the synthetic market',
    description:
      'a credit every account created by a dashboard sign-in gets once (ledger kind `credit`, reference `signup-credit`), so a new user can try the explorer at once; `0`: none',
    parse(raw, name) {
      const n = Number(raw)
      if (!/^\d+(\.\d{1,6})?$/.test(raw) || n > 1000)
        fail(`${name} must be a number of USD in 0..1000 with at most 6 decimals${got(raw)}`)
      return n
    },
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
  SEC_USER_AGENT: text(null, {
    group: 'sources',
    description:
      'who asks SEC EDGAR: a name and a contact e-mail, e.g. `Example Corp admin@example.com` (the SEC refuses requests without one; the `sec` source is not built without it)',
  }),
  SEC_WWW_BASE_URL: url(['http:', 'https:'], {
    group: 'sources',
    trimSlash: true,
    defaultText: '`https://www.sec.gov`',
    description: 'SEC site serving `files/company_tickers_exchange.json`',
  }),
  SEC_DATA_BASE_URL: url(['http:', 'https:'], {
    group: 'sources',
    trimSlash: true,
    defaultText: '`https://data.sec.gov`',
    description: 'SEC EDGAR APIs (`submissions/`, `api/xbrl/companyfacts/`)',
  }),
  SEC_RATE_PER_SECOND: int(1, 10, 8, {
    group: 'sources',
    description: 'requests a second to SEC EDGAR (the SEC allows at most 10)',
  }),
  TREASURY_BASE_URL: url(['http:', 'https:'], {
    group: 'sources',
    trimSlash: true,
    defaultText: '`https://home.treasury.gov`',
    description: "US Treasury's daily Treasury bill rates CSV files (the `treasury` source, no key)",
  }),
  FRED_API_KEY: text(null, {
    group: 'sources',
    secret: true,
    description: 'FRED API key of the `fred` source (3-month bill rate, series DTB3)',
  }),
  FRED_BASE_URL: url(['http:', 'https:'], {
    group: 'sources',
    trimSlash: true,
    defaultText: '`https://api.stlouisfed.org`',
    description: 'FRED API',
  }),
  ERM3_HOLDINGS_SSGA_URL: text(null, {
    group: 'sources',
    defaultText:
      '`https://www.ssga.com/us/en/intermediary/library-content/products/fund-data/etfs/us/holdings-daily-us-en-{etf_lower}.xlsx`',
    description:
      'daily holdings `.xlsx` of a State Street SPDR ETF; `{etf}` / `{etf_lower}` stand for its ticker',
  }),
  ERM3_HOLDINGS_ISHARES_URL: text(null, {
    group: 'sources',
    defaultText:
      '`https://www.ishares.com/us/products/{product}/fund/1467271812596.ajax?fileType=csv&fileName={etf}_holdings&dataType=fund`',
    description: 'holdings CSV of an iShares ETF; `{product}` is its iShares product id',
  }),
  ERM3_HOLDINGS_ISHARES_PRODUCTS: text(null, {
    group: 'sources',
    defaultText: 'a built-in list (docs/sources/reference.md)',
    description:
      'iShares product ids, `ETF=id,…` (e.g. `SOXX=239705`); added to and overriding the built-in list',
  }),
  ERM3_HOLDINGS_CSV_URL: text(null, {
    group: 'sources',
    description:
      "holdings of the other issuers' ETFs as a plain CSV (`ticker,weight`, weight in percent), `{etf}` standing for the ticker; unset: those ETFs have no holdings",
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
  TIINGO_API_KEY: text(null, {
    group: 'sources',
    secret: true,
    description:
      'your Tiingo API token (https://www.tiingo.com/account/api/token), sent as `Authorization: Token …`',
  }),
  TIINGO_BASE_URL: urlOr('https://api.tiingo.com', {
    group: 'sources',
    trimSlash: true,
    description: "Tiingo's REST API (end-of-day prices)",
  }),
  TIINGO_TICKERS_URL: urlOr('https://apimedia.tiingo.com/docs/tiingo/daily/supported_tickers.zip', {
    group: 'sources',
    description:
      "Tiingo's daily list of every ticker it covers, delisted ones included (another host: the token is not sent to it)",
  }),
  TIINGO_RATE_PER_HOUR: int(1, 1_000_000, 50, {
    group: 'sources',
    description:
      "requests an hour erm3 sends Tiingo, Tiingo's quota unit (the free plan allows 50 an hour and 1,000 a day)",
  }),
  POLYGON_API_KEY: text(null, {
    group: 'sources',
    secret: true,
    description: 'your Polygon.io (Massive) API key, sent as the `apiKey` query parameter',
  }),
  POLYGON_BASE_URL: urlOr('https://api.polygon.io', {
    group: 'sources',
    trimSlash: true,
    description: "Polygon's REST API (aggregates, splits, dividends, tickers)",
  }),
  POLYGON_RATE_PER_MINUTE: int(1, 1_000_000, 5, {
    group: 'sources',
    description:
      'requests a minute erm3 sends Polygon (the free plan allows 5; paid plans are unlimited: raise it)',
  }),
  ERM3_UPDATE_POLICY: custom<'quarantine' | 'drop'>({
    group: 'update',
    expects: '`drop` or `quarantine`',
    default: 'drop',
    description:
      "what a security's bad bar (missing, stale, non-positive, a large move without a split or dividend) does: `drop` leaves that security without a bar for the day (reported); `quarantine` holds the whole day back. A market-wide problem (no bars, the market ETF missing, the universe shrinking) always quarantines",
    parse: (raw, name) =>
      raw === 'drop' || raw === 'quarantine' ? raw : fail(`${name} must be drop or quarantine${got(raw)}`),
  }),
  ERM3_UPDATE_GRACE_MINUTES: int(0, 1440, 120, {
    group: 'update',
    description:
      'minutes after the New York close (16:00; 13:00 on a half day) before a session counts as published by the vendors',
  }),
  ERM3_UPDATE_MAX_MOVE: num(0.01, 10, 0.5, {
    group: 'update',
    description: 'largest |log return| of a day accepted without a split or dividend',
  }),
  ERM3_UPDATE_MAX_SHRINK_PCT: num(0, 100, 5, {
    group: 'update',
    description:
      'largest share of the stocks priced the previous session that may lack a usable bar before the day is quarantined',
  }),
  ERM3_UPDATE_RESTATE_TOLERANCE: num(0, 0.01, 1e-6, {
    group: 'update',
    description:
      "relative tolerance under which a vendor's re-downloaded adjusted history counts as the stored one times a constant (kept) rather than a restatement (replaced)",
  }),
} satisfies Record<string, ConfigVar<unknown>>
