/**
 * Writes the generated parts of the client libraries from the OpenAPI document the contract
 * builds: clients/typescript/src/operations.ts (types and operation table) and
 * clients/python/erm3/_operations.py (operation table, error codes, one method per operation).
 * test/clients/generated.test.ts fails when a committed file differs from what this writes now,
 * so an operation, parameter or field added to the contract reaches both clients with its change.
 *
 * Usage: node --import tsx scripts/gen-clients.ts [--check]
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildOpenApi } from '../src/contract/openapi.ts'
import { clientOperations, type Doc } from './client-gen/model.ts'
import { pythonOperations } from './client-gen/python.ts'
import { typescriptOperations } from './client-gen/typescript.ts'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** Each generated file (path from the repository root) and its text, from the contract's document or `doc`. */
export function clientFiles(
  doc = buildOpenApi({ publicUrl: 'http://127.0.0.1:8080' }) as unknown as Doc,
): Record<string, string> {
  const ops = clientOperations(doc)
  return {
    'clients/typescript/src/operations.ts': typescriptOperations(doc, ops),
    'clients/python/erm3/_operations.py': pythonOperations(doc, ops),
  }
}

/** The generated files whose committed text differs from what the contract gives now. */
export function staleClientFiles(): string[] {
  return Object.entries(clientFiles())
    .filter(([path, text]) => {
      try {
        return readFileSync(join(ROOT, path), 'utf8') !== text
      } catch {
        return true
      }
    })
    .map(([path]) => path)
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--check')) {
    const stale = staleClientFiles()
    for (const p of stale) console.error(`${p} is stale: run npm run gen:clients`)
    process.exitCode = stale.length > 0 ? 1 : 0
  } else {
    for (const [path, text] of Object.entries(clientFiles())) writeFileSync(join(ROOT, path), text)
  }
}
