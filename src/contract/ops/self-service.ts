import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { IsoDate, IsoDateTime, Nullable } from '../schemas.ts'

/**
 * Self-service account API. Changes need a signed-in session (Authorization: Bearer
 * <SESSION_JWT>, or the session cookie with X-CSRF-Token: 403 without it); what is read-only also
 * answers the account's own API keys.
 * None of these is priced, so none is an MCP tool (contract/tools.ts lists priced operations and a
 * fixed set of free ones).
 */

const environmentSchema = Type.Union([Type.Literal('live'), Type.Literal('test')])
const keyIdParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_]+$' }) },
  { additionalProperties: false },
)
const keyName = Type.String({ minLength: 1, maxLength: 100 })

const accountKeySchema = Type.Object(
  {
    id: Type.String(),
    name: Nullable(Type.String()),
    prefix: Type.String({ description: 'Display prefix; never enough to use the key' }),
    environment: environmentSchema,
    kind: Type.Union([Type.Literal('agent'), Type.Literal('user')]),
    tier: Type.String(),
    status: Type.Union([Type.Literal('active'), Type.Literal('expired'), Type.Literal('revoked')]),
    created_at: IsoDateTime,
    last_used_at: Nullable(IsoDateTime),
    expires_at: Nullable(IsoDateTime),
    revoked_at: Nullable(IsoDateTime),
  },
  { $id: 'AccountKey' },
)

const listAccountKeys = defineOperation({
  id: 'listAccountKeys',
  method: 'GET',
  path: '/account/keys',
  summary:
    'The API keys of the account (OAuth access tokens excluded: see /account/oauth-grants); never the secrets',
  tags: ['account'],
  auth: 'key_or_session',
  status: 200,
  response: Type.Object(
    { account_id: Type.String(), keys: Type.Array(accountKeySchema) },
    { $id: 'AccountKeysResponse' },
  ),
  errors: [401, 429],
})

const createdKeySchema = Type.Object(
  {
    api_key: Type.String({ description: 'Shown once; only a hash is stored' }),
    key: accountKeySchema,
  },
  { $id: 'CreatedAccountKey' },
)

const createAccountKey = defineOperation({
  id: 'createAccountKey',
  method: 'POST',
  path: '/account/keys',
  summary: 'Create an API key (shown once)',
  tags: ['account'],
  auth: 'session',
  body: Type.Object(
    { name: Type.Optional(keyName), environment: environmentSchema },
    { additionalProperties: false },
  ),
  status: 201,
  response: createdKeySchema,
  errors: [400, 401, 403, 415, 429],
})

const renameAccountKey = defineOperation({
  id: 'renameAccountKey',
  method: 'PATCH',
  path: '/account/keys/:id',
  summary: 'Rename an API key of the account (null clears the name)',
  description: 'An OAuth access token is not renamed (409 CONFLICT): it belongs to its grant.',
  tags: ['account'],
  auth: 'session',
  params: keyIdParams,
  body: Type.Object({ name: Nullable(keyName) }, { additionalProperties: false }),
  status: 200,
  response: accountKeySchema,
  errors: [400, 401, 403, 404, 409, 415, 429],
})

const MAX_OVERLAP_SECONDS = 7 * 24 * 3600

const rotateAccountKey = defineOperation({
  id: 'rotateAccountKey',
  method: 'POST',
  path: '/account/keys/:id/rotate',
  summary: 'Replace an API key with a new one (shown once); the old one stops at once or after an overlap',
  description:
    'The new key has the old one’s name, environment and tier. With overlap_seconds > 0 the old key keeps ' +
    'working until then and expires (EXPIRED_KEY); with 0 (the default) it is revoked at once (REVOKED_KEY). ' +
    'An OAuth access token is not rotated (409 CONFLICT): it belongs to its grant.',
  tags: ['account'],
  auth: 'session',
  params: keyIdParams,
  body: Type.Object(
    {
      overlap_seconds: Type.Optional(
        Type.Integer({
          minimum: 0,
          maximum: MAX_OVERLAP_SECONDS,
          default: 0,
          description: 'How long the old key keeps working (at most 7 days); send {} for none',
        }),
      ),
    },
    { additionalProperties: false },
  ),
  status: 201,
  response: Type.Object(
    {
      api_key: Type.String({ description: 'Shown once; only a hash is stored' }),
      key: accountKeySchema,
      previous: accountKeySchema,
    },
    { $id: 'RotatedAccountKey' },
  ),
  errors: [400, 401, 403, 404, 409, 415, 429],
})

const revokeAccountKey = defineOperation({
  id: 'revokeAccountKey',
  method: 'DELETE',
  path: '/account/keys/:id',
  summary: 'Revoke an API key of the account (idempotent)',
  description:
    'The id of an OAuth access token (an agent’s, not listed among the keys) revokes its whole grant, as ' +
    'DELETE /account/oauth-grants/{client_id} does: the access token alone would come back at the ' +
    'client’s next refresh.',
  tags: ['account'],
  auth: 'session',
  params: keyIdParams,
  status: 200,
  response: accountKeySchema,
  errors: [400, 401, 403, 404, 429],
})

const dayRange = {
  from: Type.Optional(IsoDate),
  to: Type.Optional(IsoDate),
}

export const MAX_RANGE_DAYS = 366

