import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { checkFile, checkTree } from '../../scripts/check-layers.ts'

const src = fileURLToPath(new URL('../../src', import.meta.url))

test('the source tree follows the layer rules', () => {
  assert.deepEqual(checkTree(src), [])
})

test('forbidden imports are caught with file and line', () => {
  const file = join(src, 'model', 'x.ts')
  const v = checkFile(
    src,
    file,
    "import { a } from '../platform/dates.ts'\nimport { readFile } from 'node:fs'\nexport { b } from '../api/server.ts'\n",
  )
  assert.deepEqual(
    v.map((x) => [x.line, x.message]),
    [
      [1, 'model/ may not import platform/ (../platform/dates.ts)'],
      [2, 'model/ must stay pure: no node:fs'],
      [3, 'model/ may not import api/ (../api/server.ts)'],
    ],
  )
  // The shared metric names are the one platform/ module the pure model may import.
  assert.deepEqual(checkFile(src, file, "import { LEVEL_FIELDS } from '../platform/metric-fields.ts'\n"), [])
  const dyn = checkFile(src, join(src, 'data', 'y.ts'), "const m = await import('../services/z.ts')")
  assert.equal(dyn.length, 1)
  assert.deepEqual(
    checkFile(
      src,
      join(src, 'api', 'z.ts'),
      "import { x } from '../services/a.ts'\nimport fastify from 'fastify'",
    ),
    [],
  )
})
