import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'

/**
 * OAuth 2.0 authorization server for agent clients (docs/decisions/oauth.md):
 * dynamic registration of public clients, authorization code with PKCE S256, rotating refresh
 * tokens, revocation, and the two metadata documents. Unknown request parameters are ignored, as
 * RFC 6749 §3.1/§3.2 and RFC 7591 §2 require (clients send `resource`, `grant_types` …), so the
 * request objects here are open.
 */

/** Every authorization request parameter is optional in the schema: the handler decides whether a
 * missing one is shown as a page (client or redirect URI unknown) or redirected (RFC 6749 §4.1.2.1). */
const p = (description: string) => Type.Optional(Type.String({ maxLength: 2000, description }))
const authorizationParams = {
  response_type: p('Must be `code`'),
  client_id: p('From POST /oauth/register'),
  redirect_uri: p('Exactly one of the registered redirect URIs'),
  scope: p('`mcp:read` (recorded, not enforced; other values are ignored)'),
  state: p('Returned unchanged with the code'),
  code_challenge: p('BASE64URL(SHA-256(code_verifier)), 43 characters'),
  code_challenge_method: p('Must be `S256` (`plain` is refused)'),
  resource: p(
    'RFC 8707 resource indicator: if sent, this server (PUBLIC_URL or a URL under it, such as PUBLIC_URL/mcp); any other is refused with invalid_target',
  ),
}

const html = Type.String({ description: 'An HTML page (sign-in, consent or error)' })

const oauthRegister = defineOperation({
  id: 'oauthRegister',
  method: 'POST',
  path: '/oauth/register',
  summary: 'Register a public OAuth client (RFC 7591 dynamic registration)',
  description:
    'Public clients only: no secret is issued and token_endpoint_auth_method is always `none`, whatever the request asks for. ' +
    'Redirect URIs must be absolute without fragment or user info: https, http only for the loopback hosts 127.0.0.1, [::1] and localhost, ' +
    "or a native application's private-use scheme (RFC 8252 §7.1: `com.example.app:/cb`, `cursor://…`, `vscode://…`; never `javascript:`, `data:`, `file:`, `vbscript:`, `blob:` and the like); " +
    'they are matched exactly (port included) at authorization time. At most 30 registrations per IP per hour (429 with Retry-After). ' +
    'Errors are RFC 7591 `{error, error_description}` (invalid_redirect_uri, invalid_client_metadata).',
  tags: ['oauth'],
  auth: 'none',
  errorStyle: 'oauth',
  body: Type.Object(
    {
      client_name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
      redirect_uris: Type.Array(Type.String({ minLength: 1, maxLength: 2000 }), {
        minItems: 1,
        maxItems: 10,
      }),
    },
    { additionalProperties: true },
  ),
  status: 201,
  response: Type.Object(
    {
      client_id: Type.String(),
      client_name: Type.String(),
      redirect_uris: Type.Array(Type.String()),
      token_endpoint_auth_method: Type.Literal('none'),
      grant_types: Type.Array(Type.String()),
      response_types: Type.Array(Type.String()),
      client_id_issued_at: Type.Integer({ description: 'Epoch seconds' }),
    },
    { $id: 'OAuthClientRegistration' },
  ),
  errors: [400, 413, 415, 429],
})

const oauthAuthorize = defineOperation({
  id: 'oauthAuthorize',
  method: 'GET',
  path: '/oauth/authorize',
  summary: 'Authorization endpoint: sign-in page, then consent page (authorization code with PKCE S256)',
  description:
    'Not signed in: a page that e-mails a passwordless sign-in link which returns here. Signed in (session cookie): a consent page ' +
    'naming the client and its redirect host, which posts to POST /oauth/authorize. An unknown client_id or a redirect_uri that is not ' +
    'exactly registered is shown as an error page and never redirected; other errors (missing or `plain` PKCE, bad response_type) are ' +
    'redirected to the redirect_uri with error, error_description, state and iss (RFC 6749 §4.1.2.1, RFC 9207).',
  tags: ['oauth'],
  auth: 'none',
  querystring: Type.Object(authorizationParams, { additionalProperties: true }),
  status: 200,
  response: html,
  contentType: 'text/html; charset=utf-8',
  errors: [400],
})

const oauthAuthorizeDecision = defineOperation({
  id: 'oauthAuthorizeDecision',
  method: 'POST',
  path: '/oauth/authorize',
  summary:
    'Consent decision (form post of the consent page): 303 to the redirect_uri with code and state, or error=access_denied',
  description:
    "Requires the session cookie and the consent page's CSRF token (an HMAC of the session and the request parameters). A missing or " +
    'forged token is refused with 403 and nothing is redirected. Approval issues a single-use code (5 minutes, stored hashed, bound to ' +
    'the client, account, redirect_uri, PKCE challenge and scope).',
  tags: ['oauth'],
  auth: 'none',
  bodyType: 'application/x-www-form-urlencoded',
  body: Type.Object(
    {
      ...authorizationParams,
      csrf_token: p('From the consent page'),
      decision: p('`approve` or `deny`'),
    },
    { additionalProperties: true },
  ),
  status: 200,
  response: html,
  contentType: 'text/html; charset=utf-8',
  errors: [400, 401, 403],
})

