import { MAX_BENCHMARK_COMPONENTS } from '../../../contract/ops/benchmark.ts'
import { canonicalTicker, isValidTicker } from '../../../engine/data/aliases.ts'
import { ETF_INFO, MARKET_ETF, SECTOR_ETFS } from '../../../engine/data/etf-registry.ts'
import type { ModelStore } from '../../../engine/model-store/reader.ts'
import { AppError } from '../../../platform/errors.ts'
import type { ModelEnvironment, ModelRegistry } from '../../models.ts'

/**
 * Benchmarks of POST /snapshot and GET /data/benchmark/{id} (docs/methodology.md §13): the
 * market ETF, a sector ETF, a weighted mix of them, or a custom mix holding stocks. An id carries
 * its canonical mix (components sorted, weights normalised), so the same mix always has the
 * same id and resolving an id needs no stored state (any node of a deployment can).
 */

type BenchmarkKind = 'etf' | 'sector_etf' | 'mix' | 'custom'
export type LegRole = 'market' | 'sector' | 'subsector'

interface BenchmarkComponent {
  ticker: string
  weight: number
  asset_type: 'etf' | 'stock'
  role: LegRole | null
}

export interface ResolvedBenchmark {
  id: string
  kind: BenchmarkKind
  name: string
  components: BenchmarkComponent[]
}

/** A benchmark expression, or why it does not resolve (echoed as a warning, never a 400). */
export type BenchmarkResolution = { ok: true; benchmark: ResolvedBenchmark } | { ok: false; reason: string }

const SECTOR_ETF_SET: ReadonlySet<string> = new Set(Object.values(SECTOR_ETFS))
const SECTOR_BY_NAME = new Map(Object.entries(SECTOR_ETFS).map(([name, etf]) => [name.toLowerCase(), etf]))
const ALIASES: Readonly<Record<string, string>> = {
  MARKET: MARKET_ETF,
  SP500: MARKET_ETF,
  'S&P500': MARKET_ETF,
}

const PREFIX = 'bm_'
const MIX_ID = /^bm_(mix|custom)_([A-Za-z0-9_-]+)$/
const ETF_ID = /^bm_(etf|sector)_([a-z0-9.-]+)$/

/** Canonical weights: 12 significant digits (a normalised mix encodes and decodes to itself). */
const canonicalWeight = (w: number) => Number(w.toPrecision(12))

function normalise(parts: { ticker: string; weight: number }[]): { ticker: string; weight: number }[] {
  const merged = new Map<string, number>()
  for (const p of parts) merged.set(p.ticker, (merged.get(p.ticker) ?? 0) + p.weight)
  const total = [...merged.values()].reduce((a, b) => a + b, 0)
  return [...merged.entries()]
    .map(([ticker, w]) => ({ ticker, weight: canonicalWeight(w / total) }))
    .sort((a, b) => (a.ticker < b.ticker ? -1 : a.ticker > b.ticker ? 1 : 0))
}

function tickerOf(raw: string): string {
  const upper = raw.trim().toUpperCase()
  const t = ALIASES[upper] ?? SECTOR_BY_NAME.get(raw.trim().toLowerCase()) ?? canonicalTicker(raw)
  if (!isValidTicker(t))
    throw new AppError('INVALID_INPUT', `benchmark component ${JSON.stringify(raw.trim())} is not a ticker`)
  return t
}

/**
 * `60:SPY,40:XLK` (percent weights summing to 100) → parts; a malformed mix is a 400 (the
 * request is wrong, not the data). A single name (`SPY`, `market`, `XLK`, `Energy`) → weight 1.
 */
export function parseBenchmarkExpression(raw: string): { ticker: string; weight: number }[] {
  const text = raw.trim()
  if (!text.includes(':') && !text.includes(',')) return [{ ticker: tickerOf(text), weight: 1 }]
  const items = text.split(',').map((s) => s.trim())
  if (items.length > MAX_BENCHMARK_COMPONENTS)
    throw new AppError(
      'INVALID_INPUT',
      `a benchmark mix has at most ${MAX_BENCHMARK_COMPONENTS} components, got ${items.length}`,
    )
  const parts = items.map((item) => {
    const m = /^([0-9]+(?:\.[0-9]+)?)\s*:\s*(\S.*)$/.exec(item)
    if (!m)
      throw new AppError(
        'INVALID_INPUT',
        `benchmark mix item ${JSON.stringify(item)} is not weight:ticker (write a mix like 60:SPY,40:XLK, weights in percent)`,
      )
    const weight = Number(m[1])
    if (!(weight > 0))
      throw new AppError('INVALID_INPUT', `benchmark weight of ${m[2]} must be > 0, got ${m[1]}`)
    return { ticker: tickerOf(m[2] as string), weight }
  })
  const total = parts.reduce((a, p) => a + p.weight, 0)
  if (Math.abs(total - 100) > 1e-6)
    throw new AppError('INVALID_INPUT', `benchmark mix weights are percent and must sum to 100, got ${total}`)
  return parts
}

function encodeMix(parts: { ticker: string; weight: number }[]): string {
  return Buffer.from(parts.map((p) => `${p.ticker}:${p.weight}`).join(','), 'utf8').toString('base64url')
}

