import { fileURLToPath } from 'node:url'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Transport } from '../../contract/client.ts'
import type { OperationId, RequestPart } from '../../contract/operations.ts'
import type { Capability } from '../../contract/pricing.ts'
import type { ServiceContext } from '../../services/context.ts'
import type { EdgeMetrics, PromMetrics } from '../prom.ts'

/**
 * The request of operation K as its handler sees it: `params`, `query` and `body` typed from the
 * operation's own schemas in src/contract/ops/, which the route validated the request against
 * before the handler runs (so no handler restates them).
 */
type RequestOf<K extends OperationId> = FastifyRequest<{
  Params: RequestPart<K, 'params'>
  Querystring: RequestPart<K, 'querystring'>
  Body: RequestPart<K, 'body'>
}>

/** A route adapter: parse, authorise (done by hooks), call one service, serialise. */
type Handler<K extends OperationId> = (req: RequestOf<K>, reply: FastifyReply) => Promise<unknown>

/** Handlers by operation id; each one's request is typed from that operation (a wrong id does not compile). */
export type RouteTable = { [K in OperationId]?: Handler<K> }

/** The handlers of one route file, with the file they live in (see README.md: the URL names it). */
export interface RouteFile {
  /** Absolute path of the module (from its `import.meta.url`). */
  file: string
  handlers: RouteTable
}

/** Tags a route file's handlers with the module that defines them: pass `import.meta.url`. */
export function routeFile(moduleUrl: string, handlers: RouteTable): RouteFile {
  return { file: fileURLToPath(moduleUrl), handlers }
}

/** Prices a metered operation (throws at start when the pricing table lacks it). */
type Priced = (opId: OperationId) => Capability

/** What the route files are built from: one shape for all, so src/api/app.ts builds them alike. */
export interface RouteDeps {
  ctx: ServiceContext
  priced: Priced
  prom: PromMetrics
  edgeMetrics: EdgeMetrics
  /** The in-process REST transport (chat tool calls). */
  internal: Transport
}

/** The history window a request asks for (`years`, `start`, `end`), as the services take it. */
export function spanOf(
  q: { years?: number | undefined; start?: string | undefined; end?: string | undefined },
  defaultYears = 1,
): { years: number; start: string | undefined; end: string | undefined } {
  return { years: q.years ?? defaultYears, start: q.start, end: q.end }
}
