import { type App, createApp } from '../api/app.ts'
import { createMcpHandlers } from '../mcp/http.ts'
import type { ServiceContext } from '../services/context.ts'
import { datasetOf, describeDataset } from '../services/models.ts'

/** The whole HTTP surface of a node: REST (api/) with the MCP transports (mcp/) mounted on it. */
export async function createServerApp(
  ctx: ServiceContext,
  opts: { drainMs?: number } = {},
): Promise<App & { mcpSessions: () => number }> {
  let mcp: ReturnType<typeof createMcpHandlers> | null = null
  const app = await createApp(ctx, {
    ...opts,
    extraHandlers: (internal) => {
      const live = () => ctx.models.peek('live')
      mcp = createMcpHandlers(ctx, internal, () => {
        const store = live()
        return describeDataset(store ? datasetOf(store) : null)
      })
      return { file: mcp.file, handlers: mcp.handlers }
    },
  })
  return {
    ...app,
    mcpSessions: () => mcp?.sessionCount() ?? 0,
    async close() {
      mcp?.close()
      await app.close()
    },
  }
}
