/**
 * The HTTP application: every operation of the contract (src/contract/operations.ts), each with
 * the handler its route file defines, and nothing else.
 *
 * Where a handler lives: the first segment of its URL path names the file. `GET /industry-panel`
 * is in routes/industry-panel.ts, `PATCH /account/keys/:id` in routes/account.ts, and a leading
 * dot or a file extension is dropped (`/.well-known/…` → well-known.ts, `/openapi.json` →
 * openapi.ts, `/llms.txt` → llms.ts); `/` is routes/root.ts. The one exception is `/mcp…`, the
 * MCP transports: src/mcp/http.ts (api/ may not import mcp/; src/main mounts them through
 * `extraHandlers`). routes/README.md lists every file; test/api/route-files.test.ts holds every
 * operation to the rule.
 */
import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import cookie from '@fastify/cookie'
import formbody from '@fastify/formbody'
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify'
import type { Transport } from '../contract/client.ts'
import { API_VERSION } from '../contract/openapi.ts'
import { bodyMayBeOmitted, type Operation, openApiPath, querystringOf } from '../contract/operation.ts'
import { OPERATIONS } from '../contract/operations.ts'
import { type Capability, capabilityByOperation } from '../contract/pricing.ts'
import { type TickerNormaliser, tickerNormaliser } from '../contract/request-identity.ts'
import { trustedProxyTest } from '../platform/client-address.ts'
import { sharedRepresentations } from '../services/billing/shared-representations.ts'
import { flushUsage } from '../services/billing/usage.ts'
import type { ServiceContext } from '../services/context.ts'
import { KeyUsage } from '../services/identity/keys.ts'
import { addressRule, takeAddressToken } from '../services/limits.ts'
import { createAuthHook, createToolCallHook, INTERNAL_HEADER } from './auth-hook.ts'
import { clientErrorHandler, createEdgeServer } from './edge.ts'
import { headRefusal, headRefused } from './head.ts'
import { lazyChildLoggerFactory } from './lazy-logger.ts'
import { sendOAuthError } from './oauth-error.ts'
import { mapError, problem, sendProblem } from './problem.ts'
import { createEdgeMetrics, createPromMetrics } from './prom.ts'
import { correlationIdOf, idHeaders, requestIdGenerator } from './request-id.ts'
import './request-state.ts'
import { routeFiles } from './routes/index.ts'
import type { RouteFile } from './routes/types.ts'
import { anonymous, createValidatorCompiler } from './validation.ts'

export interface App {
  fastify: FastifyInstance
  /** Every route the server registered, as `METHOD /path` (HEAD twins of GET routes included). */
  routes: string[]
  /** In-process transport for calls made on behalf of MCP tools (no second rate token). */
  internal: Transport
  /** The module that defines each operation's handler, by operation id (absolute path). */
  handlerFiles: ReadonlyMap<string, string>
  /** Flushes batched writes (key last-used) and closes the HTTP server. */
  close(): Promise<void>
}

function priced(opId: string): Capability {
  const c = capabilityByOperation(opId)
  if (!c) throw new Error(`operation ${opId} is metered but has no price in the pricing table`)
  return c
}

/** Builds the Fastify application: every operation of the contract, and nothing else. */
export interface AppOptions {
  bodyLimit?: number
  /**
   * How long a stopping node waits for in-flight requests before it ends the connections still
   * open (default 10 s): a stream whose client vanished can leave its connection half-open until
   * Node's own timeout, about a minute.
   */
  drainMs?: number
  /**
   * Handlers of operations served by other adapters (the MCP transports), given the in-process
   * transport through which an MCP tool call becomes the REST call it stands for.
   */
  extraHandlers?: (internal: Transport) => RouteFile
}

