import type { FastifyReply } from 'fastify'
import type { ServiceContext } from '../../services/context.ts'
import { createDiscovery } from '../../services/discovery/index.ts'
import type { RouteTable } from './types.ts'

/** Static per configuration: any cache may keep them for an hour. */
const cacheable = (reply: FastifyReply) => reply.header('Cache-Control', 'public, max-age=3600')

export function discoveryRoutes(ctx: ServiceContext): RouteTable {
  const d = createDiscovery(ctx)
  return {
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
    getLlmsTxt: async (_req, reply) =>
      cacheable(reply).header('Content-Type', 'text/plain; charset=utf-8').send(d.llmsTxt),
  }
}
