// A module resolve hook (node:module register) that appends every resolved URL to the file named
// by ERM3_IMPORT_LOG: test/meta/lazy-imports.test.ts uses it to see what an import loads.
import { appendFileSync } from 'node:fs'

export async function resolve(specifier, context, next) {
  const r = await next(specifier, context)
  if (process.env.ERM3_IMPORT_LOG) appendFileSync(process.env.ERM3_IMPORT_LOG, `${r.url}\n`)
  return r
}
