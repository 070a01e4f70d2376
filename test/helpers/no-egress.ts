import { isIP, type LookupFunction, Socket } from 'node:net'

export interface ConnectAttempt {
  host: string
  port: number
  /** What the socket would connect to: the literal, or what its own `lookup` option answers. */
  addresses: string[]
  /** Passed through (every address loopback) or failed before any packet left. */
  passed: boolean
}

const loopback = (a: string) => /^127\./.test(a) || a === '::1' || /^::ffff:127\./i.test(a)

/** A socket's own lookup (the one http.request passes down), asked for every address. */
function addressesOf(host: string, lookup: LookupFunction | undefined): Promise<string[]> {
  if (!lookup) return Promise.resolve([])
  return new Promise((resolve) =>
    lookup(host, { all: true }, (err, all) =>
      resolve(err ? [] : Array.isArray(all) ? all.map((a) => a.address) : [String(all)]),
    ),
  )
}

/**
 * Guards a test against reaching anything beyond loopback, and records every TCP connection the
 * process starts (net.Socket.prototype.connect, which node:http, node:https, fetch, pg and ioredis
 * all go through). A connection goes through only when every address it would use is loopback —
 * a literal, or what the socket's own `lookup` option answers; any other is failed before a name
 * is resolved or a packet sent. So even a broken target check cannot send traffic out, and a test
 * can show that no connection was attempted at all. `restore()` puts the original back.
 */
export function guardEgress(): { attempts: ConnectAttempt[]; restore(): void } {
  const attempts: ConnectAttempt[] = []
  const original = Socket.prototype.connect
  // biome-ignore lint/suspicious/noExplicitAny: connect's overloads are forwarded untouched
  Socket.prototype.connect = function (this: Socket, ...args: any[]) {
    const first = Array.isArray(args[0]) ? args[0][0] : args[0]
    const o = (typeof first === 'object' && first !== null ? first : { port: first, host: args[1] }) as {
      host?: string
      port?: number | string
      path?: string
      lookup?: LookupFunction
    }
    if (o.path) return original.apply(this, args as Parameters<typeof original>)
    const host = (o.host ?? 'localhost').replace(/^\[|\]$/g, '')
    const attempt: ConnectAttempt = { host, port: Number(o.port), addresses: [], passed: false }
    attempts.push(attempt)
    const decide = (addresses: string[]) => {
      attempt.addresses = addresses
      attempt.passed = addresses.length > 0 && addresses.every(loopback)
      if (attempt.passed) return original.apply(this, args as Parameters<typeof original>)
      const err = Object.assign(new Error(`test egress guard: ${host}:${o.port} is not loopback`), {
        code: 'ETESTEGRESS',
      })
      process.nextTick(() => this.destroy(err))
      return this
    }
    // A literal (the database, Redis, a receiver) is decided at once, as connect would go on.
    if (isIP(host))
      return decide([host])
      // Writes made while the socket's lookup answers wait, as they do while a socket connects.
    ;(this as { connecting: boolean }).connecting = true
    void addressesOf(host, o.lookup).then(decide)
    return this
  }
  return {
    attempts,
    restore() {
      Socket.prototype.connect = original
    },
  }
}
