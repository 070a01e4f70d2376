/**
 * Enforces the layer rules of DESIGN.md §3: which folders of src/ may import which, and that
 * the numeric core (src/model) stays pure (no node:* modules, no I/O packages). Exits non-zero
 * listing every violation; `npm run lint` runs it and so does CI.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

export const LAYER_RULES: Record<string, readonly string[]> = {
  platform: [],
  model: [],
  data: ['model', 'platform'],
  store: ['model', 'platform'],
  contract: ['platform'],
  services: ['model', 'data', 'store', 'contract', 'platform'],
  export: ['contract', 'platform'],
  api: ['services', 'contract', 'export', 'platform'],
  mcp: ['services', 'contract', 'platform'],
  web: ['contract'],
  cli: ['services', 'data', 'store', 'contract', 'export', 'model', 'platform', 'main'],
  main: ['platform', 'model', 'data', 'store', 'contract', 'services', 'export', 'api', 'mcp', 'web', 'cli'],
}

/** Layers that must not touch Node built-ins (pure, portable, deterministic). */
const PURE_LAYERS = new Set(['model'])

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

function layerOf(srcRoot: string, file: string): string | null {
  const rel = relative(srcRoot, file)
  if (rel.startsWith('..')) return null
  return rel.split(sep)[0] ?? null
}

export function checkFile(srcRoot: string, file: string, text: string): Violation[] {
  const own = layerOf(srcRoot, file)
  if (!own) return []
  const out: Violation[] = []
  for (const m of text.matchAll(IMPORT_RE)) {
    const spec = m[1] ?? m[2] ?? m[3]
    if (!spec) continue
    const line = text.slice(0, (m.index ?? 0) + m[0].indexOf(spec)).split('\n').length
    if (spec.startsWith('.')) {
      const target = layerOf(srcRoot, resolve(dirname(file), spec))
      if (target === null) {
        out.push({ file, line, message: `imports ${spec}, outside src/` })
      } else if (
        target !== own &&
        !(LAYER_RULES[own] ?? []).includes(target) &&
        !SHARED_CONSTANTS.has(relative(srcRoot, resolve(dirname(file), spec)))
      ) {
        out.push({ file, line, message: `${own}/ may not import ${target}/ (${spec})` })
      }
    } else if (PURE_LAYERS.has(own) && (spec.startsWith('node:') || isBuiltin(spec))) {
      out.push({ file, line, message: `${own}/ must stay pure: no ${spec}` })
    }
  }
  if (!(own in LAYER_RULES))
    out.push({ file, line: 1, message: `unknown layer ${own}/ (add it to DESIGN.md §3 and LAYER_RULES)` })
  return out
}

const BUILTINS = new Set([
  'fs',
  'path',
  'os',
  'child_process',
  'http',
  'https',
  'net',
  'crypto',
  'zlib',
  'worker_threads',
  'stream',
  'url',
])
function isBuiltin(spec: string): boolean {
  return BUILTINS.has(spec.split('/')[0])
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
