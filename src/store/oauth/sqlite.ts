/**
 * OAuth store on the account store's SQLite connection (same file, same WAL, same write lock).
 * better-sqlite3 is synchronous, so within the server process calls cannot interleave; the
 * conditional UPDATEs and BEGIN IMMEDIATE still make every claim atomic against the operator CLI,
 * which may hold another connection to the file.
 */
import type Database from 'better-sqlite3'
import {
  approvalUpsert,
  CLIENT_COLUMNS,
  type ClientRow,
  CODE_COLUMNS,
  type CodeRow,
  classifyCode,
  classifyRotation,
  type GrantRow,
  grantsQuery,
  REFRESH_COLUMNS,
  type RefreshRow,
  toClient,
  toCode,
  toGrants,
  toRefresh,
} from './rows.ts'
import type { OAuthStore, Rotation } from './types.ts'

function prepare(db: Database.Database) {
  return {
    insertClient: db.prepare(
      'INSERT INTO oauth_clients (client_id, client_name, redirect_uris, created_at) VALUES (?, ?, ?, ?)',
    ),
    client: db.prepare<[string], ClientRow>(
      `SELECT ${CLIENT_COLUMNS} FROM oauth_clients WHERE client_id = ?`,
    ),
    insertCode: db.prepare(
      `INSERT INTO oauth_codes (hash, client_id, account_id, redirect_uri, code_challenge, scope, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    code: db.prepare<[string], CodeRow>(`SELECT ${CODE_COLUMNS} FROM oauth_codes WHERE hash = ?`),
    // The claim: only an unused, unexpired code matches, and only once.
    claimCode: db.prepare<[number, string, number], CodeRow>(
      `UPDATE oauth_codes SET used_at = ? WHERE hash = ? AND used_at IS NULL AND expires_at > ?
       RETURNING ${CODE_COLUMNS}`,
    ),
    insertRefresh: db.prepare(
      `INSERT INTO oauth_refresh_tokens (hash, family_id, client_id, account_id, scope, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ),
    refresh: db.prepare<[string], RefreshRow>(
      `SELECT ${REFRESH_COLUMNS} FROM oauth_refresh_tokens WHERE hash = ?`,
    ),
    // The claim: only an active token of this client matches, and only once.
    claimRefresh: db.prepare<[number, string, string, number], RefreshRow>(
      `UPDATE oauth_refresh_tokens SET rotated_at = ?
       WHERE hash = ? AND client_id = ? AND rotated_at IS NULL AND revoked_at IS NULL AND expires_at > ?
       RETURNING ${REFRESH_COLUMNS}`,
    ),
    revokeRefresh: db.prepare<[number, string], RefreshRow>(
      `UPDATE oauth_refresh_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE hash = ?
       RETURNING ${REFRESH_COLUMNS}`,
    ),
    revokeGrantRefresh: db.prepare<[number, string, string]>(
      `UPDATE oauth_refresh_tokens SET revoked_at = ?
       WHERE account_id = ? AND client_id = ? AND revoked_at IS NULL`,
    ),
    revokeGrantKeys: db.prepare<[number, string, string]>(
      'UPDATE api_keys SET revoked_at = ? WHERE account_id = ? AND client_id = ? AND revoked_at IS NULL',
    ),
    expireGrantCodes: db.prepare<{ now: number; account: string; client: string }>(
      `UPDATE oauth_codes SET expires_at = @now
       WHERE account_id = @account AND client_id = @client AND used_at IS NULL AND expires_at > @now`,
    ),
    revokeGrantRecord: db.prepare<[number, string, string]>(
      'UPDATE oauth_grants SET revoked_at = ? WHERE account_id = ? AND client_id = ? AND revoked_at IS NULL',
    ),
    recordApproval: db.prepare(approvalUpsert('@account', '@client', '@at', '@uri', '@scope')),
    grants: db.prepare<{ account: string; now: number }, GrantRow>(
      grantsQuery({ account: '@account', now: '@now' }),
    ),
  }
}

/** `db` is the account store's connection; the tables come from its migrations (version 2). */
export function createSqliteOAuthStore(db: Database.Database): OAuthStore {
  // Preparing needs the tables, which exist only after the account store's migrate().
  let prepared: ReturnType<typeof prepare> | null = null
  const s = () => {
    prepared ??= prepare(db)
    return prepared
  }

  return {
    async registerClient(c) {
      s().insertClient.run(c.clientId, c.clientName, JSON.stringify(c.redirectUris), c.createdAt)
      return { ...c, redirectUris: [...c.redirectUris] }
    },
    async getClient(clientId) {
      const r = s().client.get(clientId)
      return r ? toClient(r) : null
    },

    async recordApproval(a) {
      s().recordApproval.run({
        account: a.accountId,
        client: a.clientId,
        at: a.at,
        uri: a.redirectUri,
        scope: a.scope,
      })
    },
    async listGrants(accountId, now) {
      return toGrants(s().grants.all({ account: accountId, now }))
    },

    async createCode(c) {
      s().insertCode.run(
        c.hash,
        c.clientId,
        c.accountId,
        c.redirectUri,
        c.codeChallenge,
        c.scope,
        c.createdAt,
        c.expiresAt,
      )
    },
    async consumeCode(hash, now) {
      return db
        .transaction(() => {
          const claimed = s().claimCode.get(now, hash, now)
          if (claimed) return { status: 'ok' as const, code: toCode(claimed) }
          return classifyCode(s().code.get(hash))
        })
        .immediate()
    },

    async createRefreshToken(t) {
      s().insertRefresh.run(t.hash, t.familyId, t.clientId, t.accountId, t.scope, t.createdAt, t.expiresAt)
    },
    async rotateRefreshToken(hash, clientId, next, now) {
      return db
        .transaction((): Rotation => {
          const claimed = s().claimRefresh.get(now, hash, clientId, now)
          if (!claimed) return classifyRotation(s().refresh.get(hash), clientId, now)
          // Same transaction as the claim: a rotation either leaves both tokens or neither.
          const { family_id, client_id, account_id, scope } = claimed
          s().insertRefresh.run(
            next.hash,
            family_id,
            client_id,
            account_id,
            scope,
            next.createdAt,
            next.expiresAt,
          )
          return { status: 'ok', previous: toRefresh(claimed) }
        })
        .immediate()
    },
    async revokeRefreshToken(hash, now) {
      const r = s().revokeRefresh.get(now, hash)
      return r ? toRefresh(r) : null
    },
    async revokeGrant(accountId, clientId, now) {
      return db
        .transaction(() => ({
          refreshTokens: s().revokeGrantRefresh.run(now, accountId, clientId).changes,
          accessTokens: s().revokeGrantKeys.run(now, accountId, clientId).changes,
          codes: s().expireGrantCodes.run({ now, account: accountId, client: clientId }).changes,
          grant: s().revokeGrantRecord.run(now, accountId, clientId).changes > 0,
        }))
        .immediate()
    },
  }
}
