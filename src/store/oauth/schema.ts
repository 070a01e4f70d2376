/**
 * Migration 8 of the account store: the grant of an (account, client) pair as the user gave it.
 * Tokens alone cannot say when a grant began (expired refresh tokens are purged, taking the
 * family's first token with them) nor which redirect URI the user approved, so approval records
 * both here; revocation marks the row in the same transaction as the tokens. The list of grants
 * still reads the tokens too, so a token can never work without its grant being listed.
 *
 * Existing pairs with an unrevoked refresh token become grants, dated by their oldest such token
 * (the approved redirect URI is unknown for them: null).
 */
export function oauthGrantTables(time: 'INTEGER' | 'BIGINT'): string[] {
  return [
    `CREATE TABLE oauth_grants (
      account_id TEXT NOT NULL REFERENCES accounts (id),
      client_id TEXT NOT NULL REFERENCES oauth_clients (client_id),
      created_at ${time} NOT NULL,
      approved_at ${time} NOT NULL,
      redirect_uri TEXT,
      scope TEXT NOT NULL,
      revoked_at ${time},
      PRIMARY KEY (account_id, client_id)
    )`,
    `INSERT INTO oauth_grants (account_id, client_id, created_at, approved_at, redirect_uri, scope, revoked_at)
     SELECT account_id, client_id, MIN(created_at), MAX(created_at), NULL, MIN(scope), NULL
     FROM oauth_refresh_tokens WHERE revoked_at IS NULL GROUP BY account_id, client_id`,
    // The grant list and revocation look up an account's codes (pending approvals).
    'CREATE INDEX oauth_codes_grant ON oauth_codes (account_id, client_id)',
  ]
}
