import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { createClient, fetchTransport } from '../../../src/contract/client.ts'
import { serve } from '../../../src/main/server.ts'
import { createUpdateRunner } from '../../../src/main/update-runner.ts'
import { createLogger } from '../../../src/platform/logger.ts'
import { fixtureStores } from '../../helpers/fixture-store.ts'
import { outcomeOf } from './helpers.ts'

test('serve --update-at: a bad time stops the start; a good one schedules the update and monitors the data', async () => {
  const fx = await fixtureStores()
  const home = mkdtempSync(join(tmpdir(), 'erm3-serve-upd-'))
  try {
    mkdirSync(join(home, 'sandbox'), { recursive: true })
    symlinkSync(fx.sandbox, join(home, 'sandbox', 'store'))
    const env = { ERM3_HOME: home, PORT: '0' }
    const log = createLogger('silent')
    const run = async () => outcomeOf('unchanged')
    await assert.rejects(
      serve(env, { store: fx.live, log, updateAt: '25:00', updateRunner: run }),
      /--update-at must be a 24-hour time HH:MM/,
    )
    await assert.rejects(serve(env, { store: fx.live, log, updateAt: '18:30' }), /needs the update pipeline/)
    const server = await serve(env, {
      store: fx.live,
      log,
      updateAt: '18:30 America/New_York',
      updateRunner: run,
    })
    try {
      const next = server.updates?.nextAt() ?? 0
      assert.ok(next > Date.now())
      const h = (await createClient(fetchTransport(server.url)).call('getHealth')).ok()
      // This node runs the update, so the fixture's old data counts as stale.
      assert.equal(h.data.monitored, true)
      assert.equal(h.data.stale, true)
      assert.equal(h.status, 'degraded')
    } finally {
      await server.close()
    }
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
})

test('serve --update-at: missing sources or keys stop the start, naming the variable', async () => {
  const fx = await fixtureStores()
  const home = mkdtempSync(join(tmpdir(), 'erm3-serve-src-'))
  try {
    const env = { ERM3_HOME: home, PORT: '0' }
    const log = createLogger('silent')
    const start = (e: Record<string, string>) =>
      serve(
        { ...env, ...e },
        {
          store: fx.live,
          log,
          updateAt: '18:30',
          makeUpdateRunner: (s) => createUpdateRunner({ ...env, ...e }, s),
        },
      )
    await assert.rejects(start({}), /ERM3_SOURCES/)
    await assert.rejects(start({ ERM3_SOURCES: 'polygon' }), /POLYGON_API_KEY is not set/)
    await assert.rejects(
      start({ ERM3_SOURCES: 'polygon,nasdaqftp', POLYGON_API_KEY: 'k' }),
      /unknown source "nasdaqftp"/,
    )
    await assert.rejects(start({ ERM3_SOURCES: 'sec' }), /SEC_USER_AGENT/)
    // Configured: the runner exists and nothing is fetched until the schedule fires.
    assert.equal(
      typeof createUpdateRunner({ ...env, ERM3_SOURCES: 'polygon', POLYGON_API_KEY: 'k' }, fx.live),
      'function',
    )
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
})
