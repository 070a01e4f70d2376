import { createHash } from 'node:crypto'
import { AppError } from '../../platform/errors.ts'

/**
 * The cursor convention of every long list: `limit` rows from an opaque `cursor`, and back
 * `next_cursor` (null at the end) and `total`. A cursor holds its offset, the data it was made
 * on (data_as_of and build) and a digest of the other parameters; a cursor made on other data or
 * parameters is a 400, so a walk never mixes two lists.
 */
export interface PageRequest {
  limit: number
  cursor?: string | undefined
}

export interface Page<T> {
  rows: T[]
  next_cursor: string | null
  total: number
}

interface CursorBody {
  o: number
  d: string
  q: string
}

function digest(data: string, params: unknown): { d: string; q: string } {
  return {
    d: createHash('sha256').update(data).digest('base64url').slice(0, 12),
    q: createHash('sha256').update(JSON.stringify(params)).digest('base64url').slice(0, 12),
  }
}

/** The data a list was computed from, for `paginate`: data_as_of and build of the store. */
export const dataOf = (store: { dataAsOf: string; buildId: string | null }): string =>
  `${store.dataAsOf}/${store.buildId ?? ''}`

/** Where the request carries `cursor` (named in a refusal's field). */
type CursorIn = 'querystring' | 'body'

function offsetOf(cursor: string, want: { d: string; q: string }, where: CursorIn): number {
  const refused = (detail: string) =>
    new AppError('INVALID_REQUEST', detail, { fields: [{ field: `${where}.cursor`, message: detail }] })
  let body: CursorBody
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as CursorBody
  } catch {
    throw refused('cursor: not a cursor this server made')
  }
  if (!body || typeof body.o !== 'number' || !Number.isInteger(body.o) || body.o < 0)
    throw refused('cursor: not a cursor this server made')
  if (body.d !== want.d)
    throw refused(
      'cursor: made on other data (a newer build has been published since); start again without cursor',
    )
  if (body.q !== want.q)
    throw refused('cursor: made for other parameters; repeat the request that returned it')
  return body.o
}

/**
 * One page of `rows`. `data` names the data the list was computed from (data_as_of and build);
 * `params` the request's other parameters (everything but limit and cursor, defaults applied);
 * `where` the part of the request that carries the cursor.
 */
export function paginate<T>(
  rows: readonly T[],
  req: PageRequest,
  data: string,
  params: unknown,
  where: CursorIn = 'querystring',
): Page<T> {
  const want = digest(data, params)
  const from = req.cursor === undefined ? 0 : offsetOf(req.cursor, want, where)
  const to = Math.min(rows.length, from + req.limit)
  const next =
    to < rows.length
      ? Buffer.from(JSON.stringify({ o: to, ...want } satisfies CursorBody)).toString('base64url')
      : null
  return { rows: rows.slice(from, to), next_cursor: next, total: rows.length }
}
