/**
 * Every citation resolves inside the repository. Scans src/, test/, bench/, scripts/, docs/,
 * README.md and CONTRIBUTING.md (.ts .mjs .js .md .html .css) and reports:
 *
 * - a citation of a document or tracker that is not in the repository (FORBIDDEN below);
 * - a reference `docs/<path>.md` to a file that does not exist, or `docs/<path>.md §n` to a
 *   section that file does not have (a heading `# n.` or `## n.`);
 * - a relative Markdown link in docs/, README.md or CONTRIBUTING.md that resolves to nothing.
 *
 * In code files only comments and string literals are read: a constant may be named after a
 * document. Exits non-zero listing every finding; `npm run lint` runs it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

export interface Finding {
  /** Repository-relative path, with `/` separators. */
  file: string
  line: number
  message: string
}

/** Citations of documents kept outside the repository, and of issue numbers. */
const FORBIDDEN: readonly { re: RegExp; what: string }[] = [
  { re: /\bMETHODOLOGY\b/g, what: 'cite docs/methodology.md §n instead of METHODOLOGY' },
  { re: /\bDECISIONS(?:\.md)?\b/g, what: 'cite docs/decisions/<topic>.md instead of DECISIONS.md' },
  { re: /\bDESIGN\.md\b/g, what: 'cite docs/architecture.md §n instead of DESIGN.md' },
  { re: /\bSTYLE\.md\b/g, what: 'cite CONTRIBUTING.md instead of STYLE.md' },
  { re: /\bspec\s*§/gi, what: 'name the operation or an in-repo doc instead of the interface spec' },
  { re: /\bissues?[\s-]*#?\d+/gi, what: 'say what the issue asked for instead of its number' },
]

/** Roots scanned, relative to the repository. */
const ROOTS = ['src', 'test', 'bench', 'scripts', 'docs', 'README.md', 'CONTRIBUTING.md']
const EXTENSIONS = /\.(ts|mjs|js|md|html|css)$/
const CODE = /\.(ts|mjs|js)$/
/** This check and its test spell out every forbidden form on purpose. */
const EXEMPT = new Set([
  'scripts/check-citations.ts',
  'test/scripts/check-citations.test.ts',
  // The methodology checker names the forbidden form in its messages and tests.
  'scripts/check-docs.ts',
  'test/scripts/check-docs.test.ts',
])

/** `docs/<path>.md`, optionally reached by `../` or `/`, never as part of a longer path or URL. */
const DOC_REF = /(?<![\w.\-/])(?:\.\.?\/|\/)*docs\/([\w.\-/]+?\.md)\b/g
/** The section run after a reference: `§5`, `§5–§7`, `§2–§7, §10`. */
const SECTION_RUN = /^\s*§\s*\d+(?:\s*(?:[–-]|,|and|or)\s*§?\s*\d+)*/
const MD_LINK = /!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g
const MD_REF_DEF = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm

/** Pieces of a file to read: the whole text, or each comment and string literal of code. */
interface Piece {
  text: string
  offset: number
}

/** Tokens after which a `/` divides; after anything else it starts a regular expression. */
const ENDS_OPERAND = new Set<ts.SyntaxKind>([
  ts.SyntaxKind.Identifier,
  ts.SyntaxKind.PrivateIdentifier,
  ts.SyntaxKind.NumericLiteral,
  ts.SyntaxKind.BigIntLiteral,
  ts.SyntaxKind.StringLiteral,
  ts.SyntaxKind.RegularExpressionLiteral,
  ts.SyntaxKind.NoSubstitutionTemplateLiteral,
  ts.SyntaxKind.TemplateTail,
  ts.SyntaxKind.CloseParenToken,
  ts.SyntaxKind.CloseBracketToken,
  ts.SyntaxKind.CloseBraceToken,
  ts.SyntaxKind.PlusPlusToken,
  ts.SyntaxKind.MinusMinusToken,
  ts.SyntaxKind.ThisKeyword,
  ts.SyntaxKind.SuperKeyword,
  ts.SyntaxKind.TrueKeyword,
  ts.SyntaxKind.FalseKeyword,
  ts.SyntaxKind.NullKeyword,
])

const STRINGS = new Set<ts.SyntaxKind>([
  ts.SyntaxKind.StringLiteral,
  ts.SyntaxKind.NoSubstitutionTemplateLiteral,
  ts.SyntaxKind.TemplateHead,
  ts.SyntaxKind.TemplateMiddle,
  ts.SyntaxKind.TemplateTail,
])

/**
 * The comments and string literals of a code file, by one pass of the TypeScript scanner (a full
 * parse costs ten times as much): a `/` starts a regular expression unless it follows an operand,
 * and a `}` that closes a template substitution resumes the template.
 */
export function codePieces(text: string): Piece[] {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, text)
  const pieces: Piece[] = []
  const templates: number[] = [] // brace depth at each open template substitution
  let depth = 0
  let previous = ts.SyntaxKind.Unknown
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    if (kind === ts.SyntaxKind.SingleLineCommentTrivia || kind === ts.SyntaxKind.MultiLineCommentTrivia) {
      pieces.push({ text: scanner.getTokenText(), offset: scanner.getTokenStart() })
      continue
    }
    if (
      kind === ts.SyntaxKind.WhitespaceTrivia ||
      kind === ts.SyntaxKind.NewLineTrivia ||
      kind === ts.SyntaxKind.ShebangTrivia ||
      kind === ts.SyntaxKind.ConflictMarkerTrivia
    )
      continue
    if (
      (kind === ts.SyntaxKind.SlashToken || kind === ts.SyntaxKind.SlashEqualsToken) &&
      !ENDS_OPERAND.has(previous)
    )
      kind = scanner.reScanSlashToken()
    else if (kind === ts.SyntaxKind.OpenBraceToken) depth++
    else if (kind === ts.SyntaxKind.CloseBraceToken) {
      if (templates.length > 0 && templates[templates.length - 1] === depth) {
        templates.pop()
        kind = scanner.reScanTemplateToken(false)
      } else depth--
    }
    if (kind === ts.SyntaxKind.TemplateHead || kind === ts.SyntaxKind.TemplateMiddle) templates.push(depth)
    if (STRINGS.has(kind)) pieces.push({ text: scanner.getTokenText(), offset: scanner.getTokenStart() })
    previous = kind
  }
  return pieces
}