/** Any operation's handler, its request no longer typed by operation (as Fastify registers it). */
type AnyHandler = (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>

/**
 * Builds the app in steps: the Fastify instance behind the edge server -> the request hooks
 * (ids, HEAD refusal, auth, the access line) and the error answers -> the contract's
 * operations (API, docs and static pages alike) -> ready.
 */
export async function createApp(ctx: ServiceContext, opts: AppOptions = {}): Promise<App> {
  const deps = appDeps(ctx)
  const fastify = createFastify(deps, opts)
  const routes: string[] = []
  fastify.addHook('onRoute', (r) => {
    for (const m of [r.method].flat()) routes.push(`${m} ${r.url}`)
  })
  await installPlugins(fastify)
  installRequestHooks(fastify, deps)
  installErrorHandlers(fastify, ctx)
  const internal = internalTransport(fastify, deps.internalSecret)
  const handlerFiles = registerOperations(fastify, deps, internal, opts)
  await fastify.ready()
  return {
    fastify,
    routes,
    internal,
    handlerFiles,
    async close() {
      await deps.usage.flush()
      await flushUsage(ctx)
      const force = setTimeout(() => fastify.server.closeAllConnections(), opts.drainMs ?? 10_000)
      force.unref()
      try {
        await fastify.close()
      } finally {
        clearTimeout(force)
      }
    },
  }
}

type AppDeps = ReturnType<typeof appDeps>

/** What the hooks, the edge and the routes share: metrics, key usage, the request-id scheme. */
function appDeps(ctx: ServiceContext) {
  const perAddress = addressRule(ctx.config)
  const prom = createPromMetrics({ shared: () => sharedRepresentations(ctx) })
  const edgeMetrics = createEdgeMetrics(prom.registry)
  const trusted = trustedProxyTest(ctx.config.trustProxy)
  const usage = new KeyUsage(ctx)
  // The access line goes through the root logger (it names the request id itself), so a request
  // that logs nothing else never builds its child logger; the level is fixed at start.
  const accessLog = ctx.log.isLevelEnabled('info')
  // Marks this process's calls to itself (MCP tools, chat tool calls); never leaves the process.
  const internalSecret = randomBytes(24).toString('base64url')
  const requestId = requestIdGenerator(internalSecret)
  return { ctx, perAddress, prom, edgeMetrics, trusted, usage, accessLog, internalSecret, requestId }
}

/** The Fastify instance: its server is the edge (edge.ts), its validator the contract's. */
function createFastify(deps: AppDeps, opts: AppOptions): FastifyInstance {
  const { ctx, perAddress, edgeMetrics, trusted, requestId } = deps
  const fastify = Fastify({
    loggerInstance: ctx.log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyChildLoggerFactory,
    bodyLimit: opts.bodyLimit ?? 1024 * 1024,
    // The client is the right-most X-Forwarded-For entry that is not a trusted proxy (TRUST_PROXY).
    trustProxy: ctx.config.trustProxy.length > 0 ? (address) => trusted(address) : false,
    requestIdHeader: false,
    genReqId: requestId,
    // Deadlines, connection cap, HSTS (edge.ts).
    serverFactory: (handler) => createEdgeServer(ctx, handler, { metrics: edgeMetrics, trusted }),
    clientErrorHandler: clientErrorHandler(ctx),
    ajv: {
      customOptions: { coerceTypes: 'array', removeAdditional: false, allErrors: true, useDefaults: true },
    },
    routerOptions: { ignoreTrailingSlash: true },
    // A path the router cannot even parse (bad percent-encoding, an over-long parameter) is the
    // client's error: answer it from the error table like every other 400, not Fastify's own JSON.
    frameworkErrors: (err, req, reply) => {
      idHeaders(req, reply)
      reply.header('X-API-Version', API_VERSION)
      const detail =
        err.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? 'A path parameter is too long'
          : 'The path is not a valid URL (bad percent-encoding?)'
      // No hook runs for such a request: it takes its address's rate token here.
      takeAddressToken(ctx, perAddress, req.ip).then(
        (rate) =>
          sendProblem(reply, {
            problem: problem(ctx.config.publicUrl, req, 'INVALID_REQUEST', detail),
            retryAfterSeconds: null,
            rate,
            internal: false,
          }),
        (e: unknown) => sendProblem(reply, mapError(ctx.config.publicUrl, req, e)),
      )
    },
  })
  // No operation takes a body on DELETE (or OPTIONS): declare them body-less so Fastify never
  // parses one. A client that sends `Content-Type: application/json` with nothing after it (the
  // Python MCP SDK ending a session) is then not refused for describing an absent body, on any
  // route, 404s included; Fastify refuses a DELETE route declaring a body schema at start.
  for (const method of ['DELETE', 'OPTIONS'])
    fastify.addHttpMethod(method, { hasBody: false, overrideExisting: true })
  fastify.setValidatorCompiler(createValidatorCompiler())
  return fastify
}

/** Cookies and form bodies, and the per-request fields the hooks fill in (request-state.ts). */
async function installPlugins(fastify: FastifyInstance): Promise<void> {
  // Cookies are parsed where a route needs one (cookieOf), not on every request.
  await fastify.register(cookie, { hook: false })
  await fastify.register(formbody)
  fastify.decorateRequest('principal', null)
  fastify.decorateRequest('session', null)
  fastify.decorateRequest('rateLimited', null)
  fastify.decorateRequest('slot', null)
  fastify.decorateRequest('startedAt', 0)
  fastify.decorateRequest('rawBody', null)
}

/**
 * On the way in: ids and the version header, then HEAD refusal or authentication (which also
 * takes the rate token). On the way out: the latency metric and one access line per request.
 */
function installRequestHooks(fastify: FastifyInstance, deps: AppDeps): void {
  const { ctx, perAddress, prom, usage, accessLog, internalSecret } = deps
  const auth = createAuthHook(ctx, usage, internalSecret)
  fastify.addHook('preHandler', createToolCallHook(ctx, internalSecret))
  const refuseHead = headRefusal(ctx, perAddress)
  fastify.addHook('onRequest', (req, reply) => {
    req.startedAt = performance.now()
    idHeaders(req, reply)
    reply.header('X-API-Version', API_VERSION)
    if (headRefused(req)) return refuseHead(req, reply)
    return auth(req, reply)
  })
  fastify.addHook('onResponse', (req, reply, done) => {
    const op = req.routeOptions.config.op
    const ms = performance.now() - req.startedAt
    prom.observe(op?.id ?? 'unmatched', reply.statusCode, ms / 1000)
    // One line per request: operation id, never the URL (a sign-in link carries its token in the query).
    if (accessLog)
      ctx.log.info(
        {
          request_id: req.id,
          correlation_id: correlationIdOf(req.raw) ?? undefined,
          op: op?.id ?? null,
          method: req.method,
          status: reply.statusCode,
          ms: Math.round(ms * 10) / 10,
          key_id: req.principal?.keyId,
        },
        'request',
      )
    done()
  })
}

/**
 * The in-process transport: an MCP tool or chat tool call becomes the REST call it stands for,
 * marked internal by the per-process secret (no second rate token).
 */
function internalTransport(fastify: FastifyInstance, internalSecret: string): Transport {
  return async (r) => {
    const res = await fastify.inject({
      method: r.method as 'GET',
      url: r.url,
      headers: { ...r.headers, [INTERNAL_HEADER]: internalSecret },
      ...(r.body !== undefined ? { payload: r.body } : {}),
    })
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = String(v)
    return { status: res.statusCode, headers, body: res.body }
  }
}

/** Every error, and every unknown path or method, is answered from the error table (problem.ts). */
function installErrorHandlers(fastify: FastifyInstance, ctx: ServiceContext): void {
  fastify.setErrorHandler(async (err, req, reply) => {
    // The client went away (or was cut off at its deadline) before its request was complete: its
    // doing, not the server's, and nobody is left to read an answer (the access line records it).
    if (req.raw.readableAborted) {
      ctx.log.info({ request_id: req.id, code: (err as { code?: unknown }).code }, 'client left mid-request')
      return sendProblem(reply, {
        problem: problem(
          ctx.config.publicUrl,
          req,
          'INVALID_REQUEST',
          'The connection closed before the request was complete',
        ),
        retryAfterSeconds: null,
        rate: null,
        internal: false,
      })
    }
    const mapped = mapError(ctx.config.publicUrl, req, err)
    if (mapped.internal) ctx.log.error({ err, request_id: req.id }, 'unhandled error')
    if (req.routeOptions.config.op?.errorStyle === 'oauth') return sendOAuthError(req, reply, mapped)
    return sendProblem(reply, mapped)
  })
  fastify.setNotFoundHandler(async (req, reply) => {
    const path = req.url.split('?')[0] ?? '/'
    const allowed = OPERATIONS.filter(
      (o) => o.method !== req.method && fastify.hasRoute({ url: path, method: o.method }),
    )
    if (allowed.length) {
      reply.header('Allow', [...new Set(allowed.map((o) => o.method))].join(', '))
      return sendProblem(reply, {
        problem: problem(
          ctx.config.publicUrl,
          req,
          'METHOD_NOT_ALLOWED',
          `${req.method} is not allowed on ${path}`,
        ),
        retryAfterSeconds: null,
        rate: null,
        internal: false,
      })
    }
    const missing = missingPathParams(req.method, path)
    if (missing) {
      const detail = `Missing path parameter ${missing.names.join(', ')} (${missing.op.method} ${openApiPath(missing.op.path)})`
      return sendProblem(reply, {
        problem: problem(ctx.config.publicUrl, req, 'INVALID_REQUEST', detail, {
          errors: missing.names.map((n) => ({ field: `params.${n}`, message: 'missing' })),
        }),
        retryAfterSeconds: null,
        rate: null,
        internal: false,
      })
    }
    return sendProblem(reply, {
      problem: problem(ctx.config.publicUrl, req, 'NOT_FOUND', `No such endpoint: ${req.method} ${path}`),
      retryAfterSeconds: null,
      rate: null,
      internal: false,
    })
  })
}

/** Each operation's path as a pattern whose parameters may be empty, with the parameter names. */
const PATH_PATTERNS = OPERATIONS.filter((o) => o.path.includes(':')).map((op) => ({
  op,
  names: [...op.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1] as string),
  re: new RegExp(`^${op.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_]+/g, '([^/]*)')}/?$`),
}))

