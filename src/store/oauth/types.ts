/**
 * OAuth 2.0 state for agent clients (spec §5 mode 2, DECISIONS.md "OAuth"): dynamically
 * registered public clients, single-use authorization codes and rotating refresh-token families.
 * Access tokens are ordinary API keys (`erm_user_*`, 1 h) stored by the account store with
 * `clientId` set. Secrets (codes, refresh tokens) are stored only as SHA-256 hashes.
 * One interface, SQLite and PostgreSQL implementations, one conformance suite.
 */

export interface OAuthClient {
  clientId: string
  clientName: string
  redirectUris: string[]
  createdAt: number
}

export interface AuthCode {
  hash: string
  clientId: string
  accountId: string
  redirectUri: string
  /** S256 challenge (base64url of SHA-256 of the verifier). */
  codeChallenge: string
  scope: string
  createdAt: number
  expiresAt: number
}

export type CodeConsumption =
  | { status: 'ok'; code: AuthCode }
  /** Presented before: the caller must revoke what the first exchange issued (RFC 6749 §4.1.2). */
  | { status: 'reused'; code: AuthCode }
  | { status: 'expired' | 'unknown' }

export interface RefreshToken {
  hash: string
  /** All tokens descending from one authorization share a family. */
  familyId: string
  clientId: string
  accountId: string
  scope: string
  createdAt: number
  expiresAt: number
  /** Set when this token was exchanged for a newer one. */
  rotatedAt: number | null
  revokedAt: number | null
}

export type Rotation =
  | { status: 'ok'; previous: RefreshToken }
  /** An already-rotated token came back: the family must be revoked (spec §5). */
  | { status: 'replayed'; previous: RefreshToken }
  | { status: 'expired' | 'revoked' | 'unknown' | 'wrong_client' }

export interface OAuthStore {
  registerClient(client: OAuthClient): Promise<OAuthClient>
  getClient(clientId: string): Promise<OAuthClient | null>

  createCode(code: AuthCode): Promise<void>
  /** Marks the code used (atomically: of two concurrent consumers exactly one gets 'ok'). */
  consumeCode(hash: string, now: number): Promise<CodeConsumption>

  createRefreshToken(token: Omit<RefreshToken, 'rotatedAt' | 'revokedAt'>): Promise<void>
  /**
   * Exchanges an active refresh token of `clientId` for `next` (same family) atomically: of two
   * concurrent rotations of one token exactly one gets 'ok', the other 'replayed'.
   */
  rotateRefreshToken(
    hash: string,
    clientId: string,
    next: Omit<RefreshToken, 'rotatedAt' | 'revokedAt' | 'familyId' | 'clientId' | 'accountId' | 'scope'>,
    now: number,
  ): Promise<Rotation>
  /** Revokes one refresh token (RFC 7009); unknown hashes are ignored. Returns its family, if any. */
  revokeRefreshToken(hash: string, now: number): Promise<RefreshToken | null>
  /**
   * Revokes every refresh token of the (account, client) pair and every API key issued to that
   * client for that account (access tokens). Returns how many of each were revoked.
   */
  revokeGrant(
    accountId: string,
    clientId: string,
    now: number,
  ): Promise<{ refreshTokens: number; accessTokens: number }>
}
