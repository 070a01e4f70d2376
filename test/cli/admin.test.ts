import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createSqliteAccountStore } from '../../src/store/accounts/sqlite.ts'
import type { AccountStore } from '../../src/store/accounts/types.ts'
import { type CliRun, runErm3 } from '../helpers/cli.ts'

/**
 * The operator commands end to end: `node bin/erm3.js …` against an embedded home (SQLite and
 * secrets.json under ERM3_HOME), then the database is read back through the SQLite store. Each
 * spawn costs a couple of seconds of transpiling, so independent commands run concurrently.
 */

const home = await mkdtemp(join(tmpdir(), 'erm3-admin-'))
after(() => rm(home, { recursive: true, force: true }))

type Run = CliRun

const erm3 = (...args: string[]): Promise<Run> => runErm3(home, {}, ...args)

function ok(r: Run): Run {
  assert.equal(r.code, 0, `exit ${r.code}\nstdout: ${r.out}\nstderr: ${r.err}`)
  return r
}

const KEY = /^erm_agent_(live|test)_[0-9A-Za-z]{32}_[0-9A-Za-z]{6}$/
const USD = 1_000_000

/** The key printed on stdout and the id printed on stderr. */
function issued(r: Run): { key: string; id: string; env: string; tier: string } {
  ok(r)
  const key = r.out.trim()
  assert.match(key, KEY)
  const m = /key (key_[0-9A-Za-z]+) \((live|test), (default|premium)\)/.exec(r.err)
  assert.ok(m, `key id on stderr: ${r.err}`)
  return { key, id: m[1], env: m[2], tier: m[3] }
}

