/**
 * SQLite account store: the shared conformance suite on a temp file, then what only the embedded
 * backend must show — an acknowledged debit survives SIGKILL of the process that wrote it.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { createSqliteAccountStore } from '../../src/store/accounts/sqlite.ts'
import { accountStoreConformance } from './accounts-conformance.ts'
import { newAccount, sqliteSql, T0 } from './accounts-herd.ts'

const dir = mkdtempSync(join(tmpdir(), 'erm3-accounts-'))
after(() => rmSync(dir, { recursive: true, force: true }))

const file = join(dir, 'conformance.db')
accountStoreConformance('sqlite', async () => createSqliteAccountStore(file), {
  another: async () => createSqliteAccountStore(file),
  sql: sqliteSql(file),
  sharedReservations: false,
})

describe('sqlite account store: durability', () => {
  it('every debit acknowledged before SIGKILL is in the ledger after reopening', async () => {
    const path = join(dir, 'crash.db')
    const setup = createSqliteAccountStore(path)
    await setup.migrate()
    const { id } = await newAccount(setup)
    await setup.credit(id, { kind: 'topup', amountMicros: 1e12, reference: null }, T0)
    await setup.close()

    const script = fileURLToPath(new URL('./fixtures/settle-loop.ts', import.meta.url))
    const child = spawn(process.execPath, ['--import', 'tsx', script, path, id], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    child.stderr.on('data', (d) => {
      err += d
    })
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('exit', (_code, signal) => resolve(signal)),
    )
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d) => {
        out += d
        // Kill mid-stream: well into the run, at whatever point the child happens to be.
        if (out.split('\n').length > 400) resolve()
      })
      child.on('exit', () => reject(new Error(`child exited early: ${err}`)))
    })
    child.kill('SIGKILL')
    assert.equal(await exited, 'SIGKILL')

    // Only complete lines are acknowledged debits; a torn last line is dropped.
    const acked = out.split('\n').slice(0, -1)
    assert.ok(acked.length >= 400)
    const store = createSqliteAccountStore(path)
    try {
      const rows = await store.entries(id, { from: 0, to: Number.MAX_SAFE_INTEGER, limit: 1e6 })
      const ids = new Set(rows.map((r) => r.id))
      const lost = acked.filter((x) => !ids.has(x))
      assert.deepEqual(lost, [], `${lost.length} acknowledged debits lost`)
      // The cached balance committed with each debit: nothing to correct after the crash.
      assert.deepEqual(await store.reconcile(0), { releasedReservations: 0, correctedBalances: 0 })
      const sum = rows.reduce((s, r) => s + r.amountMicros, 0)
      assert.equal((await store.balance(id)).balanceMicros, sum)
    } finally {
      await store.close()
    }
  })
})
