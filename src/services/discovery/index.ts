import type { ServiceContext } from '../context.ts'
import { type AgentManifest, buildAgentManifest } from './agent-manifest.ts'
import { type AiPluginManifest, buildAiPlugin, buildMcpServerCard, type McpServerCard } from './cards.ts'
import { type AgenticDisclosure, buildDisclosure, liveDataSource } from './disclosure.ts'
import { discoveryLinks } from './links.ts'
import { buildLlmsTxt } from './llms-txt.ts'

/** The discovery documents of one node. */
export interface Discovery {
  agentManifest: AgentManifest
  mcpServerCard: McpServerCard
  aiPlugin: AiPluginManifest
  llmsTxt: string
  /** Built once too, but names the live store's data source as it is now (a rebuild may swap it). */
  disclosure(): AgenticDisclosure
}

/**
 * Builds every document once: they depend only on the contract and the configuration
 * (PUBLIC_URL, database, limiter and mail backends), which do not change while a node runs.
 */
export function createDiscovery(ctx: ServiceContext): Discovery {
  const links = discoveryLinks(ctx.config.publicUrl)
  const agentManifest = buildAgentManifest(ctx, links)
  const disclosure = buildDisclosure(ctx, links)
  return {
    agentManifest,
    mcpServerCard: buildMcpServerCard(links),
    aiPlugin: buildAiPlugin(links),
    llmsTxt: buildLlmsTxt(agentManifest, links),
    disclosure: () => ({
      ...disclosure,
      market_data: { ...disclosure.market_data, this_instance: liveDataSource(ctx) },
    }),
  }
}
