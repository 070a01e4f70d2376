/** Reading Polygon's JSON: typed fields with clear errors, and `next_url` pagination. */
import { type HttpClient, SourceError } from './http.ts'

export type Row = Record<string, unknown>

export const fail = (message: string): never => {
  throw new SourceError('polygon', 200, message)
}

/** A finite number field of a row, or a clear error naming it. */
export function field(row: Row, name: string, what: string): number {
  const v = row[name]
  return typeof v === 'number' && Number.isFinite(v) ? v : fail(`${what}: ${name} is not a number`)
}

export function text(row: Row, name: string, what: string): string {
  const v = row[name]
  return typeof v === 'string' && v !== '' ? v : fail(`${what}: ${name} is missing`)
}

/**
 * Every row of a paginated v3 listing: `results` of each page, following `next_url`. The next_url
 * carries no key; the client adds it back, and only towards the configured host.
 */
export async function* paged(
  api: HttpClient,
  base: string,
  path: string,
  query: Record<string, string | number>,
  signal?: AbortSignal,
): AsyncGenerator<Row> {
  let next: string | null = path
  let q: Record<string, string | number> | undefined = query
  while (next !== null) {
    const body: unknown = await api.getJson(next, { query: q, signal })
    if (typeof body !== 'object' || body === null) fail(`${path}: expected a JSON object`)
    const page = body as { results?: unknown; next_url?: unknown }
    if (page.results !== undefined && !Array.isArray(page.results)) fail(`${path}: results is not a list`)
    for (const r of (page.results ?? []) as unknown[]) {
      if (typeof r !== 'object' || r === null) fail(`${path}: a result is not an object`)
      yield r as Row
    }
    next = typeof page.next_url === 'string' && page.next_url !== '' ? page.next_url : null
    if (next !== null && new URL(next).origin !== new URL(base).origin)
      fail(`${path}: next_url points to another host (${new URL(next).origin})`)
    q = undefined
  }
}