/** An id → its canonical parts, or null when it is not a well-formed benchmark id. */
function decodeId(id: string): { ticker: string; weight: number }[] | null {
  const etf = ETF_ID.exec(id)
  if (etf) return [{ ticker: (etf[2] as string).toUpperCase(), weight: 1 }]
  const mix = MIX_ID.exec(id)
  if (!mix) return null
  const text = Buffer.from(mix[2] as string, 'base64url').toString('utf8')
  const parts = text.split(',').map((item) => {
    const i = item.lastIndexOf(':')
    return { ticker: item.slice(0, i), weight: Number(item.slice(i + 1)) }
  })
  if (parts.length === 0 || parts.length > MAX_BENCHMARK_COMPONENTS) return null
  if (parts.some((p) => !isValidTicker(p.ticker) || !(p.weight > 0))) return null
  if (Math.abs(parts.reduce((a, p) => a + p.weight, 0) - 1) > 1e-9) return null
  return parts
}

function describe(c: BenchmarkComponent): string {
  return ETF_INFO[c.ticker]?.name ?? c.ticker
}

/** Components → a benchmark (roles, kind, id), or why one does not resolve in this store. */
function build(store: ModelStore, parts: { ticker: string; weight: number }[]): BenchmarkResolution {
  const canon = normalise(parts)
  const components: BenchmarkComponent[] = []
  for (const p of canon) {
    if (p.ticker === MARKET_ETF || SECTOR_ETF_SET.has(p.ticker)) {
      const i = store.resolve(p.ticker)
      if (i < 0 || store.symbols[i]?.asset_type !== 'etf')
        return { ok: false, reason: `benchmark ETF ${p.ticker} has no price series in this dataset` }
      components.push({ ...p, asset_type: 'etf', role: p.ticker === MARKET_ETF ? 'market' : 'sector' })
      continue
    }
    const i = store.resolve(p.ticker)
    if (i < 0) return { ok: false, reason: `benchmark component ${p.ticker} is not a known ticker` }
    if (store.symbols[i]?.asset_type === 'etf')
      return {
        ok: false,
        reason:
          `benchmark component ${p.ticker} is an ETF outside the model's factors: a benchmark holds the market ETF ` +
          `(${MARKET_ETF}), sector ETFs (${[...SECTOR_ETF_SET].sort().join(', ')}) and stocks`,
      }
    components.push({ ...p, asset_type: 'stock', role: null })
  }
  const single = components.length === 1 ? components[0] : undefined
  let kind: BenchmarkKind
  let id: string
  if (single && single.asset_type === 'etf') {
    kind = single.role === 'market' ? 'etf' : 'sector_etf'
    id = `${PREFIX}${kind === 'etf' ? 'etf' : 'sector'}_${single.ticker.toLowerCase()}`
  } else {
    kind = components.some((c) => c.asset_type === 'stock') ? 'custom' : 'mix'
    id = `${PREFIX}${kind}_${encodeMix(canon)}`
  }
  const name = single
    ? describe(single)
    : components.map((c) => `${+(c.weight * 100).toPrecision(10)}% ${c.ticker}`).join(' + ')
  return { ok: true, benchmark: { id, kind, name, components } }
}

/**
 * A snapshot's `benchmark`: an id, an alias or a mix. A malformed mix throws 400; one that does
 * not resolve (unknown id, unknown ticker, an ETF outside the model) answers why.
 */
export function resolveBenchmark(store: ModelStore, raw: string): BenchmarkResolution {
  const text = raw.trim()
  if (text.startsWith(PREFIX)) {
    const parts = decodeId(text)
    return parts
      ? build(store, parts)
      : { ok: false, reason: `${JSON.stringify(text)} is not a benchmark id` }
  }
  return build(store, parseBenchmarkExpression(text))
}

const METHODOLOGY: Record<BenchmarkKind, string> = {
  etf: 'The market ETF held alone: exposure 1 to it at every level of the cascade and no residual.',
  sector_etf:
    'One sector ETF held alone: at level 1 its exposure is its beta to the market ETF (lookback covariance over the ' +
    'market variance); at levels 2 and 3 it is exposure 1 to itself; no residual.',
  mix:
    'A fixed-weight mix of the market ETF and sector ETFs, rebalanced daily (weights frozen): its exposures and daily ' +
    'return are the weighted sums of those of its components. The market ETF is exposure 1 to itself at every level; a sector ' +
    'ETF is its market beta at level 1 and exposure 1 to itself at levels 2 and 3; ETFs carry no residual.',
  custom:
    'A fixed-weight book that holds stocks (and possibly the market and sector ETFs): each stock is exposed through ' +
    'its own cascade hedge ratios at data_as_of and carries its own residual variance, exactly like a snapshot ' +
    'position; ETFs as in a mix. Tracking error against it counts the residual of every stock held by either book.',
}

/** GET /data/benchmark/{id} (free): an id or any expression a snapshot accepts. */
export async function getBenchmark(models: ModelRegistry, env: ModelEnvironment, id: string) {
  const store = models.store(env)
  const r = resolveBenchmark(store, id)
  if (!r.ok) throw new AppError('NOT_FOUND', `No benchmark ${JSON.stringify(id)}: ${r.reason}`)
  const b = r.benchmark
  let inception: number | null = null
  for (const c of b.components) {
    const life = await store.listedLife(store.resolve(c.ticker))
    if (life.first < 0) continue
    inception = inception === null ? life.first : Math.max(inception, life.first)
  }
  return {
    id: b.id,
    benchmark_kind: b.kind,
    // The earlier name of benchmark_kind, kept until 4.0.0 (docs/using-the-api.md, Deprecations).
    kind: b.kind,
    name: b.name,
    methodology:
      `${METHODOLOGY[b.kind]} Weights are fractions summing to 1; the id encodes the canonical mix (components sorted ` +
      'by ticker, weights normalised), so the same mix always resolves to the same id. Inception is the first day ' +
      'every component has a price in this dataset.',
    components: b.components,
    inception: inception === null ? null : store.date(inception),
    data_as_of: store.dataAsOf,
  }
}
