import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { OPERATIONS } from '../../src/contract/operations.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
const ROUTES = 'src/api/routes'
/** Files of src/api/routes that define no route. */
const NOT_ROUTES = new Set(['types.ts', 'index.ts'])

/**
 * The rule of src/api/app.ts and src/api/routes/README.md, written out again here: the first
 * segment of the path names the file, without a leading dot or a file extension; `/` is root.ts;
 * the MCP transports are src/mcp/http.ts.
 */
function fileOf(path: string): string {
  const first = path.split('/')[1] ?? ''
  if (first === 'mcp') return 'src/mcp/http.ts'
  if (first === '') return `${ROUTES}/root.ts`
  return `${ROUTES}/${first.replace(/^\./, '').replace(/\.[a-z]+$/, '')}.ts`
}

describe('route files are named by URL', () => {
  let t: TestApp
  before(async () => {
    t = await startTestApp()
  })
  after(() => t.close())

  test('every operation has its handler in the file its path names', () => {
    const wrong = OPERATIONS.map((op) => {
      const file = t.app.handlerFiles.get(op.id)
      const where = file === undefined ? 'no handler' : relative(root, file)
      return { op: `${op.method} ${op.path} (${op.id})`, where, expected: fileOf(op.path) }
    }).filter((r) => r.where !== r.expected)
    assert.deepEqual(wrong, [])
    // And nothing handles an operation the contract does not have.
    assert.deepEqual([...t.app.handlerFiles.keys()].sort(), OPERATIONS.map((o) => o.id).sort())
  })

  test('every file of src/api/routes serves a route, and the README lists it', () => {
    const serving = new Set([...t.app.handlerFiles.values()].map((f) => relative(root, f)))
    const readme = readFileSync(join(root, ROUTES, 'README.md'), 'utf8')
    for (const name of readdirSync(join(root, ROUTES)).filter((n) => n.endsWith('.ts'))) {
      assert.ok(readme.includes(`\`${name}\``), `README.md does not list ${name}`)
      if (!NOT_ROUTES.has(name)) assert.ok(serving.has(`${ROUTES}/${name}`), `${name} serves no operation`)
    }
  })

  test('the rule: examples', () => {
    assert.equal(fileOf('/industry-panel'), `${ROUTES}/industry-panel.ts`)
    assert.equal(fileOf('/account/keys/:id'), `${ROUTES}/account.ts`)
    assert.equal(fileOf('/.well-known/mcp.json'), `${ROUTES}/well-known.ts`)
    assert.equal(fileOf('/openapi.json'), `${ROUTES}/openapi.ts`)
    assert.equal(fileOf('/'), `${ROUTES}/root.ts`)
    assert.equal(fileOf('/mcp/sse'), 'src/mcp/http.ts')
  })
})
