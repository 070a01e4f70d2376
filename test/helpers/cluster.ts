/**
 * A scale-out deployment on loopback for the fault tests: a private PostgreSQL
 * cluster and a private Redis (so restarting them disturbs no other suite), several `erm3 serve`
 * nodes as child processes sharing them and one model store, and nginx (Debian's package) in
 * front. Everything lives in one temp directory and goes with `stop()`.
 */
import { type ChildProcess, execFile, execFileSync, spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import {
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const BIN = fileURLToPath(new URL('../../bin/erm3.js', import.meta.url))

export async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  const port = (s.address() as { port: number }).port
  await new Promise<void>((resolve) => s.close(() => resolve()))
  return port
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const execFileAsync = promisify(execFile)

/** PostgreSQL's server binaries (Debian keeps them out of PATH), or null. */
function pgBin(): string | null {
  const base = '/usr/lib/postgresql'
  if (!existsSync(base)) return null
  const v = readdirSync(base)
    .filter((d) => existsSync(join(base, d, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a))[0]
  return v ? join(base, v, 'bin') : null
}

function which(cmd: string): string | null {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' })
  return r.status === 0 ? r.stdout.trim() : null
}

/** Why the cluster cannot run here, or false when it can (the test skips with the reason). */
export function clusterUnavailable(): string | false {
  if (!pgBin()) return 'PostgreSQL server binaries (/usr/lib/postgresql/*/bin) are not installed'
  if (!which('redis-server')) return 'redis-server is not installed'
  if (!which('nginx') && !existsSync('/usr/sbin/nginx')) return 'nginx is not installed (.ci/run installs it)'
  return false
}

/** PostgreSQL refuses to run as root: as root, its commands run as the `postgres` user. */
function asPostgres(cmd: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args]
}

export interface PrivatePostgres {
  url: string
  /** `pg_ctl stop -m immediate` (a crash: WAL recovery on start), then start again after `downMs`. */
  restart(downMs: number): Promise<void>
  stop(): void
}

export async function privatePostgres(root: string): Promise<PrivatePostgres> {
  const bin = pgBin() as string
  const dir = join(root, 'pg')
  const sock = join(root, 'pgsock')
  mkdirSync(dir)
  mkdirSync(sock)
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
    for (const d of [root, dir, sock]) chownSync(d, uid, gid)
  }
  const port = await freePort()
  const run = (args: string[]) => {
    const [c, a] = asPostgres(join(bin, 'pg_ctl'), args)
    execFileSync(c, a, { stdio: 'pipe' })
  }
  // Restarts run while the test's clients are in flight: pg_ctl must not block their event loop
  // (a slow crash recovery would fire their timeouts before their answers are read).
  const runAsync = (args: string[]) => {
    const [c, a] = asPostgres(join(bin, 'pg_ctl'), args)
    return execFileAsync(c, a).then(() => undefined)
  }
  const [ic, ia] = asPostgres(join(bin, 'initdb'), ['-D', dir, '-A', 'trust', '-U', 'postgres', '--no-sync'])
  execFileSync(ic, ia, { stdio: 'pipe' })
  const opts = `-p ${port} -c listen_addresses=127.0.0.1 -k ${sock} -c max_connections=200 -c fsync=on`
  const startArgs = ['-D', dir, '-o', opts, '-l', join(root, 'pg.log'), '-w', '-t', '60', 'start']
  run(startArgs)
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async restart(downMs) {
      await runAsync(['-D', dir, '-m', 'immediate', '-w', 'stop'])
      await sleep(downMs)
      await runAsync(startArgs)
    },
    stop() {
      try {
        run(['-D', dir, '-m', 'immediate', '-w', 'stop'])
      } catch {
        // not running
      }
    },
  }
}

export interface PrivateRedis {
  url: string
  /** SIGKILL, then a fresh server on the same port after `downMs` (nothing persisted, like a restart). */
  restart(downMs: number): Promise<void>
  stop(): Promise<void>
}

function exited(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    child.once('exit', () => resolve())
    child.kill(signal)
  })
}

async function waitPort(port: number, child: ChildProcess, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}`)
    const ok = await new Promise<boolean>((resolve) => {
      const s = createServer()
      s.once('error', () => resolve(true)) // taken: the server listens
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(false)))
    })
    if (ok) return
    await sleep(50)
  }
  throw new Error(`${what} did not listen on ${port}`)
}

export async function privateRedis(): Promise<PrivateRedis> {
  const port = await freePort()
  const start = async () => {
    const child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    )
    await waitPort(port, child, 'redis-server')
    return child
  }
  let child = await start()
  return {
    url: `redis://127.0.0.1:${port}`,
    async restart(downMs) {
      await exited(child)
      await sleep(downMs)
      child = await start()
    },
    stop: () => exited(child),
  }
}

