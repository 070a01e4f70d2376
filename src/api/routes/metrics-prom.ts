import { createHash, timingSafeEqual } from 'node:crypto'
import { AppError } from '../../platform/errors.ts'
import { bearerOf } from '../auth-hook.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

function sameSecret(a: string, b: string): boolean {
  const x = createHash('sha256').update(a).digest()
  const y = createHash('sha256').update(b).digest()
  return timingSafeEqual(x, y)
}

/** GET /metrics-prom: the Prometheus exposition of ../prom.ts. */
export function metricsPromRoutes({ ctx, prom }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    getPrometheusMetrics: async (req, reply) => {
      // Operator data (traffic per operation, refusals, process figures): off unless the operator
      // set a token, then only for its bearer.
      const token = ctx.config.metricsToken
      if (token === null)
        throw new AppError('NOT_FOUND', 'No such endpoint: the operator has not enabled Prometheus metrics')
      if (!sameSecret(bearerOf(req) ?? '', token))
        throw new AppError('MISSING_CREDENTIALS', 'Send Authorization: Bearer <METRICS_TOKEN>')
      return reply.header('Content-Type', prom.registry.contentType).send(await prom.registry.metrics())
    },
  })
}
