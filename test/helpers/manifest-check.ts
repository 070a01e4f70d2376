/**
 * The consistency check of the discovery documents (a test fails if any manifest names
 * an endpoint, tool or price that does not exist). Pure: it compares the documents with what the
 * running server really has — its registered routes, its MCP tools and resources as a client lists
 * them, GET /pricing and the OpenAPI `x-pricing` — and returns every disagreement as a sentence.
 */

export interface PricingEntry {
  capability_id: string
  method: string
  path: string
  model: string
  cost_usd: number
  min_charge: number | null
  billing_code: string
  tier: string
  description: string
}

export interface Truth {
  publicUrl: string
  /** `App.routes`: "GET /metrics/:ticker". */
  routes: readonly string[]
  tools: readonly string[]
  resources: readonly string[]
  pricing: readonly PricingEntry[]
  openapi: { paths: Record<string, Record<string, { 'x-pricing'?: Record<string, unknown> }>> }
}

export interface Documents {
  agentManifest: unknown
  mcpServerCard: unknown
  aiPlugin: unknown
  disclosure: unknown
  llmsTxt: string
}

type Json = Record<string, unknown>

const METHODS = 'GET|POST|DELETE|PUT|PATCH'
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
/** A path ends at white space, quotes, brackets or list punctuation; a sentence's full stop is not part of it. */
const PATH_CHARS = '[^\\s)"\'`<>,;]*'
const trimPath = (p: string) => p.replace(/[.:]+$/, '').split(/[?#]/)[0] as string

function strings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v)
  else if (Array.isArray(v)) for (const x of v) strings(x, out)
  else if (v && typeof v === 'object') for (const x of Object.values(v)) strings(x, out)
  return out
}

function objects(v: unknown, out: Json[] = []): Json[] {
  if (Array.isArray(v)) for (const x of v) objects(x, out)
  else if (v && typeof v === 'object') {
    out.push(v as Json)
    for (const x of Object.values(v)) objects(x, out)
  }
  return out
}

/** Does `path` (concrete, or templated with `{x}`) name the route template `route` (`:x`)? */
function matches(route: string, path: string): boolean {
  const r = route.split('/')
  const p = (path === '' ? '/' : path).split('/')
  return r.length === p.length && r.every((s, i) => (s.startsWith(':') ? (p[i] ?? '') !== '' : s === p[i]))
}

function routeOf(truth: Truth, method: string | null, path: string): string | undefined {
  return truth.routes.find((r) => {
    const [m, p] = r.split(' ') as [string, string]
    return (method === null || m === method) && matches(p, path)
  })
}

/** Every absolute URL on the server's origin named anywhere in the documents (the origin itself excluded). */
export function referencedPaths(docs: Documents, publicUrl: string): string[] {
  const re = new RegExp(`${esc(publicUrl)}(/${PATH_CHARS})?`, 'g')
  const out = new Set<string>()
  for (const s of [...strings(Object.values(docs)), docs.llmsTxt])
    for (const m of s.matchAll(re)) {
      const path = trimPath(m[1] ?? '')
      if (path !== '' && path !== '/') out.add(path)
    }
  return [...out].sort()
}

function checkEndpoints(docs: Documents, truth: Truth, problems: string[]): void {
  for (const path of referencedPaths(docs, truth.publicUrl))
    if (!routeOf(truth, null, path)) problems.push(`URL ${truth.publicUrl}${path} is not a route`)
  const all = [...strings(Object.values(docs)), docs.llmsTxt]
  const methodRe = new RegExp(`\\b(${METHODS})\\s+(?:${esc(truth.publicUrl)})?(/${PATH_CHARS})`, 'g')
  for (const s of all) {
    for (const m of s.matchAll(methodRe)) {
      const path = trimPath(m[2] as string)
      if (!routeOf(truth, m[1] as string, path)) problems.push(`endpoint ${m[1]} ${path} is not a route`)
    }
    if (/^\/\S*$/.test(s) && !routeOf(truth, null, s)) problems.push(`path ${s} is not a route`)
  }
  for (const s of docs.llmsTxt.matchAll(/\]\((\/[^)\s]*)\)/g))
    if (!routeOf(truth, null, trimPath(s[1] as string))) problems.push(`link ${s[1]} is not a route`)
  for (const o of objects(Object.values(docs)))
    if (typeof o.method === 'string' && typeof o.path === 'string' && !routeOf(truth, o.method, o.path))
      problems.push(`endpoint ${o.method} ${o.path} is not a route`)
}

function sameSet(what: string, listed: readonly string[], real: readonly string[], problems: string[]): void {
  for (const x of listed) if (!real.includes(x)) problems.push(`${what} ${x} does not exist`)
  for (const x of real) if (!listed.includes(x)) problems.push(`${what} ${x} is missing`)
}

