import type { FastifyRequest } from 'fastify'
import type { TabularFormat } from '../contract/table.ts'
import { AppError } from '../platform/errors.ts'

const MEDIA: Record<string, TabularFormat> = {
  'application/vnd.apache.parquet': 'parquet',
  'text/csv': 'csv',
  'application/json': 'json',
  'application/*': 'json',
  '*/*': 'json',
}

/** Accept header → the best of json/parquet/csv by q-value (ties: the order written), or null if none. */
function fromAccept(accept: string, tabular: boolean): TabularFormat | null {
  const ranges = accept
    .split(',')
    .map((part, i) => {
      const [type = '', ...params] = part.trim().split(';')
      const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
      return { type: type.trim().toLowerCase(), q: q ? Number(q.slice(2)) : 1, i }
    })
    .filter((r) => r.type !== '' && r.q > 0 && MEDIA[r.type] && (tabular || MEDIA[r.type] === 'json'))
    .sort((a, b) => b.q - a.q || a.i - b.i)
  const best = ranges[0]
  return best ? (MEDIA[best.type] ?? null) : null
}

/**
 * The representation a request asks for: `format` (query, or a JSON body
 * member for POST operations) wins; else the Accept header; else JSON. Anything else is 406.
 * Operations without a tabular form accept only JSON.
 */
export function negotiateFormat(req: FastifyRequest, tabular: boolean): TabularFormat {
  const q = (req.query ?? {}) as Record<string, unknown>
  const b = (req.body && typeof req.body === 'object' ? req.body : {}) as Record<string, unknown>
  const given = q.format ?? b.format
  let format: TabularFormat | null
  if (given !== undefined) {
    const f = String(given).toLowerCase()
    format = f === 'json' || f === 'parquet' || f === 'csv' ? f : null
    if (!format)
      throw new AppError(
        'UNSUPPORTED_FORMAT',
        `format must be json, parquet or csv, got ${JSON.stringify(given)}`,
      )
  } else {
    const accept = req.headers.accept
    format = accept ? fromAccept(accept, tabular) : 'json'
    if (!format)
      throw new AppError(
        'UNSUPPORTED_FORMAT',
        `Cannot produce ${JSON.stringify(accept)}: use application/json${tabular ? ', application/vnd.apache.parquet or text/csv' : ''}`,
      )
  }
  if (format !== 'json' && !tabular)
    throw new AppError('UNSUPPORTED_FORMAT', 'This operation has no tabular form: only JSON is available')
  return format
}
