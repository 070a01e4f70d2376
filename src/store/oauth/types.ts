/**
 * OAuth 2.0 state for agent clients (docs/decisions/oauth.md): dynamically
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
  /** An already-rotated token came back: the family must be revoked (docs/decisions/oauth.md). */
  | { status: 'replayed'; previous: RefreshToken }
  | { status: 'expired' | 'revoked' | 'unknown' | 'wrong_client' }

/** What a user approved, recorded at consent (the grant of an account to a client). */
interface Approval {
  accountId: string
  clientId: string
  redirectUri: string
  scope: string
  at: number
}

/**
 * A grant as its account sees it: listed while it is not revoked, or while any token of the pair
 * still works (so no working token is ever unlisted).
 */
export interface OAuthGrant {
  clientId: string
  /** Null only if the client row is missing (never, short of a hand-edited database). */
  clientName: string | null
  redirectUris: string[]
  /** The redirect URI of the latest approval; null for grants recorded before approvals were. */
  approvedRedirectUri: string | null
  /** The approved scope; null without a record. */
  scope: string | null
  /** The first approval of the grant (without a record of it: its oldest unrevoked token). */
  createdAt: number
  /** The latest approval; null without a record. */
  approvedAt: number | null
  /** The latest call with one of its access tokens or refresh of its tokens, since `createdAt`. */
  lastUsedAt: number | null
  /** Tokens of the grant that work now: refresh tokens, access tokens, codes not yet exchanged. */
  live: { refreshTokens: number; accessTokens: number; codes: number }
}

export interface GrantRevocation {
  refreshTokens: number
  accessTokens: number
  /** Codes approved but not yet exchanged, now expired. */
  codes: number
  /** Whether a recorded, unrevoked grant was marked revoked. */
  grant: boolean
}

export interface OAuthStore {
  registerClient(client: OAuthClient): Promise<OAuthClient>
  getClient(clientId: string): Promise<OAuthClient | null>

  /**
   * Records a consent: a new grant of the pair (a revoked one starts again, dated `at`), or the
   * latest approval of the unrevoked one (its first approval kept).
   */
  recordApproval(approval: Approval): Promise<void>
  /** The account's grants (see OAuthGrant), newest first. */
  listGrants(accountId: string, now: number): Promise<OAuthGrant[]>

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
   * Revokes the (account, client) pair in one transaction: every refresh token, every API key
   * issued to that client for that account (access tokens), the codes not yet exchanged (expired
   * now) and the grant record. Returns how many of each were revoked.
   */
  revokeGrant(accountId: string, clientId: string, now: number): Promise<GrantRevocation>
}