/** Markdown text with fenced code blocks and inline code blanked (lengths and lines kept). */
function withoutCode(md: string): string {
  const blank = (s: string) => s.replace(/[^\n]/g, ' ')
  return md.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, blank).replace(/`[^`\n]*`/g, blank)
}

const lineAt = (text: string, offset: number) => text.slice(0, offset).split('\n').length

export class CitationChecker {
  private readonly headings = new Map<string, Set<number> | null>()

  constructor(private readonly root: string) {}

  /** Section numbers of a repository file (`# n.` / `## n.` headings), or null when it is missing. */
  private sections(rel: string): Set<number> | null {
    let s = this.headings.get(rel)
    if (s === undefined) {
      const path = join(this.root, rel)
      s = existsSync(path) && statSync(path).isFile() ? new Set<number>() : null
      if (s) for (const m of readFileSync(path, 'utf8').matchAll(/^#{1,2} (\d+)\./gm)) s.add(Number(m[1]))
      this.headings.set(rel, s)
    }
    return s
  }

  /** Findings of one file; `rel` is repository-relative with `/` separators. */
  checkText(rel: string, text: string): Finding[] {
    if (EXEMPT.has(rel)) return []
    const out: Finding[] = []
    // A Markdown link's target is checked as a link (below), not again as a reference.
    const prose = rel.endsWith('.md')
      ? text.replace(MD_LINK, (m) => m.replace(/\]\([^)]*\)$/, (l) => l.replace(/./g, ' ')))
      : text
    const pieces = CODE.test(rel) ? codePieces(text) : [{ text: prose, offset: 0 }]
    for (const p of pieces) {
      for (const { re, what } of FORBIDDEN)
        for (const m of p.text.matchAll(re))
          out.push({
            file: rel,
            line: lineAt(text, p.offset + (m.index ?? 0)),
            message: `"${m[0]}": ${what}`,
          })
      for (const m of p.text.matchAll(DOC_REF)) {
        const target = `docs/${m[1]}`
        const line = lineAt(text, p.offset + (m.index ?? 0))
        const sections = this.sections(target)
        if (!sections) {
          out.push({ file: rel, line, message: `${target} does not exist` })
          continue
        }
        const run = SECTION_RUN.exec(p.text.slice((m.index ?? 0) + m[0].length))
        for (const n of run ? (run[0].match(/\d+/g) ?? []) : [])
          if (!sections.has(Number(n)))
            out.push({ file: rel, line, message: `${target} has no section §${n} (no heading "## ${n}.")` })
      }
    }
    if (rel.endsWith('.md') && (rel.startsWith('docs/') || !rel.includes('/')))
      out.push(...this.checkLinks(rel, text))
    return out
  }

  private checkLinks(rel: string, text: string): Finding[] {
    const out: Finding[] = []
    const md = withoutCode(text)
    for (const m of [...md.matchAll(MD_LINK), ...md.matchAll(MD_REF_DEF)]) {
      const target = (m[1] ?? '').split('#')[0]?.split('?')[0] ?? ''
      // Absolute URLs, site paths and same-page anchors are not files of the repository.
      if (target === '' || /^[a-z][a-z\d+.-]*:/i.test(target) || target.startsWith('/')) continue
      const path = resolve(this.root, dirname(rel), decodeURIComponent(target))
      if (!existsSync(path))
        out.push({
          file: rel,
          line: lineAt(md, m.index ?? 0),
          message: `link to ${m[1]} resolves to nothing`,
        })
    }
    return out
  }

  /** Findings of every scanned file under the root. */
  checkTree(): Finding[] {
    const files: string[] = []
    const walk = (path: string) => {
      if (!existsSync(path)) return
      if (statSync(path).isDirectory()) {
        for (const name of readdirSync(path).sort()) if (name !== 'node_modules') walk(join(path, name))
      } else if (EXTENSIONS.test(path)) files.push(path)
    }
    for (const r of ROOTS) walk(join(this.root, r))
    return files.flatMap((f) =>
      this.checkText(relative(this.root, f).split(sep).join('/'), readFileSync(f, 'utf8')),
    )
  }
}

export function checkCitations(root: string): Finding[] {
  return new CitationChecker(root).checkTree()
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
  const findings = checkCitations(root)
  for (const f of findings) process.stderr.write(`${f.file}:${f.line}: ${f.message}\n`)
  if (findings.length > 0) {
    process.stderr.write(`check-citations: ${findings.length} citation(s) do not resolve in the repository\n`)
    process.exit(1)
  }
  process.stdout.write('check-citations: ok\n')
}
