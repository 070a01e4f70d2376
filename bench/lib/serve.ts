/** Shared by the HTTP benches: a served erm3 child process, its port and its funded keys. */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const BIN = fileURLToPath(new URL('../../bin/erm3.js', import.meta.url))

/** A response a floor replays for requests whose path starts with `prefix` (body base64). */
export interface FloorRoute {
  prefix: string
  status: number
  headers: string[]
  body: string
}

export async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  const port = (s.address() as { port: number }).port
  await new Promise<void>((resolve) => s.close(() => resolve()))
  return port
}

export async function waitReady(port: number, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`)
    try {
      await fetch(`http://127.0.0.1:${port}/`)
      return
    } catch {
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  throw new Error('server did not start')
}

export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    child.once('exit', () => resolve())
    child.kill('SIGTERM')
  })
}

/**
 * The parent's environment minus the backend settings: each setup names its own. The load comes
 * from one address and the open loop opens a connection whenever all are busy, so the per-address
 * connection cap (a defence against one client holding the node's sockets) is off.
 */
export function serverEnv(): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env, ERM3_MAX_CONNECTIONS_PER_ADDRESS: '0' }
  for (const k of [
    'DATABASE_URL',
    'REDIS_URL',
    'ERM3_PEPPER',
    'ERM3_SESSION_SECRET',
    'ERM3_HOME',
    'ERM3_STORE',
  ])
    delete env[k]
  return env
}

/** A funded account with `count` premium live keys, issued through the operator path. */
export async function provision(
  env: Record<string, string | undefined>,
  count: number,
): Promise<{ accountId: string; keys: string[] }> {
  const { openOperator } = await import('../../src/main/context.ts')
  const { createAccountWithBalance, createKeyFor } = await import('../../src/services/account/admin.ts')
  const op = await openOperator(env)
  try {
    const { account } = await createAccountWithBalance(op.ctx, {
      email: `bench-${randomBytes(4).toString('hex')}@example.com`,
      balanceUsd: 10_000,
    })
    const keys: string[] = []
    for (let i = 0; i < count; i++)
      keys.push(
        (await createKeyFor(op.ctx, { accountId: account.id, environment: 'live', tier: 'premium' })).apiKey,
      )
    return { accountId: account.id, keys }
  } finally {
    await op.close()
  }
}

/**
 * The store a served bench runs on: BENCH_STORE when set (a built store: no synthesis, no build),
 * else `stocks` synthetic stocks on the default calendar, synthesised and built under `root`.
 * `seconds` is what that took.
 */
export async function benchStore(root: string, stocks: number): Promise<{ store: string; seconds: number }> {
  const t0 = performance.now()
  let store = process.env.BENCH_STORE ?? ''
  if (!store) {
    const { synthesizeDataset } = await import('../../src/engine/data/synthesize.ts')
    const { buildStore } = await import('../../src/engine/build/index.ts')
    const dataset = join(root, 'dataset')
    store = join(root, 'store')
    await synthesizeDataset(dataset, { stocks, fundamentals: false })
    await buildStore({ dataset, store })
  }
  return { store, seconds: (performance.now() - t0) / 1000 }
}

/** A running `erm3 serve`: its base URL, the funded keys to call it with, and how to stop it. */
export interface ServedStore {
  base: string
  keys: string[]
  stop(): Promise<void>
}

/**
 * `erm3 serve --store <store>` as deployed (a child process, embedded backends) on a free port,
 * with a fresh ERM3_HOME (a copy of the store as its sandbox store) and `keys` funded premium live
 * keys; resolves once it answers. `stop` ends the child and removes the home.
 */
async function servedStore(opts: { store: string; keys: number }): Promise<ServedStore> {
  const home = mkdtempSync(join(tmpdir(), 'erm3-bench-home-'))
  const removeHome = () => rmSync(home, { recursive: true, force: true })
  try {
    cpSync(opts.store, join(home, 'sandbox', 'store'), { recursive: true })
    const env = { ERM3_HOME: home }
    const { keys } = await provision(env, opts.keys)
    const port = await freePort()
    const child = spawn(process.execPath, [BIN, 'serve', '--store', opts.store], {
      env: { ...serverEnv(), ...env, PORT: String(port), LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'inherit'],
    })
    const stop = async () => {
      await stopChild(child)
      removeHome()
    }
    try {
      await waitReady(port, child)
    } catch (e) {
      await stop()
      throw e
    }
    return { base: `http://127.0.0.1:${port}`, keys, stop }
  } catch (e) {
    removeHome()
    throw e
  }
}

/**
 * Runs `body` in a fresh temporary directory (removed afterwards, whatever happens), with the
 * load average printed before and after so a noisy machine shows in the output.
 */
export async function inBenchRoot(prefix: string, body: (root: string) => Promise<void>): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), prefix))
  try {
    console.log(`load average before: ${loadAverage()}`)
    await body(root)
    console.log(`load average after: ${loadAverage()}`)
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

/** `body` against `erm3 serve` on `opts.store` (servedStore), stopped afterwards whatever happens. */
export async function withServer<T>(
  opts: { store: string; keys: number },
  body: (s: ServedStore) => Promise<T>,
): Promise<T> {
  const served = await servedStore(opts)
  try {
    return await body(served)
  } finally {
    await served.stop()
  }
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0

export function quantile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0
}

/** The 1/5/15-minute load averages, printed before and after a run (a busy machine skews it). */
export function loadAverage(): string {
  return loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')
}
