import { type TSchema, Type } from 'typebox'

/** Schema helpers shared by the contract's operations. */
export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()])
export const NullableNumber = Nullable(Type.Number())
export const IsoDate = Type.String({ format: 'date', description: 'YYYY-MM-DD' })
export const IsoDateTime = Type.String({ format: 'date-time' })

export const agentMetaSchema = Type.Object(
  {
    cost_usd: Type.Number({ description: 'Charged for this call; 0 when served from cache' }),
    balance_usd: Type.Optional(
      Type.Number({
        description:
          "The account's prepaid balance after this call's charge (also the X-Balance-USD header): the settled balance read as the call began (this server's own debits show at once, another node's within 1 second) minus cost_usd; other calls of the account still in flight are not subtracted. Test keys: the sandbox balance, never moved.",
      }),
    ),
    latency_ms: Type.Integer(),
    request_id: Type.String(),
    confidence: Type.Object(
      {
        overall: Type.Number({ minimum: 0, maximum: 1, description: 'The minimum of the factors' }),
        factors: Type.Record(Type.String(), Type.Number()),
      },
      {
        description:
          'How much of the answer rests on a populated model, each factor in [0, 1]. model_coverage: the share of the four L3 explained-risk fractions populated (snapshots) or of the returned days/tickers whose L3 state exists (series, batches); er_identity (snapshots): 1 − |Σ ER − 1| / 0.05, floored at 0; freshness (where given): 1 when the state or series reaches data_as_of, 0.5 otherwise (a delisted or stale ticker).',
      },
    ),
    data_freshness: IsoDateTime,
    billing_code: Type.String(),
    cache_status: Type.Union([Type.Literal('HIT'), Type.Literal('MISS'), Type.Literal('BYPASS')]),
  },
  { $id: 'AgentMeta' },
)

export const datasetOriginSchema = Type.Object(
  {
    kind: Type.Union([Type.Literal('synthetic'), Type.Literal('imported'), Type.Literal('vendor')], {
      description:
        "synthetic: erm3's generated market (tickers and names of large companies are labels on generated series, not market data); imported: price files the operator imported; vendor: market data erm3 fetched from the vendors in `sources`",
    }),
    seed: Type.Optional(Type.Integer({ description: 'Seed of the synthetic market (kind synthetic)' })),
    sources: Type.Optional(
      Type.Array(Type.String(), { description: 'The vendors the data was fetched from (kind vendor)' }),
    ),
  },
  { $id: 'DatasetOrigin', description: 'What the served data is' },
)

/** `_metadata.ticker_note`, and a batch row's `ticker_note`: the answer is for an old ticker. */
export const TickerNote = Type.Optional(
  Type.String({
    description:
      'Present when the ticker asked is an old ticker of the security answered, which trades under another one now, e.g. "FB is now META (since 2022-06-09)". Absent for a current ticker, a reused ticker\'s current holder included.',
  }),
)

export const riskMetadataSchema = Type.Object(
  {
    model_version: Type.String({ pattern: '^ERM3-L3-v[0-9]+$' }),
    data_as_of: IsoDate,
    factor_set_id: Type.String(),
    universe_size: Type.Integer(),
    wiki_uri: Type.String({ format: 'uri' }),
    factors: Type.Array(Type.String()),
    data_source: Type.Literal('zarr'),
    dataset: datasetOriginSchema,
    range: Type.Optional(Type.Array(IsoDate, { minItems: 2, maxItems: 2 })),
    ticker_note: TickerNote,
    as_of_requested: Type.Optional(IsoDate),
    as_of_note: Type.Optional(
      Type.String({
        description:
          'Present when the as_of asked was not a trading day: which trading day (the latest on or before it) answered',
      }),
    ),
    risk_model: Type.Optional(
      Type.Object(
        {
          version: Type.String({ description: 'The book risk model, versioned apart from model_version' }),
          estimator: Type.String(),
          estimator_description: Type.String(),
          default_estimator: Type.String({
            description:
              'The estimator used when the request names none (the one the model evaluation recommends)',
          }),
          horizon_days: Type.Integer(),
        },
        { description: 'How a book risk (POST /snapshot) was forecast from the per-stock model' },
      ),
    ),
    nothing_to_answer: Type.Optional(
      Type.Object(
        {
          asset_type: Type.Union([Type.Literal('etf'), Type.Literal('stock')]),
          reason: Type.String(),
          see: Nullable(Type.String({ description: "The operation that has this ticker's data instead" })),
        },
        {
          $id: 'NothingToAnswer',
          description:
            'Present when the operation has nothing to answer for this ticker (an ETF on a model operation, a stock too short for the model, a company without SEC filings): the answer is free (`_agent.cost_usd` 0) and its model fields are null or empty. See docs/decisions/empty-answers.md.',
        },
      ),
    ),
  },
  { $id: 'RiskMetadata' },
)

