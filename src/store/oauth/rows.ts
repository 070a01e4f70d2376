/**
 * Row shapes of the OAuth tables, shared by both SQL dialects (numbers already normalised), their
 * mapping to the interface types, and the classification both implementations apply when a
 * conditional UPDATE matched nothing.
 */
import type { AuthCode, CodeConsumption, OAuthClient, OAuthGrant, RefreshToken, Rotation } from './types.ts'

export interface ClientRow {
  client_id: string
  client_name: string
  redirect_uris: string
  created_at: number
}

export interface CodeRow {
  hash: string
  client_id: string
  account_id: string
  redirect_uri: string
  code_challenge: string
  scope: string
  created_at: number
  expires_at: number
  used_at: number | null
}

export interface RefreshRow {
  hash: string
  family_id: string
  client_id: string
  account_id: string
  scope: string
  created_at: number
  expires_at: number
  rotated_at: number | null
  revoked_at: number | null
}

const CLIENT_COLUMNS = 'client_id, client_name, redirect_uris, created_at'
const CODE_COLUMNS =
  'hash, client_id, account_id, redirect_uri, code_challenge, scope, created_at, expires_at, used_at'
const REFRESH_COLUMNS =
  'hash, family_id, client_id, account_id, scope, created_at, expires_at, rotated_at, revoked_at'

/**
 * The statements both dialects run, with `?` placeholders (PostgreSQL numbers them with `toPg`);
 * each comment lists the parameters in order.
 */