/**
 * An unmatched path that is an operation's path with a parameter left empty (`/metrics/`,
 * `/metrics//correlation`): the operation and the names missing, so the 400 can say which.
 */
function missingPathParams(method: string, path: string): { op: Operation; names: string[] } | null {
  for (const p of PATH_PATTERNS) {
    if (p.op.method !== method && !(method === 'HEAD' && p.op.method === 'GET')) continue
    const m = p.re.exec(path)
    if (!m) continue
    const names = p.names.filter((_, i) => m[i + 1] === '')
    if (names.length) return { op: p.op, names }
  }
  return null
}

/**
 * Registers every operation of the contract with the handler its route file defines; an operation
 * without one, or with one in two files, stops the start. Returns the file of each operation.
 */
function registerOperations(
  fastify: FastifyInstance,
  deps: AppDeps,
  internal: Transport,
  opts: AppOptions,
): ReadonlyMap<string, string> {
  const { ctx, prom, edgeMetrics } = deps
  const handlers = new Map<string, AnyHandler>()
  const handlerFiles = new Map<string, string>()
  const files = routeFiles({ ctx, priced, prom, edgeMetrics, internal })
  if (opts.extraHandlers) files.push(opts.extraHandlers(internal))
  for (const { file, handlers: table } of files)
    for (const [id, handler] of Object.entries(table)) {
      const other = handlerFiles.get(id)
      if (other) throw new Error(`operation ${id} has a handler in both ${other} and ${file}`)
      // Typed from operation `id` itself; the route validates the request against the same schemas.
      handlers.set(id, handler as AnyHandler)
      handlerFiles.set(id, file)
    }
  for (const op of OPERATIONS) register(fastify, op, handlers)
  return handlerFiles
}

