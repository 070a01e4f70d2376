import { prepareChat, runChat } from '../../services/chat/index.ts'
import { bearerOf } from '../auth-hook.ts'
import { mapError } from '../problem.ts'
import { requirePrincipal } from '../request-state.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/**
 * POST /chat: JSON, or Server-Sent Events (`stream: true` or Accept: text/event-stream). Every
 * refusal (configuration, size, limits, balance) is decided before the stream opens, so it is an
 * ordinary problem response; after that, failures are an `error` event. Tool calls go through
 * `internal` (the in-process REST transport) with the caller's own credential.
 */
export function chatRoutes({ ctx, internal, priced }: RouteDeps): RouteFile {
  return routeFile(import.meta.url, {
    chat: async (req, reply) => {
      const body = req.body
      const stream = body.stream === true || /text\/event-stream/i.test(String(req.headers.accept ?? ''))
      const chat = await prepareChat(
        ctx,
        {
          principal: requirePrincipal(req.principal),
          bearer: bearerOf(req),
          requestId: String(req.id),
          startedAt: req.startedAt,
          transport: internal,
          capability: priced('chat'),
        },
        body,
        stream,
      )
      if (!stream) {
        const r = await runChat(ctx, chat)
        reply.header('X-API-Cost-USD', String(r._agent.cost_usd))
        return r
      }
      reply.hijack()
      const raw = reply.raw
      let gone = false
      raw.on('close', () => {
        if (!raw.writableFinished) gone = true
      })
      // The headers the hooks set (request id, rate limits, environment) go out with the stream.
      const headers: Record<string, string> = {}
      for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) headers[k] = String(v)
      raw.writeHead(200, {
        ...headers,
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      })
      const send = (event: string, data: unknown) => {
        if (!gone && !raw.destroyed) raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
      }
      try {
        const r = await runChat(ctx, chat, {
          onToolCall: (s) => send('tool_call', s),
          onDelta: (content) => send('delta', { content }),
          aborted: () => gone,
        })
        send('done', r)
      } catch (err) {
        const mapped = mapError(ctx.config.publicUrl, req, err)
        if (mapped.internal) ctx.log.error({ err, request_id: req.id }, 'chat stream failed')
        send('error', mapped.problem)
      }
      if (!raw.destroyed) raw.end()
    },
  })
}
