import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

/** Debian's Python (.ci/run installs python3 and python3-pandas when missing). */
const PYTHON = '/usr/bin/python3'
const PKG = fileURLToPath(new URL('../../clients/python/', import.meta.url))

function run(
  cmd: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: PKG, env: { ...process.env, ...env }, timeout: 120_000 })
    let out = ''
    child.stdout.on('data', (b: Buffer) => {
      out += b
    })
    child.stderr.on('data', (b: Buffer) => {
      out += b
    })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, out }))
  })
}

// The Python package's own unittest suite (clients/python/tests), against a real server on
// loopback over a tiny synthetic market: contract, answers, errors, pages, files, retries, frames.
describe('the erm3 Python package against a real server', {
  skip: existsSync(PYTHON) ? false : `${PYTHON} is missing`,
}, () => {
  let t: TestApp
  let env: Record<string, string>

  before(async () => {
    t = await startTestApp()
    const origin = await t.listen()
    const key = await t.key(await t.account(50))
    env = { ERM3_URL: origin, ERM3_API_KEY: key, PYTHONPATH: PKG, PYTHONDONTWRITEBYTECODE: '1' }
  })
  after(() => t.close())

  test('python3 -m unittest passes, pandas tests included', async () => {
    const r = await run(PYTHON, ['-m', 'unittest', 'discover', '-v', '-s', 'tests'], env)
    assert.equal(r.code, 0, r.out)
    assert.match(r.out, /\nOK/)
    const pandas = await run(PYTHON, ['-c', 'import pandas'], env)
    // With pandas installed (CI installs it) the DataFrame tests ran, not skipped.
    if (pandas.code === 0) assert.doesNotMatch(r.out, /skipped 'pandas/)
    assert.doesNotMatch(r.out, /skipped 'ERM3_URL/)
  })

  test('the package type-checks with mypy --strict (pyproject.toml), when mypy is installed', async (c) => {
    const mypy = await run(PYTHON, ['-c', 'import mypy'], env)
    if (mypy.code !== 0) return c.skip('python3-mypy is not installed')
    const r = await run(PYTHON, ['-m', 'mypy', '--cache-dir=/dev/null', 'erm3'], env)
    assert.equal(r.code, 0, r.out)
  })

  test('the package imports and types its calls without pandas', async () => {
    const r = await run(
      PYTHON,
      [
        '-c',
        [
          'import sys; sys.modules["pandas"] = None',
          'import erm3, inspect',
          'sig = inspect.signature(erm3.Client.get_ticker_returns)',
          'assert str(sig.parameters["ticker"].annotation) == "str", sig',
          'print(erm3.Client(sys.argv[1], sys.argv[2]).get_balance().data["balance_usd"])',
        ].join('\n'),
        env.ERM3_URL as string,
        env.ERM3_API_KEY as string,
      ],
      env,
    )
    assert.equal(r.code, 0, r.out)
    assert.equal(Number(r.out.trim()) > 0, true, r.out)
  })
})
