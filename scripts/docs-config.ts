/**
 * The configuration reference in docs/configuration.md, generated from the one schema
 * (CONFIG_VARS in src/platform/config.ts) between `<!-- generated:config -->` and
 * `<!-- /generated:config -->`: scripts/docs.ts writes it (`npm run docs`) and checks it in lint.
 */
import { CONFIG_GROUPS, CONFIG_VARS, type ConfigGroup, type ConfigVar } from '../src/platform/config-vars.ts'

export const CONFIG_DOC = 'docs/configuration.md'

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