export const SQL = {
  /** client id, name, redirect URIs (JSON), created at */
  insertClient:
    'INSERT INTO oauth_clients (client_id, client_name, redirect_uris, created_at) VALUES (?, ?, ?, ?)',
  /** client id */
  client: `SELECT ${CLIENT_COLUMNS} FROM oauth_clients WHERE client_id = ?`,
  /** hash, client id, account id, redirect URI, challenge, scope, created at, expires at */
  insertCode: `INSERT INTO oauth_codes (hash, client_id, account_id, redirect_uri, code_challenge, scope, created_at, expires_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  /** hash */
  code: `SELECT ${CODE_COLUMNS} FROM oauth_codes WHERE hash = ?`,
  /** The claim: only an unused, unexpired code matches, and only once. now, hash, now */
  claimCode: `UPDATE oauth_codes SET used_at = ? WHERE hash = ? AND used_at IS NULL AND expires_at > ?
    RETURNING ${CODE_COLUMNS}`,
  /** hash, family id, client id, account id, scope, created at, expires at */
  insertRefresh: `INSERT INTO oauth_refresh_tokens (hash, family_id, client_id, account_id, scope, created_at, expires_at)
    VALUES (?, ?, ?, ?, ?, ?, ?)`,
  /** hash */
  refresh: `SELECT ${REFRESH_COLUMNS} FROM oauth_refresh_tokens WHERE hash = ?`,
  /** The claim: only an active token of this client matches, and only once. now, hash, client id, now */
  claimRefresh: `UPDATE oauth_refresh_tokens SET rotated_at = ?
    WHERE hash = ? AND client_id = ? AND rotated_at IS NULL AND revoked_at IS NULL AND expires_at > ?
    RETURNING ${REFRESH_COLUMNS}`,
  /** now, hash */
  revokeRefresh: `UPDATE oauth_refresh_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE hash = ?
    RETURNING ${REFRESH_COLUMNS}`,
  /** Revoking a grant, each: now, account id, client id */
  revokeGrantRefresh: `UPDATE oauth_refresh_tokens SET revoked_at = ?
    WHERE account_id = ? AND client_id = ? AND revoked_at IS NULL`,
  revokeGrantKeys:
    'UPDATE api_keys SET revoked_at = ? WHERE account_id = ? AND client_id = ? AND revoked_at IS NULL',
  revokeGrantRecord:
    'UPDATE oauth_grants SET revoked_at = ? WHERE account_id = ? AND client_id = ? AND revoked_at IS NULL',
  /** The grant's codes not yet exchanged expire now: now, account id, client id, now */
  expireGrantCodes: `UPDATE oauth_codes SET expires_at = ?
    WHERE account_id = ? AND client_id = ? AND used_at IS NULL AND expires_at > ?`,
} as const

/** SQL.insertCode's parameters. */
export const codeValues = (c: AuthCode) => [
  c.hash,
  c.clientId,
  c.accountId,
  c.redirectUri,
  c.codeChallenge,
  c.scope,
  c.createdAt,
  c.expiresAt,
]

function redirectUrisOf(clientId: string, raw: string): string[] {
  const uris: unknown = JSON.parse(raw)
  // The column is ours, but a hand-edited row must fail loudly rather than authorise a bad URI.
  if (!Array.isArray(uris) || !uris.every((u) => typeof u === 'string')) {
    throw new TypeError(`oauth_clients.redirect_uris of ${clientId} is not a JSON string array`)
  }
  return uris
}

export function toClient(r: ClientRow): OAuthClient {
  return {
    clientId: r.client_id,
    clientName: r.client_name,
    redirectUris: redirectUrisOf(r.client_id, r.redirect_uris),
    createdAt: r.created_at,
  }
}

export function toCode(r: CodeRow): AuthCode {
  return {
    hash: r.hash,
    clientId: r.client_id,
    accountId: r.account_id,
    redirectUri: r.redirect_uri,
    codeChallenge: r.code_challenge,
    scope: r.scope,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
  }
}

export function toRefresh(r: RefreshRow): RefreshToken {
  return {
    hash: r.hash,
    familyId: r.family_id,
    clientId: r.client_id,
    accountId: r.account_id,
    scope: r.scope,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    rotatedAt: r.rotated_at,
    revokedAt: r.revoked_at,
  }
}

/**
 * Why a code could not be claimed. A used code reports 'reused' even once expired: reuse is the
 * signal that makes the caller revoke what the first exchange issued (RFC 6749 §4.1.2).
 */
export function classifyCode(r: CodeRow | undefined): CodeConsumption {
  if (!r) return { status: 'unknown' }
  if (r.used_at !== null) return { status: 'reused', code: toCode(r) }
  return { status: 'expired' }
}

/**
 * Why a refresh token could not be rotated. The client check comes first so another client learns
 * nothing about the token. A rotated token reports 'replayed' even once revoked or expired: the
 * spec revokes the pair on any replay of a rotated token, and telling the caller so is our job.
 */
export function classifyRotation(r: RefreshRow | undefined, clientId: string, now: number): Rotation {
  if (!r) return { status: 'unknown' }
  if (r.client_id !== clientId) return { status: 'wrong_client' }
  if (r.rotated_at !== null) return { status: 'replayed', previous: toRefresh(r) }
  if (r.revoked_at !== null) return { status: 'revoked' }
  if (r.expires_at <= now) return { status: 'expired' }
  // Unreachable when called after a failed conditional UPDATE under a lock; kept total for safety.
  throw new Error(`refresh token of ${r.account_id} is active but could not be rotated`)
}

/**
 * Records a consent (see OAuthStore.recordApproval); placeholders: account, client, at
 * (used twice), redirect URI, scope. The same statement in both dialects (ON CONFLICT … DO UPDATE).
 */
export function approvalUpsert(account: string, client: string, at: string, uri: string, scope: string) {
  return `INSERT INTO oauth_grants (account_id, client_id, created_at, approved_at, redirect_uri, scope, revoked_at)
    VALUES (${account}, ${client}, ${at}, ${at}, ${uri}, ${scope}, NULL)
    ON CONFLICT (account_id, client_id) DO UPDATE SET
      created_at = CASE WHEN oauth_grants.revoked_at IS NULL THEN oauth_grants.created_at ELSE excluded.created_at END,
      approved_at = excluded.approved_at, redirect_uri = excluded.redirect_uri, scope = excluded.scope,
      revoked_at = NULL`
}

/** One row of the grant list query (aggregates may arrive as strings or numerics from pg). */
export interface GrantRow {
  client_id: string
  client_name: string | null
  redirect_uris: string | null
  granted_at: number | string | null
  approved_at: number | string | null
  redirect_uri: string | null
  scope: string | null
  revoked_at: number | string | null
  refresh_live: number | string
  refresh_first: number | string | null
  refreshed_at: number | string | null
  access_live: number | string
  access_first: number | string | null
  used_at: number | string | null
  code_live: number | string
  code_first: number | string | null
}

/**
 * The grant list of one account: per client it was ever granted to, the grant record and what its
 * tokens say (live counts, the oldest unrevoked one, the last use and refresh). The pairs come
 * from the tokens as well as the records, so a token without a record is still listed.
 * `p` names the dialect's placeholders of the account id and of now.
 */
export function grantsQuery(p: { account: string; now: string }): string {
  const liveRefresh = `rotated_at IS NULL AND revoked_at IS NULL AND expires_at > ${p.now}`
  const liveKey = `revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${p.now})`
  return `WITH
  g AS (SELECT client_id, created_at, approved_at, redirect_uri, scope, revoked_at
        FROM oauth_grants WHERE account_id = ${p.account}),
  rt AS (SELECT client_id, SUM(CASE WHEN ${liveRefresh} THEN 1 ELSE 0 END) AS live,
           MIN(CASE WHEN revoked_at IS NULL THEN created_at END) AS first_at, MAX(rotated_at) AS refreshed_at
         FROM oauth_refresh_tokens WHERE account_id = ${p.account} GROUP BY client_id),
  ak AS (SELECT client_id, SUM(CASE WHEN ${liveKey} THEN 1 ELSE 0 END) AS live,
           MIN(CASE WHEN revoked_at IS NULL THEN created_at END) AS first_at, MAX(last_used_at) AS used_at
         FROM api_keys WHERE account_id = ${p.account} AND client_id IS NOT NULL GROUP BY client_id),
  oc AS (SELECT client_id, COUNT(*) AS live, MIN(created_at) AS first_at
         FROM oauth_codes WHERE account_id = ${p.account} AND used_at IS NULL AND expires_at > ${p.now}
         GROUP BY client_id),
  pairs AS (SELECT client_id FROM g UNION SELECT client_id FROM rt
            UNION SELECT client_id FROM ak UNION SELECT client_id FROM oc)