/**
 * `as_of` of a per-stock state operation (/metrics, /decompose, /v4/decompose): the stored state of
 * that trading day and nothing later (point in time).
 */
export const StateAsOf = Type.String({
  format: 'date',
  description:
    'The day to answer for (YYYY-MM-DD, default the latest state): the stored state that day, nothing later. ' +
    'A day that is not a trading day resolves to the latest trading day on or before it (_metadata.as_of_note ' +
    'says so); a stock that stopped trading before it answers its last state (teo says which day); a day before ' +
    'its first trade or outside the store is a 404 DATE_NOT_AVAILABLE',
})

/**
 * The pattern a ticker must match once trimmed and upper-cased: 1–12 characters of A–Z, 0–9, '.'
 * and '-', starting with a letter or digit (BRK.B, BRK-B). Checked before routing, so a path-like
 * value (`..`, `a/b`, `%2e%2e`) is a 400 and never reaches another route. The schema pattern also
 * admits lower case and surrounding blanks, which the normalisation removes.
 */
export const TICKER_PATTERN = '^\\s*[A-Za-z0-9][A-Za-z0-9.\\-]{0,11}\\s*$'

export const TickerParam = Type.String({
  maxLength: 32,
  pattern: TICKER_PATTERN,
  description:
    "Ticker, case-insensitive, surrounding blanks ignored: 1–12 characters of A–Z, 0–9, '.', '-' (BRK.B or BRK-B)",
})

/**
 * The window of a history request: `years` back from the end, or explicit `start`/`end` days.
 * Precedence: `start` wins over `years`; `end` defaults to the symbol's last priced day (the
 * dataset's data_as_of while listed). Shared by every history operation and batch.
 */
export const historySpanProps = (defaultYears: number) => ({
  years: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 15,
      default: defaultYears,
      description: `Calendar years of history back from the end (1–15, default ${defaultYears}); ignored when start is given`,
    }),
  ),
  start: Type.Optional(
    Type.String({
      format: 'date',
      description:
        'First day (YYYY-MM-DD, inclusive). Wins over years. Before the first day of the data, after the last, or after end → 400',
    }),
  ),
  end: Type.Optional(
    Type.String({
      format: 'date',
      description:
        "Last day (YYYY-MM-DD, inclusive); default the symbol's last priced day. Outside the data → 400. With end and no start, the window is years back from end",
    }),
  ),
})

/** `fields` of a wide history answer: a comma-separated list or an array of the names in `allowed`. */
export const FieldsParam = (allowed: readonly string[]) =>
  Type.Union(
    [Type.String({ maxLength: 1000 }), Type.Array(Type.String({ maxLength: 64 }), { maxItems: 64 })],
    {
      description: `Only these columns (comma-separated or an array), of: ${allowed.join(', ')}. Default all. An unknown name is a 400 listing these.`,
    },
  )

/**
 * The one cursor convention of every long list (docs/using-the-api.md, "Long lists"): ask with
 * `limit` and, for the next page, the `cursor` the previous page returned; read `next_cursor`
 * (null on the last page) and `total` (rows over all pages).
 */
export const pageQueryProps = (defaultLimit: number, maxLimit: number) => ({
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: maxLimit,
      default: defaultLimit,
      description: `Rows per page (1–${maxLimit}, default ${defaultLimit})`,
    }),
  ),
  cursor: Type.Optional(
    Type.String({
      maxLength: 512,
      description:
        'Opaque: the next_cursor of the previous page, with the same other parameters. A cursor made on an ' +
        'older data_as_of or build, or for other parameters, is a 400 (start again without it)',
    }),
  ),
})

export const NextCursor = Type.Union([Type.String(), Type.Null()], {
  $id: 'NextCursor',
  description:
    'Pass as `cursor` (with the same other parameters) for the next page; null on the last page. Bound to the ' +
    'data_as_of and build it was made on: once the data moves on it is refused (400) and the walk starts again. ' +
    'Walking every page returns every row exactly once.',
})

export const PageTotal = Type.Integer({ minimum: 0, description: 'Rows over all pages' })
