/**
 * Keeps the documents and the code that cites them in step; `npm run lint` runs it and it exits
 * non-zero listing every problem:
 *
 * - docs/methodology.md has exactly the `##`/`###` headings of the section map in
 *   src/contract/methodology.ts, in its order (renumber a section there, not only in the doc);
 * - every `](#anchor)` link of docs/methodology.md names one of its headings;
 * - every citation `docs/methodology.md §n "title"` in src/, test/, scripts/, bench/, docs/ and
 *   README.md names a section that exists, and its title (or the start of it) is one of that
 *   section's headings;
 * - nothing in src/contract cites the math as `METHODOLOGY §n` (use methodologyRef);
 * - no generated piece of a document (scripts/docs.ts) is stale.
 *
 * Usage: node --import tsx scripts/check-docs.ts [--check]   (always checks; writes nothing)
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  METHODOLOGY_DOC,
  METHODOLOGY_SECTIONS,
  type MethodologyKey,
  type MethodologySection,
  methodologyHeading,
} from '../src/contract/methodology.ts'
import { headingSlug } from '../src/platform/markdown.ts'
import { GENERATED_BLOCKS, REPO_ROOT, staleDocs } from './docs.ts'

interface Heading {
  depth: number
  /** The heading line as written, e.g. `## 9. Lstar and the recommended level`. */
  line: string
  text: string
  at: number
}

/** ATX headings of a Markdown text, outside fenced code blocks. */
export function markdownHeadings(doc: string): Heading[] {
  const out: Heading[] = []
  let fence: string | null = null
  for (const [i, raw] of doc.split('\n').entries()) {
    const f = /^\s{0,3}(`{3,}|~{3,})/.exec(raw)
    if (f) {
      const mark = (f[1] as string)[0] as string
      if (fence === null) fence = mark
      else if (fence === mark) fence = null
      continue
    }
    if (fence !== null) continue
    const h = /^(#{1,6})[ \t]+(.*?)[ \t#]*$/.exec(raw)
    if (h) out.push({ depth: (h[1] as string).length, line: raw.trimEnd(), text: h[2] as string, at: i + 1 })
  }
  return out
}

/** The document's `##`/`###` headings against the section map, in order. */
export function headingProblems(doc: string): string[] {
  const actual = markdownHeadings(doc).filter((h) => h.depth === 2 || h.depth === 3)
  const expected = (Object.keys(METHODOLOGY_SECTIONS) as MethodologyKey[]).map((k) => ({
    key: k,
    line: methodologyHeading(k),
  }))
  const problems: string[] = []
  const written = new Set(actual.map((h) => h.line))
  const mapped = new Set(expected.map((e) => e.line))
  for (const e of expected)
    if (!written.has(e.line))
      problems.push(`${METHODOLOGY_DOC}: missing heading "${e.line}" (section map key ${e.key})`)
  for (const h of actual)
    if (!mapped.has(h.line))
      problems.push(
        `${METHODOLOGY_DOC}:${h.at}: heading "${h.line}" is not in the section map (src/contract/methodology.ts)`,
      )
  if (problems.length === 0) {
    const order = actual.map((h) => h.line)
    for (const [i, e] of expected.entries())
      if (order[i] !== e.line) {
        problems.push(
          `${METHODOLOGY_DOC}: heading ${i + 1} is "${order[i]}", the section map puts "${e.line}" there`,
        )
        break
      }
  }
  return problems
}

/** In-page links (`](#x)`) that name no heading of the document. */
export function anchorProblems(doc: string): string[] {
  const ids = new Set(markdownHeadings(doc).map((h) => headingSlug(h.text)))
  const problems: string[] = []
  for (const [i, line] of doc.split('\n').entries())
    for (const m of line.matchAll(/\]\(#([^)\s]+)\)/g))
      if (!ids.has(m[1] as string))
        problems.push(`${METHODOLOGY_DOC}:${i + 1}: link #${m[1]} names no heading`)
  return problems
}

const CITATION = /docs\/methodology\.md §(\d+)(?:[ \t]*"([^"\n]*)")?/g

const norm = (s: string) =>
  s
    .replace(/[`*]/g, '')
    .replace(/(\.\.\.|…)$/, '')
    .trim()
    .toLowerCase()

/** Citations of the methodology that name no section, or a title the section does not have. */
export function citationProblems(file: string, text: string): string[] {
  const sections = Object.values(METHODOLOGY_SECTIONS as Record<string, MethodologySection>)
  const problems: string[] = []
  const lineOf = (index: number) => text.slice(0, index).split('\n').length
  for (const m of text.matchAll(CITATION)) {
    const n = Number(m[1])
    const titles = sections.filter((s) => s.n === n).map((s) => norm(s.title))
    const where = `${file}:${lineOf(m.index ?? 0)}`
    if (titles.length === 0) {
      problems.push(`${where}: ${m[0]}: the methodology has no section ${n}`)
      continue
    }
    const cited = m[2] === undefined ? null : norm(m[2])
    if (cited !== null && cited !== '' && !titles.some((t) => t.startsWith(cited)))
      problems.push(
        `${where}: ${m[0]}: §${n} is "${sections.find((s) => s.n === n && !s.sub)?.title}"` +
          `${
            titles.length > 1
              ? ` (subsections: ${sections
                  .filter((s) => s.n === n && s.sub)
                  .map((s) => `"${s.title}"`)
                  .join(', ')})`
              : ''
          }`,
      )
  }
  if (file.split(/[\\/]/).slice(0, 2).join('/') === 'src/contract')
    for (const m of text.matchAll(/METHODOLOGY §\d+/g))
      problems.push(
        `${file}:${lineOf(m.index ?? 0)}: ${m[0]}: cite docs/methodology.md with methodologyRef()`,
      )
  return problems
}

const SCANNED_DIRS = ['src', 'test', 'scripts', 'bench', 'docs']
const SCANNED_EXT = /\.(ts|tsx|mts|js|mjs|md|html)$/

function walk(dir: string, files: string[] = []): string[] {
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return files
  }
  for (const name of names) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue
    const p = join(dir, name)
    if (statSync(p).isDirectory()) walk(p, files)
    else if (SCANNED_EXT.test(name)) files.push(p)
  }
  return files
}

/** Every problem of the repository at `root` (empty: all in step). */
export async function checkDocs(root: string, blocks = GENERATED_BLOCKS): Promise<string[]> {
  const doc = readFileSync(join(root, METHODOLOGY_DOC), 'utf8')
  const problems = [...headingProblems(doc), ...anchorProblems(doc)]
  const files = [...SCANNED_DIRS.flatMap((d) => walk(join(root, d))), join(root, 'README.md')]
  for (const f of files) {
    // The citation checker's own test cites missing sections on purpose.
    if (relative(root, f).split(sep).join('/') === 'test/scripts/check-citations.test.ts') continue
    let text: string
    try {
      text = readFileSync(f, 'utf8')
    } catch {
      continue
    }
    problems.push(...citationProblems(relative(root, f).split(sep).join('/'), text))
  }
  for (const file of await staleDocs(root, blocks))
    problems.push(`${file}: generated text is stale (run npm run docs)`)
  return problems
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const problems = await checkDocs(REPO_ROOT)
  for (const p of problems) process.stderr.write(`${p}\n`)
  if (problems.length > 0) {
    process.stderr.write(`check-docs: ${problems.length} problem(s)\n`)
    process.exit(1)
  }
  process.stdout.write('check-docs: ok\n')
}
