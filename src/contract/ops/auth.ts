import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { IsoDateTime, Nullable } from '../schemas.ts'

/** Passwordless sign-in and key provisioning (spec §5 modes 1 and 3; DECISIONS.md "Keys and accounts"). */

const environmentSchema = Type.Union([Type.Literal('live'), Type.Literal('test')])

export const login = defineOperation({
  id: 'login',
  method: 'POST',
  path: '/auth/login',
  summary: 'E-mail a one-time sign-in link (valid 15 minutes, single use)',
  tags: ['auth'],
  auth: 'none',
  body: Type.Object(
    {
      email: Type.String({ format: 'email', maxLength: 254 }),
      next: Type.Optional(
        Type.String({ maxLength: 2000, description: 'Same-site path to continue to after sign-in' }),
      ),
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

export const sessionResponseSchema = Type.Object(
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
    'Follow a sign-in link: sets the session cookie and returns the session JWT (or redirects to next)',
  tags: ['auth'],
  auth: 'none',
  querystring: Type.Object(
    {
      token: Type.String({ minLength: 10, maxLength: 200 }),
      next: Type.Optional(Type.String({ maxLength: 2000 })),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: sessionResponseSchema,
  errors: [400, 401],
})

export const provisionResponseSchema = Type.Object(
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
  body: Type.Object(
    {
      name: Type.Optional(Type.String({ maxLength: 100 })),
      environment: environmentSchema,
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
  summary: 'Who is signed in: the session’s account and e-mail (the dashboard’s sign-in check)',
  tags: ['auth'],
  auth: 'session',
  status: 200,
  response: Type.Object(
    { account_id: Type.String(), email: Type.String() },
    { $id: 'CurrentSessionResponse' },
  ),
  errors: [401, 429],
})

export const logout = defineOperation({
  id: 'logout',
  method: 'POST',
  path: '/auth/logout',
  summary: 'Sign out: clears the session and CSRF cookies of this browser',
  description:
    'Session JWTs are stateless and expire after 12 hours; a bearer JWT held elsewhere stays valid until then. ' +
    'The dashboard also revokes the explorer key it provisioned for the browser session.',
  tags: ['auth'],
  auth: 'session',
  status: 204,
  response: Type.Null(),
  errors: [401, 403, 429],
})
