import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { freePort } from '../helpers/cluster.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'
import { assertMeteredSession, exhaustRate, initializeRequest, onlyKeyId } from './clients.ts'

/**
 * `erm3 mcp`: the real CLI spawned as a child process, driven over stdio by the SDK client, talking
 * HTTP to a real listener — so every tool call is the remote's REST call with the remote's prices.
 */
const root = fileURLToPath(new URL('../..', import.meta.url))
const bin = join(root, 'bin', 'erm3.js')

/** The child's environment: the test's, minus the scale-out backends CI exports (not used by `erm3 mcp`, but kept out). */
function childEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'ERM3_API_KEY') env[k] = v
  return { ...env, DATABASE_URL: '', REDIS_URL: '', ...extra }
}

/** Runs `erm3 mcp` with `input` on stdin, then stdin closed (asynchronously: the server it calls is this process). */
function erm3Mcp(env: Record<string, string>, args: string[] = [], input = '') {
  const child = spawn(process.execPath, [bin, 'mcp', ...args], { cwd: root, env: childEnv(env) })
  let out = ''
  let err = ''
  child.stdout.on('data', (b: Buffer) => {
    out += b.toString()
  })
  child.stderr.on('data', (b: Buffer) => {
    err += b.toString()
  })
  child.stdin.end(input)
  const timer = setTimeout(() => child.kill(), 60_000)
  return new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, out, err })
    })
  })
}

describe('erm3 mcp (stdio)', () => {
  let t: TestApp
  let base: string
  before(async () => {
    t = await startTestApp()
    base = await t.listen()
  })
  after(() => t?.close())

  async function connect(key: string) {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [bin, 'mcp'],
      cwd: root,
      env: childEnv({ ERM3_URL: base, ERM3_API_KEY: key }),
      stderr: 'pipe',
    })
    let stderr = ''
    ;(transport.stderr as Readable).on('data', (b: Buffer) => {
      stderr += b.toString()
    })
    const client = new Client({ name: 'erm3-stdio-test', version: '1.0.0' })
    await client.connect(transport)
    return { client, stderr: () => stderr }
  }

  test('SDK client over stdio: tools, balance, a paid call at the REST price, tool errors, resources; exits when stdin closes', async () => {
    const account = await t.account(0.0015)
    const { client, stderr } = await connect(await t.key(account))
    await assertMeteredSession(t, client, account)

    // Closing stdin ends the server itself (the SDK would otherwise SIGTERM it after 2 s).
    await client.close()
    assert.match(stderr(), /erm3 mcp: MCP on stdio for http:\/\/127\.0\.0\.1:\d+/)
    assert.match(stderr(), /client gone, exiting/)
  })

  test('over the remote rate limit: a tool error with RATE_LIMITED and Retry-After', async () => {
    const account = await t.account(1)
    const key = await t.key(account)
    const { client } = await connect(key)
    const clock = t.clock.offsetMs
    try {
      await exhaustRate(t, await onlyKeyId(t, account))
      const r = await client.callTool({ name: 'metrics', arguments: { ticker: 'AAPL' } })
      assert.equal(r.isError, true)
      assert.match(JSON.stringify(r.content), /"RATE_LIMITED: .+\. Retry after \d+ s\."/)
      assert.equal((await t.ctx.accounts.balance(account)).balanceMicros, 1_000_000)
    } finally {
      t.clock.offsetMs = clock
      await client.close()
    }
  })

  test('piped input: requests already sent are answered after stdin ends, stdout carries JSON-RPC only, exit 0', async () => {
    const key = await t.key(await t.account(2))
    const lines = [
      initializeRequest(1, 'pipe'),
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'balance', arguments: {} } },
    ]
    const r = await erm3Mcp(
      { ERM3_URL: base, ERM3_API_KEY: key },
      [],
      `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`,
    )
    assert.equal(r.code, 0, r.err)
    const out = r.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { jsonrpc: string; id: number; result: Record<string, unknown> })
    assert.ok(out.every((m) => m.jsonrpc === '2.0'))
    assert.deepEqual(
      out.map((m) => m.id),
      [1, 2],
    )
    const balance = out[1]?.result.structuredContent as { balance_usd: number } | undefined
    assert.equal(balance?.balance_usd, 2)
  })

  test('instructions state what the data is, as the HTTP server does', async () => {
    const { client } = await connect(await t.key(await t.account(1)))
    assert.match(client.getInstructions() ?? '', /This instance serves SYNTHETIC data/)
    await client.close()
  })

  test('an unreachable erm3: a clear tool error naming the URL and the cause, not "fetch failed"', async () => {
    const port = await freePort()
    const url = `http://127.0.0.1:${port}`
    const lines = [
      initializeRequest(1, 'nobody-home'),
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'balance', arguments: {} } },
    ]
    const r = await erm3Mcp(
      { ERM3_URL: url, ERM3_API_KEY: await t.key(await t.account()) },
      [],
      `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`,
    )
    assert.equal(r.code, 0, r.err)
    const [init, call] = r.out
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            result: { instructions?: string; isError?: boolean; content?: { text: string }[] }
          },
      )
    assert.match(init?.result.instructions ?? '', /could not be learned at start/)
    assert.equal(call?.result.isError, true)
    const text = call?.result.content?.[0]?.text ?? ''
    assert.equal(
      text,
      `UNAVAILABLE: cannot reach erm3 at ${url}: connection refused; is the server running? set ERM3_URL (or --url) to where it listens`,
    )
    assert.doesNotMatch(r.out, /fetch failed/)
    assert.match(r.err, /cannot reach/)
  })

  test('refuses to start without a valid key in ERM3_API_KEY, with a key on the command line, or with a bad URL', async () => {
    let r = await erm3Mcp({ ERM3_URL: base })
    assert.notEqual(r.code, 0)
    assert.equal(r.out, '')
    assert.match(r.err, /ERM3_API_KEY is not set/)
    // A typo: the checksum catches it before any request.
    const good = 'erm_agent_live_0123456789abcdefghijABCDEFGHIJ012345_000000'
    r = await erm3Mcp({ ERM3_URL: base, ERM3_API_KEY: good })
    assert.notEqual(r.code, 0)
    assert.match(r.err, /ERM3_API_KEY is not a valid erm3 key/)
    assert.doesNotMatch(r.err, /0123456789abcdef/)
    r = await erm3Mcp({ ERM3_URL: base }, ['--key', good])
    assert.notEqual(r.code, 0)
    assert.match(r.err, /set ERM3_API_KEY instead/)
    const valid = await t.key(await t.account())
    r = await erm3Mcp({ ERM3_API_KEY: valid }, ['--url', 'ftp://example.com'])
    assert.notEqual(r.code, 0)
    assert.match(r.err, /--url must be an http\(s\) URL/)
  })
})
