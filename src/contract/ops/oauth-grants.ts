import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { IsoDateTime, Nullable } from '../schemas.ts'

/**
 * The OAuth grants of the account ("connected agents"): what the user approved for which client,
 * and its revocation. Signed-in session only, like every change to the account; not MCP tools.
 */

const clientIdParams = Type.Object(
  { client_id: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_]+$' }) },
  { additionalProperties: false },
)

const oauthGrantSchema = Type.Object(
  {
    client_id: Type.String(),
    client_name: Type.String({ description: 'As the client registered it (not verified by erm3)' }),
    redirect_uris: Type.Array(Type.String(), { description: 'Every redirect URI the client registered' }),
    approved_redirect_uri: Nullable(
      Type.String({
        description: 'Where the latest approval was sent (null for grants older than this record)',
      }),
    ),
    scope: Type.String(),
    created_at: IsoDateTime,
    approved_at: Nullable(IsoDateTime),
    last_used_at: Nullable(IsoDateTime),
    active: Type.Boolean({
      description:
        'A token of the grant works now; false once its tokens expired unused (it can still be revoked)',
    }),
    active_access_tokens: Type.Integer(),
    active_refresh_tokens: Type.Integer(),
  },
  { $id: 'OAuthGrant' },
)

const listOAuthGrants = defineOperation({
  id: 'listOAuthGrants',
  method: 'GET',
  path: '/account/oauth-grants',
  summary: 'The agents (OAuth clients) the account approved, with when and how recently they were used',
  description:
    'One entry per client: every grant not revoked, and any client holding a token that still works. ' +
    'last_used_at is the latest call with one of its access tokens or refresh of its tokens (recorded within ' +
    'a few seconds). A revoked grant is gone from the list.',
  tags: ['account'],
  auth: 'session',
  status: 200,
  response: Type.Object(
    { account_id: Type.String(), grants: Type.Array(oauthGrantSchema) },
    { $id: 'OAuthGrantsResponse' },
  ),
  errors: [401, 429],
})

const revokeOAuthGrant = defineOperation({
  id: 'revokeOAuthGrant',
  method: 'DELETE',
  path: '/account/oauth-grants/:client_id',
  summary: "Revoke an agent's access: every access and refresh token of the grant, at once",
  description:
    'Its access tokens answer 401 REVOKED_KEY (at once on the node that revoked, within 2 seconds on ' +
    'every other), its refresh tokens and unexchanged codes answer invalid_grant. The client must ask the ' +
    'user again to get new tokens. A client without a listed grant (never granted, revoked already, or ' +
    'another account’s) is a 404.',
  tags: ['account'],
  auth: 'session',
  params: clientIdParams,
  status: 200,
  response: Type.Object(
    {
      client_id: Type.String(),
      revoked_at: IsoDateTime,
      access_tokens_revoked: Type.Integer(),
      refresh_tokens_revoked: Type.Integer({ description: 'Including already rotated ones of its families' }),
    },
    { $id: 'RevokedOAuthGrant' },
  ),
  errors: [400, 401, 403, 404, 429],
})

export const OAUTH_GRANT_OPS = { listOAuthGrants, revokeOAuthGrant } as const
