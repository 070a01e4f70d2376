/**
 * PostgreSQL OAuth store against a real server (DATABASE_URL; CI exports
 * postgres://postgres@127.0.0.1:5432/test): the shared conformance suite, its concurrency cases
 * spread over two pools ("nodes"). Test files run in parallel, so the run works in its own schema
 * `t_<random>` and drops it at the end.
 */
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import pg from 'pg'
import { createPostgresAccountStore } from '../../src/store/accounts/postgres.ts'
import { oauthStoreConformance } from './oauth-conformance.ts'

const url = process.env.DATABASE_URL
if (!url) {
  test('PostgreSQL OAuth store', {
    skip: 'DATABASE_URL is not set (CI exports DATABASE_URL=postgres://postgres@127.0.0.1:5432/test)',
  }, () => {})
} else {
  const schema = `t_${randomBytes(6).toString('hex')}`
  async function sql(searchPath: string, text: string) {
    const c = new pg.Client({ connectionString: url, options: `-c search_path=${searchPath}` })
    await c.connect()
    try {
      return (await c.query(text)).rows as Record<string, unknown>[]
    } finally {
      await c.end()
    }
  }
  oauthStoreConformance('postgres', {
    open: async () => createPostgresAccountStore(url, { schema }),
    sql: (text) => sql(schema, text),
    cleanup: async () => {
      await sql('public', `DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    },
  })
}