const oauthToken = defineOperation({
  id: 'oauthToken',
  method: 'POST',
  path: '/oauth/token',
  summary: 'Token endpoint: authorization_code (PKCE) and refresh_token grants',
  description:
    'Form-encoded. authorization_code: code (single use, 5 minutes), redirect_uri (exactly as authorized), client_id, code_verifier. ' +
    'A code presented twice is refused and every token of that user/client pair is revoked. refresh_token: refresh_token, client_id; ' +
    'each use returns a new refresh token (30 days) and access token; replaying a rotated refresh token revokes every token of the pair. ' +
    "The access token is an erm_user_live key valid 1 hour, usable wherever a key is and billed to the user's account. client_credentials " +
    'and other grants: unsupported_grant_type. Errors are RFC 6749 §5.2 `{error, error_description}`; every answer is Cache-Control: no-store.',
  tags: ['oauth'],
  auth: 'none',
  errorStyle: 'oauth',
  bodyType: 'application/x-www-form-urlencoded',
  body: Type.Object(
    {
      grant_type: p('authorization_code or refresh_token'),
      code: p('authorization_code grant'),
      redirect_uri: p('authorization_code grant'),
      code_verifier: p('authorization_code grant (RFC 7636)'),
      refresh_token: p('refresh_token grant'),
      client_id: p('Both grants'),
      resource: p(
        'RFC 8707: if sent, this server (PUBLIC_URL or a URL under it); a token for another resource is refused with invalid_target',
      ),
    },
    { additionalProperties: true },
  ),
  status: 200,
  response: Type.Object(
    {
      access_token: Type.String({ description: 'An erm_user_live key, valid 1 hour' }),
      token_type: Type.Literal('Bearer'),
      expires_in: Type.Integer(),
      refresh_token: Type.String(),
      scope: Type.String(),
    },
    { $id: 'OAuthTokenResponse' },
  ),
  errors: [400, 401, 413, 415, 429],
})

const oauthRevoke = defineOperation({
  id: 'oauthRevoke',
  method: 'POST',
  path: '/oauth/revoke',
  summary: 'Revoke a refresh token or an access token (RFC 7009)',
  description:
    "Form-encoded: token, token_type_hint (optional; the token's format decides). Possession of the token is the authority (public " +
    'clients). Revoking a refresh token revokes every token of its user/client pair (RFC 7009 §2.1: access tokens of the grant too); ' +
    'revoking an access token revokes that key. Unknown tokens and keys not issued by OAuth are answered 200 and left alone.',
  tags: ['oauth'],
  auth: 'none',
  errorStyle: 'oauth',
  bodyType: 'application/x-www-form-urlencoded',
  body: Type.Object(
    { token: p('The token to revoke'), token_type_hint: p('access_token or refresh_token') },
    { additionalProperties: true },
  ),
  status: 200,
  response: Type.Object({}, { $id: 'OAuthRevokeResponse' }),
  errors: [400, 413, 415, 429],
})

const getOAuthAuthorizationServerMetadata = defineOperation({
  id: 'getOAuthAuthorizationServerMetadata',
  method: 'GET',
  path: '/.well-known/oauth-authorization-server',
  summary: 'OAuth authorization server metadata (RFC 8414); the issuer is PUBLIC_URL, never the Host header',
  tags: ['oauth', 'discovery'],
  auth: 'none',
  status: 200,
  response: Type.Object(
    {
      issuer: Type.String(),
      authorization_endpoint: Type.String(),
      token_endpoint: Type.String(),
      registration_endpoint: Type.String(),
      revocation_endpoint: Type.String(),
      response_types_supported: Type.Array(Type.String()),
      response_modes_supported: Type.Array(Type.String()),
      grant_types_supported: Type.Array(Type.String()),
      code_challenge_methods_supported: Type.Array(Type.String()),
      token_endpoint_auth_methods_supported: Type.Array(Type.String()),
      revocation_endpoint_auth_methods_supported: Type.Array(Type.String()),
      scopes_supported: Type.Array(Type.String()),
      authorization_response_iss_parameter_supported: Type.Boolean(),
    },
    { $id: 'OAuthAuthorizationServerMetadata' },
  ),
  errors: [],
})

const getOAuthProtectedResourceMetadata = defineOperation({
  id: 'getOAuthProtectedResourceMetadata',
  method: 'GET',
  path: '/.well-known/oauth-protected-resource',
  summary:
    'OAuth protected resource metadata (RFC 9728): the API is the resource, this service its authorization server',
  tags: ['oauth', 'discovery'],
  auth: 'none',
  status: 200,
  response: Type.Object(
    {
      resource: Type.String(),
      authorization_servers: Type.Array(Type.String()),
      bearer_methods_supported: Type.Array(Type.String()),
      scopes_supported: Type.Array(Type.String()),
      resource_name: Type.String(),
    },
    { $id: 'OAuthProtectedResourceMetadata' },
  ),
  errors: [],
})

export const OAUTH_OPS = {
  oauthRegister,
  oauthAuthorize,
  oauthAuthorizeDecision,
  oauthToken,
  oauthRevoke,
  getOAuthAuthorizationServerMetadata,
  getOAuthProtectedResourceMetadata,
} as const
