import { type TSchema, Type } from 'typebox'

/**
 * `key_or_session`: account operations that answer either the account's own API key (limited
 * like any key route) or a signed-in session (limited per address): the read-only account views
 * and the Stripe top-up.
 */
type AuthMode = 'key' | 'session' | 'key_or_session' | 'none'

/**
 * One HTTP operation of the interface, declared once: the server registers it (validation and
 * serialisation), the OpenAPI document, the MCP tool schemas and the typed client derive from it.
 */
export interface Operation {
  id: string
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE'
  /** Fastify-style path (`/metrics/:ticker`); OpenAPI gets `{ticker}`. */
  path: string
  summary: string
  description?: string
  tags: string[]
  auth: AuthMode
  /** Data endpoints: lineage headers and `_metadata`. */
  lineage?: boolean
  params?: TSchema
  querystring?: TSchema
  body?: TSchema
  /**
   * Success status and schema. For non-JSON documents, `contentType` says what is served (several
   * types comma-separated when the route serves files of different kinds).
   */
  status: 200 | 201 | 202 | 204
  response: TSchema
  contentType?: string
  /** Statuses this operation may answer with an error, besides 500. */
  errors: number[]
  /** MCP endpoints: take no rate token of their own (tool calls are counted), nor a request slot. */
  streaming?: boolean
  /**
   * MCP message endpoints: rate limited per tools/call they carry (after parsing), protocol
   * messages free; over the limit the handler says so — a tools/call as a RATE_LIMITED tool
   * error, a mixed batch as the 429.
   */
  rateLimitInBand?: boolean
  /** OAuth endpoints answer errors as RFC 6749 `{error, error_description}` instead of problem+json. */
  errorStyle?: 'problem' | 'oauth'
  /** Request body media type when not JSON (the OAuth token and revocation endpoints are form-encoded). */
  bodyType?: 'application/x-www-form-urlencoded'
  /**
   * The handler needs the exact request bytes (`req.rawBody`), e.g. to verify a signature over
   * them (the Stripe webhook); the body is still parsed and validated as usual.
   */
  rawBody?: boolean
}

/** Keeps the literal schema types, so the typed client knows each operation's shapes. */
export function defineOperation<const O extends Operation>(op: O): O {
  return op
}

const NO_QUERY = Type.Object({}, { additionalProperties: false })
const FORMAT_QUERY = Type.Object(
  {
    format: Type.Optional(
      Type.String({ description: 'json (default), parquet or csv; else Accept decides' }),
    ),
  },
  { additionalProperties: false },
)

/**
 * The query schema the server validates an operation against: its own, or — for an operation that
 * declares none and needs a credential — none at all, so `?foo=1` is a 400 naming `foo` rather
 * than an ignored (and possibly charged) parameter. Public pages and streams keep any query
 * (tracking parameters, cache busters).
 */
export function querystringOf(op: Operation): TSchema | undefined {
  if (op.querystring) return withFormat(op, op.querystring)
  if (op.auth === 'none' || op.streaming) return undefined
  // A tabular POST takes `format` in the query as well as in its body; a data operation takes it
  // too, so that a format it cannot serve is the documented 406, not an unknown parameter.
  const body = op.body as { properties?: Record<string, unknown> } | undefined
  return body?.properties?.format || op.lineage === true ? FORMAT_QUERY : NO_QUERY
}

/** A data operation's own query with `format` added when it lacks one (a format it cannot serve is a 406). */
function withFormat(op: Operation, query: TSchema): TSchema {
  const props = (query as { properties?: Record<string, TSchema> }).properties
  if (op.lineage !== true || !props || props.format) return query
  return Type.Object({ ...props, ...FORMAT_QUERY.properties }, { additionalProperties: false })
}

/** `/metrics/:ticker` → `/metrics/{ticker}`. */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z_]+)/g, '{$1}')
}

/**
 * True when the operation's body is Type.Optional: a request may send none at all (no
 * Content-Type, no bytes, as `curl -X POST` does), and the server validates it as `{}`.
 */
export function bodyMayBeOmitted(body: TSchema | undefined): boolean {
  return body !== undefined && (body as { '~optional'?: boolean })['~optional'] === true
}
