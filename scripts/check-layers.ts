/**
 * Enforces the layer rules of src/ (docs/architecture.md §3 describes them): which parts may import
 * which, that the numeric core (src/engine/model) stays pure, and that the parts of engine/ and
 * the folders of services/ import one another in one direction only (no cycles). Exits non-zero
 * listing every violation; `npm run lint` runs it and so does CI.
 *
 * A file's unit is its top folder under src/ and, inside engine/ and services/, its sub-folder
 * (engine/zarr, services/billing); a file directly in services/ is a unit of its own
 * (services/limits.ts).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

/** What each top layer may import: whole layers, or single units of one (`engine/export`). */
export const LAYER_RULES: Record<string, readonly string[]> = {
  platform: [],
  // Each engine part: platform/ and the parts before it in ENGINE_ORDER (engine/model: nothing).
  engine: ['platform'],
  // Accounts, limits and OAuth persistence: platform data, no engine.
  store: ['platform'],
  contract: ['platform'],
  // Each service unit: these layers and the units before it in SERVICE_ORDER.
  services: ['engine', 'store', 'contract', 'platform'],
  api: ['services', 'engine/export', 'contract', 'platform'],
  mcp: ['services', 'contract', 'platform'],
  web: ['contract'],
  cli: ['services', 'engine', 'store', 'contract', 'platform', 'main'],
  main: ['platform', 'engine', 'store', 'contract', 'services', 'api', 'mcp', 'web', 'cli'],
}

/**
 * The parts of engine/, lowest first: each may import platform/ and the parts before it, never one
 * after it. engine/model is first and imports nothing outside itself.
 */
export const ENGINE_ORDER = [
  'model', // pure numeric kernels
  'parquet', // the Parquet codec
  'object-store', // where a model store's bytes live (local, S3, HTTP)
  'zarr', // Zarr v3 arrays over an object store
  'data', // the canonical dataset: format, import, synthetic market (model, parquet)
  'sources', // vendors and public files real data is fetched from (data)
  'model-store', // the published model store (model, zarr, object-store)
  'build', // builds a model store from a dataset (model, data, zarr, model-store)
  'export', // CSV and Parquet tables (parquet)
  'update', // fetch, check, append, build and publish real data (sources, data, build, model-store)
] as const

/** Beyond platform/: engine/export encodes the contract's flat table (contract/table.ts). */
export const ENGINE_EXTRA: Record<string, readonly string[]> = { export: ['contract'] }

/**
 * The units of services/, lowest first: each may import the ones before it, never one after it,
 * so service folders never import one another both ways.
 */
export const SERVICE_ORDER = [
  'models.ts', // the live and sandbox model stores of a node
  'context.ts', // ServiceContext
  'agent-meta.ts', // the `_agent` block of answers
  'analytics', // request-time analytics over the model store
  'identity', // keys, sessions, sign-in, the audit log
  'limits.ts', // rate and concurrency rules
  'oauth',
  'billing', // metering, ledger views, Stripe
  'chat', // POST /chat (billed through billing, tools through analytics)
  'account', // self-service and the operator's account administration
  'webhooks',
  'plaid',
  'discovery', // documents describing the service: manifests, llms.txt, prices, estimates
  'updates', // the daily update: schedule, lease across nodes, status and alerts
  'health.ts',
  'model-reload.ts',
] as const

/** Request-time analytics never reach into accounts, money or sign-in. */
export const ANALYTICS_FORBIDDEN = ['account', 'billing', 'identity', 'oauth', 'webhooks', 'chat', 'plaid']

/** engine/model imports no package and no Node built-in: pure, portable, deterministic. */
const PURE_UNITS = new Set(['engine/model'])

/**
 * Modules of platform/ that every layer may import, the pure ones included: constants shared by
 * all layers (the metric names), with no imports of their own (checkTree verifies that).
 */
const SHARED_CONSTANTS = new Set([join('platform', 'metric-fields.ts')])

const IMPORT_RE =
  /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;(])import\s*\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s*['"]([^'"]+)['"]/gm

export interface Violation {
  file: string
  line: number
  message: string
}

interface Unit {
  layer: string
  /** `engine/zarr`, `services/billing`, `services/limits.ts`; the layer itself elsewhere. */
  unit: string
  /** The part after `engine/` or `services/` (null in other layers). */
  part: string | null
}

function unitOf(srcRoot: string, file: string): Unit | null {
  const rel = relative(srcRoot, file)
  if (rel.startsWith('..')) return null
  const [layer, part] = rel.split(sep)
  if (!layer) return null
  if ((layer === 'engine' || layer === 'services') && part) return { layer, unit: `${layer}/${part}`, part }
  return { layer, unit: layer, part: null }
}

