/**
 * A small RFC 4180 reader for the CSV files public sources publish (Treasury rates, iShares
 * holdings): quoted fields with doubled quotes and embedded commas or line breaks, CRLF or LF, a
 * byte-order mark. Every row is kept, blank ones as `['']`: the callers skip title rows themselves.
 */
export function csvRows(text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let cell = ''
  let quoted = false
  const s = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  for (let i = 0; i < s.length; i++) {
    const c = s[i]
    if (quoted) {
      if (c !== '"') cell += c
      else if (s[i + 1] === '"') {
        cell += '"'
        i++
      } else quoted = false
    } else if (c === '"') quoted = true
    else if (c === ',') {
      row.push(cell)
      cell = ''
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && s[i + 1] === '\n') i++
      row.push(cell)
      rows.push(row)
      row = []
      cell = ''
    } else cell += c
  }
  if (cell !== '' || row.length > 0) {
    row.push(cell)
    rows.push(row)
  }
  return rows
}

/** A number as published: thousands separators, a trailing `%` and blanks (`-`, `.`, ``) → NaN. */
export function publishedNumber(raw: string | undefined): number {
  const t = (raw ?? '').trim().replace(/,/g, '').replace(/%$/, '')
  if (t === '' || t === '-' || t === '.' || t === 'N/A') return Number.NaN
  const n = Number(t)
  return Number.isFinite(n) ? n : Number.NaN
}
