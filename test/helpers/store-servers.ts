/**
 * Loopback servers for the shared-model-store tests: a static file server (what nginx or a CDN
 * is to a published store: GET with a single Range, or a server that ignores Range), an S3
 * server (s3rver) and a logging proxy in front of it, so tests can count the requests and byte
 * ranges a node really makes.
 */
import { createReadStream } from 'node:fs'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3'
// @ts-expect-error s3rver ships no types; the two calls used here are typed below
import S3rverModule from 's3rver'

interface S3rverInstance {
  run(): Promise<AddressInfo>
  close(): Promise<void>
}
const S3rver = S3rverModule as new (opts: Record<string, unknown>) => S3rverInstance

export interface Logged {
  method: string
  path: string
  range: string | null
  status: number
  /** Request body bytes received (what a client sent: a PUT's upload); counted by the proxy. */
  bytes: number
}

export interface LoopbackServer {
  url: string
  log: Logged[]
  close(): Promise<void>
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  )
}

function shut(server: Server): Promise<void> {
  server.closeAllConnections()
  return new Promise((resolve) => server.close(() => resolve()))
}

/**
 * Serves `dir` read-only. `ignoreRange`: answer 200 with the whole file to ranged requests (some
 * servers do). `hold(path)`: a promise a response waits for (requests in flight across a swap).
 */
export async function staticServer(
  dir: string,
  opts: { ignoreRange?: boolean; hold?: (path: string) => Promise<void> | null } = {},
): Promise<LoopbackServer> {
  const log: Logged[] = []
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)
    const range = req.headers.range ?? null
    const entry: Logged = { method: req.method ?? 'GET', path, range, status: 0, bytes: 0 }
    log.push(entry)
    const send = (status: number, headers: Record<string, string | number> = {}) => {
      entry.status = status
      res.writeHead(status, headers)
    }
    await opts.hold?.(path)
    if (path.includes('..')) {
      send(400)
      return res.end()
    }
    const file = join(dir, path)
    let size: number
    try {
      const s = await stat(file)
      if (!s.isFile()) throw new Error('not a file')
      size = s.size
    } catch {
      send(404)
      return res.end()
    }
    const m = range && !opts.ignoreRange ? /^bytes=(\d+)-(\d+)$/.exec(range) : null
    if (m) {
      const start = Number(m[1])
      const end = Math.min(Number(m[2]), size - 1)
      if (start >= size) {
        send(416, { 'content-range': `bytes */${size}` })
        return res.end()
      }
      send(206, { 'content-range': `bytes ${start}-${end}/${size}`, 'content-length': end - start + 1 })
      createReadStream(file, { start, end }).pipe(res)
      return
    }
    send(200, { 'content-length': size })
    createReadStream(file).pipe(res)
  })
  const url = await listen(server)
  return { url, log, close: () => shut(server) }
}

/**
 * A pass-through proxy to `target` that logs each request (and can fail them all: `down`). The
 * Host header is forwarded unchanged, so S3 signatures made for the proxy's address verify.
 */
export async function loggingProxy(target: string): Promise<LoopbackServer & { down: boolean }> {
  const log: Logged[] = []
  const t = new URL(target)
  const state = { down: false }
  const server = createServer((req, res) => {
    const entry: Logged = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      range: req.headers.range ?? null,
      status: 0,
      bytes: 0,
    }
    log.push(entry)
    req.on('data', (chunk: Buffer) => {
      entry.bytes += chunk.length
    })
    if (state.down) {
      // A store that is down: the connection is dropped without an answer.
      req.socket.destroy()
      return
    }
    const up = request(
      { host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers },
      (r) => {
        entry.status = r.statusCode ?? 0
        res.writeHead(r.statusCode ?? 502, r.headers)
        r.pipe(res)
      },
    )
    up.on('error', () => res.destroy())
    req.pipe(up)
  })
  const url = await listen(server)
  return {
    url,
    log,
    get down() {
      return state.down
    },
    set down(v: boolean) {
      state.down = v
    },
    close: () => shut(server),
  }
}

export interface S3Server {
  endpoint: string
  bucket: string
  client: S3Client
  close(): Promise<void>
}

/** s3rver on loopback with one bucket; credentials S3RVER/S3RVER, path-style addressing. */
export async function s3Server(bucket = 'erm3-models'): Promise<S3Server> {
  const directory = await mkdtemp(join(tmpdir(), 'erm3-s3rver-'))
  const srv = new S3rver({ port: 0, address: '127.0.0.1', directory, silent: true })
  const { port } = await srv.run()
  const endpoint = `http://127.0.0.1:${port}`
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  })
  await client.send(new CreateBucketCommand({ Bucket: bucket }))
  return {
    endpoint,
    bucket,
    client,
    async close() {
      client.destroy()
      await srv.close()
      await rm(directory, { recursive: true, force: true })
    },
  }
}
