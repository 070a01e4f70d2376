/**
 * Markdown → HTML for the documents erm3 serves as pages (docs/methodology.md at
 * /docs/methodology), with `marked` (loaded on first use: a node that never renders a page
 * never loads it).
 *
 * The output is safe to embed in a page under a CSP without scripts, whatever the Markdown
 * holds: raw HTML in the source (blocks and inline tags) is shown as text, HTML comments (the
 * `<!-- generated:… -->` markers) are dropped, links keep only `#…`, `/…`, http(s) and mailto
 * targets, and images become their alt text (nothing is fetched). Headings get the anchors
 * GitHub gives them (`headingSlug`), so a document's `[…](#9-lstar-and-the-recommended-level)`
 * links work in both places.
 */

import type { Token } from 'marked'

export interface RenderedHeading {
  depth: number
  /** Plain text of the heading (inline code without its backticks). */
  text: string
  id: string
}

export interface RenderedMarkdown {
  html: string
  headings: RenderedHeading[]
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}

export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ESCAPES[c] as string)

/**
 * The anchor GitHub gives a heading: lower case, punctuation other than `-` and `_` removed,
 * spaces to `-` (`14. \`_agent.confidence\`` → `14-_agentconfidence`). Accepts the heading's
 * Markdown source or its text: backticks and emphasis marks are punctuation.
 */
export function headingSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-')
}

/** Targets a rendered link may keep; anything else (javascript:, data:, …) renders as plain text. */
const SAFE_HREF = /^(?:#|\/(?!\/)|https?:\/\/|mailto:)/i

/**
 * Inline code that reads as a formula (an operator, a relation or a Greek letter) rather than a
 * name or a path: `β_m = <r,m> / <m,m>` gets class "math", `l3_sub_er` and `/decompose` do not.
 */
const FORMULA = /[=≤≥<>ΣΠ√·²^∈×−+/]|[\u0370-\u03ff]/
const PATH = /^(?:(?:GET|POST|PATCH|DELETE) )?\/[\w./{}:-]*$/
const isFormula = (code: string) => FORMULA.test(code) && !PATH.test(code)

/** The text of inline tokens without their markup (`**a** \`b\`` → `a b`). */
function plainText(tokens: readonly Token[]): string {
  return tokens
    .map((t) => ('tokens' in t && t.tokens ? plainText(t.tokens) : 'text' in t ? String(t.text) : ''))
    .join('')
}

export async function renderMarkdown(source: string): Promise<RenderedMarkdown> {
  const { Marked } = await import('marked')
  const headings: RenderedHeading[] = []
  const seen = new Map<string, number>()
  const marked = new Marked({ gfm: true, async: false })
  marked.use({
    renderer: {
      heading({ tokens, depth }) {
        const plain = plainText(tokens)
        const base = headingSlug(plain) || 'section'
        const n = seen.get(base) ?? 0
        seen.set(base, n + 1)
        const id = n === 0 ? base : `${base}-${n}`
        headings.push({ depth, text: plain, id })
        return `<h${depth} id="${escapeHtml(id)}">${this.parser.parseInline(tokens)}</h${depth}>\n`
      },
      html({ text, block }) {
        if (/^\s*<!--[\s\S]*-->\s*$/.test(text)) return ''
        return block ? `<p>${escapeHtml(text.trim())}</p>\n` : escapeHtml(text)
      },
      link({ href, title, tokens }) {
        const inner = this.parser.parseInline(tokens)
        if (!SAFE_HREF.test(href.trim())) return inner
        const t = title ? ` title="${escapeHtml(title)}"` : ''
        return `<a href="${escapeHtml(href.trim())}"${t}>${inner}</a>`
      },
      image({ text }) {
        return escapeHtml(text)
      },
      codespan({ text }) {
        // marked hands the span's text as written (entities unresolved); escape it once.
        const cls = isFormula(text) ? ' class="math"' : ''
        return `<code${cls}>${escapeHtml(text)}</code>`
      },
    },
  })
  const html = (marked.parse(source) as string)
    .replaceAll('<table>', '<div class="table"><table>')
    .replaceAll('</table>', '</table></div>')
  return { html, headings }
}
