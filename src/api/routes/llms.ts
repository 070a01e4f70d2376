import { createDiscovery } from '../../services/discovery/index.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** GET /llms.txt: static per configuration, like the /.well-known documents (well-known.ts). */
export function llmsRoutes({ ctx }: RouteDeps): RouteFile {
  const llmsTxt = createDiscovery(ctx).llmsTxt
  return routeFile(import.meta.url, {
    getLlmsTxt: async (_req, reply) =>
      reply
        .header('Cache-Control', 'public, max-age=3600')
        .header('Content-Type', 'text/plain; charset=utf-8')
        .send(llmsTxt),
  })
}
