import type { FastifyReply } from 'fastify'
import { createDiscovery } from '../../services/discovery/index.ts'
import { authorizationServerMetadata, protectedResourceMetadata } from '../../services/oauth/metadata.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/** Static per configuration: any cache may keep them for an hour. */
const cacheable = (reply: FastifyReply) => reply.header('Cache-Control', 'public, max-age=3600')

/** /.well-known/*: the discovery documents (GET /llms.txt is in llms.ts) and the OAuth metadata. */
export function wellKnownRoutes({ ctx }: RouteDeps): RouteFile {
  const d = createDiscovery(ctx)
  return routeFile(import.meta.url, {
    getAgentManifest: async (_req, reply) => {
      cacheable(reply)
      return d.agentManifest
    },
    getMcpServerCard: async (_req, reply) => {
      cacheable(reply)
      return d.mcpServerCard
    },
    getAiPluginManifest: async (_req, reply) => {
      cacheable(reply)
      return d.aiPlugin
    },
    getAgenticDisclosure: async (_req, reply) => {
      cacheable(reply)
      return d.disclosure()
    },
    getOAuthAuthorizationServerMetadata: async (_req, reply) => {
      reply.header('Cache-Control', 'public, max-age=300')
      return authorizationServerMetadata(ctx)
    },
    getOAuthProtectedResourceMetadata: async (_req, reply) => {
      reply.header('Cache-Control', 'public, max-age=300')
      return protectedResourceMetadata(ctx)
    },
  })
}
