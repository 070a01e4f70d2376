import { basename } from 'node:path'

/**
 * Tenor labels are `<n>m` or `<n>y` (`1m`, `3m`, `1y`, `10y`). Users and sources spell them many
 * ways: `3month`, `3 Mo`, `BC_3MONTH`, FRED's `DGS10`/`DGS3MO`/`DTB3`/`DTB4WK`, Yahoo's `^IRX`.
 * Bill tenors in weeks map to their conventional month label (13 weeks = 3m).
 */
const WEEKS_TO_LABEL: Readonly<Record<number, string>> = {
  4: '1m',
  8: '2m',
  13: '3m',
  17: '4m',
  26: '6m',
  52: '1y',
}

/** Yahoo Treasury yield indices. */
const INDEX_TENORS: Readonly<Record<string, string>> = { IRX: '3m', FVX: '5y', TNX: '10y', TYX: '30y' }

const PATTERNS: { re: RegExp; unit: 'm' | 'y' | 'w' }[] = [
  { re: /^DGS(\d+)MO$/, unit: 'm' },
  { re: /^DGS(\d+)$/, unit: 'y' },
  { re: /^DTB(\d+)WK$/, unit: 'w' },
  { re: /^DTB(\d+)YR$/, unit: 'y' },
  { re: /^DTB(\d+)$/, unit: 'm' },
  { re: /^TB(\d+)MS$/, unit: 'm' },
  { re: /^(?:BC)?(\d+)(?:M|MO|MON|MONTH|MONTHS)$/, unit: 'm' },
  { re: /^(?:BC)?(\d+)(?:Y|YR|YRS|YEAR|YEARS)$/, unit: 'y' },
  { re: /^(?:BC)?(\d+)(?:W|WK|WEEK|WEEKS)$/, unit: 'w' },
]

function label(n: number, unit: 'm' | 'y' | 'w'): string | null {
  if (!Number.isSafeInteger(n) || n <= 0) return null
  if (unit === 'w') return WEEKS_TO_LABEL[n] ?? null
  if (unit === 'm' && n % 12 === 0) return `${n / 12}y`
  return `${n}${unit}`
}

/** The tenor a column or token name denotes, or null. */
export function tenorFromName(name: string): string | null {
  const key = name.toUpperCase().replace(/[^A-Z0-9]/g, '')
  const idx = INDEX_TENORS[key]
  if (idx) return idx
  for (const { re, unit } of PATTERNS) {
    const m = re.exec(key)
    if (m) return label(Number(m[1]), unit)
  }
  return null
}

/** A tenor named by the file (e.g. `IRX_yahoo_13week_…csv`, `DTB3.csv`), or null. */
export function tenorFromFileName(file: string): string | null {
  const stem = basename(file).replace(/\.(csv|parquet|pq|gz|txt)$/gi, '')
  for (const token of stem.split(/[^A-Za-z0-9^]+/)) {
    const t = tenorFromName(token)
    if (t) return t
  }
  return null
}

/** Maturity in months, for sorting tenors. */
export function tenorMonths(t: string): number {
  const n = Number.parseInt(t, 10)
  return t.endsWith('y') ? n * 12 : n
}
