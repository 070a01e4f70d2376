import { buildOpenApi } from '../../contract/openapi.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** GET /openapi.json: built once from the contract at start. */
export function openapiRoutes({ ctx }: RouteDeps): RouteFile {
  const openapi = JSON.stringify(buildOpenApi({ publicUrl: ctx.config.publicUrl }))
  return routeFile(import.meta.url, {
    getOpenApi: async (_req, reply) =>
      reply.header('Content-Type', 'application/json; charset=utf-8').send(openapi),
  })
}
