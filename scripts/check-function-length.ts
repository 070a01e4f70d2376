/**
 * Lists every function, method and arrow function in src/ whose body is longer than the limit
 * (100 lines) and exits non-zero when one is not on the allow-list below. `npm run lint` runs it.
 *
 * "Body lines" are the physical lines strictly between a block body's braces (for an arrow with
 * an expression body: the lines the expression spans). A nested function's lines count towards
 * the function that contains it, so a factory returning a table of handlers is measured whole.
 * Object literals, arrays and schema tables outside a function are data, not functions, and are
 * not measured.
 *
 * A long function is split by idea (each part named for what it does), not by moving lines into
 * helpers. A function that reads better whole goes on ALLOWED with a one-line reason.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

export const MAX_BODY_LINES = 100

/**
 * `path/under/src.ts:functionName` -> why it stays whole, in one line. A key's path may be given
 * by its last folders only (`model/style.ts` matches `src/engine/model/style.ts`).
 */
export const ALLOWED: Readonly<Record<string, string>> = {
  'model/stock-kernel.ts:runStock':
    'numeric kernel: the inner loop of the build; splitting it would add calls per stock-day',
  'model/style.ts:styleSplit':
    'numeric kernel: one day loop whose sums, moment matrices and factorisation carry from day to day',
}

export interface LongFunction {
  file: string
  line: number
  name: string
  lines: number
}

type FunctionLike =
  | ts.FunctionDeclaration
  | ts.MethodDeclaration
  | ts.ConstructorDeclaration
  | ts.GetAccessorDeclaration
  | ts.SetAccessorDeclaration
  | ts.FunctionExpression
  | ts.ArrowFunction

function isFunctionLike(node: ts.Node): node is FunctionLike {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node) ||
    ts.isFunctionExpression(node) ||
    ts.isArrowFunction(node)
  )
}

function propertyName(name: ts.PropertyName, sf: ts.SourceFile): string {
  return ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isPrivateIdentifier(name)
    ? name.text
    : name.getText(sf)
}

/** A readable name: the declaration's own, else the variable / property / call it belongs to. */
function nameOf(fn: FunctionLike, sf: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(fn)) return `${classNameOf(fn)}.constructor`
  if (fn.name && !ts.isFunctionExpression(fn)) {
    const own = propertyName(fn.name, sf)
    return ts.isFunctionDeclaration(fn) ? own : `${classNameOf(fn)}.${own}`.replace(/^\./, '')
  }
  const parent = fn.parent
  if (ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text
  if (ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return propertyName(parent.name, sf)
  if (ts.isCallExpression(parent)) {
    const callee = parent.expression.getText(sf).replace(/\s+/g, '')
    return `${callee.length > 40 ? `${callee.slice(0, 40)}…` : callee}(…)`
  }
  if (ts.isFunctionExpression(fn) && fn.name) return fn.name.text
  return '(anonymous)'
}

function classNameOf(node: ts.Node): string {
  const cls = node.parent
  if (cls && (ts.isClassDeclaration(cls) || ts.isClassExpression(cls)) && cls.name) return cls.name.text
  return ''
}

function bodyLines(fn: FunctionLike, sf: ts.SourceFile): number {
  const body = fn.body
  if (!body) return 0
  const first = sf.getLineAndCharacterOfPosition(body.getStart(sf)).line
  const last = sf.getLineAndCharacterOfPosition(body.getEnd()).line
  return ts.isBlock(body) ? Math.max(0, last - first - 1) : last - first + 1
}

/** Every function in `text` whose body is longer than `limit` lines. */
export function longFunctions(file: string, text: string, limit = MAX_BODY_LINES): LongFunction[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const out: LongFunction[] = []
  const visit = (node: ts.Node): void => {
    if (isFunctionLike(node)) {
      const lines = bodyLines(node, sf)
      if (lines > limit) {
        const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1
        out.push({ file, line, name: nameOf(node, sf), lines })
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(sf)
  return out
}

function walk(dir: string, files: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) walk(p, files)
    else if (/\.(ts|tsx|mts)$/.test(name) && !name.endsWith('.d.ts')) files.push(p)
  }
  return files
}

/** The key used on the allow-list: path relative to src/ (forward slashes) and function name. */
export function allowKey(srcRoot: string, f: LongFunction): string {
  return `${relative(srcRoot, f.file).split(sep).join('/')}:${f.name}`
}

/** The allow-list entry for `key` (exact, or naming the file by its last folders), if any. */
function entryFor(key: string, allowed: Readonly<Record<string, string>>): string | undefined {
  return Object.keys(allowed).find((k) => key === k || key.endsWith(`/${k}`))
}

export function checkTree(srcRoot: string, limit = MAX_BODY_LINES): LongFunction[] {
  return walk(srcRoot).flatMap((f) => longFunctions(f, readFileSync(f, 'utf8'), limit))
}

export interface Verdict {
  /** Every function over the limit, longest first. */
  found: LongFunction[]
  /** Those not on the allow-list. */
  failing: LongFunction[]
  /** Allow-list entries that match no function over the limit (split since, or renamed). */
  stale: string[]
}

export function check(
  srcRoot: string,
  allowed: Readonly<Record<string, string>> = ALLOWED,
  limit = MAX_BODY_LINES,
): Verdict {
  const found = checkTree(srcRoot, limit).sort((a, b) => b.lines - a.lines)
  const entries = found.map((f) => entryFor(allowKey(srcRoot, f), allowed))
  const failing = found.filter((_, i) => entries[i] === undefined)
  const stale = Object.keys(allowed).filter((k) => !entries.includes(k))
  return { found, failing, stale }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'src')
  const { found, failing, stale } = check(root)
  for (const f of process.argv.includes('--list') ? found : failing) {
    const entry = entryFor(allowKey(root, f), ALLOWED)
    const note = entry ? ` (allowed: ${ALLOWED[entry]})` : ''
    process.stderr.write(
      `${relative(process.cwd(), f.file)}:${f.line}: ${f.name} has ${f.lines} body lines${note}\n`,
    )
  }
  for (const k of stale) process.stderr.write(`check-function-length: stale allow-list entry ${k}\n`)
  if (failing.length > 0 || stale.length > 0) {
    process.stderr.write(
      `check-function-length: ${failing.length} function(s) over ${MAX_BODY_LINES} lines; split them by idea or allow-list them with a reason\n`,
    )
    process.exit(1)
  }
  process.stdout.write(`check-function-length: ok (${found.length} allowed)\n`)
}
