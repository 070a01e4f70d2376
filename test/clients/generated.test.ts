import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Type } from 'typebox'
import { OPERATIONS as TS_OPERATIONS } from '../../clients/typescript/src/operations.ts'
import { clientOperations, type Doc } from '../../scripts/client-gen/model.ts'
import { clientFiles, staleClientFiles } from '../../scripts/gen-clients.ts'
import { buildOpenApi } from '../../src/contract/openapi.ts'
import { OPERATIONS } from '../../src/contract/operations.ts'
import { getHealth } from '../../src/contract/ops/account.ts'

type Json = Record<string, unknown>

/** The test's own reading of an OpenAPI document: each operation's names, to compare with a client's table. */
function surface(doc: Json): Record<string, Json> {
  const schemas = (doc.components as { schemas: Record<string, Json> }).schemas
  const deref = (s: Json): Json =>
    typeof s.$ref === 'string' ? (schemas[s.$ref.split('/').pop() ?? ''] ?? {}) : s
  const props = (s: Json): string[] => {
    const r = deref(s)
    const alts = ((r.anyOf ?? []) as Json[]).flatMap(props)
    return [...new Set([...Object.keys((r.properties ?? {}) as Json), ...alts])].sort()
  }
  const out: Record<string, Json> = {}
  for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, Json>>))
    for (const [method, o] of Object.entries(methods)) {
      const params = (o.parameters ?? []) as { name: string; in: string }[]
      const body = (o.requestBody as { content: Record<string, { schema: Json }> } | undefined)?.content
      const ok = Object.entries(
        o.responses as Record<string, { content?: Record<string, { schema: Json }> }>,
      ).find(([s]) => s.startsWith('2'))?.[1]
      const json = ok?.content?.['application/json']?.schema
      const bodySchema = body ? deref(Object.values(body)[0]?.schema ?? {}) : null
      out[String(o.operationId)] = {
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        query: params.filter((p) => p.in === 'query').map((p) => p.name),
        body: bodySchema
          ? bodySchema.properties
            ? Object.keys(bodySchema.properties as Json)
            : null
          : undefined,
        responseFields: json ? props(json) : [],
      }
    }
  return out
}

function tsSurface(): Record<string, Json> {
  return Object.fromEntries(
    Object.entries(TS_OPERATIONS).map(([id, o]) => [
      id,
      {
        method: o.method,
        path: o.path,
        pathParams: [...o.pathParams],
        query: [...o.query],
        body: o.body ? (o.body.fields ? [...o.body.fields] : null) : undefined,
        responseFields: [...o.responseFields],
      },
    ]),
  )
}

describe('client libraries follow the contract', () => {
  test('the generated files are what the contract gives now (npm run gen:clients)', () => {
    assert.deepEqual(staleClientFiles(), [])
  })

  test('every operation, parameter and field of the OpenAPI document is in the TypeScript client, and nothing else', () => {
    assert.deepEqual(tsSurface(), surface(buildOpenApi({ publicUrl: 'http://x' })))
  })

  test('a new operation, parameter or response field changes both generated files', () => {
    const extra = {
      ...getHealth,
      id: 'probeClients',
      path: '/probe/:name',
      params: Type.Object({ name: Type.String() }),
      querystring: Type.Object({ depth_probe: Type.Optional(Type.Integer()) }),
      response: Type.Object({ probe_field: Type.String() }),
    }
    const doc = buildOpenApi({ publicUrl: 'http://x', operations: [...OPERATIONS, extra] }) as unknown as Doc
    const probe = clientOperations(doc).find((o) => o.id === 'probeClients')
    assert.deepEqual(
      probe?.query.map((q) => q.name),
      ['depth_probe'],
    )
    assert.deepEqual(probe?.responseFields, ['probe_field'])
    const now = clientFiles()
    const next = clientFiles(doc)
    for (const path of Object.keys(now)) {
      assert.notEqual(next[path], now[path], path)
      for (const word of ['depth_probe', 'probe_field', '/probe/{name}'])
        assert.ok(next[path]?.includes(word) && !now[path]?.includes(word), `${path}: ${word}`)
    }
    assert.match(
      next['clients/python/erm3/_operations.py'] ?? '',
      /def probe_clients\(self, name: str, \*, depth_probe: int \| None = None/,
    )
  })
})
