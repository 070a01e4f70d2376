/**
 * The sections of docs/methodology.md, the authority for the math, keyed by stable names. Every
 * citation of the methodology in the contract (OpenAPI and MCP descriptions, comments) goes through
 * `methodologyRef`, so renumbering a section changes one line here; scripts/check-docs.ts fails
 * when the document's headings and this map disagree. Pure: no I/O.
 *
 * Order matters: it is the order of the headings in the document. A `sub` entry is a `###`
 * heading inside section `n`; the others are the numbered `## n. title` sections.
 */

export interface MethodologySection {
  /** The section number (for a `sub` entry: the section it belongs to). */
  n: number
  /** The heading text after `## n. ` (or after `### `), exactly as written in the document. */
  title: string
  sub?: true
}

export const METHODOLOGY_DOC = 'docs/methodology.md'

export const METHODOLOGY_SECTIONS = {
  parameters: { n: 1, title: 'Parameters' },
  inputs: { n: 2, title: 'Inputs and returns' },
  factors: { n: 3, title: 'Factor assignment' },
  window: { n: 4, title: 'Estimation window and weights' },
  cascade: { n: 5, title: 'The three-level cascade' },
  hedgeRatios: { n: 6, title: 'Hedge ratios' },
  explainedRisk: { n: 7, title: 'Explained risk' },
  styleSplit: { n: 7, title: 'Style split of the residual (attribution only)', sub: true },
  decomposition: { n: 8, title: 'Daily return decomposition' },
  lstar: { n: 9, title: 'Lstar and the recommended level' },
  volatility: { n: 10, title: 'Volatility, price and size' },
  universes: { n: 11, title: 'Universes' },
  crossSections: { n: 12, title: 'Cross-sectional products' },
  rankings: { n: 12, title: 'Rankings', sub: true },
  industryPanel: { n: 12, title: 'Industry beta panel', sub: true },
  residualReversion: { n: 12, title: 'Residual reversion', sub: true },
  requestTime: { n: 13, title: 'Request-time analytics' },
  lstarSeries: { n: 13, title: 'Lstar series', sub: true },
  monthlyL3: { n: 13, title: 'Monthly L3 decomposition', sub: true },
  etfFactorReturns: { n: 13, title: 'ETF factor returns', sub: true },
  reversionBasket: { n: 13, title: 'Residual-reversion basket', sub: true },
  correlation: { n: 13, title: 'Macro and style correlation', sub: true },
  portfolioRisk: { n: 13, title: 'Portfolio risk', sub: true },
  riskForecast: { n: 13, title: 'Risk forecast', sub: true },
  fundamentals: { n: 13, title: 'Fundamentals', sub: true },
  confidence: { n: 14, title: '`_agent.confidence`' },
  numerics: { n: 15, title: 'Numerical notes' },
} as const satisfies Record<string, MethodologySection>

export type MethodologyKey = keyof typeof METHODOLOGY_SECTIONS

/** The heading line the document must contain for `key` (`## 9. Lstar …` or `### Rankings`). */
export function methodologyHeading(key: MethodologyKey): string {
  const s: MethodologySection = METHODOLOGY_SECTIONS[key]
  return s.sub ? `### ${s.title}` : `## ${s.n}. ${s.title}`
}

/** `docs/methodology.md §9 "Lstar and the recommended level"`: how the contract cites the math. */
export function methodologyRef(key: MethodologyKey): string {
  const s: MethodologySection = METHODOLOGY_SECTIONS[key]
  return `${METHODOLOGY_DOC} §${s.n} "${s.title.replaceAll('`', '')}"`
}
