import type { CompanyFundamentals } from './quarters.ts'

/**
 * The parsed quarters as the model store keeps them (one JSON document per company, written by
 * the build): the request path reads this digest, never the filings. JSON has no NaN, so an
 * unreported value (NaN) is written as null and read back as NaN.
 */
export function storedCompanyJson(c: CompanyFundamentals): string {
  // JSON.stringify itself writes every non-finite number as null; a replacer doing the same
  // cost about 0.7 ms a company (docs/performance.md, the first start's second pass).
  return JSON.stringify(c)
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
