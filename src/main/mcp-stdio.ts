import { fetchTransport } from '../contract/client.ts'
import { serveStdio } from '../mcp/stdio.ts'

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
  await serveStdio({ transport: fetchTransport(opts.baseUrl), key: opts.key })
  opts.say('erm3 mcp: client gone, exiting')
}
