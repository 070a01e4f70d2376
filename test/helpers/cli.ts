import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** What one `erm3 …` command did. */
export interface CliRun {
  code: number | null
  out: string
  err: string
}

const BIN = fileURLToPath(new URL('../../bin/erm3.js', import.meta.url))

/**
 * Runs `erm3 <args>` as an operator would, in embedded mode under `home` whatever the caller's
 * environment says (no DATABASE_URL, pepper or session secret), plus `env`.
 */
export function runErm3(home: string, env: Record<string, string>, ...args: string[]): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: home,
      env: {
        ...process.env,
        ERM3_HOME: home,
        DATABASE_URL: '',
        ERM3_PEPPER: '',
        ERM3_SESSION_SECRET: '',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
    })
    let out = ''
    let err = ''
    child.stdout.setEncoding('utf8').on('data', (s: string) => {
      out += s
    })
    child.stderr.setEncoding('utf8').on('data', (s: string) => {
      err += s
    })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, out, err }))
  })
}
