import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { datasetOriginSchema, IsoDate, IsoDateTime, Nullable } from '../schemas.ts'

/** Free account operations: balance, invoices, pricing, estimate, health. */

const balanceResponseSchema = Type.Object(
  {
    account_id: Type.String(),
    balance_usd: Type.Number(),
    currency: Type.Literal('USD'),
    environment: Type.Union([Type.Literal('live'), Type.Literal('test')]),
    status: Type.Object({
      can_make_requests: Type.Boolean(),
      billing: Type.String({ description: 'prepaid | sandbox (test keys never move the balance)' }),
    }),
    limits: Type.Object({
      requests_per_minute: Type.Integer(),
      burst: Type.Integer(),
      max_concurrent: Type.Integer(),
    }),
  },
  { $id: 'BalanceResponse' },
)

export const getBalance = defineOperation({
  id: 'getBalance',
  method: 'GET',
  path: '/balance',
  summary: 'Prepaid balance, whether the key can make requests, and its real limits',
  description:
    'Debits and top-ups made through the server that answers show at once; a change made elsewhere ' +
    '(another node, the operator CLI) shows within 1 second. Whether a metered call is affordable is ' +
    'always decided against the ledger itself, never against this view.',
  tags: ['account'],
  auth: 'key',
  status: 200,
  response: balanceResponseSchema,
  errors: [401, 429],
})

const invoiceSchema = Type.Object({
  id: Type.String(),
  kind: Type.Union([
    Type.Literal('topup'),
    Type.Literal('credit'),
    Type.Literal('refund'),
    Type.Literal('debit'),
    Type.Literal('payment_refund'),
    Type.Literal('chargeback'),
  ]),
  amount_usd: Type.Number({
    description:
      'Signed: debits, payment_refund (a card payment refunded) and chargeback (a dispute) are negative',
  }),
  capability: Nullable(Type.String()),
  request_id: Nullable(Type.String()),
  reference: Nullable(Type.String()),
  created_at: IsoDateTime,
})

