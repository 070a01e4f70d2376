import assert from 'node:assert/strict'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { replaceBlock } from '../../scripts/docs.ts'
import { CONFIG_DOC, renderConfigTable } from '../../scripts/docs-config.ts'
import { DEFAULT_SYNTH } from '../../src/engine/data/synth/options.ts'
import { loadConfig, mcpClientConfig, storeAccess } from '../../src/platform/config.ts'
import { CONFIG_VARS, type ConfigVar } from '../../src/platform/config-vars.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
const vars = Object.entries(CONFIG_VARS) as [string, ConfigVar<unknown>][]

/** loadConfig(env) fails with CONFIG_INVALID; its message. */
function refusal(env: Record<string, string>): string {
  let message = ''
  assert.throws(
    () => loadConfig(env),
    (e: Error & { code?: string }) => {
      assert.equal(e.code, 'CONFIG_INVALID')
      message = e.message
      return true
    },
  )
  return message
}

describe('configuration schema', () => {
  test('every bad value of every checked variable fails, naming the variable; secrets are not echoed', () => {
    // Variables that take any text (a path, a name, a token) have nothing to refuse.
    const free = new Set(['ERM3_HOME', 'ERM3_STORE', 'ERM3_URL', 'ERM3_API_KEY'])
    const checked = vars.filter(([name, v]) => v.expects !== 'text' && !free.has(name))
    assert.ok(checked.length > 35, `${checked.length} checked variables`)
    for (const [name, v] of checked) {
      const bad = 'not-valid-9f3b2c7d'
      const message = refusal({ [name]: bad })
      assert.match(message, new RegExp(`\\b${name}\\b`), `${name}: ${message}`)
      if (v.secret) assert.ok(!message.includes(bad), `${name} echoed its value: ${message}`)
    }
  })

  test('each kind of problem says what is expected', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ PORT: '65536' }, /^PORT must be an integer in 0\.\.65535, got "65536"$/],
      [{ ERM3_S3_FORCE_PATH_STYLE: 'yes' }, /^ERM3_S3_FORCE_PATH_STYLE must be true or false, got "yes"$/],
      [{ SMTP_URL: 'smtp//nohost' }, /^SMTP_URL must be a URL$/],
      [{ PUBLIC_URL: 'ftp://x' }, /^PUBLIC_URL must use http: or https:, got ftp:$/],
      [{ ERM3_SYNTH_END: '2026-1-1' }, /^ERM3_SYNTH_END must be a date YYYY-MM-DD/],
      [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent/],
      [{ ERM3_STORE: 's3://x' }, /^ERM3_STORE must be s3:\/\/bucket\/prefix/],
      [{ ERM3_WEBHOOK_KEY: 'short' }, /^ERM3_WEBHOOK_KEY must be at least 32 characters/],
      [{ STRIPE_SECRET_KEY: 'pk_live_x', STRIPE_WEBHOOK_SECRET: 'whsec_x' }, /STRIPE_SECRET_KEY must be/],
      [{ PLAID_ENV: 'development' }, /PLAID_ENV=development: Plaid retired/],
      [{ ERM3_IP_RATE_PER_MINUTE: '2001' }, /above 2000 must divide 60000/],
      // Rules over several variables.
      [{ AWS_ACCESS_KEY_ID: 'AKIA' }, /AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together/],
      [
        { STRIPE_WEBHOOK_SECRET: 'whsec_x' },
        /need both STRIPE_SECRET_KEY and .*; STRIPE_SECRET_KEY is not set/,
      ],
      [{ LLM_MODEL: 'm' }, /POST \/chat needs both LLM_BASE_URL and LLM_MODEL; LLM_BASE_URL is not set/],
      [{ PLAID_SECRET: 's' }, /Plaid needs both .*; PLAID_CLIENT_ID is not set/],
      [{ PLAID_CLIENT_ID: 'c', PLAID_SECRET: 's' }, /ERM3_PLAID_TOKEN_KEYS is not set/],
      [
        { DATABASE_URL: 'postgres://h/db' },
        /with DATABASE_URL, ERM3_PEPPER and ERM3_SESSION_SECRET must be set/,
      ],
      [{ ERM3_REQUEST_TIMEOUT_MS: '5000' }, /ERM3_HEADERS_TIMEOUT_MS \(10000\) must not exceed/],
    ]
    for (const [env, re] of cases) assert.match(refusal(env), re, JSON.stringify(env))
  })

  test('a URL that may carry a password is never echoed', () => {
    const message = refusal({ DATABASE_URL: 'postgres//user:hunter2@h/db' })
    assert.match(message, /DATABASE_URL must be a URL/)
    assert.ok(!message.includes('hunter2'))
  })

  test('all problems are reported at once, and a failed variable adds no follow-up problem', () => {
    const message = refusal({
      PORT: 'eighty',
      REDIS_URL: 'http://x',
      LOG_LEVEL: 'loud',
      DATABASE_URL: 'postgres://h/db',
      ERM3_PEPPER: 'short',
      ERM3_SESSION_SECRET: 'x'.repeat(40),
    })
    assert.match(message, /^4 configuration problems:\n {2}- LOG_LEVEL must be/)
    for (const name of ['PORT', 'REDIS_URL', 'LOG_LEVEL', 'ERM3_PEPPER'])
      assert.match(message, new RegExp(name))
    assert.doesNotMatch(message, /must be set \(the same on every node/)
  })

  test('defaults', () => {
    assert.deepEqual(loadConfig({}), {
      home: resolve('.erm3'),
      logLevel: 'info',
      synth: { seed: undefined, stocks: undefined, end: undefined },
      server: {
        host: '127.0.0.1',
        port: 8080,
        publicUrl: 'http://127.0.0.1:8080',
        store: null,
        storeAccess: {
          cacheMb: 512,
          pollSeconds: 30,
          timeoutMs: 10_000,
          s3: { endpoint: null, region: 'us-east-1', forcePathStyle: false, credentials: null },
        },
        updates: { at: null, staleAfterSessions: 2, operatorWebhookUrl: null, operatorEmail: null },
        databaseUrl: null,
        redisUrl: null,
        pepper: null,
        sessionSecret: null,
        webhookKey: null,
        webhookAllowLoopback: false,
        smtpUrl: null,
        mailFrom: 'erm3 <no-reply@localhost>',
        metricsToken: null,
        trustProxy: [],
        mcpAllowedOrigins: [],
        ipv6Prefix: 64,
        freeProvisionDailyCap: 100,
        http: {
          headersTimeoutMs: 10_000,
          requestTimeoutMs: 30_000,
          keepAliveTimeoutMs: 72_000,
          maxConnectionsPerAddress: 64,
        },
        topUpUrl: null,
        signupCreditMicros: 0,
        ipRate: { perMinute: 600, burst: 200 },
        stripe: null,
        llm: null,
        plaid: null,
      },
    })
    assert.deepEqual(mcpClientConfig({}), { url: 'http://127.0.0.1:8080', apiKey: null })
    // An empty variable is an unset one.
    assert.equal(loadConfig({ PORT: '', HOST: '' }).server.publicUrl, 'http://127.0.0.1:8080')
    // The synthetic market's defaults live with the generator; the docs repeat them.
    assert.equal(CONFIG_VARS.ERM3_SYNTH_SEED.defaultText, `\`${DEFAULT_SYNTH.seed}\``)
    assert.equal(CONFIG_VARS.ERM3_SYNTH_STOCKS.defaultText, `\`${DEFAULT_SYNTH.stocks}\``)
    assert.equal(CONFIG_VARS.ERM3_SYNTH_END.defaultText, `\`${DEFAULT_SYNTH.end}\``)
  })

  test('values set reach the typed configuration', () => {
    const c = loadConfig({
      ERM3_SYNTH_STOCKS: '40',
      LOG_LEVEL: 'warn',
      AWS_REGION: 'eu-west-1',
      AWS_ENDPOINT_URL: 'http://127.0.0.1:9000',
      AWS_ACCESS_KEY_ID: 'id',
      AWS_SECRET_ACCESS_KEY: 'secret',
      ERM3_S3_FORCE_PATH_STYLE: '1',
      STRIPE_SECRET_KEY: 'sk_test_x',
      STRIPE_WEBHOOK_SECRET: 'whsec_y',
      STRIPE_API_BASE: 'http://[::1]:12111',
      LLM_BASE_URL: 'http://127.0.0.1:8081/v1/',
      LLM_MODEL: 'm',
    })
    assert.equal(c.synth.stocks, 40)
    assert.equal(c.logLevel, 'warn')
    assert.deepEqual(c.server.storeAccess.s3, {
      endpoint: 'http://127.0.0.1:9000',
      region: 'eu-west-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'id', secretAccessKey: 'secret' },
    })
    assert.deepEqual(c.server.stripe, {
      secretKey: 'sk_test_x',
      webhookSecret: 'whsec_y',
      apiBase: { protocol: 'http', host: '::1', port: 12111 },
    })
    assert.equal(c.server.llm?.baseUrl, 'http://127.0.0.1:8081/v1')
    assert.equal(c.server.llm?.timeoutMs, 60_000)
  })

  test('storeAccess reads the store variables only (erm3 publish needs no server settings)', () => {
    assert.equal(storeAccess({ PORT: 'eighty', ERM3_STORE_CACHE_MB: '64' }).cacheMb, 64)
    assert.throws(
      () => storeAccess({ ERM3_STORE_TIMEOUT_MS: '1' }),
      /ERM3_STORE_TIMEOUT_MS must be an integer/,
    )
  })

  test('docs/configuration.md carries the table the schema renders', () => {
    const doc = readFileSync(new URL(`../../${CONFIG_DOC}`, import.meta.url), 'utf8')
    assert.equal(replaceBlock(doc, 'config', renderConfigTable()), doc, 'run npm run docs')
    for (const [name] of vars) assert.ok(doc.includes(`| \`${name}\` |`), name)
  })

  test('no code outside the schema reads a variable from process.env', () => {
    const files: string[] = []
    const walk = (dir: string) => {
      for (const n of readdirSync(dir)) {
        const p = join(dir, n)
        if (statSync(p).isDirectory()) walk(p)
        else if (p.endsWith('.ts')) files.push(p)
      }
    }
    walk(join(root, 'src'))
    const readers = files
      .filter((f) => !f.endsWith(join('platform', 'config.ts')))
      .filter((f) => /process\.env(\.|\[|\?)/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(root, f))
    assert.deepEqual(readers, [], 'read it through CONFIG_VARS (src/platform/config.ts)')
  })
})

test('ERM3_MCP_ALLOWED_ORIGINS: origins only, normalised; anything else stops the start naming the variable', () => {
  assert.deepEqual(
    loadConfig({ ERM3_MCP_ALLOWED_ORIGINS: 'https://App.example, http://localhost:6274/' }).server
      .mcpAllowedOrigins,
    ['https://app.example', 'http://localhost:6274'],
  )
  for (const bad of ['https://app.example/path', 'app.example', 'null', 'javascript:alert(1)'])
    assert.throws(() => loadConfig({ ERM3_MCP_ALLOWED_ORIGINS: bad }), /ERM3_MCP_ALLOWED_ORIGINS/, bad)
})
