import assert from 'node:assert/strict'
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { freePort } from '../helpers/oauth-browser.ts'
import { REAL, realDataPresent } from '../helpers/real-data.ts'

// Every shell example in README.md's code blocks, run for real: the CLI commands as processes on
// one ERM3_HOME, the requests against `erm3 start` serving a small synthetic market (same names as
// the default one). Placeholders (acct_…, erm_agent_live_…) take what the earlier commands printed.
// An example this test does not know fails it, so a new one gets run too.
const root = fileURLToPath(new URL('../..', import.meta.url))

/** Shell lines of the ```sh blocks: continuations joined, trailing comments dropped. */
export function readmeCommands(markdown: string): string[] {
  const blocks = [...markdown.matchAll(/^\s*```sh\n([\s\S]*?)^\s*```/gm)].map((m) => m[1] as string)
  return blocks.flatMap((b) =>
    b
      .replace(/\\\n\s*/g, ' ')
      .split('\n')
      .map((l) => l.replace(/\s+#\s.*$/, '').trim())
      .filter((l) => l !== '' && !l.startsWith('#')),
  )
}

/** Words of a command line: whitespace-separated, double or single quotes grouping. */
function words(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => (m[1] ?? m[2] ?? m[3]) as string)
}

describe('README examples run', () => {
  const commands = readmeCommands(readFileSync(join(root, 'README.md'), 'utf8'))
  const home = mkdtempSync(join(tmpdir(), 'erm3-readme-'))
  // The embedded default the README describes, whatever backends CI exports.
  const env = { ...process.env, ERM3_HOME: home, DATABASE_URL: '', REDIS_URL: '', LOG_LEVEL: 'warn' }
  let server: ChildProcess | null = null
  let origin = ''
  const printed = { account: '', key: '' }

  before(async () => {
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    server = spawn(process.execPath, ['bin/erm3.js', 'start'], {
      cwd: root,
      env: { ...env, PORT: String(port), ERM3_SYNTH_STOCKS: '40' },
      stdio: ['ignore', 'ignore', 'inherit'],
    })
    const deadline = Date.now() + 240_000
    for (;;) {
      const up = await fetch(`${origin}/health`).then(
        (r) => r.ok,
        () => false,
      )
      if (up) break
      if (Date.now() > deadline || server.exitCode !== null) throw new Error('erm3 start did not come up')
      await new Promise((r) => setTimeout(r, 100))
    }
  })
  after(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server?.once('exit', r))
      server.kill('SIGINT')
      await exited
    }
    rmSync(home, { recursive: true, force: true })
  })

  const substitute = (s: string) =>
    s
      .replaceAll('acct_…', printed.account)
      .replaceAll('erm_agent_live_…', printed.key)
      .replaceAll('http://127.0.0.1:8080', origin)
      .replace(/^\.erm3\//, `${home}/`)

  /** The files the import example names, from ../shared/data/real (null when absent). */
  const realInput: Record<string, string> = {
    'adjclose_wide.csv': `${REAL}fixture_adjclose_2019-01-02_2026-07-31.csv`,
    'sp500_constituents.csv': `${REAL}classification/sp500_constituents_gics_2026-08-08.csv`,
    'gics_to_etf_map.csv': `${REAL}classification/gics_to_etf_map.csv`,
    'DTB3.csv': `${REAL}rates/DTB3_fred_2023-01-12_2026-08-12.csv`,
    'IRX.csv': `${REAL}rates/IRX_yahoo_13week_tbill_1976-08-03_2026-08-03.csv`,
    'companyfacts/': `${REAL}fundamentals/companyfacts`,
  }

  function cli(args: string[], t: { skip(msg: string): void }): string | null {
    const a = args.map(substitute)
    // Outputs go to the temporary home, never the checkout.
    for (const o of ['--out']) {
      const i = a.indexOf(o)
      if (i >= 0) a[i + 1] = join(home, a[i + 1] as string)
    }
    if (a[0] === 'data' && a[1] === 'import') {
      if (!realDataPresent) {
        t.skip('the import example needs ../shared/data/real')
        return null
      }
      for (let i = 2; i < a.length; i++) {
        const file = a[i] as string
        if (file in realInput) a[i] = realInput[file] as string
      }
      // There is no long OHLCV file among the real inputs: the import runs without --volume.
      const v = a.indexOf('--volume')
      if (v >= 0) a.splice(v, 2)
    }
    const r = spawnSync(process.execPath, ['bin/erm3.js', ...a], {
      cwd: root,
      env,
      encoding: 'utf8',
      timeout: 300_000,
    })
    assert.equal(r.status, 0, `erm3 ${a.join(' ')}\n${r.stderr}`)
    return r.stdout
  }

  async function curl(args: string[]): Promise<{ url: string; body: unknown }> {
    const headers: Record<string, string> = {}
    let url = ''
    for (let i = 0; i < args.length; i++) {
      if (args[i] === '-H') {
        const [k, ...v] = (args[++i] as string).split(':')
        headers[(k as string).trim()] = substitute(v.join(':').trim())
      } else url = substitute(args[i] as string)
    }
    const r = await fetch(url, { headers })
    const body = await r.json()
    assert.equal(r.status, 200, `curl ${url}: ${JSON.stringify(body)}`)
    return { url, body }
  }

  test('the README has the examples this test runs', () => {
    assert.ok(commands.some((c) => c.startsWith('curl ') && c.includes('/metrics/AAPL')))
    assert.ok(commands.some((c) => c.includes('mag7=true')))
    assert.ok(commands.some((c) => c.startsWith('node bin/erm3.js keys create')))
  })

  test('every example, in README order', async (t) => {
    const ran: string[] = []
    for (const line of commands) {
      const w = words(line)
      if (line === 'npm ci && npm start') {
        // What before() did: `erm3 start` (npm start) on a fresh home, serving on 127.0.0.1.
        ran.push(line)
      } else if (line === 'npm test') {
        ran.push(line) // the suite this test belongs to
      } else if (w[0] === 'node' && w[1] === 'bin/erm3.js') {
        await t.test(line, (st) => {
          const stdout = cli(w.slice(2), st)
          if (stdout === null) return
          const account = stdout.match(/\baccount (acct_\S+)/)?.[1]
          if (account) printed.account = account
          const key = stdout.match(/\berm_agent_live_\S+/)?.[0]
          if (key) printed.key = key
          if (w[2] === 'export') assert.ok(existsSync(join(home, 'panel.parquet')))
        })
        ran.push(line)
      } else if (w[0] === 'curl') {
        await t.test(line, async () => {
          const { url, body } = await curl(w.slice(1))
          const b = body as { ticker?: string; tickers?: string[]; _metadata?: { dataset?: unknown } }
          if (url.endsWith('/metrics/AAPL')) {
            assert.equal(b.ticker, 'AAPL')
            assert.deepEqual(b._metadata?.dataset, { kind: 'synthetic', seed: 42 })
          }
          if (url.includes('mag7=true'))
            assert.deepEqual(b.tickers, ['AAPL', 'MSFT', 'GOOGL', 'AMZN', 'NVDA', 'META', 'TSLA'])
        })
        ran.push(line)
      } else assert.fail(`README example this test does not know how to run: ${line}`)
    }
    assert.deepEqual(ran, commands)
    assert.match(printed.account, /^acct_/)
    assert.match(printed.key, /^erm_agent_live_/)
  })
})
