import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'
import { IsoDate, Nullable } from '../schemas.ts'

/**
 * Benchmarks (GET /data/benchmark/{id}, free): what a snapshot compares a book with, and the id
 * every snapshot that resolved one returns (docs/methodology.md §13 "Portfolio risk", *Benchmark*).
 */

export const MAX_BENCHMARK_COMPONENTS = 100
const BENCHMARK_KINDS = ['etf', 'sector_etf', 'mix', 'custom'] as const

export const legRoleSchema = Type.Union([
  Type.Literal('market'),
  Type.Literal('sector'),
  Type.Literal('subsector'),
])

const benchmarkComponentSchema = Type.Object(
  {
    ticker: Type.String(),
    weight: Type.Number({ description: 'Fraction of the benchmark (sums to 1)' }),
    asset_type: Type.Union([Type.Literal('etf'), Type.Literal('stock')]),
    role: Nullable(legRoleSchema),
  },
  { $id: 'BenchmarkComponent' },
)

const BenchmarkKind = Type.Union(
  BENCHMARK_KINDS.map((k) => Type.Literal(k)),
  {
    description:
      'etf: the market ETF; sector_etf: one sector ETF; mix: a weighted mix of those ETFs; custom: a mix holding stocks',
  },
)

export const resolvedBenchmarkSchema = Type.Object(
  {
    id: Type.String({ pattern: '^bm_' }),
    kind: BenchmarkKind,
    name: Type.String(),
    components: Type.Array(benchmarkComponentSchema),
  },
  { $id: 'ResolvedBenchmark' },
)

const getBenchmark = defineOperation({
  id: 'getBenchmark',
  method: 'GET',
  path: '/data/benchmark/:id',
  summary: 'A benchmark: methodology, components and weights, kind, inception (free)',
  description:
    'Resolves a benchmark id (bm_…) as returned in snapshot.benchmark_context_id, or any benchmark expression a ' +
    'snapshot accepts (SPY, market, XLK, 60:SPY,40:XLK). The same mix always has the same id. Free, but needs a key.',
  tags: ['data'],
  auth: 'key',
  params: Type.Object(
    { id: Type.String({ minLength: 1, maxLength: 8000 }) },
    { additionalProperties: false },
  ),
  status: 200,
  response: Type.Object(
    {
      id: Type.String(),
      benchmark_kind: BenchmarkKind,
      kind: Type.Union(
        BENCHMARK_KINDS.map((k) => Type.Literal(k)),
        {
          deprecated: true,
          description: 'Deprecated: the same as benchmark_kind (the specification’s name); removed in 4.0.0',
        },
      ),
      name: Type.String(),
      methodology: Type.String(),
      components: Type.Array(benchmarkComponentSchema),
      inception: Nullable(IsoDate),
      data_as_of: IsoDate,
    },
    { $id: 'BenchmarkResponse' },
  ),
  errors: [400, 401, 404, 429],
})

export const BENCHMARK_OPS = { getBenchmark } as const
