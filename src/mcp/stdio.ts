import type { Readable, Writable } from 'node:stream'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js'
import {
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
} from '@modelcontextprotocol/sdk/types.js'
import type { Transport } from '../contract/client.ts'
import { createMcpServer } from './server.ts'

/** After stdin ends, requests still running get this long to answer before the server closes. */
const DRAIN_MS = 30_000

/** The stdio transport, counting the requests it has received and not yet answered. */
class CountingStdio extends StdioServerTransport {
  readonly pending = new Set<RequestId>()
  onidle: (() => void) | null = null
  override async send(message: JSONRPCMessage) {
    await super.send(message)
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      if (message.id !== undefined) this.pending.delete(message.id)
      if (this.pending.size === 0) this.onidle?.()
    }
  }
}

export interface StdioOptions {
  /** The remote erm3 (HTTP): tool calls and resource reads are its REST operations. */
  transport: Transport
  /** The one key every call is made with (from the environment, never from argv). */
  key: string
  stdin?: Readable
  stdout?: Writable
  drainMs?: number
  /** What the remote's data is (synthetic or imported), stated in the instructions like the HTTP server's. */
  dataNotice?: () => string
}

/**
 * `erm3 mcp`: the MCP server on stdin/stdout for desktop clients, each tool call a REST call of a
 * remote erm3 with a fixed key — so auth, limits, prices and errors are the remote's, and a 429 or
 * 402 from it becomes a tool error like any other. stdout carries JSON-RPC only.
 *
 * Resolves once the client has gone: stdin ended (requests already received still get their
 * answers, so `printf … | erm3 mcp` works) or stdout broke.
 */
export async function serveStdio(opts: StdioOptions): Promise<void> {
  const stdin = opts.stdin ?? process.stdin
  const stdout = opts.stdout ?? process.stdout
  const server = createMcpServer({
    transport: opts.transport,
    bearerOf: () => opts.key,
    ...(opts.dataNotice ? { dataNotice: opts.dataNotice } : {}),
  })
  const stdio = new CountingStdio(stdin, stdout)
  // Protocol.connect keeps a handler set before it and calls it first: see every request arrive.
  stdio.onmessage = (m) => {
    if (isJSONRPCRequest(m)) stdio.pending.add(m.id)
  }
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve()
  })
  let closing = false
  const close = () => {
    if (closing) return
    closing = true
    void server.close().catch(() => undefined)
  }
  let ending = false
  const drainThenClose = () => {
    if (ending) return
    ending = true
    if (stdio.pending.size === 0) return close()
    stdio.onidle = close
    setTimeout(close, opts.drainMs ?? DRAIN_MS).unref()
  }
  stdin.once('end', drainThenClose)
  stdin.once('close', drainThenClose)
  // EPIPE and the like: nobody is reading any more.
  stdout.once('error', close)
  await server.connect(stdio)
  await closed
}
