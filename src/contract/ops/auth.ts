import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { IsoDateTime, Nullable } from '../schemas.ts'

/**
 * Passwordless sign-in and key provisioning: bearer keys and sessions
 * (docs/decisions/keys-and-accounts.md).
 */

const environmentSchema = Type.Union([Type.Literal('live'), Type.Literal('test')])

/**
 * The characters a `next` may never hold (a 400, not a redirect): C0 controls, DEL, C1 controls,
 * and the Unicode line and paragraph separators. A regular-expression character class body.
 */
export const CONTROL_CHARS = '\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029'

const nextSchema = Type.String({
  maxLength: 2000,
  pattern: `^[^${CONTROL_CHARS}]*$`,
  description:
    'Same-origin path to continue to after sign-in (e.g. /app#/keys). Anything that is not a plain path of this ' +
    'origin continues to /app instead; a control character (CR, LF, tab …) is a 400.',
})

const tokenSchema = Type.String({
  minLength: 10,
  maxLength: 200,
  description: 'The token of the e-mailed link',
})

export const login = defineOperation({
  id: 'login',
  method: 'POST',
  path: '/auth/login',
  summary: 'E-mail a one-time sign-in link (valid 15 minutes, single use)',
  tags: ['auth'],
  auth: 'none',
  description:
    'A browser asking gets an HttpOnly `erm3_login` cookie (SameSite=Lax, 15 minutes) holding a random nonce, whose hash is ' +
    'stored with the link: the link signs in directly only in that browser. Opened anywhere else, it shows a page naming the ' +
    'account that asks to confirm (see GET /auth/callback). A request a browser sends from another site gets no cookie, so its ' +
    'link always asks to confirm.',
  body: Type.Object(
    {
      email: Type.String({ format: 'email', maxLength: 254 }),
      next: Type.Optional(nextSchema),
    },
    { additionalProperties: false },
  ),
  status: 202,
  response: Type.Object(
    { status: Type.Literal('sent'), expires_in: Type.Integer(), detail: Type.String() },
    { $id: 'LoginResponse' },
  ),
  errors: [400, 415, 429],
})

const sessionResponseSchema = Type.Object(
  {
    session_jwt: Type.String({
      description: 'Use as Authorization: Bearer <SESSION_JWT> for /auth/provision',
    }),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer(),
    account_id: Type.String(),
    email: Type.String(),
  },
  { $id: 'SessionResponse' },
)

export const loginCallback = defineOperation({
  id: 'loginCallback',
  method: 'GET',
  path: '/auth/callback',
  summary:
    'Follow a sign-in link: in the browser that asked for it, signs in (session cookie; 303 to next, else the session JWT); elsewhere, a confirmation page',
  description:
    'In the browser that asked for the link (its `erm3_login` cookie matches the link) the link is used: the session and CSRF ' +
    'cookies are set and the answer is a 303 to `next`, or the session JSON without one. Anywhere else — another browser, a mail ' +
    'scanner, a link someone sent you — the link is NOT used: the answer is an HTML page naming the account ("Sign in as …?") ' +
    'whose button posts to POST /auth/callback. Programs that did not keep the cookie post the token there as JSON instead.',
  tags: ['auth'],
  auth: 'none',
  querystring: Type.Object(
    { token: tokenSchema, next: Type.Optional(nextSchema) },
    { additionalProperties: false },
  ),
  status: 200,
  response: sessionResponseSchema,
  contentType: 'application/json, text/html; charset=utf-8',
  errors: [400, 401],
})

