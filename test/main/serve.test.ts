import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createClient, fetchTransport } from '../../src/contract/client.ts'
import { serve } from '../../src/main/server.ts'
import { loadConfig } from '../../src/platform/config.ts'
import { createLogger } from '../../src/platform/logger.ts'
import { fixtureStores } from '../helpers/fixture-store.ts'

const root = new URL('../..', import.meta.url).pathname

describe('configuration is validated at start', () => {
  const bad: [Record<string, string>, RegExp][] = [
    [{ PORT: 'eighty' }, /PORT must be an integer/],
    [{ PUBLIC_URL: 'not a url' }, /PUBLIC_URL must be a URL/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL must use postgres/],
    [{ DATABASE_URL: 'postgres://h/db' }, /ERM3_PEPPER and ERM3_SESSION_SECRET must be set/],
    [
      { DATABASE_URL: 'postgres://h/db', ERM3_PEPPER: 'short', ERM3_SESSION_SECRET: 'x'.repeat(40) },
      /ERM3_PEPPER must be at least 32/,
    ],
    [{ REDIS_URL: 'http://x' }, /REDIS_URL must use redis/],
    [{ TRUST_PROXY: 'maybe' }, /TRUST_PROXY: "maybe" is not an address/],
    [
      { TRUST_PROXY: 'true' },
      /TRUST_PROXY=true would let any client choose its own address.*list the proxies/,
    ],
    [{ TRUST_PROXY: '2' }, /TRUST_PROXY=2 would let any client choose its own address/],
    [{ TRUST_PROXY: 'loopback,10.0.0.0/33' }, /TRUST_PROXY: "10.0.0.0\/33" is not/],
    [{ ERM3_IPV6_PREFIX: '16' }, /ERM3_IPV6_PREFIX must be an integer in 32..128/],
    [{ ERM3_FREE_PROVISION_DAILY_CAP: '-1' }, /ERM3_FREE_PROVISION_DAILY_CAP must be an integer/],
    [
      { ERM3_HEADERS_TIMEOUT_MS: '40000' },
      /ERM3_HEADERS_TIMEOUT_MS \(40000\) must not exceed ERM3_REQUEST_TIMEOUT_MS/,
    ],
    [{ ERM3_MAX_CONNECTIONS_PER_ADDRESS: 'many' }, /ERM3_MAX_CONNECTIONS_PER_ADDRESS must be an integer/],
    [{ TOP_UP_URL: 'javascript:alert(1)' }, /TOP_UP_URL must use https: or http:/],
  ]
  for (const [env, message] of bad) {
    test(`refuses ${JSON.stringify(env)}`, () => assert.throws(() => loadConfig(env), message))
  }
  test('defaults: 127.0.0.1:8080 and a public URL derived from them', () => {
    const c = loadConfig({}).server
    assert.deepEqual([c.host, c.port, c.publicUrl], ['127.0.0.1', 8080, 'http://127.0.0.1:8080'])
    assert.equal(
      loadConfig({ PUBLIC_URL: 'https://api.example.com/' }).server.publicUrl,
      'https://api.example.com',
    )
  })
  test('erm3 serve without a built store exits non-zero with a clear message', () => {
    const home = mkdtempSync(join(tmpdir(), 'erm3-serve-'))
    try {
      const r = spawnSync(process.execPath, ['bin/erm3.js', 'serve', '--store', join(home, 'nothing')], {
        cwd: root,
        env: { ...process.env, ERM3_HOME: home, PORT: '0', DATABASE_URL: '', REDIS_URL: '' },
        encoding: 'utf8',
        timeout: 60_000,
      })
      assert.notEqual(r.status, 0)
      assert.match(r.stderr, /erm3: error: the model store: .*no built store/)
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })
})

describe('erm3 serve over real HTTP (embedded)', () => {
  let home: string
  let server: Awaited<ReturnType<typeof serve>>
  before(async () => {
    const fx = await fixtureStores()
    home = mkdtempSync(join(tmpdir(), 'erm3-serve-'))
    mkdirSync(join(home, 'sandbox'), { recursive: true })
    symlinkSync(fx.sandbox, join(home, 'sandbox', 'store'))
    server = await serve({ ERM3_HOME: home, PORT: '0' }, { store: fx.live, log: createLogger('silent') })
  })
  after(async () => {
    await server?.close()
    rmSync(home, { recursive: true, force: true })
  })

  test('health, pricing and a provisioned key over the network', async () => {
    const client = createClient(fetchTransport(server.url))
    const h = (await client.call('getHealth')).ok()
    assert.equal(h.status, 'ok')
    assert.equal(h.database.backend, 'sqlite')
    assert.equal(h.model.data_as_of, '2021-12-31')
    const free = (await client.call('provisionFree', { body: {} })).ok()
    const m = await client.call('getMetrics', { key: free.api_key, params: { ticker: 'AAPL' } })
    assert.equal(m.status, 200)
    assert.equal(m.headers['x-api-cost-usd'], '0.001')
  })
})

describe('the sandbox store after an upgrade', () => {
  test('a sandbox built by another methodology version is rebuilt, not served or refused at start', async () => {
    const { cpSync, readdirSync, readFileSync, writeFileSync } = await import('node:fs')
    const { ensureSandbox } = await import('../../src/main/sandbox.ts')
    const { ModelStore } = await import('../../src/engine/model-store/reader.ts')
    const { METHODOLOGY_VERSION } = await import('../../src/engine/model-store/layout.ts')
    const fx = await fixtureStores()
    const home = mkdtempSync(join(tmpdir(), 'erm3-sandbox-upgrade-'))
    try {
      const paths = { sandboxDataset: join(fx.root, 'sandbox-dataset'), sandboxStore: join(home, 'store') }
      cpSync(fx.sandbox, paths.sandboxStore, { recursive: true })
      const [build] = readdirSync(join(paths.sandboxStore, 'builds'))
      const manifestPath = join(paths.sandboxStore, 'builds', build, 'manifest.json')
      const m = JSON.parse(readFileSync(manifestPath, 'utf8'))
      writeFileSync(manifestPath, JSON.stringify({ ...m, methodology_version: METHODOLOGY_VERSION - 1 }))
      await assert.rejects(ModelStore.open(paths.sandboxStore), /methodology version/)
      const said: string[] = []
      await ensureSandbox(paths, undefined, (line) => said.push(line))
      assert.match(said.join('\n'), /another erm3 version; rebuilding/)
      const store = await ModelStore.open(paths.sandboxStore)
      assert.equal(store.manifest.methodology_version, METHODOLOGY_VERSION)
      await store.close()
      // Readable now: a second start leaves it alone.
      const again: string[] = []
      await ensureSandbox(paths, undefined, (line) => again.push(line))
      assert.deepEqual(again, [])
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })
})
