/**
 * The configuration reference in docs/configuration.md, generated from the one schema
 * (CONFIG_VARS in src/platform/config.ts) between `<!-- generated:config -->` and
 * `<!-- /generated:config -->`.
 *
 *   node --import tsx scripts/docs-config.ts           rewrite the block
 *   node --import tsx scripts/docs-config.ts --check   exit 1 when the block is out of date
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CONFIG_GROUPS, CONFIG_VARS, type ConfigGroup, type ConfigVar } from '../src/platform/config.ts'

export const CONFIG_DOC = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'configuration.md')
const BEGIN = '<!-- generated:config -->'
const END = '<!-- /generated:config -->'

/** A table cell: one line, no column break. */
const cell = (s: string) => s.replaceAll('|', '\\|').replaceAll('\n', ' ')

function defaultOf(v: ConfigVar<unknown>): string {
  if (v.defaultText !== undefined) return v.defaultText
  const d = v.default
  if (d === null || (Array.isArray(d) && d.length === 0)) return '—'
  return `\`${String(d)}\``
}

/** One table per group, in CONFIG_GROUPS order, variables in schema order; ends with a newline. */
export function renderConfigTable(): string {
  const vars = Object.entries(CONFIG_VARS) as [string, ConfigVar<unknown>][]
  const parts: string[] = []
  for (const [group, title] of Object.entries(CONFIG_GROUPS) as [ConfigGroup, string][]) {
    const rows = vars
      .filter(([, v]) => v.group === group)
      .map(([name, v]) => {
        const meaning = v.secret ? `${v.description}. Secret: never logged or echoed` : v.description
        return `| \`${name}\` | ${cell(defaultOf(v))} | ${cell(v.expects)} | ${cell(meaning)} |`
      })
    parts.push(
      `### ${title}\n\n| variable | default | accepts | meaning |\n|---|---|---|---|\n${rows.join('\n')}\n`,
    )
  }
  return parts.join('\n')
}

/** `doc` with its generated block replaced by `block` (the markers stay). */
export function withBlock(doc: string, block: string): string {
  const start = doc.indexOf(BEGIN)
  const end = doc.indexOf(END)
  if (start < 0 || end < start) throw new Error(`${CONFIG_DOC}: no ${BEGIN} … ${END} block`)
  return `${doc.slice(0, start + BEGIN.length)}\n${block}${doc.slice(end)}`
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const doc = readFileSync(CONFIG_DOC, 'utf8')
  const next = withBlock(doc, renderConfigTable())
  if (process.argv.includes('--check')) {
    if (next !== doc) {
      process.stderr.write(`${CONFIG_DOC} is out of date: run node --import tsx scripts/docs-config.ts\n`)
      process.exit(1)
    }
    process.stdout.write('docs-config: up to date\n')
  } else if (next !== doc) {
    writeFileSync(CONFIG_DOC, next)
    process.stdout.write(`docs-config: wrote ${CONFIG_DOC}\n`)
  }
}