export const confirmLogin = defineOperation({
  id: 'confirmLogin',
  method: 'POST',
  path: '/auth/callback',
  summary:
    'Use a sign-in link’s token: the session JWT as JSON (programs), or the confirmation page’s form post (browsers)',
  description:
    'As JSON (`Content-Type: application/json`, `{"token"}`): answers the session JWT and sets no cookie. As the confirmation ' +
    'page’s form post (form-encoded, with its `csrf_token`, bound to the page’s SameSite=Strict `erm3_confirm` cookie): sets ' +
    'the session and CSRF cookies and answers a 303 to `next` (or /app). Either way the link is used once. A post a browser ' +
    'sends from another site, or a form without a valid token, is refused (403) and the link stays usable.',
  tags: ['auth'],
  auth: 'none',
  body: Type.Object(
    {
      token: tokenSchema,
      next: Type.Optional(nextSchema),
      csrf_token: Type.Optional(
        Type.String({ maxLength: 200, description: 'From the confirmation page (form posts only)' }),
      ),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: sessionResponseSchema,
  errors: [400, 401, 403, 415, 429],
})

const provisionResponseSchema = Type.Object(
  {
    api_key: Type.String({ description: 'Shown once; only a hash is stored' }),
    key_id: Type.String(),
    environment: environmentSchema,
    created_at: IsoDateTime,
    account_id: Type.String(),
    expires_at: Type.Optional(Nullable(IsoDateTime)),
  },
  { $id: 'ProvisionResponse' },
)

export const provision = defineOperation({
  id: 'provision',
  method: 'POST',
  path: '/auth/provision',
  summary: 'Create an API key for the signed-in account (Authorization: Bearer <SESSION_JWT>)',
  tags: ['auth'],
  auth: 'session',
  // Every field is optional and the body may be left out: a key for `live` (the specification names no required field).
  body: Type.Optional(
    Type.Object(
      {
        name: Type.Optional(Type.String({ maxLength: 100 })),
        environment: Type.Optional(
          Type.Union([Type.Literal('live'), Type.Literal('test')], {
            default: 'live',
            description: 'live (default): the production market, charged; test: the sandbox, free',
          }),
        ),
        expires_in_seconds: Type.Optional(
          Type.Integer({
            minimum: 60,
            maximum: 90 * 86400,
            description: 'The key expires after this many seconds (60 s to 90 days); default never',
          }),
        ),
      },
      { additionalProperties: false },
    ),
  ),
  status: 201,
  response: provisionResponseSchema,
  errors: [400, 401, 415, 429],
})

export const provisionFree = defineOperation({
  id: 'provisionFree',
  method: 'POST',
  path: '/auth/provision-free',
  summary:
    'Create an anonymous account with a live key and 0.50 USD of free credit (3 per client address per day, and a daily cap for the whole instance)',
  tags: ['auth'],
  auth: 'none',
  body: Type.Optional(
    Type.Object({ name: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: false }),
  ),
  status: 201,
  response: Type.Object(
    {
      api_key: Type.String(),
      key_id: Type.String(),
      environment: Type.Literal('live'),
      created_at: IsoDateTime,
      account_id: Type.String(),
      balance_usd: Type.Number(),
    },
    { $id: 'ProvisionFreeResponse' },
  ),
  description:
    'An IPv6 client counts by its network (/64 unless the operator sets ERM3_IPV6_PREFIX). 403 FORBIDDEN when the instance gives no free keys; 503 UNAVAILABLE with Retry-After (to the next 00:00 UTC) once the instance has given the day’s free keys.',
  errors: [400, 403, 415, 429, 503],
})

export const getSession = defineOperation({
  id: 'getSession',
  method: 'GET',
  path: '/auth/session',
  summary:
    'Who is signed in: the session’s account and e-mail, and what this instance offers (the dashboard’s sign-in check)',
  tags: ['auth'],
  auth: 'session',
  status: 200,
  response: Type.Object(
    {
      account_id: Type.String(),
      email: Type.String(),
      features: Type.Optional(
        Type.Object(
          {
            card_top_ups: Type.Boolean({
              description:
                'Stripe is configured: POST /billing/checkout works (else top-ups go through the operator)',
            }),
            brokerage: Type.Boolean({ description: 'Plaid is configured: the /plaid operations work' }),
          },
          { description: 'What the operator configured on this instance' },
        ),
      ),
    },
    { $id: 'CurrentSessionResponse' },
  ),
  errors: [401, 429],
})

export const logout = defineOperation({
  id: 'logout',
  method: 'POST',
  path: '/auth/logout',
  summary:
    'Sign out: ends this session on the server and clears the session and CSRF cookies of this browser',
  description:
    'Sessions are kept on the server: the session used for this call is revoked at once, on every node, whether it came as ' +
    'the cookie or as a bearer JWT (a copy of it then answers 401 REVOKED_KEY). API keys are not sessions and stay valid; ' +
    'the session’s dashboard key (POST /auth/dashboard-key) is revoked with it.',
  tags: ['auth'],
  auth: 'session',
  status: 204,
  response: Type.Null(),
  errors: [401, 403, 429],
})

export const logoutAll = defineOperation({
  id: 'logoutAll',
  method: 'POST',
  path: '/auth/logout-all',
  summary:
    'Sign out everywhere: ends every session of the account (this one included) and clears this browser’s cookies',
  description:
    'Every session of the account — other browsers, other devices, session JWTs held by programs — answers 401 REVOKED_KEY ' +
    'from now on, on every node. API keys (including OAuth access tokens) are not sessions: revoke those on /account/keys.',
  tags: ['auth'],
  auth: 'session',
  status: 200,
  response: Type.Object(
    { signed_out_sessions: Type.Integer({ description: 'How many sessions were still signed in' }) },
    { $id: 'LogoutAllResponse' },
  ),
  errors: [401, 403, 429],
})

export const dashboardKey = defineOperation({
  id: 'dashboardKey',
  method: 'POST',
  path: '/auth/dashboard-key',
  summary:
    'The dashboard’s API key for this session: the same key each time it is asked, never a new one per page',
  description:
    'One live key per sign-in session (kind `user`, named `dashboard (this browser session)`), expiring with the session ' +
    'and revoked when it signs out. The key is derived from the session on the server, so asking again (a reload) answers ' +
    'the same key and stores nothing new; erm3 still keeps only its hash. Revoked by hand on /account/keys, the next ' +
    'ask answers a fresh one. The dashboard makes its metered calls with it.',
  tags: ['auth'],
  auth: 'session',
  status: 200,
  response: provisionResponseSchema,
  errors: [401, 403, 409, 429],
})