function register(fastify: FastifyInstance, op: Operation, handlers: ReadonlyMap<string, AnyHandler>): void {
  const handler = handlers.get(op.id)
  if (!handler) throw new Error(`operation ${op.id} has no handler`)
  const json = !op.contentType && op.id !== 'getOpenApi'
  const tickers = tickerNormaliser(op)
  const preValidation = [
    ...(bodyMayBeOmitted(op.body) ? [noBodyIsEmptyObject] : []),
    ...(tickers ? [normaliseTickers(tickers)] : []),
  ]
  fastify.route({
    method: op.method,
    url: op.path,
    config: { op },
    schema: {
      ...(op.params ? { params: anonymous(op.params) } : {}),
      ...(querystringOf(op) ? { querystring: anonymous(querystringOf(op)) } : {}),
      ...(op.body ? { body: anonymous(op.body) } : {}),
      ...(json ? { response: { [op.status]: anonymous(op.response) } } : {}),
    },
    ...(op.rawBody
      ? { preParsing: keepRawBody }
      : bodyMayBeOmitted(op.body)
        ? { preParsing: emptyChunkedIsNone }
        : {}),
    ...(bodyMayBeOmitted(op.body) ? { onRequest: emptyBodyIsNone } : {}),
    // An omitted body as `{}`; tickers trimmed and upper-cased before validation (contract/request-identity.ts).
    ...(preValidation.length ? { preValidation } : {}),
    handler,
  })
}

