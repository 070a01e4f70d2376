/**
 * The one conformance suite every OAuthStore passes (SQLite, PostgreSQL). The OAuth store lives
 * on the account store's connection, so the harness hands out account stores and the suite takes
 * `oauth()` from them. Every case registers its own client and accounts; times are driven by the
 * suite (the interface takes `now`).
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { newId } from '../../src/platform/ids.ts'
import { MIGRATIONS } from '../../src/store/accounts/migrations.ts'
import type { AccountStore } from '../../src/store/accounts/types.ts'
import type { AuthCode, OAuthStore, RefreshToken } from '../../src/store/oauth/types.ts'
import { newAccount, T0 } from './accounts-herd.ts'

export interface OAuthStoreHarness {
  /** A new account store instance on the suite's database (a second connection or node). */
  open(): Promise<AccountStore>
  /** Raw SQL on the same database behind the store's back (inspection). */
  sql(text: string): Promise<Record<string, unknown>[]>
  cleanup?(): Promise<void>
}

const MIN = 60_000
const DAY = 86_400_000
const secretHash = () => randomBytes(32).toString('hex')

export function oauthStoreConformance(name: string, h: OAuthStoreHarness) {
  describe(`oauth store conformance: ${name}`, () => {
    let accounts: AccountStore
    let node2: AccountStore
    let store: OAuthStore
    let store2: OAuthStore
    before(async () => {
      accounts = await h.open()
      await accounts.migrate()
      node2 = await h.open()
      store = accounts.oauth()
      store2 = node2.oauth()
    })
    after(async () => {
      await Promise.all([accounts.close(), node2.close()])
      await h.cleanup?.()
    })

    const newClient = async (redirectUris = ['http://127.0.0.1:33418/callback']) =>
      store.registerClient({ clientId: newId('cli'), clientName: 'Test agent', redirectUris, createdAt: T0 })

    async function newCode(over: Partial<AuthCode> = {}): Promise<AuthCode> {
      const client = await newClient()
      const account = await newAccount(accounts)
      const code: AuthCode = {
        hash: secretHash(),
        clientId: client.clientId,
        accountId: account.id,
        redirectUri: client.redirectUris[0] ?? '',
        codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        scope: 'mcp:read',
        createdAt: T0,
        expiresAt: T0 + 5 * MIN,
        ...over,
      }
      await store.createCode(code)
      return code
    }

    async function newToken(clientId?: string, accountId?: string): Promise<RefreshToken> {
      const t = {
        hash: secretHash(),
        familyId: newId('fam'),
        clientId: clientId ?? (await newClient()).clientId,
        accountId: accountId ?? (await newAccount(accounts)).id,
        scope: 'mcp:read',
        createdAt: T0,
        expiresAt: T0 + 30 * DAY,
      }
      await store.createRefreshToken(t)
      return { ...t, rotatedAt: null, revokedAt: null }
    }
    const next = (createdAt = T0 + MIN) => ({
      hash: secretHash(),
      createdAt,
      expiresAt: createdAt + 30 * DAY,
    })
    const familySize = async (familyId: string) =>
      Number(
        (await h.sql(`SELECT COUNT(*) AS n FROM oauth_refresh_tokens WHERE family_id = '${familyId}'`))[0]?.n,
      )

    it('migrate is idempotent (twice, and from a second instance) and keeps OAuth data', async () => {
      const client = await newClient()
      await accounts.migrate()
      await Promise.all([accounts.migrate(), node2.migrate()])
      const versions = await h.sql('SELECT version FROM schema_migrations ORDER BY version')
      assert.deepEqual(
        versions.map((r) => Number(r.version)),
        MIGRATIONS.map((m) => m.version),
      )
      assert.deepEqual(await store.getClient(client.clientId), client)
    })

    it('a registered client round-trips, redirect URIs in order and verbatim', async () => {
      const uris = ['https://agent.example/cb?x=1&y=%20', 'http://127.0.0.1:8765/callback', 'http://[::1]/é']
      const client = await newClient(uris)
      assert.deepEqual(client.redirectUris, uris)
      assert.deepEqual(await store.getClient(client.clientId), client)
      assert.deepEqual(await store2.getClient(client.clientId), client)
      assert.equal(await store.getClient('cli_unknown'), null)
      await assert.rejects(store.registerClient(client), 'client ids are unique')
    })

    it('a code is consumed once: ok, then reused (with the code, so its grant can be revoked)', async () => {
      const code = await newCode()
      assert.deepEqual(await store.consumeCode(code.hash, T0 + MIN), { status: 'ok', code })
      assert.deepEqual(await store.consumeCode(code.hash, T0 + 2 * MIN), { status: 'reused', code })
      // Past its life a used code still reports reuse: the signal outlives the code.
      assert.deepEqual(await store2.consumeCode(code.hash, T0 + DAY), { status: 'reused', code })
    })

    it('an expired code is refused from expiresAt on, and stays claimable before it', async () => {
      const code = await newCode()
      assert.deepEqual(await store.consumeCode(code.hash, code.expiresAt), { status: 'expired' })
      assert.deepEqual(await store.consumeCode(code.hash, code.expiresAt + 1), { status: 'expired' })
      assert.deepEqual(await store.consumeCode(code.hash, code.expiresAt - 1), { status: 'ok', code })
    })

    it('an unknown code is unknown', async () => {
      assert.deepEqual(await store.consumeCode(secretHash(), T0), { status: 'unknown' })
    })

    it('20 concurrent consumers of one code (two instances): exactly one ok, 19 reused', async () => {
      const code = await newCode()
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? store : store2).consumeCode(code.hash, T0 + MIN)),
      )
      assert.equal(results.filter((r) => r.status === 'ok').length, 1)
      assert.equal(results.filter((r) => r.status === 'reused').length, 19)
    })

    it('a rotation marks the token rotated and issues its successor in the same family', async () => {
      const t = await newToken()
      const n1 = next(T0 + MIN)
      assert.deepEqual(await store.rotateRefreshToken(t.hash, t.clientId, n1, T0 + MIN), {
        status: 'ok',
        previous: { ...t, rotatedAt: T0 + MIN },
      })
      const n2 = next(T0 + 2 * MIN)
      assert.deepEqual(await store2.rotateRefreshToken(n1.hash, t.clientId, n2, T0 + 2 * MIN), {
        status: 'ok',
        previous: { ...t, ...n1, rotatedAt: T0 + 2 * MIN },
      })
      assert.equal(await familySize(t.familyId), 3)
    })

    it('expired, revoked, unknown and wrong-client tokens are refused and issue nothing', async () => {
      const expired = await newToken()
      const n = next()
      assert.deepEqual(await store.rotateRefreshToken(expired.hash, expired.clientId, n, expired.expiresAt), {
        status: 'expired',
      })
      const revoked = await newToken()
      await store.revokeRefreshToken(revoked.hash, T0 + 1)
      assert.deepEqual(await store.rotateRefreshToken(revoked.hash, revoked.clientId, n, T0 + MIN), {
        status: 'revoked',
      })
      assert.deepEqual(await store.rotateRefreshToken(secretHash(), revoked.clientId, n, T0 + MIN), {
        status: 'unknown',
      })
      const other = await newClient()
      const owned = await newToken()
      assert.deepEqual(await store.rotateRefreshToken(owned.hash, other.clientId, n, T0 + MIN), {
        status: 'wrong_client',
      })
      // None of the refusals inserted the successor, and a refusal to another client burns nothing.
      assert.deepEqual(await store.rotateRefreshToken(n.hash, owned.clientId, next(), T0 + MIN), {
        status: 'unknown',
      })
      const ok = await store.rotateRefreshToken(owned.hash, owned.clientId, next(), T0 + MIN)
      assert.equal(ok.status, 'ok')
    })

    it('20 concurrent rotations of one token (two instances): exactly one ok, 19 replayed', async () => {
      const t = await newToken()
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 ? store : store2).rotateRefreshToken(t.hash, t.clientId, next(), T0 + MIN),
        ),
      )
      assert.equal(results.filter((r) => r.status === 'ok').length, 1)
      assert.equal(results.filter((r) => r.status === 'replayed').length, 19)
      assert.equal(await familySize(t.familyId), 2, 'exactly one successor was issued')
    })

    it('a rotated token presented again is replayed, also after its grant was revoked', async () => {
      const t = await newToken()
      const n1 = next()
      await store.rotateRefreshToken(t.hash, t.clientId, n1, T0 + MIN)
      const replay = await store.rotateRefreshToken(t.hash, t.clientId, next(), T0 + 2 * MIN)
      assert.deepEqual(replay, { status: 'replayed', previous: { ...t, rotatedAt: T0 + MIN } })
      await store.revokeGrant(t.accountId, t.clientId, T0 + 3 * MIN)
      const again = await store.rotateRefreshToken(t.hash, t.clientId, next(), T0 + 4 * MIN)
      assert.equal(again.status, 'replayed')
      assert.equal(
        (await store.rotateRefreshToken(n1.hash, t.clientId, next(), T0 + 4 * MIN)).status,
        'revoked',
      )
    })

    it('revokeGrant revokes the pair’s refresh and access tokens, nobody else’s', async () => {
      const client = await newClient()
      const other = await newClient()
      const a = (await newAccount(accounts)).id
      const b = (await newAccount(accounts)).id
      const rotated = await newToken(client.clientId, a)
      const successor = next()
      await store.rotateRefreshToken(rotated.hash, client.clientId, successor, T0 + MIN)
      const second = await newToken(client.clientId, a)
      const otherClient = await newToken(other.clientId, a)
      const otherAccount = await newToken(client.clientId, b)
      const key = async (accountId: string, clientId: string | null) =>
        accounts.insertKey({
          id: newId('key'),
          ...{ accountId, clientId, kind: 'user', environment: 'live', prefix: 'erm_user_AbCd' },
          ...{ name: null, tier: 'default', hash: secretHash(), createdAt: T0, expiresAt: T0 + 3_600_000 },
        })
      const revokedKeys = [await key(a, client.clientId), await key(a, client.clientId)]
      const keptKeys = [await key(a, null), await key(a, other.clientId), await key(b, client.clientId)]

      // The count includes the already-rotated token: every row of the pair is now marked revoked.
      assert.deepEqual(await store.revokeGrant(a, client.clientId, T0 + 5 * MIN), {
        refreshTokens: 3,
        accessTokens: 2,
        codes: 0,
        grant: false,
      })
      for (const t of [successor, second]) {
        assert.deepEqual(await store.rotateRefreshToken(t.hash, client.clientId, next(), T0 + 6 * MIN), {
          status: 'revoked',
        })
      }
      for (const k of revokedKeys) assert.equal((await accounts.getKey(k.id))?.revokedAt, T0 + 5 * MIN)
      for (const k of keptKeys) assert.equal((await accounts.getKey(k.id))?.revokedAt, null)
      for (const t of [otherClient, otherAccount]) {
        const r = await store2.rotateRefreshToken(t.hash, t.clientId, next(), T0 + 6 * MIN)
        assert.equal(r.status, 'ok')
      }
      // Nothing left to revoke; earlier revocation times are kept.
      assert.deepEqual(await store.revokeGrant(a, client.clientId, T0 + 7 * MIN), {
        refreshTokens: 0,
        accessTokens: 0,
        codes: 0,
        grant: false,
      })
      assert.equal((await accounts.getKey(revokedKeys[0]?.id ?? ''))?.revokedAt, T0 + 5 * MIN)
    })

    const accessKey = (accountId: string, clientId: string | null, createdAt = T0) =>
      accounts.insertKey({
        id: newId('key'),
        ...{ accountId, clientId, kind: 'user', environment: 'live', prefix: 'erm_user_AbCd' },
        ...{ name: null, tier: 'default', hash: secretHash(), createdAt, expiresAt: createdAt + 3_600_000 },
      })

    it('a grant is listed from its approval: client, redirect URIs, scope, live tokens, last use; nobody else sees it', async () => {
      const uris = ['http://127.0.0.1:33418/callback', 'https://agent.example/cb']
      const client = await newClient(uris)
      const a = (await newAccount(accounts)).id
      const b = (await newAccount(accounts)).id
      const approval = {
        accountId: a,
        clientId: client.clientId,
        redirectUri: uris[1] ?? '',
        scope: 'mcp:read',
      }
      await store.recordApproval({ ...approval, at: T0 })
      const base = {
        clientId: client.clientId,
        clientName: 'Test agent',
        redirectUris: uris,
        approvedRedirectUri: uris[1],
        scope: 'mcp:read',
        createdAt: T0,
        approvedAt: T0,
      }
      assert.deepEqual(await store2.listGrants(a, T0 + MIN), [
        { ...base, lastUsedAt: null, live: { refreshTokens: 0, accessTokens: 0, codes: 0 } },
      ])
      assert.deepEqual(await store.listGrants(b, T0 + MIN), [])
      // The code approved, then exchanged for tokens; the refresh token rotated once, the key used.
      const code = { ...(await newCode()), clientId: client.clientId, accountId: a, hash: secretHash() }
      await store.createCode(code)
      assert.deepEqual((await store.listGrants(a, T0 + MIN))[0]?.live, {
        refreshTokens: 0,
        accessTokens: 0,
        codes: 1,
      })
      await store.consumeCode(code.hash, T0 + MIN)
      const t = await newToken(client.clientId, a)
      await store.rotateRefreshToken(t.hash, t.clientId, next(T0 + 2 * MIN), T0 + 2 * MIN)
      assert.equal((await store.listGrants(a, T0 + 3 * MIN))[0]?.lastUsedAt, T0 + 2 * MIN)
      const key = await accessKey(a, client.clientId, T0 + 2 * MIN)
      await accounts.touchKeys(new Map([[key.id, T0 + 4 * MIN]]))
      // A later consent keeps the first approval's date.
      await store.recordApproval({ ...approval, redirectUri: uris[0] ?? '', at: T0 + 10 * MIN })
      assert.deepEqual(await store2.listGrants(a, T0 + 11 * MIN), [
        {
          ...base,
          approvedRedirectUri: uris[0],
          approvedAt: T0 + 10 * MIN,
          lastUsedAt: T0 + 4 * MIN,
          live: { refreshTokens: 1, accessTokens: 1, codes: 0 },
        },
      ])
      assert.deepEqual(await store.listGrants(b, T0 + 11 * MIN), [])
    })

    it('revokeGrant ends the grant record and its pending codes; a new consent starts a new grant', async () => {
      const client = await newClient()
      const a = (await newAccount(accounts)).id
      const approval = { accountId: a, clientId: client.clientId, redirectUri: client.redirectUris[0] ?? '' }
      await store.recordApproval({ ...approval, scope: 'mcp:read', at: T0 })
      const t = await newToken(client.clientId, a)
      const key = await accessKey(a, client.clientId)
      await accounts.touchKeys(new Map([[key.id, T0 + MIN]]))
      const code = { ...(await newCode()), clientId: client.clientId, accountId: a, hash: secretHash() }
      await store.createCode(code)
      assert.deepEqual(await store.revokeGrant(a, client.clientId, T0 + 2 * MIN), {
        refreshTokens: 1,
        accessTokens: 1,
        codes: 1,
        grant: true,
      })
      assert.deepEqual(await store2.listGrants(a, T0 + 2 * MIN), [])
      // The approved code can no longer be exchanged.
      assert.deepEqual(await store.consumeCode(code.hash, T0 + 2 * MIN), { status: 'expired' })
      assert.equal(
        (await store.rotateRefreshToken(t.hash, t.clientId, next(), T0 + 3 * MIN)).status,
        'revoked',
      )
      await store.recordApproval({ ...approval, scope: 'mcp:read', at: T0 + 10 * MIN })
      const [g] = await store.listGrants(a, T0 + 11 * MIN)
      assert.equal(g?.createdAt, T0 + 10 * MIN, 'dated by the new consent')
      assert.equal(g?.lastUsedAt, null, 'the revoked grant’s use is not this one’s')
      assert.deepEqual(g?.live, { refreshTokens: 0, accessTokens: 0, codes: 0 })
    })

    it('a working token without a grant record is listed all the same, until it stops working', async () => {
      const client = await newClient()
      const a = (await newAccount(accounts)).id
      const t = await newToken(client.clientId, a)
      const [g] = await store.listGrants(a, T0 + MIN)
      assert.deepEqual(g, {
        clientId: client.clientId,
        clientName: 'Test agent',
        redirectUris: client.redirectUris,
        approvedRedirectUri: null,
        scope: null,
        createdAt: T0,
        approvedAt: null,
        lastUsedAt: null,
        live: { refreshTokens: 1, accessTokens: 0, codes: 0 },
      })
      // An access token alone keeps it listed too.
      const other = await newClient()
      await accessKey(a, other.clientId, T0 + MIN)
      assert.deepEqual(
        (await store.listGrants(a, T0 + 2 * MIN)).map((x) => x.clientId),
        [other.clientId, client.clientId],
      )
      assert.deepEqual(await store.listGrants(a, t.expiresAt), [])
    })

    it('rotations racing revokeGrant never leave a live token of the pair', async () => {
      const client = await newClient()
      const pairs = await Promise.all(Array.from({ length: 10 }, () => newToken(client.clientId)))
      await Promise.all(
        pairs.flatMap((t, i) => [
          (i % 2 ? store : store2).rotateRefreshToken(t.hash, t.clientId, next(), T0 + MIN),
          (i % 2 ? store2 : store).revokeGrant(t.accountId, t.clientId, T0 + MIN),
        ]),
      )
      const live = await h.sql(
        `SELECT hash FROM oauth_refresh_tokens WHERE client_id = '${client.clientId}'
         AND rotated_at IS NULL AND revoked_at IS NULL`,
      )
      assert.deepEqual(live, [])
    })

    it('revokeRefreshToken is idempotent, keeps the first time, and ignores unknown hashes', async () => {
      const t = await newToken()
      const revoked = { ...t, revokedAt: T0 + MIN }
      assert.deepEqual(await store.revokeRefreshToken(t.hash, T0 + MIN), revoked)
      assert.deepEqual(await store2.revokeRefreshToken(t.hash, T0 + 2 * MIN), revoked)
      assert.equal(await store.revokeRefreshToken(secretHash(), T0), null)
    })

    // Last: the purge deletes every expired row of the tables, other tests' included.
    it('purgeExpired deletes sign-in tokens, codes and refresh tokens expired before their cutoffs, and nothing else', async () => {
      const oldCode = await newCode()
      const liveCode = await newCode({ expiresAt: T0 + 100 * DAY })
      const oldToken = await newToken()
      const liveToken = await newToken()
      await store.rotateRefreshToken(
        liveToken.hash,
        liveToken.clientId,
        { ...next(), expiresAt: T0 + 100 * DAY },
        T0 + MIN,
      )
      const [oldLogin, liveLogin] = [secretHash(), secretHash()]
      await accounts.createLoginToken({
        hash: oldLogin,
        email: 'o@example.com',
        expiresAt: T0 + MIN,
        createdAt: T0,
      })
      await accounts.createLoginToken({
        hash: liveLogin,
        email: 'l@example.com',
        expiresAt: T0 + 100 * DAY,
        createdAt: T0,
      })
      const report = await node2.purgeExpired({
        loginTokens: T0 + DAY,
        codes: T0 + DAY,
        refreshTokens: T0 + 31 * DAY,
      })
      assert.ok(
        report.loginTokens >= 1 && report.codes >= 1 && report.refreshTokens >= 2,
        JSON.stringify(report),
      )
      assert.deepEqual(await store.consumeCode(oldCode.hash, T0), { status: 'unknown' })
      assert.equal((await store.consumeCode(liveCode.hash, T0 + DAY)).status, 'ok')
      assert.equal(
        (await store.rotateRefreshToken(oldToken.hash, oldToken.clientId, next(), T0)).status,
        'unknown',
      )
      // The rotated parent of a live token expired too and is gone; its live descendant stays.
      assert.equal(
        (await store.rotateRefreshToken(liveToken.hash, liveToken.clientId, next(), T0)).status,
        'unknown',
      )
      assert.equal(await accounts.consumeLoginToken(oldLogin, T0), null)
      assert.equal(await accounts.consumeLoginToken(liveLogin, T0 + DAY), 'l@example.com')
      const remaining = await h.sql(
        `SELECT COUNT(*) AS n FROM oauth_refresh_tokens WHERE expires_at >= ${T0 + 31 * DAY}`,
      )
      assert.ok(Number(remaining[0]?.n) >= 1)
      assert.deepEqual(await node2.purgeExpired({ loginTokens: 0, codes: 0, refreshTokens: 0 }), {
        loginTokens: 0,
        codes: 0,
        refreshTokens: 0,
      })
    })
  })
}
