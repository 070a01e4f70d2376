import type { FlatTable } from '../../contract/table.ts'
import { AppError } from '../../platform/errors.ts'

/**
 * `fields` of a wide history answer: a comma-separated string or an array (whose items may hold
 * commas too), checked against the operation's selectable names. Null when not given (all
 * fields). An unknown or empty selection is a 400 that lists the names allowed.
 */
export function parseFields(
  raw: string | readonly string[] | undefined,
  allowed: readonly string[],
  where: 'querystring' | 'body' = 'querystring',
): ReadonlySet<string> | null {
  if (raw === undefined) return null
  const names = (typeof raw === 'string' ? [raw] : raw)
    .flatMap((x) => x.split(','))
    .map((x) => x.trim())
    .filter((x) => x !== '')
  const unknown = names.filter((x) => !allowed.includes(x))
  if (unknown.length || names.length === 0) {
    const what = unknown.length ? `unknown field ${unknown.join(', ')}` : 'no field named'
    throw new AppError('INVALID_REQUEST', `fields: ${what}; allowed: ${allowed.join(', ')}`, {
      fields: [{ field: `${where}.fields`, message: `allowed: ${allowed.join(', ')}` }],
      extra: { allowed_fields: allowed },
    })
  }
  return new Set(names)
}

/** `obj` without the selectable keys left out of `selected` (a copy; the rest kept as is). */
export function keepFields<T extends object>(
  obj: T,
  allowed: readonly string[],
  selected: ReadonlySet<string> | null,
): T {
  if (!selected) return obj
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(obj)) if (!allowed.includes(k) || selected.has(k)) out[k] = v
  return out as T
}

/** The table without the selectable columns left out of `selected`. */
export function keepColumns(
  table: FlatTable,
  allowed: readonly string[],
  selected: ReadonlySet<string> | null,
): FlatTable {
  if (!selected) return table
  return { ...table, columns: table.columns.filter((c) => !allowed.includes(c.name) || selected.has(c.name)) }
}
