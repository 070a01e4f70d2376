import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { checkFile, checkTree, ENGINE_ORDER, SERVICE_ORDER } from '../../scripts/check-layers.ts'

const src = fileURLToPath(new URL('../../src', import.meta.url))

/** The messages of `text` as if it were the file src/<path> (nothing is written). */
function check(path: string, text: string): [number, string][] {
  return checkFile(src, join(src, ...path.split('/')), text).map((v) => [v.line, v.message])
}

test('the source tree follows the layer rules', () => {
  assert.deepEqual(checkTree(src), [])
})

test('engine/model is pure: nothing outside itself, no package, no built-in', () => {
  assert.deepEqual(
    check(
      'engine/model/x.ts',
      "import { a } from '../../platform/dates.ts'\nimport { readFile } from 'node:fs'\n" +
        "export { b } from '../../api/server.ts'\nimport { c } from './panel.ts'\nimport pino from 'pino'\n" +
        "import type { D } from '../zarr/types.ts'\n",
    ),
    [
      [
        1,
        'engine/model/ may not import platform/: engine/model imports nothing outside itself (../../platform/dates.ts)',
      ],
      [2, 'engine/model/ must stay pure: no node:fs'],
      [
        3,
        'engine/model/ may not import api/: engine/model imports nothing outside itself (../../api/server.ts)',
      ],
      [5, 'engine/model/ must stay pure: no pino'],
      [
        6,
        'engine/model/ may not import engine/zarr/: engine/model imports nothing outside itself (../zarr/types.ts)',
      ],
    ],
  )
  // The shared metric names are the one platform/ module the pure model may import.
  assert.deepEqual(
    check('engine/model/y.ts', "import { LEVEL_FIELDS } from '../../platform/metric-fields.ts'\n"),
    [],
  )
})

test('engine parts import platform and lower parts only', () => {
  assert.deepEqual(
    check(
      'engine/zarr/y.ts',
      "import type { BlobReader } from '../object-store/types.ts'\nimport { AppError } from '../../platform/errors.ts'\n" +
        "import { STORE_FILES } from '../model-store/layout.ts'\nimport type { FlatTable } from '../../contract/table.ts'\n" +
        "import { x } from '../../services/models.ts'\n",
    ),
    [
      [
        3,
        'engine/zarr/ may not import engine/model-store/ (ENGINE_ORDER: lower parts only) (../model-store/layout.ts)',
      ],
      [4, 'engine/zarr/ may not import contract/ (../../contract/table.ts)'],
      [5, 'engine/zarr/ may not import services/models.ts (../../services/models.ts)'],
    ],
  )
  // engine/export may read the contract's table types; a dynamic import is checked too.
  assert.deepEqual(
    check('engine/export/z.ts', "import type { FlatTable } from '../../contract/table.ts'"),
    [],
  )
  assert.equal(check('engine/data/y.ts', "const m = await import('../build/index.ts')").length, 1)
  assert.deepEqual(check('engine/newpart/a.ts', ''), [
    [1, 'unknown engine part engine/newpart (add it to ENGINE_ORDER)'],
  ])
  assert.equal(ENGINE_ORDER[0], 'model')
})

test('service folders form a DAG; analytics stay off the platform services', () => {
  assert.deepEqual(
    check(
      'services/billing/a.ts',
      "import { estimateChat } from '../chat/estimate.ts'\nimport type { Principal } from '../identity/keys.ts'\n" +
        "import { x } from '../../engine/model/panel.ts'\nimport { y } from '../../store/accounts/types.ts'\n" +
        "import { z } from '../../api/app.ts'\n",
    ),
    [
      [
        1,
        'services/billing/ may not import services/chat/ (SERVICE_ORDER: lower units only) (../chat/estimate.ts)',
      ],
      [5, 'services/ may not import api/ (../../api/app.ts)'],
    ],
  )
  // The other direction of each edge the order allows is the one it forbids: no cycle can form.
  assert.deepEqual(check('services/identity/b.ts', "import { topUp } from '../account/admin.ts'"), [
    [
      1,
      'services/identity/ may not import services/account/ (SERVICE_ORDER: lower units only) (../account/admin.ts)',
    ],
  ])
  assert.deepEqual(check('services/account/c.ts', "import { issueKey } from '../identity/keys.ts'"), [])
  assert.deepEqual(
    check(
      'services/analytics/d.ts',
      "import { m } from '../models.ts'\nimport { meter } from '../billing/meter.ts'",
    ),
    [
      [
        2,
        'services/analytics/ may not import services/billing/: analytics never import the platform services (../billing/meter.ts)',
      ],
    ],
  )
  assert.deepEqual(check('services/limits.ts', "import { x } from './health.ts'"), [
    [
      1,
      'services/limits.ts may not import services/health.ts (SERVICE_ORDER: lower units only) (./health.ts)',
    ],
  ])
  assert.deepEqual(check('services/newfolder/e.ts', ''), [
    [1, 'unknown service unit services/newfolder (add it to SERVICE_ORDER)'],
  ])
  assert.equal(new Set(SERVICE_ORDER).size, SERVICE_ORDER.length)
})

test('store, adapters and composition roots keep their layers', () => {
  assert.deepEqual(
    check(
      'store/accounts/f.ts',
      "import { g } from '../oauth/types.ts'\nimport { h } from '../../engine/zarr/index.ts'\nimport { i } from '../../platform/ids.ts'",
    ),
    [[2, 'store/ may not import engine/zarr/ (../../engine/zarr/index.ts)']],
  )
  assert.deepEqual(
    check(
      'api/g.ts',
      "import { x } from '../services/context.ts'\nimport fastify from 'fastify'\n" +
        "import { csv } from '../engine/export/csv-table.ts'\nimport { d } from '../engine/data/calendar.ts'",
    ),
    [[4, 'api/ may not import engine/data/ (../engine/data/calendar.ts)']],
  )
  assert.deepEqual(check('web/h.ts', "import { x } from '../services/context.ts'"), [
    [1, 'web/ may not import services/context.ts (../services/context.ts)'],
  ])
  assert.deepEqual(check('api/i.ts', "import { x } from '../../bench/run.ts'"), [
    [1, 'imports ../../bench/run.ts, outside src/'],
  ])
})
