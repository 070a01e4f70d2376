import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { agentMetaSchema, IsoDateTime, Nullable, NullableNumber, riskMetadataSchema } from '../schemas.ts'
import { metricsSnapshotSchema } from './metrics.ts'
import { snapshot as snapshotOp } from './snapshot.ts'

/**
 * Brokerage holdings through Plaid (GET /plaid/holdings: the connected brokerage and the key must
 * belong to the same user account). Linking is session-authenticated
 * account administration (no price, no MCP tool); GET /plaid/holdings is a metered data operation
 * (0.02 USD, capability plaid_holdings) and so also an MCP tool. Unconfigured servers answer 503.
 */

const itemId = Type.String({ pattern: '^[A-Za-z0-9_]{1,64}$', description: 'Linked item id (pli_…)' })

const plaidItemSchema = Type.Object(
  {
    id: itemId,
    plaid_item_id: Type.String({ description: "Plaid's item_id" }),
    institution_id: Nullable(Type.String()),
    institution_name: Nullable(Type.String()),
    created_at: IsoDateTime,
    last_error: Nullable(
      Type.String({ description: 'Last Plaid error code of this item (ITEM_LOGIN_REQUIRED: re-link it)' }),
    ),
  },
  {
    $id: 'PlaidItem',
    description: 'A linked brokerage connection. The Plaid access token is stored encrypted and never shown.',
  },
)

const SESSION_ERRORS = [400, 401, 403, 404, 415, 429, 502, 503, 504]

const createPlaidLinkToken = defineOperation({
  id: 'createPlaidLinkToken',
  method: 'POST',
  path: '/plaid/link-token',
  summary: 'Create a Plaid Link token for linking a brokerage account (investments) to the signed-in account',
  description:
    'Open Plaid Link with link_token; pass the public_token Link returns to POST /plaid/exchange. With item_id, the ' +
    'token opens Link in update mode for that item (re-link after RELINK_REQUIRED); no exchange is needed afterwards.',
  tags: ['plaid'],
  auth: 'session',
  body: Type.Object(
    { item_id: Type.Optional(itemId) },
    { additionalProperties: false, description: 'Empty, or the item to re-link' },
  ),
  status: 201,
  response: Type.Object(
    {
      link_token: Type.String(),
      expiration: Type.String({ description: 'When the link token expires (ISO 8601)' }),
      update_mode: Type.Boolean(),
    },
    { $id: 'PlaidLinkToken' },
  ),
  errors: SESSION_ERRORS,
})

const exchangePlaidPublicToken = defineOperation({
  id: 'exchangePlaidPublicToken',
  method: 'POST',
  path: '/plaid/exchange',
  summary: 'Exchange the public token from Plaid Link and store the connection (its access token encrypted)',
  tags: ['plaid'],
  auth: 'session',
  body: Type.Object(
    {
      public_token: Type.String({ minLength: 1, maxLength: 512 }),
      institution_id: Type.Optional(
        Type.String({ maxLength: 64, description: "From Link's onSuccess metadata" }),
      ),
      institution_name: Type.Optional(
        Type.String({ maxLength: 200, description: "From Link's onSuccess metadata" }),
      ),
    },
    { additionalProperties: false },
  ),
  status: 201,
  response: plaidItemSchema,
  errors: [...SESSION_ERRORS, 409],
})

const listPlaidItems = defineOperation({
  id: 'listPlaidItems',
  method: 'GET',
  path: '/plaid/items',
  summary: 'Brokerage connections linked to the signed-in account',
  tags: ['plaid'],
  auth: 'session',
  status: 200,
  response: Type.Object({ items: Type.Array(plaidItemSchema) }, { $id: 'PlaidItemList' }),
  errors: [401, 429, 503],
})

const deletePlaidItem = defineOperation({
  id: 'deletePlaidItem',
  method: 'DELETE',
  path: '/plaid/items/:id',
  summary: 'Unlink a brokerage connection: Plaid /item/remove, then the stored access token is deleted',
  tags: ['plaid'],
  auth: 'session',
  params: Type.Object({ id: itemId }, { additionalProperties: false }),
  status: 200,
  response: Type.Object({ id: Type.String(), deleted: Type.Literal(true) }, { $id: 'PlaidItemDeleted' }),
  errors: [400, 401, 404, 429, 502, 503, 504],
})

const { _metadata: _m, _agent: _a, ...riskFields } = metricsSnapshotSchema.properties
const positionRiskSchema = Type.Object(riskFields, {
  $id: 'PlaidPositionRisk',
  description: 'The fields of GET /metrics/{ticker} for the position’s ticker (without _metadata/_agent)',
})

