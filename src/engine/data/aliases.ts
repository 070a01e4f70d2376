/**
 * The one ticker-spelling rule, applied identically by the importer, the API, MCP and the CLI.
 * Share classes are written with a dot (`BRK.B`); data vendors also use `BRK-B`, `BRK/B` and
 * `BRK B`. Tickers are trimmed and upper-cased; valid canonical tickers are 1–12 characters of
 * `[A-Z0-9.-]`.
 */
const SHARE_CLASS_RE = /^([A-Z0-9]+)[-/ ]([A-Z])$/
const VALID_RE = /^[A-Z0-9][A-Z0-9.-]{0,11}$/

export function canonicalTicker(raw: string): string {
  const t = raw.trim().toUpperCase()
  const m = SHARE_CLASS_RE.exec(t)
  return m ? `${m[1]}.${m[2]}` : t
}

export function isValidTicker(t: string): boolean {
  return VALID_RE.test(t)
}