describe('erm3 accounts | keys | topup', () => {
  // The whole session runs once; the tests below read its results and the database.
  let accountId = ''
  let created: Run
  let duplicate: Run
  let live: ReturnType<typeof issued>
  let testKey: ReturnType<typeof issued>
  let topup1: Run
  let topup2: Run
  let tooSmall: Run
  let unknown: Run
  let negative: Run
  let revoked: Run
  let rotated: Run
  let store: AccountStore
  let pepper = ''

  before(async () => {
    created = ok(await erm3('accounts', 'create', '--email', 'Ops@Example.com', '--balance', '5'))
    accountId = /\b(acct_[0-9A-Za-z]+)\b/.exec(created.out)?.[1] ?? ''
    const [dup, k1, k2, topups, small, none, neg] = await Promise.all([
      erm3('accounts', 'create', '--email', 'ops@example.com'),
      erm3('keys', 'create', '--account', accountId, '--env', 'live'),
      erm3('keys', 'create', '--account', accountId, '--env', 'test', '--tier', 'premium'),
      (async () => {
        const args = ['topup', '--account', accountId, '--usd', '10', '--reference', 'INV-1']
        const first = await erm3(...args)
        return [first, await erm3(...args)]
      })(),
      erm3('topup', '--account', accountId, '--usd', '9.99', '--reference', 'INV-2'),
      erm3('topup', '--account', 'acct_0000000000000000000000', '--usd', '10', '--reference', 'INV-3'),
      erm3('accounts', 'create', '--email', 'neg@example.com', '--balance', '-5'),
    ])
    duplicate = dup
    live = issued(k1)
    testKey = issued(k2)
    ;[topup1, topup2] = topups
    tooSmall = small
    unknown = none
    negative = neg
    ;[revoked, rotated] = await Promise.all([
      erm3('keys', 'revoke', live.id),
      erm3('keys', 'rotate', testKey.id),
    ])
    pepper = (JSON.parse(await readFile(join(home, 'secrets.json'), 'utf8')) as { pepper: string }).pepper
    store = createSqliteAccountStore(join(home, 'erm3.db'))
  })
  after(() => store?.close())

  const hash = (key: string) => createHmac('sha256', pepper).update(key).digest('hex')

  test('accounts create prints the account id and records the opening balance', async () => {
    assert.match(accountId, /^acct_[0-9A-Za-z]+$/)
    assert.match(
      created.out,
      new RegExp(`^account ${accountId} \\(ops@example\\.com\\) balance 5\\.000000 USD\\n$`),
    )
    const a = await store.getAccount(accountId)
    assert.ok(a)
    assert.equal(a.email, 'ops@example.com', 'the address is stored normalised')
    assert.equal(a.kind, 'user')
    const opening = (await store.entries(accountId, { from: 0, to: Date.now() + 1, limit: 100 })).filter(
      (e) => e.reference === 'opening-balance',
    )
    assert.equal(opening.length, 1)
    assert.equal(opening[0].kind, 'credit')
    assert.equal(opening[0].amountMicros, 5 * USD)
  })

  test('accounts list and show find an account by id or e-mail (any case); unknown ones fail clearly', async () => {
    const [list, byEmail, byId, none, badLimit, both] = await Promise.all([
      erm3('accounts', 'list'),
      erm3('accounts', 'show', '--email', 'OPS@example.com'),
      erm3('accounts', 'show', accountId),
      erm3('accounts', 'show', '--email', 'nobody@example.com'),
      erm3('accounts', 'list', '--limit', '0'),
      erm3('accounts', 'show', accountId, '--email', 'ops@example.com'),
    ])
    // 5 opening + 10 top-up (INV-1, recorded once); the live key revoked, the test key rotated.
    const line = `${accountId}\tops@example.com\tuser\t`
    const row = ok(list)
      .out.split('\n')
      .find((l) => l.startsWith(line))
    assert.ok(row, list.out)
    assert.match(row, new RegExp(`\\t${(5 + 10).toFixed(6)} USD\\t1 active key$`))
    assert.equal(ok(byEmail).out, `${row}\n`)
    assert.equal(ok(byId).out, `${row}\n`)
    assert.notEqual(none.code, 0)
    assert.match(none.err, /No account with the e-mail address nobody@example\.com/)
    assert.notEqual(badLimit.code, 0)
    assert.match(badLimit.err, /limit must be an integer in 1\.\.1000/)
    assert.notEqual(both.code, 0)
    assert.match(both.err, /not both/)
  })

  test('a second account for the same address (any case) fails clearly', async () => {
    assert.notEqual(duplicate.code, 0)
    assert.equal(duplicate.out, '')
    assert.match(duplicate.err, /^erm3: error: An account for ops@example\.com exists already\n$/)
    assert.equal((await store.findAccountByEmail('OPS@example.com'))?.id, accountId)
  })

  test('keys create prints the key on stdout and its id on stderr; only the hash is stored', async () => {
    assert.deepEqual([live.env, live.tier], ['live', 'default'])
    assert.deepEqual([testKey.env, testKey.tier], ['test', 'premium'])
    assert.notEqual(live.key, testKey.key)
    for (const k of [live, testKey]) {
      const rec = await store.findKeyByHash(hash(k.key))
      assert.ok(rec, `${k.id} is found by the HMAC of the printed key`)
      assert.equal(rec.id, k.id)
      assert.equal(rec.accountId, accountId)
      assert.equal(rec.kind, 'agent')
      assert.equal(rec.environment, k.env)
      assert.equal(rec.tier, k.tier)
      // The display prefix (`erm_agent_live_AbCd…`) shows 4 of the 32 random characters.
      const shown = rec.prefix.replace(/…$/, '')
      assert.ok(k.key.startsWith(shown) && shown.length < 25, `the prefix ${rec.prefix} is display only`)
    }
  })

  test('keys revoke revokes the key', async () => {
    ok(revoked)
    assert.match(revoked.out, new RegExp(`^key ${live.id} revoked at \\d{4}-\\d{2}-\\d{2}T[\\d:.]+Z\\n$`))
    const rec = await store.getKey(live.id)
    assert.ok(rec?.revokedAt, 'revoked_at is set')
  })

  test('keys rotate prints a new key with the same settings and revokes the old one', async () => {
    ok(rotated)
    const key = rotated.out.trim()
    assert.match(key, KEY)
    assert.ok(key.startsWith('erm_agent_test_'))
    assert.notEqual(key, testKey.key)
    const m = new RegExp(`key (key_[0-9A-Za-z]+) replaces ${testKey.id} \\(revoked\\)`).exec(rotated.err)
    assert.ok(m, rotated.err)
    const fresh = await store.findKeyByHash(hash(key))
    assert.ok(fresh)
    assert.equal(fresh.id, m[1])
    assert.notEqual(fresh.id, testKey.id)
    assert.deepEqual(
      [fresh.accountId, fresh.environment, fresh.tier, fresh.revokedAt],
      [accountId, 'test', 'premium', null],
    )
    assert.ok((await store.getKey(testKey.id))?.revokedAt, 'the old key is revoked')
    const keys = await store.listKeys(accountId)
    assert.deepEqual(keys.map((k) => k.id).sort(), [live.id, testKey.id, fresh.id].sort())
    assert.deepEqual(
      keys.filter((k) => k.revokedAt === null).map((k) => k.id),
      [fresh.id],
    )
  })

  test('topup is idempotent per reference: the second run says "already recorded"', async () => {
    ok(topup1)
    ok(topup2)
    assert.match(
      topup1.out,
      /^recorded: led_[0-9A-Za-z]+ \+10\.00 USD \(reference INV-1\); balance 15\.000000 USD\n$/,
    )
    assert.match(
      topup2.out,
      /^already recorded: led_[0-9A-Za-z]+ \+10\.00 USD \(reference INV-1\); balance 15\.000000 USD\n$/,
    )
    const ledgerId = (r: Run) => /led_[0-9A-Za-z]+/.exec(r.out)?.[0]
    assert.equal(ledgerId(topup2), ledgerId(topup1), 'the repeat returns the first entry')
    const topups = (await store.entries(accountId, { from: 0, to: Date.now() + 1, limit: 100 })).filter(
      (e) => e.kind === 'topup',
    )
    assert.deepEqual(
      topups.map((e) => [e.id, e.amountMicros, e.reference]),
      [[ledgerId(topup1), 10 * USD, 'INV-1']],
    )
    assert.deepEqual(await store.balance(accountId), { balanceMicros: 15 * USD, reservedMicros: 0 })
  })

  test('a top-up below 10.00 USD or to an unknown account fails and records nothing', async () => {
    assert.notEqual(tooSmall.code, 0)
    assert.match(tooSmall.err, /^erm3: error: The minimum top-up is 10\.00 USD\n$/)
    assert.notEqual(unknown.code, 0)
    assert.match(unknown.err, /^erm3: error: No account acct_0000000000000000000000\n$/)
    assert.equal(tooSmall.out + unknown.out, '')
    const refs = (await store.entries(accountId, { from: 0, to: Date.now() + 1, limit: 100 })).map(
      (e) => e.reference,
    )
    assert.deepEqual(refs.sort(), ['INV-1', 'opening-balance'])
  })

  test('a negative opening balance fails without creating the account', async () => {
    assert.notEqual(negative.code, 0)
    assert.match(negative.err, /The opening balance cannot be negative/)
    assert.equal(await store.findAccountByEmail('neg@example.com'), null)
  })
})
