import { AsyncLocalStorage } from 'node:async_hooks'
import { MARKET_ETF, SECTOR_ETFS } from '../engine/data/etf-registry.ts'
import type { DefaultUniverseBasis } from '../engine/model/cross/index.ts'
import { type DatasetOrigin, datasetOrigin, vendorLabel } from '../engine/model-store/layout.ts'
import type { ModelStore } from '../engine/model-store/reader.ts'
import { AppError } from '../platform/errors.ts'

export type ModelEnvironment = 'live' | 'test'

/** `_metadata` of data responses (docs/decisions/lineage-and-agent-metadata.md). */
export interface RiskMetadata {
  model_version: string
  data_as_of: string
  factor_set_id: string
  universe_size: number
  wiki_uri: string
  factors: string[]
  data_source: 'zarr'
  /** Synthetic (never market data), imported or fetched from vendors. */
  dataset: DatasetOrigin
  range?: [string, string]
  /** The ticker asked is an old one of the symbol answered (docs/decisions/naming-and-identity.md). */
  ticker_note?: string
  /** Served free: the operation has nothing to answer for this ticker (docs/decisions/empty-answers.md). */
  nothing_to_answer?: NothingToAnswer
}

/** Why an answer is empty: the ticker's kind, the reason in words, and where its data is instead. */
export interface NothingToAnswer {
  asset_type: 'etf' | 'stock'
  reason: string
  /** The operation that has this ticker's data (`/etf-returns`, `/returns`), or null. */
  see: string | null
}

const origins = new WeakMap<ModelStore, DatasetOrigin>()

/** What a store serves, from its manifest: synthetic (with the seed) or imported. Once per store. */
export function datasetOf(store: ModelStore): DatasetOrigin {
  let o = origins.get(store)
  if (!o) {
    o = datasetOrigin(store.manifest.dataset.source)
    origins.set(store, o)
  }
  return o
}

/** A heading for what a store serves (the landing page): `Synthetic data`, `Market data: vendor data (tiingo)`, … */
export function originTitle(o: DatasetOrigin | null): string {
  if (!o) return 'No data yet'
  if (o.kind === 'synthetic') return 'Synthetic data'
  return o.kind === 'vendor' ? `Market data: ${vendorLabel(o.sources)}` : 'Imported data'
}

/** One sentence on what a store serves (MCP instructions, landing page); null = not built yet. */
export function describeDataset(o: DatasetOrigin | null): string {
  if (!o) return 'The model store is not built yet.'
  if (o.kind === 'synthetic')
    return `This instance serves SYNTHETIC data: a market erm3 generated itself (seed ${o.seed}). Tickers and names of large companies such as AAPL are labels on generated series, not market data; every data response says so in _metadata.dataset.`
  if (o.kind === 'vendor')
    return `This instance serves market data fetched from ${vendorLabel(o.sources)} (_metadata.dataset.kind "vendor").`
  return 'This instance serves market data its operator imported (_metadata.dataset.kind "imported").'
}

/**
 * How a store formed its default universe (ranking cohorts, industry panel, reversion deciles)
 * and weighed the industry panel, from its manifest (docs/methodology.md §11–§12): `universe_basis`
 * market_cap / dollar_volume / all_valid, `default_universe` uni_mc_3000 / uni_dv_3000 /
 * all_valid, `weight_basis` log_market_cap / equal. `_metadata.universe_size` counts this
 * universe's active members at data_as_of. (Stores of an older methodology version, which lack
 * these fields, are refused when opened.)
 */
export function universeBasisOf(store: ModelStore): DefaultUniverseBasis {
  const m = store.manifest
  return {
    universe_basis: m.universe_basis,
    weight_basis: m.weight_basis,
    default_universe: m.default_universe,
  }
}

export const L3_FACTORS: readonly string[] = [MARKET_ETF, ...[...new Set(Object.values(SECTOR_ETFS))].sort()]

/** A new build this node refused to serve (it kept the one it had): /health's last_reload_failure. */
export interface ReloadFailure {
  build: string | null
  error: string
  at: number
}

/**
 * How long a replaced store stays open for the requests that started on it. Requests take
 * milliseconds; one that outlives this still completes, because a closed store's reads reopen
 * what they need (its caches are dropped, not its ability to read).
 */
const RETIRE_AFTER_MS = 30_000

/**
 * The model stores a node serves: the live build and the sandbox build that test keys read.
 * Either may be missing while a build is running (requests then get 503 MODEL_NOT_READY).
 * A request takes its store once (`store(env)`) and reads that build to the end, so a swap by
 * `replace` never mixes two builds in one response.
 */
export class ModelRegistry {
  private failure: ReloadFailure | null = null
  /** The build a request took (`pinned`), answered by `store(env)` for the rest of it. */
  private readonly pins = new AsyncLocalStorage<{ env: ModelEnvironment; store: ModelStore }>()

  constructor(
    private live: ModelStore | null,
    private sandbox: ModelStore | null,
    private readonly publicUrl: string,
    private readonly retireAfterMs = RETIRE_AFTER_MS,
  ) {}

  store(env: ModelEnvironment): ModelStore {
    const pin = this.pins.getStore()
    if (pin?.env === env) return pin.store
    const s = env === 'live' ? this.live : this.sandbox
    if (!s) {
      throw new AppError(
        'MODEL_NOT_READY',
        env === 'live' ? 'The model store is not built yet' : 'The sandbox store is not built yet',
        { retryAfterSeconds: 30 },
      )
    }
    return s
  }

  /**
   * Runs `fn` with `store(env)` answering the build taken now, however many times it is asked:
   * a request whose steps each take the store (a check, the cache key, the answer) reads one
   * build from its first read to its last, even when a new build is swapped in between.
   */
  pinned<T>(env: ModelEnvironment, fn: () => Promise<T>): Promise<T> {
    return this.pins.run({ env, store: this.store(env) }, fn)
  }

  peek(env: ModelEnvironment): ModelStore | null {
    return env === 'live' ? this.live : this.sandbox
  }

  /** Swaps in a newly built store; the old one is closed after in-flight reads had time to finish. */
  replace(env: ModelEnvironment, next: ModelStore): void {
    const old = env === 'live' ? this.live : this.sandbox
    if (env === 'live') this.live = next
    else this.sandbox = next
    if (old && old !== next) setTimeout(() => void old.close(), this.retireAfterMs).unref()
  }

  /** Records a refused reload of the live store (kept until a later refusal replaces it). */
  recordReloadFailure(f: ReloadFailure): void {
    this.failure = f
  }

  get lastReloadFailure(): ReloadFailure | null {
    return this.failure
  }

  /** `ticker`: the resolved ticker of a single-ticker answer, whose rename note (if any) it carries. */
  metadata(store: ModelStore, range?: [string, string], ticker?: { note?: string }): RiskMetadata {
    const m = store.manifest
    return {
      model_version: m.model_version,
      data_as_of: m.data_as_of,
      factor_set_id: m.factor_set_id,
      universe_size: m.universe_size,
      wiki_uri: `${this.publicUrl}/docs/methodology`,
      factors: [...L3_FACTORS],
      data_source: 'zarr',
      dataset: datasetOf(store),
      ...(range ? { range } : {}),
      ...(ticker?.note ? { ticker_note: ticker.note } : {}),
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.live?.close(), this.sandbox?.close()])
  }
}
