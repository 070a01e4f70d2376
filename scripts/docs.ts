/**
 * Generated pieces of the repository's documents. A piece is the text between two markers in a
 * Markdown file,
 *
 *   <!-- generated:NAME -->
 *   … written by render() …
 *   <!-- /generated:NAME -->
 *
 * rewritten from the code that owns the facts, so the document cannot drift from it. `npm run
 * docs` rewrites every piece; `npm run lint` runs scripts/check-docs.ts, which fails when a
 * piece is stale (its text differs from what render() gives now).
 *
 * To generate another piece: put the two markers in the document and add a
 * `{ file, name, render }` entry to GENERATED_BLOCKS (render may be async and may import code
 * from src/; it returns the Markdown between the markers, without them).
 *
 * Usage: node --import tsx scripts/docs.ts [--check]
 */
import { readFile, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  METHODOLOGY_DOC,
  METHODOLOGY_SECTIONS,
  type MethodologySection,
} from '../src/contract/methodology.ts'
import { headingSlug } from '../src/platform/markdown.ts'
import { MODEL_VERSION } from '../src/platform/model-version.ts'
import { CONFIG_DOC, renderConfigTable } from './docs-config.ts'

export interface GeneratedBlock {
  /** Repository-relative path of the Markdown file. */
  file: string
  /** The NAME of the markers. */
  name: string
  render: () => string | Promise<string>
}

/** The version line of docs/methodology.md, from the constant every build and response uses. */
function modelVersionBlock(): string {
  return `**Model version \`${MODEL_VERSION}\`** (\`_metadata.model_version\`, the \`X-Risk-Model-Version\` header and
every build's \`manifest.json\`). The number goes up whenever the same inputs would give different
numbers; a server refuses a model store built under another version.`
}

/** The contents line of docs/methodology.md: its numbered sections, from the section map. */
function methodologyContentsBlock(): string {
  const sections = Object.values(METHODOLOGY_SECTIONS as Record<string, MethodologySection>).filter(
    (s) => !s.sub,
  )
  const links = sections.map((s) => `[${s.n} ${s.title}](#${headingSlug(`${s.n}. ${s.title}`)})`)
  const lines: string[] = []
  let line = 'Contents:'
  for (const [i, l] of links.entries()) {
    const piece = `${l}${i < links.length - 1 ? ' ·' : ''}`
    if (`${line} ${piece}`.length > 96) {
      lines.push(line)
      line = piece
    } else line = `${line} ${piece}`
  }
  lines.push(line)
  return lines.join('\n')
}

export const GENERATED_BLOCKS: GeneratedBlock[] = [
  { file: METHODOLOGY_DOC, name: 'model-version', render: modelVersionBlock },
  { file: METHODOLOGY_DOC, name: 'contents', render: methodologyContentsBlock },
  { file: CONFIG_DOC, name: 'config', render: renderConfigTable },
]

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * `text` with the piece NAME replaced by `body` (markers kept, each on its own line). Throws when
 * the markers are missing, repeated or out of order: a piece never lands somewhere unintended.
 */
export function replaceBlock(text: string, name: string, body: string): string {
  const open = `<!-- generated:${name} -->`
  const close = `<!-- /generated:${name} -->`
  const count = (m: string) => text.split(m).length - 1
  if (count(open) !== 1 || count(close) !== 1)
    throw new Error(`expected one "${open}" and one "${close}", found ${count(open)} and ${count(close)}`)
  const re = new RegExp(`${escapeRe(open)}[^\\n]*\\n?([\\s\\S]*?)${escapeRe(close)}`)
  if (!re.test(text)) throw new Error(`"${close}" comes before "${open}"`)
  const inner = body.trim() === '' ? '' : `${body.trimEnd()}\n`
  return text.replace(re, () => `${open}\n${inner}${close}`)
}

export interface FileResult {
  file: string
  before: string
  after: string
}

/** Every file of `blocks` with its pieces rendered (nothing is written). */
export async function renderDocs(root: string, blocks: readonly GeneratedBlock[]): Promise<FileResult[]> {
  const byFile = new Map<string, GeneratedBlock[]>()
  for (const b of blocks) byFile.set(b.file, [...(byFile.get(b.file) ?? []), b])
  const out: FileResult[] = []
  for (const [file, list] of byFile) {
    const before = await readFile(join(root, file), 'utf8')
    let after = before
    for (const b of list) {
      try {
        after = replaceBlock(after, b.name, await b.render())
      } catch (err) {
        throw new Error(`${file}: generated:${b.name}: ${(err as Error).message}`)
      }
    }
    out.push({ file, before, after })
  }
  return out
}

/** Files whose generated pieces are stale: `npm run docs` would change them. */
export async function staleDocs(root: string, blocks = GENERATED_BLOCKS): Promise<string[]> {
  return (await renderDocs(root, blocks)).filter((r) => r.before !== r.after).map((r) => r.file)
}

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check')
  const results = await renderDocs(REPO_ROOT, GENERATED_BLOCKS)
  const changed = results.filter((r) => r.before !== r.after)
  if (check) {
    for (const r of changed) process.stderr.write(`${r.file}: generated text is stale (run npm run docs)\n`)
    process.exit(changed.length > 0 ? 1 : 0)
  }
  for (const r of changed) {
    await writeFile(join(REPO_ROOT, r.file), r.after)
    process.stdout.write(`docs: wrote ${r.file}\n`)
  }
  if (changed.length === 0) process.stdout.write('docs: up to date\n')
}
