import type { FastifyReply, FastifyRequest } from 'fastify'

/** A route adapter: parse, authorise (done by hooks), call one service, serialise. */
type Handler = (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>
export type RouteTable = Record<string, Handler>