const engineIndex = (part: string | null) => ENGINE_ORDER.indexOf(part as (typeof ENGINE_ORDER)[number])
const serviceIndex = (part: string | null) => SERVICE_ORDER.indexOf(part as (typeof SERVICE_ORDER)[number])

/** `engine/zarr/`, `services/limits.ts`: a folder with its slash, a file without. */
const label = (unit: string) => (unit.endsWith('.ts') ? unit : `${unit}/`)

/** Why `from` may not import `to`, or null when it may. */
function forbidden(from: Unit, to: Unit): string | null {
  if (from.unit === to.unit) return null
  const may = `${label(from.unit)} may not import ${label(to.unit)}`
  if (from.layer === 'engine') {
    if (from.part === 'model') return `${may}: engine/model imports nothing outside itself`
    if (to.layer === 'engine') {
      if (engineIndex(to.part) < 0) return null // reported on the file itself
      return engineIndex(to.part) < engineIndex(from.part) ? null : `${may} (ENGINE_ORDER: lower parts only)`
    }
    const extra = ENGINE_EXTRA[from.part ?? ''] ?? []
    return (LAYER_RULES.engine ?? []).includes(to.layer) || extra.includes(to.layer) ? null : may
  }
  if (from.layer === 'services' && to.layer === 'services') {
    if (from.part === 'analytics' && ANALYTICS_FORBIDDEN.includes(to.part ?? ''))
      return `${may}: analytics never import the platform services`
    if (serviceIndex(to.part) < 0) return null // reported on the file itself
    return serviceIndex(to.part) < serviceIndex(from.part) ? null : `${may} (SERVICE_ORDER: lower units only)`
  }
  if (from.layer === to.layer) return null
  const rules = LAYER_RULES[from.layer] ?? []
  return rules.includes(to.layer) || rules.includes(to.unit)
    ? null
    : `${from.layer}/ may not import ${label(to.unit)}`
}

function isBare(spec: string): boolean {
  return !spec.startsWith('.') && !spec.startsWith('/')
}

export function checkFile(srcRoot: string, file: string, text: string): Violation[] {
  const own = unitOf(srcRoot, file)
  if (!own) return []
  const out: Violation[] = []
  for (const m of text.matchAll(IMPORT_RE)) {
    const spec = m[1] ?? m[2] ?? m[3]
    if (!spec) continue
    const line = text.slice(0, (m.index ?? 0) + m[0].indexOf(spec)).split('\n').length
    if (spec.startsWith('.')) {
      const path = resolve(dirname(file), spec)
      if (SHARED_CONSTANTS.has(relative(srcRoot, path))) continue
      const target = unitOf(srcRoot, path)
      const why = target === null ? `imports ${spec}, outside src/` : forbidden(own, target)
      if (why) out.push({ file, line, message: target === null ? why : `${why} (${spec})` })
    } else if (PURE_UNITS.has(own.unit) && isBare(spec)) {
      out.push({ file, line, message: `${own.unit}/ must stay pure: no ${spec}` })
    }
  }
  if (!(own.layer in LAYER_RULES))
    out.push({
      file,
      line: 1,
      message: `unknown layer ${own.layer}/ (add it to LAYER_RULES and docs/architecture.md §3)`,
    })
  else if (own.layer === 'engine' && engineIndex(own.part) < 0)
    out.push({ file, line: 1, message: `unknown engine part ${own.unit} (add it to ENGINE_ORDER)` })
  else if (own.layer === 'services' && serviceIndex(own.part) < 0)
    out.push({ file, line: 1, message: `unknown service unit ${own.unit} (add it to SERVICE_ORDER)` })
  return out
}

function walk(dir: string, files: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) walk(p, files)
    else if (/\.(ts|tsx|mts)$/.test(name)) files.push(p)
  }
  return files
}

export function checkTree(srcRoot: string): Violation[] {
  const out = walk(srcRoot).flatMap((f) => checkFile(srcRoot, f, readFileSync(f, 'utf8')))
  for (const rel of SHARED_CONSTANTS) {
    const file = join(srcRoot, rel)
    if ([...readFileSync(file, 'utf8').matchAll(IMPORT_RE)].length > 0)
      out.push({ file, line: 1, message: 'a shared constants module may import nothing' })
  }
  return out
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'src')
  const violations = checkTree(root)
  for (const v of violations)
    process.stderr.write(`${relative(process.cwd(), v.file)}:${v.line}: ${v.message}\n`)
  if (violations.length > 0) {
    process.stderr.write(`check-layers: ${violations.length} forbidden import(s)\n`)
    process.exit(1)
  }
  process.stdout.write('check-layers: ok\n')
}