/** preValidation of operations whose request carries tickers: normalises them in place. */
function normaliseTickers(n: TickerNormaliser) {
  return async (req: FastifyRequest) => {
    n('params', req.params)
    n('querystring', req.query)
    n('body', req.body)
  }
}

/**
 * An operation whose body may be left out: an empty body is no body, whatever its Content-Type
 * says (`curl -X POST -H 'Content-Type: application/json'` sends one), rather than a JSON parse
 * error. Runs before the body is read, so only the declared length can tell.
 */
async function emptyBodyIsNone(req: FastifyRequest): Promise<void> {
  if (req.headers['content-length'] === '0') delete req.headers['content-type']
}

/** …and no body validates as `{}` (every field of such a body is optional). */
async function noBodyIsEmptyObject(req: FastifyRequest): Promise<void> {
  if (req.body === undefined) req.body = {}
}

/**
 * preParsing of `rawBody` operations (the Stripe webhook): keeps the exact bytes on `req.rawBody`
 * for signature verification and hands the same bytes on to the usual parser. Scoped to those
 * routes only; bounded by the route's body limit.
 */
async function keepRawBody(req: FastifyRequest, _reply: unknown, payload: AsyncIterable<Buffer | string>) {
  req.rawBody = await readBounded(req, payload)
  return Readable.from([req.rawBody])
}

/** The whole request body, refused as 413 past the route's body limit. */
async function readBounded(req: FastifyRequest, payload: AsyncIterable<Buffer | string>): Promise<Buffer> {
  const limit = req.routeOptions.bodyLimit ?? 1024 * 1024
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of payload) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    size += b.length
    if (size > limit)
      throw Object.assign(new Error('Request body is too large'), {
        statusCode: 413,
        code: 'FST_ERR_CTP_BODY_TOO_LARGE',
      })
    chunks.push(b)
  }
  return Buffer.concat(chunks)
}

/**
 * preParsing of an operation whose body may be left out, sent without a length (`Transfer-Encoding:
 * chunked`): only the bytes tell whether there is a body, so they are read first (the body of
 * such an operation is a few fields); zero bytes are no body, like `Content-Length: 0`.
 */
async function emptyChunkedIsNone(
  req: FastifyRequest,
  _reply: unknown,
  payload: AsyncIterable<Buffer | string>,
) {
  if (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] === undefined)
    return payload
  const bytes = await readBounded(req, payload)
  if (bytes.length === 0) {
    delete req.headers['content-type']
    delete req.headers['transfer-encoding']
  }
  return Readable.from(bytes.length === 0 ? [] : [bytes])
}
