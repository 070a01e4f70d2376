import type { FastifyReply, FastifyRequest } from 'fastify'
import { OPERATIONS } from '../contract/operations.ts'
import { capabilityByOperation } from '../contract/pricing.ts'
import type { ServiceContext } from '../services/context.ts'
import { type addressRule, takeAddressToken } from '../services/limits.ts'
import { problem, sendProblem } from './problem.ts'

/**
 * GET operations whose HEAD twin is refused with 405 before authentication: the paid ones, whose
 * HEAD would compute and charge an answer only for its body to be dropped, and the MCP event
 * streams, whose HEAD would open a session. HEAD of every other GET (documents, /balance, /health)
 * is served as usual.
 */
const HEAD_REFUSED: ReadonlySet<string> = new Set(
  OPERATIONS.filter((o) => o.method === 'GET' && (o.streaming || capabilityByOperation(o.id))).map(
    (o) => o.id,
  ),
)

export const headRefused = (req: FastifyRequest): boolean =>
  req.method === 'HEAD' && HEAD_REFUSED.has(req.routeOptions.config.op?.id ?? '')

/** The 405 of a refused HEAD, naming the allowed methods; counted against the client address. */
export function headRefusal(ctx: ServiceContext, perAddress: ReturnType<typeof addressRule>) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const path = req.routeOptions.url ?? req.url
    const methods = OPERATIONS.filter((o) => o.path === path).map((o) => o.method)
    reply.header('Allow', [...new Set(methods)].join(', '))
    return sendProblem(reply, {
      problem: problem(
        ctx.config.publicUrl,
        req,
        'METHOD_NOT_ALLOWED',
        'HEAD is not served on a paid operation or an MCP stream (it would compute, and charge, an ' +
          'answer only to drop its body): use GET',
      ),
      retryAfterSeconds: null,
      rate: await takeAddressToken(ctx, perAddress, req.ip),
      internal: false,
    })
  }
}