const invoicesQuerySchema = Type.Object(
  {
    period: Type.Optional(
      Type.Union(
        [Type.Literal('month'), Type.Literal('quarter'), Type.Literal('year'), Type.Literal('all')],
        {
          default: 'month',
          description: 'Current calendar month, quarter or year (UTC), or all time',
        },
      ),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  },
  { additionalProperties: false },
)

export const getInvoices = defineOperation({
  id: 'getInvoices',
  method: 'GET',
  path: '/invoices',
  summary: 'Ledger-backed spend summary and entries for a period',
  tags: ['account'],
  auth: 'key',
  querystring: invoicesQuerySchema,
  status: 200,
  response: Type.Object(
    {
      account_id: Type.String(),
      summary: Type.Object({
        period: Type.String(),
        from: Nullable(IsoDate),
        to: IsoDate,
        spent_usd: Type.Number(),
        requests: Type.Integer(),
        top_ups_usd: Type.Number(),
      }),
      invoices: Type.Array(invoiceSchema),
      truncated: Type.Boolean(),
    },
    { $id: 'InvoicesResponse' },
  ),
  errors: [400, 401, 429],
})

export const pricingEntrySchema = Type.Object({
  capability_id: Type.String(),
  method: Type.String(),
  path: Type.String(),
  model: Type.String(),
  cost_usd: Type.Number(),
  min_charge: Nullable(Type.Number()),
  batch_cost_usd: Type.Optional(
    Type.Number({ description: 'Price of a batch call (more than one ticker); cost_usd is then one ticker' }),
  ),
  billing_code: Type.String(),
  tier: Type.String(),
  description: Type.String(),
  input_cost_per_1k_tokens_usd: Type.Optional(Type.Number({ description: 'per_token (chat)' })),
  output_cost_per_1k_tokens_usd: Type.Optional(Type.Number({ description: 'per_token (chat)' })),
})

export const getPricing = defineOperation({
  id: 'getPricing',
  method: 'GET',
  path: '/pricing',
  summary: 'Per-capability prices (USD) of every metered operation',
  tags: ['account'],
  auth: 'none',
  status: 200,
  response: Type.Object(
    {
      currency: Type.Literal('USD'),
      cached_responses_free: Type.Boolean(),
      min_top_up_usd: Type.Number(),
      capabilities: Type.Array(pricingEntrySchema),
      free: Type.Array(Type.String()),
    },
    { $id: 'PricingResponse' },
  ),
  errors: [],
})

const estimateRequestSchema = Type.Object(
  {
    operation: Type.String({
      description: 'Operation id (e.g. getMetrics), capability id, or "METHOD /path"',
    }),
    params: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
)

export const estimate = defineOperation({
  id: 'estimate',
  method: 'POST',
  path: '/estimate',
  summary: 'Cost of an operation with given parameters, before calling it',
  tags: ['account'],
  auth: 'none',
  body: estimateRequestSchema,
  status: 200,
  response: Type.Object(
    {
      estimated_cost_usd: Type.Number(),
      capability: Type.String(),
      pricing_model: Type.Union([
        Type.Literal('per_request'),
        Type.Literal('per_position'),
        Type.Literal('per_token'),
        Type.Literal('subscription'),
      ]),
      note: Type.String(),
      estimated_rows: Type.Optional(
        Type.Integer({
          description:
            'per_position: the positions priced (one result each). History operations (/ticker-returns, /returns, /etf-returns, /lstar, /returns-decomposition, /l3-decomposition): the rows of the window asked (days; month ends for /l3-decomposition), for a ticker listed over all of it (an upper bound)',
        }),
      ),
      estimated_tokens: Type.Optional(
        Type.Integer({ description: 'per_token (chat): the tokens of one model answer, input + output' }),
      ),
      estimated_tokens_split: Type.Optional(
        Type.Object(
          { input: Type.Integer(), output: Type.Integer() },
          { description: 'per_token (chat): estimated_tokens split into input and output (max_tokens)' },
        ),
      ),
      estimated_bytes: Type.Optional(
        Type.Integer({
          description:
            'per_token (chat): the UTF-8 bytes the input tokens are estimated from (prompt, messages, tools). History operations: the JSON size of estimated_rows, about 13 bytes a date and 20 a value per selected field',
        }),
      ),
      unit_cost_usd: Type.Optional(Type.Number()),
      min_charge: Type.Optional(Type.Number()),
    },
    { $id: 'EstimateResponse' },
  ),
  errors: [400, 404, 415],
})

const componentSchema = Type.Object({ ok: Type.Boolean(), backend: Type.String(), detail: Type.String() })

export const getHealth = defineOperation({
  id: 'getHealth',
  method: 'GET',
  path: '/health',
  summary: 'Service health: model store freshness, database and limiter backends, degraded states',
  tags: ['account'],
  auth: 'none',
  status: 200,
  response: Type.Object(
    {
      status: Type.Union([Type.Literal('ok'), Type.Literal('degraded'), Type.Literal('down')]),
      version: Type.String(),
      uptime_s: Type.Number(),
      model: Type.Object({
        ok: Type.Boolean(),
        model_version: Nullable(Type.String()),
        data_as_of: Nullable(IsoDate),
        built_at: Nullable(Type.String()),
        stale_days: Nullable(
          Type.Integer({ description: 'Trading-calendar-free age of data_as_of in days' }),
        ),
        sandbox_data_as_of: Nullable(IsoDate),
        dataset: Nullable(datasetOriginSchema),
        build_id: Nullable(Type.String({ description: 'The build CURRENT named when this node loaded it' })),
        loaded_at: Nullable(Type.String({ description: 'When this node started serving the build' })),
        last_reload_failure: Nullable(
          Type.Object(
            {
              build: Nullable(Type.String()),
              error: Type.String(),
              at: Type.String(),
            },
            { description: 'The last new build this node refused (it kept serving build_id)' },
          ),
        ),
      }),
      data: Type.Object(
        {
          data_as_of: Nullable(IsoDate),
          age_days: Nullable(Type.Integer({ description: 'Calendar days since data_as_of' })),
          age_sessions: Nullable(
            Type.Integer({
              description:
                'NYSE sessions after data_as_of that should already be in (closed at least 4 hours ago)',
            }),
          ),
          stale_after_sessions: Type.Integer({ description: 'ERM3_STALE_AFTER_SESSIONS' }),
          monitored: Type.Boolean({
            description:
              'The data is meant to be current: an updater maintains the store, or this node schedules the update',
          }),
          stale: Type.Boolean({
            description: 'Monitored, and age_sessions exceeds stale_after_sessions (status is degraded)',
          }),
          last_update: Nullable(
            Type.Object(
              {
                outcome: Type.Union([
                  Type.Literal('updated'),
                  Type.Literal('unchanged'),
                  Type.Literal('quarantined'),
                  Type.Literal('failed'),
                ]),
                started_at: Type.String(),
                finished_at: Type.String(),
                message: Type.String(),
                error: Nullable(Type.String()),
                days: Type.Array(IsoDate, { description: 'The trading days the run appended' }),
                build: Nullable(Type.String()),
                findings: Type.Integer({ description: 'Data-quality findings of the run' }),
                findings_by_kind: Type.Record(Type.String(), Type.Integer()),
              },
              { description: "The live store's last daily update (its status/update.json)" },
            ),
          ),
          status_error: Nullable(Type.String({ description: 'Why the update status could not be read' })),
        },
        { description: 'How current the data is' },
      ),
      database: componentSchema,
      limits: Type.Object({
        ok: Type.Boolean(),
        backend: Type.String(),
        degraded: Type.Boolean(),
        detail: Type.String(),
      }),
    },
    { $id: 'HealthResponse' },
  ),
  errors: [],
})
