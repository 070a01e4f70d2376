/**
 * OAuth store on the account store's PostgreSQL pool (same database, same durable commits: OAuth
 * state is never written through the account store's synchronous_commit=off pool).
 *
 * Claims are conditional UPDATEs: under READ COMMITTED a second claimer blocks on the row lock,
 * re-checks the WHERE against the committed row and matches nothing. Rotation and grant
 * revocation additionally take a transaction-scoped advisory lock on the (account, client) pair:
 * without it a grant revocation could miss the token a concurrent rotation inserts (a row inserted
 * after the revoking UPDATE took its snapshot), leaving a live token of a revoked grant.
 */
import type pg from 'pg'
import { toPg } from '../accounts/webhooks-sql.ts'
import {
  approvalUpsert,
  type ClientRow,
  type CodeRow,
  classifyCode,
  classifyRotation,
  codeValues,
  type GrantRow,
  grantsQuery,
  type RefreshRow,
  SQL,
  toClient,
  toCode,
  toGrants,
  toRefresh,
} from './rows.ts'
import type { OAuthStore, Rotation } from './types.ts'

/** The account store's transaction runner (retries deadlocks and serialisation failures). */
export type Tx = <T>(fn: (c: pg.PoolClient) => Promise<T>) => Promise<T>

const LOCK_GRANT = 'SELECT pg_advisory_xact_lock(hashtext($1))'
const grantKey = (accountId: string, clientId: string) => `erm3.oauth.grant:${accountId}:${clientId}`
const APPROVE = approvalUpsert('$1', '$2', '$3', '$4', '$5')
const GRANTS = grantsQuery({ account: '$1', now: '$2' })
/** The shared statements, numbered for PostgreSQL. */
const PG = Object.fromEntries(Object.entries(SQL).map(([k, v]) => [k, toPg(v)])) as Record<
  keyof typeof SQL,
  string
>

/** `pool` must parse BIGINT as numbers (the account store's pool does). */
export function createPostgresOAuthStore(pool: pg.Pool, tx: Tx): OAuthStore {
  const q = async <R extends pg.QueryResultRow>(text: string, values: unknown[], name?: string) =>
    (await pool.query<R>({ text, values, name })).rows
  const c: OAuthContext = { tx, q }
  return { ...clientMethods(c), ...grantMethods(c), ...tokenMethods(c) }
}

interface OAuthContext {
  tx: Tx
  q: <R extends pg.QueryResultRow>(text: string, values: unknown[], name?: string) => Promise<R[]>
}

/** Registered clients (dynamic client registration). */
function clientMethods({ q }: OAuthContext) {
  return {
    async registerClient(c) {
      await q(PG.insertClient, [c.clientId, c.clientName, JSON.stringify(c.redirectUris), c.createdAt])
      return { ...c, redirectUris: [...c.redirectUris] }
    },
    async getClient(clientId) {
      const [r] = await q<ClientRow>(PG.client, [clientId], 'oauth_client')
      return r ? toClient(r) : null
    },
  } satisfies Partial<OAuthStore>
}

/**
 * Grants: an approval recorded, the account's grants listed, and a grant revoked with everything
 * issued under it (under the grant's lock, as rotations take it).
 */
function grantMethods({ tx, q }: OAuthContext) {
  return {
    async recordApproval(a) {
      await q(APPROVE, [a.accountId, a.clientId, a.at, a.redirectUri, a.scope])
    },
    async listGrants(accountId, now) {
      return toGrants(await q<GrantRow>(GRANTS, [accountId, now], 'oauth_grants_list'))
    },
    revokeGrant(accountId, clientId, now) {
      return tx(async (c) => {
        await c.query(LOCK_GRANT, [grantKey(accountId, clientId)])
        const tokens = await c.query(
          `UPDATE oauth_refresh_tokens SET revoked_at = $3
           WHERE account_id = $1 AND client_id = $2 AND revoked_at IS NULL`,
          [accountId, clientId, now],
        )
        const keys = await c.query(
          'UPDATE api_keys SET revoked_at = $3 WHERE account_id = $1 AND client_id = $2 AND revoked_at IS NULL',
          [accountId, clientId, now],
        )
        const codes = await c.query(
          `UPDATE oauth_codes SET expires_at = $3
           WHERE account_id = $1 AND client_id = $2 AND used_at IS NULL AND expires_at > $3`,
          [accountId, clientId, now],
        )
        const grant = await c.query(
          'UPDATE oauth_grants SET revoked_at = $3 WHERE account_id = $1 AND client_id = $2 AND revoked_at IS NULL',
          [accountId, clientId, now],
        )
        return {
          refreshTokens: tokens.rowCount ?? 0,
          accessTokens: keys.rowCount ?? 0,
          codes: codes.rowCount ?? 0,
          grant: (grant.rowCount ?? 0) > 0,
        }
      })
    },
  } satisfies Partial<OAuthStore>
}

/** Authorization codes (used once) and refresh tokens (rotated once; a replay is told apart). */
function tokenMethods({ tx, q }: OAuthContext) {
  return {
    async createCode(c) {
      await q(PG.insertCode, codeValues(c))
    },
    async consumeCode(hash, now) {
      const [claimed] = await q<CodeRow>(PG.claimCode, [now, hash, now])
      if (claimed) return { status: 'ok', code: toCode(claimed) }
      // Read after the failed claim: a code only ever moves from usable to used, never back.
      const [r] = await q<CodeRow>(PG.code, [hash])
      return classifyCode(r)
    },

    async createRefreshToken(t) {
      await q(PG.insertRefresh, [
        t.hash,
        t.familyId,
        t.clientId,
        t.accountId,
        t.scope,
        t.createdAt,
        t.expiresAt,
      ])
    },
    rotateRefreshToken(hash, clientId, next, now) {
      return tx(async (c): Promise<Rotation> => {
        const [found] = (await c.query<RefreshRow>(PG.refresh, [hash])).rows
        if (!found || found.client_id !== clientId) return classifyRotation(found, clientId, now)
        await c.query(LOCK_GRANT, [grantKey(found.account_id, clientId)])
        const claimed = await c.query<RefreshRow>(PG.claimRefresh, [now, hash, clientId, now])
        const [prev] = claimed.rows
        if (!prev) {
          // A fresh statement sees what the concurrent winner committed (READ COMMITTED).
          return classifyRotation((await c.query<RefreshRow>(PG.refresh, [hash])).rows[0], clientId, now)
        }
        await c.query(PG.insertRefresh, [
          next.hash,
          prev.family_id,
          prev.client_id,
          prev.account_id,
          prev.scope,
          next.createdAt,
          next.expiresAt,
        ])
        return { status: 'ok', previous: toRefresh(prev) }
      })
    },
    async revokeRefreshToken(hash, now) {
      const [r] = await q<RefreshRow>(PG.revokeRefresh, [now, hash])
      return r ? toRefresh(r) : null
    },
  } satisfies Partial<OAuthStore>
}
