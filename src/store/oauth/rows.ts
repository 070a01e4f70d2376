/**
 * Row shapes of the OAuth tables, shared by both SQL dialects (numbers already normalised), their
 * mapping to the interface types, and the classification both implementations apply when a
 * conditional UPDATE matched nothing.
 */
import type { AuthCode, CodeConsumption, OAuthClient, RefreshToken, Rotation } from './types.ts'

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

export const CLIENT_COLUMNS = 'client_id, client_name, redirect_uris, created_at'
export const CODE_COLUMNS =
  'hash, client_id, account_id, redirect_uri, code_challenge, scope, created_at, expires_at, used_at'
export const REFRESH_COLUMNS =
  'hash, family_id, client_id, account_id, scope, created_at, expires_at, rotated_at, revoked_at'

export function toClient(r: ClientRow): OAuthClient {
  const uris: unknown = JSON.parse(r.redirect_uris)
  // The column is ours, but a hand-edited row must fail loudly rather than authorise a bad URI.
  if (!Array.isArray(uris) || !uris.every((u) => typeof u === 'string')) {
    throw new TypeError(`oauth_clients.redirect_uris of ${r.client_id} is not a JSON string array`)
  }
  return { clientId: r.client_id, clientName: r.client_name, redirectUris: uris, createdAt: r.created_at }
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