export interface Erm3Node {
  port: number
  child: ChildProcess
  /** Everything the node printed (its log lines). */
  output(): string
}

/** `erm3 serve` as a child; resolves once it says it is serving. */
export async function startNode(
  env: Record<string, string | undefined>,
  store: string,
  fixedPort?: number,
): Promise<Erm3Node> {
  const port = fixedPort ?? (await freePort())
  const child = spawn(process.execPath, [BIN, 'serve', '--store', store], {
    env: { ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`node did not start:\n${out}`)), 60_000)
    const onData = (b: Buffer) => {
      out += b.toString()
      if (out.includes('erm3: serving on')) {
        clearTimeout(timer)
        resolve()
      }
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`node exited with ${code}:\n${out}`))
    })
  })
  child.removeAllListeners('exit')
  return { port, child, output: () => out }
}

export const killNode = (n: Erm3Node) => exited(n.child)
export const stopNode = (n: Erm3Node) => exited(n.child, 'SIGTERM')

/**
 * nginx's answer when the node it picked is unreachable (killed mid-request, or refusing): a
 * problem+json 503 with Retry-After, never its HTML 502. A metered call is never replayed on
 * another node (`proxy_next_upstream off`): the first node may already have charged it.
 */
export function nginxConfig(root: string, port: number, upstreams: number[]): string {
  const problem = JSON.stringify({
    type: 'about:blank#unavailable',
    title: 'Service unavailable',
    status: 503,
    detail: 'The API node that took this request became unreachable; retry (another node will answer)',
    code: 'UNAVAILABLE',
    retry_after_seconds: 1,
  })
  return `worker_processes 1;
daemon off;
pid ${join(root, 'nginx.pid')};
error_log ${join(root, 'nginx-error.log')} warn;
events { worker_connections 2048; }
http {
  access_log off;
  client_body_temp_path ${join(root, 'nginx-body')};
  proxy_temp_path ${join(root, 'nginx-proxy')};
  fastcgi_temp_path ${join(root, 'nginx-fastcgi')};
  uwsgi_temp_path ${join(root, 'nginx-uwsgi')};
  scgi_temp_path ${join(root, 'nginx-scgi')};
  upstream erm3 {
${upstreams.map((p) => `    server 127.0.0.1:${p} max_fails=1 fail_timeout=2s;`).join('\n')}
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://erm3;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_next_upstream off;
      proxy_connect_timeout 2s;
      proxy_read_timeout 30s;
      proxy_buffering off;
      error_page 502 504 = @unreachable;
    }
    location @unreachable {
      default_type application/problem+json;
      add_header Retry-After 1 always;
      return 503 '${problem}';
    }
  }
}
`
}

export interface Nginx {
  port: number
  stop(): Promise<void>
}

export async function startNginx(root: string, upstreams: number[]): Promise<Nginx> {
  const port = await freePort()
  const conf = join(root, 'nginx.conf')
  writeFileSync(conf, nginxConfig(root, port, upstreams))
  const bin = which('nginx') ?? '/usr/sbin/nginx'
  const child = spawn(bin, ['-c', conf, '-p', root, '-e', join(root, 'nginx-error.log')], { stdio: 'ignore' })
  await waitPort(port, child, 'nginx')
  // SIGTERM: a fast shutdown that closes open streams (a graceful SIGQUIT waits for them).
  return { port, stop: () => exited(child, 'SIGTERM') }
}

/** A fresh temp root for one cluster (readable by the postgres user when run as root). */
export function clusterRoot(): string {
  const root = mkdtempSync(join(tmpdir(), 'erm3-cluster-'))
  return root
}

/** The environment every node shares: backends and the secrets that must agree across nodes. */
export function sharedEnv(pgUrl: string, redisUrl: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(DATABASE_URL|REDIS_URL|ERM3_|STRIPE_|LLM_|PLAID_)/.test(k)) env[k] = v
  return {
    ...env,
    DATABASE_URL: pgUrl,
    REDIS_URL: redisUrl,
    ERM3_PEPPER: randomBytes(32).toString('base64url'),
    ERM3_SESSION_SECRET: randomBytes(32).toString('base64url'),
    ERM3_WEBHOOK_KEY: randomBytes(32).toString('base64'),
    TRUST_PROXY: 'loopback',
    LOG_LEVEL: 'warn',
  }
}

/** A node's own home: its sandbox store (a copy; `serve` would otherwise synthesise one). */
export function nodeHome(root: string, name: string, sandbox: string): string {
  const home = join(root, name)
  cpSync(sandbox, join(home, 'sandbox', 'store'), { recursive: true })
  return home
}

export function removeRoot(root: string): void {
  rmSync(root, { recursive: true, force: true })
}
