/**
 * One webhook POST: the target is resolved and checked once (target.ts), and the connection goes
 * only to the checked addresses, with the name kept for the Host header and TLS (SNI and the
 * certificate check). node:http never follows a redirect, so a 3xx is an answer like any other.
 * The answer's body is not read: a receiver that streams forever cannot hold the dispatcher.
 *
 * Failures are reported in a few fixed phrases. Every failure before a connection is the same
 * "could not connect" — a missing name, a refused port, an unreachable host and a silent one
 * alike — so the delivery log cannot serve to tell open ports from closed or filtered ones.
 */
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import {
  COULD_NOT_CONNECT,
  DeliveryFailed,
  type PinnedTarget,
  pinTarget,
  type ResolveHost,
  type TargetPolicy,
} from './target.ts'

export interface PostOptions {
  policy: TargetPolicy
  resolve: ResolveHost
  /** The whole attempt: resolution, connection and the answer's status line. */
  timeoutMs: number
}

/** Rejects with `COULD_NOT_CONNECT` when `p` has not settled within `ms` (the lookup is not cancellable). */
function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeliveryFailed(COULD_NOT_CONNECT)), ms)
  })
  return Promise.race([p, late]).finally(() => clearTimeout(timer))
}

/** POSTs `body` to `url`; resolves with the answer's status code, or rejects with DeliveryFailed. */
export async function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  o: PostOptions,
): Promise<number> {
  const u = new URL(url)
  const t0 = performance.now()
  const target = await within(pinTarget(u, o.policy, o.resolve), o.timeoutMs)
  const left = Math.max(1, o.timeoutMs - (performance.now() - t0))
  return send(u, target, { headers, body }, left, o.timeoutMs)
}

/** The TLS alert and certificate codes are worth showing; anything else stays a fixed phrase. */
const tlsReason = (e: NodeJS.ErrnoException) =>
  typeof e.code === 'string' && /^[A-Z0-9_]{1,64}$/.test(e.code) ? ` (${e.code})` : ''

/** `leftMs` of the attempt's `timeoutMs` remain after the lookup. */
function send(
  u: URL,
  target: PinnedTarget,
  { headers, body }: { headers: Record<string, string>; body: string },
  leftMs: number,
  timeoutMs: number,
): Promise<number> {
  return new Promise((resolve, reject) => {
    let connected = false
    let secured = u.protocol !== 'https:'
    let settled = false
    const settle = (f: () => void) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      f()
    }
    const fail = (e: NodeJS.ErrnoException | null) => {
      const why = !connected
        ? COULD_NOT_CONNECT
        : !secured
          ? `TLS handshake failed${e ? tlsReason(e) : ''}`
          : e
            ? 'connection closed before an answer'
            : `timed out after ${timeoutMs} ms`
      settle(() => reject(new DeliveryFailed(why)))
      req.destroy()
    }
    const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(u, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      lookup: target.lookup,
      // A socket of its own: never one pooled under the name by an earlier, other resolution.
      agent: false,
    })
    const timer = setTimeout(() => fail(null), leftMs)
    req.once('socket', (s) => {
      s.once('connect', () => {
        connected = true
      })
      s.once('secureConnect', () => {
        secured = true
      })
    })
    req.once('response', (res) => {
      settle(() => resolve(res.statusCode ?? 0))
      res.destroy()
      req.destroy()
    })
    req.on('error', (e) => fail(e))
    req.end(body)
  })
}
