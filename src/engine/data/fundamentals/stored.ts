import { promisify } from 'node:util'
import { gzip } from 'node:zlib'
import type { CompanyFundamentals } from './quarters.ts'

const gzipAsync = promisify(gzip)

/**
 * The parsed quarters as the model store keeps them (one JSON document per company, written by
 * the build): the request path reads this digest, never the filings. JSON has no NaN, so an
 * unreported value (NaN) is written as null and read back as NaN.
 */
function storedCompanyJson(c: CompanyFundamentals): string {
  // JSON.stringify itself writes every non-finite number as null; a replacer doing the same
  // cost about 0.7 ms a company (docs/performance.md, the first start's second pass).
  return JSON.stringify(c)
}

/**
 * storedCompanyJson gzip-compressed (level 6), as the build writes it (STORE_FILES.fundamentals,
 * `.json.gz`: `zcat` reads it). Async: the deflate runs on libuv's pool, not the calling thread.
 * gzip over brotli: 4.8 % against brotli 6's 4.0 % of the JSON, for 20 % less write CPU and the
 * same read time, and every standard tool reads it (docs/performance.md, "Fundamentals digests
 * compressed").
 */
export function storedCompanyGzip(c: CompanyFundamentals): Promise<Uint8Array> {
  return gzipAsync(storedCompanyJson(c))
}

/** The inverse of storedCompanyJson on an already parsed document. */
export function reviveStoredCompany(doc: unknown): CompanyFundamentals {
  const c = doc as CompanyFundamentals
  if (!c || typeof c !== 'object' || !Array.isArray(c.quarters) || typeof c.cik !== 'number') {
    throw new Error('not a stored fundamentals document')
  }
  for (const q of c.quarters) {
    for (const v of q.versions) {
      const values = v.values as Record<string, number | null>
      for (const k of Object.keys(values)) if (values[k] === null) values[k] = Number.NaN
    }
  }
  return c
}
