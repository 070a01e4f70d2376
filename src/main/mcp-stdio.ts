import type { Transport } from '../contract/client.ts'
import { fetchTransport } from '../contract/client.ts'
import { serveStdio } from '../mcp/stdio.ts'
import { describeDataset } from '../services/models.ts'

/** What a failed fetch's cause says, in words (undici reports every network failure as "fetch failed"). */
function networkReason(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause
  const code = cause?.code ?? (err as { code?: string }).code
  const words: Record<string, string> = {
    ECONNREFUSED: 'connection refused',
    ENOTFOUND: 'host not found',
    EAI_AGAIN: 'host name lookup failed',
    ECONNRESET: 'connection reset',
    ETIMEDOUT: 'timed out',
    UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
    EHOSTUNREACH: 'host unreachable',
    CERT_HAS_EXPIRED: 'its TLS certificate has expired',
  }
  return (code && words[code]) ?? cause?.message ?? (err instanceof Error ? err.message : String(err))
}

/**
 * The remote erm3 over HTTP, where a network failure is answered as a 503 UNAVAILABLE problem
 * that says what happened and what to do — so a tool call fails with that text, not "fetch failed".
 */
function reachableTransport(baseUrl: string, inner: Transport = fetchTransport(baseUrl)): Transport {
  return async (req) => {
    try {
      return await inner(req)
    } catch (err) {
      const detail = `cannot reach erm3 at ${baseUrl}: ${networkReason(err)}; is the server running? set ERM3_URL (or --url) to where it listens`
      return {
        status: 503,
        headers: { 'content-type': 'application/problem+json' },
        body: JSON.stringify({ code: 'UNAVAILABLE', status: 503, title: 'Service unavailable', detail }),
      }
    }
  }
}

/** What the remote's data is (its /health), for the instructions: as the HTTP server says it. */
async function remoteDataNotice(transport: Transport, baseUrl: string): Promise<string> {
  const unknown = `Whether the data of ${baseUrl} is synthetic could not be learned at start; every data answer says so in _metadata.dataset.`
  const res = await transport({ method: 'GET', url: '/health', headers: { accept: 'application/json' } })
  if (res.status >= 500 && !res.body.includes('"model"')) return unknown
  try {
    const health = JSON.parse(res.body) as { model?: { dataset?: Parameters<typeof describeDataset>[0] } }
    return health.model ? describeDataset(health.model.dataset ?? null) : unknown
  } catch {
    return unknown
  }
}

/**
 * `erm3 mcp`: the stdio MCP server wired to a remote erm3 over HTTP. The key and URL arrive
 * validated (cli/commands/mcp.ts); `say` goes to stderr, since stdout is the JSON-RPC channel.
 */
export async function runStdioMcp(opts: {
  baseUrl: string
  key: string
  say: (line: string) => void
}): Promise<void> {
  opts.say(`erm3 mcp: MCP on stdio for ${opts.baseUrl}`)
  const transport = reachableTransport(opts.baseUrl)
  const notice = await remoteDataNotice(transport, opts.baseUrl)
  if (notice.startsWith('Whether')) opts.say(`erm3 mcp: warning: cannot reach ${opts.baseUrl} yet`)
  await serveStdio({ transport, key: opts.key, dataNotice: () => notice })
  opts.say('erm3 mcp: client gone, exiting')
}