const getAccountUsage = defineOperation({
  id: 'getAccountUsage',
  method: 'GET',
  path: '/account/usage',
  summary: 'Metered calls per UTC day and capability: requests, cache hits (free) and cost',
  description:
    'Days from `from` to `to` inclusive (UTC; default the last 30 days, at most 366). Counts include free ' +
    'calls (cache hits, 304s); they may lag by up to 2 seconds. The ledger is the record of money.',
  tags: ['account'],
  auth: 'key_or_session',
  querystring: Type.Object(dayRange, { additionalProperties: false }),
  status: 200,
  response: Type.Object(
    {
      account_id: Type.String(),
      from: IsoDate,
      to: IsoDate,
      days: Type.Array(
        Type.Object({
          date: IsoDate,
          capability: Type.String(),
          environment: environmentSchema,
          requests: Type.Integer(),
          cache_hits: Type.Integer(),
          cost_usd: Type.Number(),
        }),
      ),
      totals: Type.Object({ requests: Type.Integer(), cache_hits: Type.Integer(), cost_usd: Type.Number() }),
    },
    { $id: 'AccountUsageResponse' },
  ),
  errors: [400, 401, 429],
})

const ledgerRowSchema = Type.Object({
  date: IsoDate,
  kind: Type.String({
    description: 'topup, credit, refund, debit, or a payment reversal (payment_refund, chargeback)',
  }),
  capability: Nullable(Type.String()),
  count: Type.Integer({ description: 'Debits: charged calls in the group; otherwise 1' }),
  amount_usd: Type.Number({ description: 'Signed: debits are negative' }),
  reference: Nullable(Type.String()),
  id: Nullable(Type.String({ description: 'Ledger entry id (null for a group of debits)' })),
  created_at: Nullable(IsoDateTime),
})

const getAccountLedger = defineOperation({
  id: 'getAccountLedger',
  method: 'GET',
  path: '/account/ledger',
  summary: 'The ledger for a date range: top-ups, credits and refunds, debits grouped per day and capability',
  description:
    'Tabular (format=csv|parquet or Accept): one flat table of the same rows (date, kind, capability, count, ' +
    'amount_usd, reference, id, created_at).',
  tags: ['account'],
  auth: 'key_or_session',
  querystring: Type.Object(
    {
      ...dayRange,
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: 1000 })),
      format: Type.Optional(Type.String({ description: 'json (default), csv or parquet' })),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      account_id: Type.String(),
      from: IsoDate,
      to: IsoDate,
      rows: Type.Array(ledgerRowSchema),
      totals: Type.Object({
        top_ups_usd: Type.Number(),
        credits_usd: Type.Number(),
        refunds_usd: Type.Number(),
        reversals_usd: Type.Number({ description: 'Payment refunds and chargebacks (negative)' }),
        spent_usd: Type.Number(),
        charged_requests: Type.Integer(),
      }),
      truncated: Type.Boolean({ description: 'More top-ups/credits/refunds than `limit` in the range' }),
    },
    { $id: 'AccountLedgerResponse' },
  ),
  errors: [400, 401, 406, 429],
})

const accountSettingsSchema = Type.Object(
  {
    account_id: Type.String(),
    spend_cap_usd: Nullable(Type.Number({ description: 'Monthly (UTC calendar month) cap; null = none' })),
    month_spent_usd: Type.Number({ description: 'Settled spending of the current UTC month' }),
    month_resets_at: IsoDateTime,
  },
  { $id: 'AccountSettings' },
)

const getAccountSettings = defineOperation({
  id: 'getAccountSettings',
  method: 'GET',
  path: '/account/settings',
  summary: 'Account settings: the monthly spend cap and this month’s spending',
  tags: ['account'],
  auth: 'key_or_session',
  status: 200,
  response: accountSettingsSchema,
  errors: [401, 404, 429],
})

const MAX_SPEND_CAP_USD = 1_000_000

const updateAccountSettings = defineOperation({
  id: 'updateAccountSettings',
  method: 'PATCH',
  path: '/account/settings',
  summary: 'Set or remove (null) the monthly spend cap',
  description:
    'A metered call that would take this UTC month’s spending (settled + in flight + its own cost) over the ' +
    'cap is refused with 402 SPEND_CAP_REACHED; test keys are never capped.',
  tags: ['account'],
  auth: 'session',
  body: Type.Object(
    {
      spend_cap_usd: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: MAX_SPEND_CAP_USD }))),
    },
    { additionalProperties: false },
  ),
  status: 200,
  response: accountSettingsSchema,
  errors: [400, 401, 403, 415, 429],
})

const auditEntrySchema = Type.Object({
  id: Type.String(),
  at: IsoDateTime,
  actor: Type.Object({
    type: Type.Union([
      Type.Literal('session'),
      Type.Literal('key'),
      Type.Literal('operator'),
      Type.Literal('client'),
    ]),
    id: Type.String({ description: 'Session e-mail, key id, operator, or OAuth client id' }),
  }),
  action: Type.String(),
  target: Nullable(Type.String()),
  detail: Nullable(Type.Record(Type.String(), Type.Unknown())),
  ip: Nullable(Type.String()),
})

const getAccountAudit = defineOperation({
  id: 'getAccountAudit',
  method: 'GET',
  path: '/account/audit',
  summary:
    'Audit log of the account’s changes (keys, settings, OAuth grants): who, what, when, from which IP; newest first',
  tags: ['account'],
  auth: 'key_or_session',
  querystring: Type.Object(
    { ...dayRange, limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })) },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      account_id: Type.String(),
      entries: Type.Array(auditEntrySchema),
      truncated: Type.Boolean(),
    },
    { $id: 'AccountAuditResponse' },
  ),
  errors: [400, 401, 429],
})

export const SELF_SERVICE_OPS = {
  listAccountKeys,
  createAccountKey,
  renameAccountKey,
  rotateAccountKey,
  revokeAccountKey,
  getAccountUsage,
  getAccountLedger,
  getAccountSettings,
  updateAccountSettings,
  getAccountAudit,
} as const
