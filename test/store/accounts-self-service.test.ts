/**
 * The self-service conformance suite on both account stores: SQLite on a temp file, PostgreSQL
 * (DATABASE_URL) in its own schema, plain and behind the server's balance snapshots.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import pg from 'pg'
import { withBalanceSnapshots } from '../../src/store/accounts/balance-snapshot.ts'
import { createPostgresAccountStore } from '../../src/store/accounts/postgres.ts'
import { createSqliteAccountStore } from '../../src/store/accounts/sqlite.ts'
import { sqliteSql } from './accounts-herd.ts'
import { selfServiceConformance } from './accounts-self-service-conformance.ts'

const dir = mkdtempSync(join(tmpdir(), 'erm3-self-service-'))
after(() => rmSync(dir, { recursive: true, force: true }))
const file = join(dir, 'self-service.db')
selfServiceConformance('sqlite', async () => createSqliteAccountStore(file), {
  another: async () => createSqliteAccountStore(file),
  sql: sqliteSql(file),
  sharedReservations: false,
})

const url = process.env.DATABASE_URL
if (!url) {
  test('PostgreSQL self-service store', { skip: 'DATABASE_URL is not set' }, () => {})
} else {
  const schemas: string[] = []
  async function sql(schema: string, text: string) {
    const c = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` })
    await c.connect()
    try {
      return (await c.query(text)).rows as Record<string, unknown>[]
    } finally {
      await c.end()
    }
  }
  after(async () => {
    for (const s of schemas) await sql('public', `DROP SCHEMA IF EXISTS ${s} CASCADE`)
  })
  for (const wrapped of [false, true]) {
    const schema = `t_${randomBytes(6).toString('hex')}`
    schemas.push(schema)
    const open = () => createPostgresAccountStore(url, { schema })
    selfServiceConformance(
      wrapped ? 'postgres behind balance snapshots' : 'postgres',
      async () => (wrapped ? withBalanceSnapshots(open()) : open()),
      { another: async () => open(), sql: (text) => sql(schema, text), sharedReservations: true },
    )
  }
}
