/**
 * OAuth store on the account store's SQLite connection (same file, same WAL, same write lock).
 * better-sqlite3 is synchronous, so within the server process calls cannot interleave; the
 * conditional UPDATEs and BEGIN IMMEDIATE still make every claim atomic against the operator CLI,
 * which may hold another connection to the file.
 */
import type Database from 'better-sqlite3'
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

function prepare(db: Database.Database) {
  return {
    insertClient: db.prepare(SQL.insertClient),
    client: db.prepare<[string], ClientRow>(SQL.client),
    insertCode: db.prepare(SQL.insertCode),
    code: db.prepare<[string], CodeRow>(SQL.code),
    claimCode: db.prepare<[number, string, number], CodeRow>(SQL.claimCode),
    insertRefresh: db.prepare(SQL.insertRefresh),
    refresh: db.prepare<[string], RefreshRow>(SQL.refresh),
    claimRefresh: db.prepare<[number, string, string, number], RefreshRow>(SQL.claimRefresh),
    revokeRefresh: db.prepare<[number, string], RefreshRow>(SQL.revokeRefresh),
    revokeGrantRefresh: db.prepare<[number, string, string]>(SQL.revokeGrantRefresh),
    revokeGrantKeys: db.prepare<[number, string, string]>(SQL.revokeGrantKeys),
    expireGrantCodes: db.prepare<[number, string, string, number]>(SQL.expireGrantCodes),
    revokeGrantRecord: db.prepare<[number, string, string]>(SQL.revokeGrantRecord),
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
      s().insertCode.run(...codeValues(c))
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
          codes: s().expireGrantCodes.run(now, accountId, clientId, now).changes,
          grant: s().revokeGrantRecord.run(now, accountId, clientId).changes > 0,
        }))
        .immediate()
    },
  }
}
