/** Shared by the HTTP benches: a served erm3 child process, its port and its funded keys. */
import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import { loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'

export const BIN = fileURLToPath(new URL('../../bin/erm3.js', import.meta.url))

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

/** The parent's environment minus the backend settings: each setup names its own. */
export function serverEnv(): Record<string, string | undefined> {
  const env = { ...process.env }
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
  const { createAccountWithBalance, createKeyFor } = await import('../../src/services/identity/admin.ts')
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