const { _metadata: _sm, _agent: _sa, ...snapshotFields } = snapshotOp.response.properties

const positionSchema = Type.Object(
  {
    item_id: Type.String(),
    account_id: Type.String({ description: 'Plaid account_id (see items[].accounts)' }),
    security_id: Type.String(),
    ticker: Nullable(Type.String()),
    name: Nullable(Type.String()),
    security_type: Nullable(
      Type.String({ description: 'Plaid security type: equity, etf, mutual fund, cash, derivative, …' }),
    ),
    quantity: Type.Number(),
    institution_price: Type.Number(),
    institution_value: Type.Number(),
    cost_basis: NullableNumber,
    currency: Nullable(Type.String()),
    risk: Nullable(positionRiskSchema),
    risk_unavailable_reason: Nullable(
      Type.String({
        description: 'Why risk is null: cash, not a common stock, no ticker, not in the erm3 universe, …',
      }),
    ),
  },
  { $id: 'PlaidPosition' },
)

const getPlaidHoldings = defineOperation({
  id: 'getPlaidHoldings',
  method: 'GET',
  path: '/plaid/holdings',
  summary:
    'Brokerage holdings of the linked accounts (Plaid), each position joined with its erm3 risk, plus the snapshot of the covered positions',
  description:
    'For every brokerage connection linked to the key’s account (dashboard: POST /plaid/link-token, POST /plaid/exchange): ' +
    'items → accounts (type, subtype, balances), securities, positions (quantity, institution_price, institution_value, ' +
    'cost_basis, currency). Each position of a US common stock in the erm3 universe carries `risk`, the fields of ' +
    'GET /metrics/{ticker}; others carry risk null and risk_unavailable_reason (cash, ETF, mutual fund, option, no ticker, ' +
    'not in the universe). `snapshot` is the answer of POST /snapshot for the covered long positions weighted by ' +
    'institution_value (included in the price), or null with snapshot_unavailable_reason. The key and the brokerage ' +
    'connection must belong to the same signed-up account: keys of anonymous accounts (provision-free) get 403 ' +
    'ACCOUNT_REQUIRED; no linked connection → 404 (free). A connection that needs re-authentication → 409 ' +
    'RELINK_REQUIRED naming it; Plaid failing → 502 UPSTREAM_ERROR or 504 UPSTREAM_TIMEOUT; errors are never charged. ' +
    'Holdings are live brokerage data: never served from the response cache (_agent.cache_status BYPASS), so every ' +
    'successful call costs 0.02 USD. Test keys never reach Plaid nor the linked connections: they get one ' +
    'simulated item (id pli_sandbox: fixed positions in sandbox stocks, an ETF and cash) joined with the sandbox ' +
    'model, free.',
  tags: ['data'],
  auth: 'key',
  lineage: true,
  status: 200,
  response: Type.Object(
    {
      items: Type.Array(
        Type.Object({
          id: Type.String(),
          plaid_item_id: Type.String(),
          institution_id: Nullable(Type.String()),
          institution_name: Nullable(Type.String()),
          error: Nullable(
            Type.String({ description: 'NO_INVESTMENT_ACCOUNTS etc.: the item holds nothing to show' }),
          ),
          accounts: Type.Array(
            Type.Object({
              account_id: Type.String(),
              name: Type.String(),
              official_name: Nullable(Type.String()),
              mask: Nullable(Type.String()),
              type: Type.String(),
              subtype: Nullable(Type.String()),
              balances: Type.Object({
                current: NullableNumber,
                available: NullableNumber,
                iso_currency_code: Nullable(Type.String()),
              }),
            }),
          ),
        }),
      ),
      securities: Type.Array(
        Type.Object({
          security_id: Type.String(),
          name: Nullable(Type.String()),
          ticker_symbol: Nullable(Type.String()),
          type: Nullable(Type.String()),
          is_cash_equivalent: Nullable(Type.Boolean()),
          close_price: NullableNumber,
          iso_currency_code: Nullable(Type.String()),
        }),
      ),
      positions: Type.Array(positionSchema),
      covered_count: Type.Integer({ description: 'Positions with risk' }),
      snapshot: Nullable(Type.Object(snapshotFields, { $id: 'PlaidHoldingsSnapshot' })),
      snapshot_unavailable_reason: Nullable(Type.String()),
      _metadata: riskMetadataSchema,
      _agent: agentMetaSchema,
    },
    { $id: 'PlaidHoldingsResponse' },
  ),
  errors: [401, 402, 403, 404, 409, 429, 502, 503, 504],
})

export const PLAID_OPS = {
  createPlaidLinkToken,
  exchangePlaidPublicToken,
  listPlaidItems,
  deletePlaidItem,
  getPlaidHoldings,
} as const
