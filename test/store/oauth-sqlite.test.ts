/** SQLite OAuth store: the shared conformance suite on a temp file, on the account store's connection. */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after } from 'node:test'
import Database from 'better-sqlite3'
import { createSqliteAccountStore } from '../../src/store/accounts/sqlite.ts'
import { oauthStoreConformance } from './oauth-conformance.ts'

const dir = mkdtempSync(join(tmpdir(), 'erm3-oauth-'))
after(() => rmSync(dir, { recursive: true, force: true }))

const file = join(dir, 'oauth.db')
oauthStoreConformance('sqlite', {
  open: async () => createSqliteAccountStore(file),
  async sql(text) {
    const db = new Database(file, { readonly: true })
    try {
      return db.prepare(text).all() as Record<string, unknown>[]
    } finally {
      db.close()
    }
  },
})
