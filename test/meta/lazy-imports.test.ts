import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'

/**
 * Start-up cost is part of the product: `erm3 --help` must not load the server, and a node that
 * has no card top-ups, chat, Plaid or s3:// store must not load those SDKs (together over a second
 * of module loading, paid by every `erm3` command and every node start; docs/performance.md).
 * Each case imports a module in a fresh process under a resolve hook that records every module
 * resolved, and checks what was and was not loaded.
 */
const root = fileURLToPath(new URL('../..', import.meta.url))
const hook = pathToFileURL(join(root, 'test', 'helpers', 'import-log-hook.mjs')).href
const dir = mkdtempSync(join(tmpdir(), 'erm3-imports-'))
after(() => rmSync(dir, { recursive: true, force: true }))

const SDKS = ['node_modules/stripe/', 'node_modules/openai/', 'node_modules/plaid/', 'node_modules/@aws-sdk/']

let n = 0
function loaded(code: string): string[] {
  const log = join(dir, `imports-${++n}.log`)
  const register = `import { register } from 'node:module'; register(${JSON.stringify(hook)})`
  const r = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--import',
      `data:text/javascript,${encodeURIComponent(register)}`,
      '--input-type=module',
      '-e',
      code,
    ],
    { cwd: root, env: { ...process.env, ERM3_IMPORT_LOG: log }, encoding: 'utf8', timeout: 60_000 },
  )
  assert.equal(r.status, 0, r.stderr)
  return readFileSync(log, 'utf8').split('\n').filter(Boolean)
}

const from = (urls: string[], part: string) => urls.filter((u) => u.includes(part))

describe('lazy imports', () => {
  test('every CLI command registers without loading its implementation', () => {
    const urls = loaded(
      `const { Command } = await import('commander')
       const p = new Command('erm3')
       for (const f of ['admin', 'build', 'data', 'export', 'mcp', 'plaid', 'publish', 'serve', 'start', 'update']) {
         const m = await import('./src/cli/commands/' + f + '.ts')
         for (const [k, v] of Object.entries(m)) if (k.startsWith('register')) v(p)
       }
       if (p.commands.length < 9) throw new Error('commands not registered')`,
    )
    assert.ok(from(urls, '/src/cli/commands/').length >= 9, 'the hook saw the command modules')
    const heavy = [
      '/src/main/',
      '/src/api/',
      '/src/mcp/',
      '/src/engine/build/',
      '/src/engine/model-store/reader.ts',
      '/src/engine/object-store/',
      '/src/engine/data/import/',
      'node_modules/fastify/',
      ...SDKS,
    ]
    for (const h of heavy) assert.deepEqual(from(urls, h), [], `registering the commands loaded ${h}`)
  })

  test('the server loads no Stripe, OpenAI, Plaid or S3 SDK until one is used', () => {
    const urls = loaded(`await import('./src/main/server.ts')`)
    assert.ok(from(urls, 'node_modules/fastify/').length > 0, 'the hook saw the server’s modules')
    for (const sdk of SDKS) assert.deepEqual(from(urls, sdk), [], `importing the server loaded ${sdk}`)
  })

  test('the hook does record each SDK once it is imported (so the checks above can fail)', () => {
    const urls = loaded(
      `await import('./src/main/server.ts')
       await Promise.all(['stripe', 'openai', 'plaid', '@aws-sdk/client-s3'].map((m) => import(m)))`,
    )
    for (const sdk of SDKS) assert.ok(from(urls, sdk).length > 0, `${sdk} was recorded once imported`)
  })
})
