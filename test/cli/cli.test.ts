import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const root = fileURLToPath(new URL('../..', import.meta.url))
const real = join(root, '..', 'shared', 'data', 'real')
const dir = await mkdtemp(join(tmpdir(), 'erm3-cli-'))
after(() => rm(dir, { recursive: true, force: true }))

/** Asynchronous, so that the tests (each in its own directory) run side by side. */
function erm3(args: string[], env: Record<string, string> = {}) {
  return promisify(execFile)(process.execPath, [join(root, 'bin', 'erm3.js'), ...args], {
    cwd: dir,
    // Embedded mode: the CI's DATABASE_URL/REDIS_URL would select the scale-out backends.
    env: { ...process.env, DATABASE_URL: '', REDIS_URL: '', ...env },
    encoding: 'utf8',
    timeout: 120_000,
    maxBuffer: 64 * 2 ** 20,
  }).then(
    (r) => ({ code: 0 as number | null, out: r.stdout, err: r.stderr }),
    (e: { code?: number | string | null; stdout: string; stderr: string }) => ({
      code: typeof e.code === 'number' ? e.code : null,
      out: e.stdout,
      err: e.stderr,
    }),
  )
}

describe('erm3 CLI', { concurrency: true }, () => {
  test('data synth writes a dataset and reports it', async () => {
    const out = join(dir, 'synth')
    const r = await erm3([
      'data',
      'synth',
      '--out',
      out,
      '--stocks',
      '30',
      '--start',
      '2016-01-04',
      '--end',
      '2017-12-29',
      '--seed',
      '5',
    ])
    assert.equal(r.code, 0, r.err)
    assert.match(
      r.out,
      /synthetic dataset written to .*\n {2}33 stocks, \d+ ETFs, 503 days \(2016-01-04 … 2017-12-29\)/,
    )
    assert.ok(existsSync(join(out, 'manifest.json')))
    assert.match(r.err, /simulate market/) // non-TTY progress lines
  })

  test('bad options exit non-zero with a clear message and write nothing', async () => {
    const out = join(dir, 'bad')
    let r = await erm3(['data', 'synth', '--out', out, '--stocks', 'many'])
    assert.notEqual(r.code, 0)
    assert.match(r.err, /--stocks.*expected an integer, got "many"/)
    r = await erm3(['data', 'synth', '--out', out, '--start', '2020-01-01', '--end', '2019-01-01'])
    assert.notEqual(r.code, 0)
    assert.match(r.err, /--end must be at least one year after --start/)
    assert.ok(!existsSync(out))
  })

  test('start: creates the default dataset under ERM3_HOME once, then reuses it', async () => {
    const home = join(dir, 'home')
    const env = { ERM3_HOME: home, ERM3_SYNTH_STOCKS: '25' }
    // The refused start (another home) runs alongside the first one.
    const [first, refused] = await Promise.all([
      erm3(['start', '--no-serve'], env),
      erm3(['start', '--no-serve'], { ERM3_HOME: join(dir, 'h2'), ERM3_SYNTH_STOCKS: 'lots' }),
    ])
    let r = first
    assert.equal(r.code, 0, r.err)
    assert.match(r.out, /generating the default synthetic market/)
    assert.match(r.out, /dataset: wrote .*\(2006-01-03 … 2026-10-30\)/)
    r = await erm3(['start', '--no-serve'], env)
    assert.equal(r.code, 0, r.err)
    assert.match(r.out, /dataset: using /)
    r = refused
    assert.notEqual(r.code, 0)
    assert.match(r.err, /ERM3_SYNTH_STOCKS must be an integer in 20\.\.20000, got "lots"/)
  })

  test('data import of the real files', {
    skip: existsSync(real) ? false : 'shared/data/real is absent',
  }, async () => {
    const out = join(dir, 'real')
    const r = await erm3([
      'data',
      'import',
      '--prices',
      join(real, 'fixture_adjclose_2019-01-02_2026-07-31.csv'),
      '--securities',
      join(real, 'classification', 'sp500_constituents_gics_2026-08-08.csv'),
      '--classification-map',
      join(real, 'classification', 'gics_to_etf_map.csv'),
      '--rates',
      join(real, 'rates', 'DTB3_fred_2023-01-12_2026-08-12.csv'),
      '--out',
      out,
    ])
    assert.equal(r.code, 0, r.err)
    const m = JSON.parse(await readFile(join(out, 'manifest.json'), 'utf8')) as {
      counts: { symbols: number }
    }
    assert.equal(m.counts.symbols, 216)
  })

  test('import errors name file, line and column and exit non-zero', async () => {
    const r = await erm3([
      'data',
      'import',
      '--prices',
      join(dir, 'missing.csv'),
      '--securities',
      'x.csv',
      '--classification-map',
      'y.csv',
      '--out',
      join(dir, 'o'),
    ])
    assert.notEqual(r.code, 0)
    assert.match(r.err, /missing\.csv/)
    assert.ok(!existsSync(join(dir, 'o')))
  })
})