SELECT pairs.client_id, c.client_name, c.redirect_uris,
  g.created_at AS granted_at, g.approved_at, g.redirect_uri, g.scope, g.revoked_at,
  COALESCE(rt.live, 0) AS refresh_live, rt.first_at AS refresh_first, rt.refreshed_at,
  COALESCE(ak.live, 0) AS access_live, ak.first_at AS access_first, ak.used_at,
  COALESCE(oc.live, 0) AS code_live, oc.first_at AS code_first
FROM pairs
LEFT JOIN oauth_clients c ON c.client_id = pairs.client_id
LEFT JOIN g ON g.client_id = pairs.client_id
LEFT JOIN rt ON rt.client_id = pairs.client_id
LEFT JOIN ak ON ak.client_id = pairs.client_id
LEFT JOIN oc ON oc.client_id = pairs.client_id`
}

const num = (v: number | string | null): number | null => (v === null ? null : Number(v))
const latest = (...xs: (number | null)[]): number | null =>
  xs.reduce<number | null>((a, x) => (x === null ? a : a === null ? x : Math.max(a, x)), null)

/** The listed grants of the query's rows (see OAuthGrant), newest first. */
export function toGrants(rows: readonly GrantRow[]): OAuthGrant[] {
  const out: OAuthGrant[] = []
  for (const r of rows) {
    const live = {
      refreshTokens: Number(r.refresh_live),
      accessTokens: Number(r.access_live),
      codes: Number(r.code_live),
    }
    const recorded = r.granted_at !== null && r.revoked_at === null
    if (!recorded && live.refreshTokens + live.accessTokens + live.codes === 0) continue
    const firstToken = [num(r.refresh_first), num(r.access_first), num(r.code_first)].filter(
      (x): x is number => x !== null,
    )
    const createdAt = recorded ? Number(r.granted_at) : Math.min(...firstToken)
    // Use before this grant began belongs to an earlier, revoked one.
    const lastUsedAt = [num(r.used_at), num(r.refreshed_at)].filter((x) => x !== null && x >= createdAt)
    out.push({
      clientId: r.client_id,
      clientName: r.client_name,
      redirectUris: r.redirect_uris === null ? [] : redirectUrisOf(r.client_id, r.redirect_uris),
      approvedRedirectUri: recorded ? r.redirect_uri : null,
      scope: recorded ? r.scope : null,
      createdAt,
      approvedAt: recorded ? num(r.approved_at) : null,
      lastUsedAt: latest(...lastUsedAt),
      live,
    })
  }
  return out.sort((a, b) => b.createdAt - a.createdAt || a.clientId.localeCompare(b.clientId))
}