function checkMcp(docs: Documents, truth: Truth, problems: string[]): void {
  const m = docs.agentManifest as { mcp: { tools: string[] }; pricing: { capabilities: Json[] } }
  const card = docs.mcpServerCard as { tools: { name: string }[]; resources: { uri: string }[] }
  sameSet('agent-manifest tool', m.mcp.tools, truth.tools, problems)
  sameSet(
    'mcp.json tool',
    card.tools.map((t) => t.name),
    truth.tools,
    problems,
  )
  sameSet(
    'mcp.json resource',
    card.resources.map((r) => r.uri),
    truth.resources,
    problems,
  )
  for (const c of m.pricing.capabilities)
    if (c.mcp_tool !== null && !truth.tools.includes(String(c.mcp_tool)))
      problems.push(`tool ${c.mcp_tool} of capability ${c.capability_id} does not exist`)
}

const UNITS: Record<string, string> = {
  call: 'per_request',
  position: 'per_position',
  kilotoken: 'per_token',
}

/** `- \`GET /lstar\` — lstar: 0.02 USD per call, minimum 0.01 USD. …` → the entry it states. */
function llmsPrices(text: string): Omit<PricingEntry, 'tier' | 'description' | 'billing_code'>[] {
  const re = new RegExp(
    `^- \`(${METHODS}) (\\S+)\` — (\\w+): ([\\d.]+) USD per (\\w+)(?:, minimum ([\\d.]+) USD)?\\.`,
    'gm',
  )
  return [...text.matchAll(re)].map((m) => ({
    method: m[1] as string,
    path: m[2] as string,
    capability_id: m[3] as string,
    cost_usd: Number(m[4]),
    model: UNITS[m[5] as string] ?? (m[5] as string),
    min_charge: m[6] === undefined ? null : Number(m[6]),
  }))
}

function differs(a: Json, b: Json, keys: string[]): string[] {
  return keys.filter((k) => JSON.stringify(a[k] ?? null) !== JSON.stringify(b[k] ?? null))
}

function checkPrices(docs: Documents, truth: Truth, problems: string[]): void {
  const m = docs.agentManifest as { pricing: { capabilities: Json[]; free_endpoints: string[] } }
  const listed = m.pricing.capabilities
  const all = Object.keys(truth.pricing[0] ?? {})
  const byId = (xs: readonly Json[], id: unknown) => xs.find((x) => x.capability_id === id)
  // The manifest against GET /pricing, both directions, every field.
  for (const real of truth.pricing) {
    const c = byId(listed, real.capability_id)
    if (!c) problems.push(`capability ${real.capability_id} is missing from the agent manifest`)
    else
      for (const k of differs(c, real as unknown as Json, all))
        problems.push(`capability ${real.capability_id}: ${k} differs from /pricing`)
  }
  for (const c of listed)
    if (!byId(truth.pricing as unknown as Json[], c.capability_id))
      problems.push(`capability ${c.capability_id} is not in /pricing`)
  // The manifest against OpenAPI x-pricing, both directions.
  const priced: Json[] = Object.entries(truth.openapi.paths).flatMap(([path, ops]) =>
    Object.entries(ops).flatMap(([method, op]) =>
      op['x-pricing'] ? [{ ...op['x-pricing'], method: method.toUpperCase(), path }] : [],
    ),
  )
  for (const x of priced) {
    const c = byId(listed, x.capability_id)
    if (!c) problems.push(`x-pricing ${x.capability_id} is missing from the agent manifest`)
    else
      for (const k of differs(c, { ...x, min_charge: x.min_charge ?? null }, [
        'method',
        'path',
        'tier',
        'model',
        'cost_usd',
        'billing_code',
        'min_charge',
      ]))
        problems.push(`capability ${x.capability_id}: ${k} differs from x-pricing`)
  }
  for (const c of listed)
    if (!byId(priced, c.capability_id)) problems.push(`capability ${c.capability_id} has no x-pricing`)
  // llms.txt states each price once, as /pricing does.
  const lines = llmsPrices(docs.llmsTxt)
  for (const real of truth.pricing) {
    const l = byId(lines as unknown as Json[], real.capability_id)
    if (!l) problems.push(`llms.txt has no price line for ${real.capability_id}`)
    else
      for (const k of differs(l, real as unknown as Json, Object.keys(l)))
        problems.push(`llms.txt ${real.capability_id}: ${k} differs from /pricing`)
  }
  for (const l of lines)
    if (!byId(truth.pricing as unknown as Json[], l.capability_id))
      problems.push(`llms.txt prices ${l.capability_id}, which is not in /pricing`)
  for (const f of m.pricing.free_endpoints)
    if (truth.pricing.some((p) => `${p.method} ${p.path}` === f))
      problems.push(`${f} is listed free but priced`)
}

/** Every way the documents disagree with the server; empty when they tell the truth. */
export function checkDiscovery(docs: Documents, truth: Truth): string[] {
  const problems: string[] = []
  checkEndpoints(docs, truth, problems)
  checkMcp(docs, truth, problems)
  checkPrices(docs, truth, problems)
  return [...new Set(problems)]
}
