import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { isoFromDay, parseIsoDay } from '../../platform/dates.ts'
import { AppError } from '../../platform/errors.ts'
import type { BlobReader } from '../object-store/types.ts'
import {
  type Column,
  type DType,
  openRemoteZarrStore,
  openZarrStore,
  type ZarrStoreReader,
} from '../zarr/index.ts'
import { DerivedReader } from './derive-read.ts'
import { type DerivedField, isDerived } from './derived.ts'
import {
  CODE_FIELDS,
  type CodeField,
  type FactorMeta,
  FLOAT_FIELDS,
  type FloatField,
  METHODOLOGY_VERSION,
  STORE_FILES,
  STORE_FORMAT,
  STORE_VERSION,
  type StoreManifest,
  type SymbolMeta,
} from './layout.ts'
import { currentBuild } from './writer.ts'

export type StoreField = FloatField | CodeField

/** The derived field a `fields/<name>` path names, or null (engine/model-store/derived.ts). */
function derivedAt(path: string): DerivedField | null {
  const name = path.startsWith('fields/') ? path.slice('fields/'.length) : ''
  return isDerived(name) ? name : null
}

/** Parsed build documents kept in memory (a company's fundamentals digest is ≈ 10–200 KB). */
const DOCUMENT_CACHE = 512

export const STORE_FIELDS: readonly StoreField[] = [...FLOAT_FIELDS, ...CODE_FIELDS]

/** Calendar indices of a symbol's first and last priced day (both -1 when it never traded). */
export interface ListedLife {
  first: number
  last: number
}

function refuse(message: string): never {
  throw new AppError('INVALID_INPUT', `model store: ${message}`)
}

function checkManifest(manifest: StoreManifest, dir: string): void {
  if (manifest.format !== STORE_FORMAT) refuse(`${dir} is not an erm3 model store`)
  if (manifest.store_version !== STORE_VERSION) {
    refuse(
      `store_version ${manifest.store_version} is not supported (this erm3 reads ${STORE_VERSION}); rebuild the store`,
    )
  }
  if (manifest.methodology_version !== METHODOLOGY_VERSION) {
    refuse(
      `methodology version ${manifest.methodology_version} differs from this erm3's ${METHODOLOGY_VERSION}; rebuild the store`,
    )
  }
}

/** A missing document reads as null; any other failure (an unreachable remote store) is thrown. */
type ReadBytes = (path: string) => Promise<Uint8Array | null>

const utf8 = new TextDecoder()
const text = (bytes: Uint8Array | null): string | null => (bytes === null ? null : utf8.decode(bytes))
/**
 * gzip's magic number (RFC 1952): a `.gz` document is inflated when its bytes are gzip, so one
 * an HTTP server sent with `Content-Encoding: gzip` (fetch inflates it) still reads. JSON text
 * never starts with 0x1f.
 */
const isGzip = (b: Uint8Array): boolean => b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b

async function readLocalBytes(file: string): Promise<Uint8Array | null> {
  try {
    return await readFile(file)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
}

/** The build id a remote store's CURRENT names (null: none yet). Unreachable stores throw UNAVAILABLE. */
export async function remoteCurrentBuild(blobs: BlobReader): Promise<string | null> {
  const bytes = await blobs.get(STORE_FILES.current)
  if (bytes === null) return null
  try {
    const parsed = JSON.parse(new TextDecoder().decode(bytes)) as { build?: unknown }
    return typeof parsed.build === 'string' ? parsed.build : null
  } catch {
    return null
  }
}

/**
 * Read access to one build of the model store. Opening resolves CURRENT once, checks the format,
 * store and methodology versions, and keeps the array handles open; requests never re-open.
 */
export class ModelStore {
  private readonly tickerIndex: Map<string, { symbol: number; from: number; to: number }[]>
  private readonly lives = new Map<number, ListedLife>()
  private isoDates: string[] | null = null
  private readonly arrays1D = new Map<string, Promise<Column>>()
  /** Each symbol's fields on its last priced day, as read so far (the hot path of /metrics). */
  private readonly latestValues = new Map<number, Map<string, number>>()
  private factorCache: Promise<{ keys: string[]; returns: Float64Array[] }> | null = null
  /** Parsed build documents by path, most recently used last (see `document`). */
  private readonly documents = new Map<string, Promise<unknown>>()

  /** When this build was opened (ms since the epoch): /health's loaded_at. */
  readonly openedAt = Date.now()
  /** Reads the fields the store derives instead of holding (derived.ts). */
  private readonly derived: DerivedReader

  private constructor(
    /** The build directory (a URL for a remote store). */
    readonly dir: string,
    /** The build id CURRENT named when opened (null: the store root was a build directory). */
    readonly buildId: string | null,
    private readonly readBytes: ReadBytes,
    readonly manifest: StoreManifest,
    readonly calendar: Int32Array,
    readonly symbols: SymbolMeta[],
    readonly etfs: string[],
    readonly industries: string[],
    /** The columns of factors/returns; null for a build made before the factor series existed. */
    readonly factors: FactorMeta[] | null,
    private readonly zarr: ZarrStoreReader,
  ) {
    this.tickerIndex = new Map()
    symbols.forEach((s, i) => {
      for (const w of s.tickers) {
        const list = this.tickerIndex.get(w.ticker) ?? []
        list.push({
          symbol: i,
          from: parseIsoDay(w.from) ?? 0,
          to: w.to ? (parseIsoDay(w.to) ?? 0) : Number.POSITIVE_INFINITY,
        })
        this.tickerIndex.set(w.ticker, list)
      }
    })
    const keys = new Map(symbols.map((s, i) => [s.symbol, i]))
    this.derived = new DerivedReader({
      zarr,
      isStock: (i) => symbols[i].asset_type === 'stock',
      etfSymbols: etfs.map((t) => keys.get(t) ?? this.resolve(t)),
    })
  }

  /**
   * Opens the build CURRENT points at (or `root` itself when it is a build directory), or the
   * build `opts.build` of the root.
   */
  static async open(root: string, opts: { cacheBytes?: number; build?: string } = {}): Promise<ModelStore> {
    const id = opts.build ?? (await currentBuild(root))
    const dir = id ? join(root, STORE_FILES.builds, id) : root
    let manifest: StoreManifest
    try {
      manifest = JSON.parse(await readFile(join(dir, STORE_FILES.manifest), 'utf8')) as StoreManifest
    } catch {
      refuse(`no built store at ${root} (run erm3 build)`)
    }
    checkManifest(manifest, dir)
    const zarr = await openZarrStore(dir, { cacheBytes: opts.cacheBytes })
    return ModelStore.finish(dir, id, (p) => readLocalBytes(join(dir, p)), manifest, zarr)
  }

  /**
   * Opens a published store (erm3 publish) through a remote reader: the build `build` (default:
   * the one CURRENT names), found from its file listing. Chunks are read by range on demand.
   */
  static async openRemote(
    blobs: BlobReader,
    opts: { cacheBytes?: number; build?: string } = {},
  ): Promise<ModelStore> {
    const id = opts.build ?? (await remoteCurrentBuild(blobs))
    if (!id) refuse(`no published build at ${blobs.url} (erm3 publish writes CURRENT last)`)
    const base = `${STORE_FILES.builds}/${id}`
    const dir = `${blobs.url}/${base}`
    const readBytes: ReadBytes = (p) => blobs.get(`${base}/${p}`)
    const [manifestText, listingText] = await Promise.all([
      readBytes(STORE_FILES.manifest).then(text),
      readBytes(STORE_FILES.listing).then(text),
    ])
    if (manifestText === null) refuse(`no manifest in ${dir}`)
    if (listingText === null) refuse(`${dir} has no ${STORE_FILES.listing}: publish it with erm3 publish`)
    let manifest: StoreManifest
    let listing: { files?: Record<string, number>; metadata?: Record<string, string> }
    try {
      manifest = JSON.parse(manifestText) as StoreManifest
      listing = JSON.parse(listingText) as typeof listing
    } catch (e) {
      refuse(`${dir}: ${(e as Error).message}`)
    }
    checkManifest(manifest, dir)
    const files = new Map<string, number>()
    for (const [p, n] of Object.entries(listing.files ?? {})) files.set(`${base}/${p}`, n)
    const metadata = new Map<string, string>()
    for (const [p, text] of Object.entries(listing.metadata ?? {})) metadata.set(`${base}/${p}`, text)
    const zarr = await openRemoteZarrStore(blobs, base, files, { cacheBytes: opts.cacheBytes, metadata })
    return ModelStore.finish(dir, id, readBytes, manifest, zarr)
  }

  private static async finish(
    dir: string,
    id: string | null,
    readBytes: ReadBytes,
    manifest: StoreManifest,
    zarr: ZarrStoreReader,
  ): Promise<ModelStore> {
    const json = async <T>(p: string): Promise<T> => {
      const bytes = await readBytes(p)
      if (bytes === null) refuse(`${dir}: ${p} is missing`)
      return JSON.parse(utf8.decode(bytes)) as T
    }
    try {
      const calendar = (await zarr.readArray1D(STORE_FILES.calendar)) as Int32Array
      const [symbols, etfs, industries, factors] = await Promise.all([
        json<SymbolMeta[]>(STORE_FILES.symbols),
        json<string[]>(STORE_FILES.etfs),
        json<string[]>(STORE_FILES.industries),
        readBytes(STORE_FILES.factors).then((b) =>
          b === null ? null : (JSON.parse(utf8.decode(b)) as FactorMeta[]),
        ),
      ])
      return new ModelStore(dir, id, readBytes, manifest, calendar, symbols, etfs, industries, factors, zarr)
    } catch (e) {
      await zarr.close()
      throw e
    }
  }

  get dataAsOf(): string {
    return this.manifest.data_as_of
  }

  /** Symbol index of a (canonical) ticker as of `day` (default: the latest holder), or -1. */
  resolve(ticker: string, day = Number.POSITIVE_INFINITY): number {
    const list = this.tickerIndex.get(ticker)
    if (!list) return -1
    const hit = list.find((w) => day >= w.from && day <= w.to)
    if (hit) return hit.symbol
    // Past every window (delisted) or before it: the most recent holder that started by `day`.
    const started = list.filter((w) => w.from <= day)
    return (started.length ? started[started.length - 1] : list[0]).symbol
  }

  dayIndex(iso: string): number {
    const d = parseIsoDay(iso)
    return d === null ? -1 : this.calendar.indexOf(d)
  }

  /** ISO date of calendar day `t` (strings made once per store: series endpoints ask thousands). */
  date(t: number): string {
    this.isoDates ??= Array.from(this.calendar, isoFromDay)
    return this.isoDates[t] ?? isoFromDay(this.calendar[t])
  }

  private path(field: StoreField): string {
    return (CODE_FIELDS as readonly string[]).includes(field)
      ? STORE_FILES.code(field)
      : STORE_FILES.field(field)
  }

  /** One symbol's days [from, to) of each field. */
  async history(
    symbol: number,
    fields: readonly StoreField[],
    from = 0,
    to = this.calendar.length,
  ): Promise<Record<string, Column>> {
    const derived = fields.filter(isDerived)
    const stored = fields.filter((f) => !isDerived(f))
    if (derived.length > 0) return this.derived.history(symbol, derived, stored, from, to)
    const out: Record<string, Column> = {}
    await Promise.all(
      stored.map(async (f) => {
        out[f] = await this.zarr.readColumn(this.path(f), symbol, from, to)
      }),
    )
    return out
  }

  /**
   * The symbol's listed life: its first and last priced days. Every day in between has a row
   * (a day without a close inside the life is a gap: null price and returns, the model still the
   * window fit); days outside have none. A build never changes, so it is remembered.
   */
  async listedLife(symbol: number): Promise<ListedLife> {
    const known = this.lives.get(symbol)
    if (known) return known
    const price = await this.zarr.readColumn(STORE_FILES.field('price_close'), symbol)
    let first = 0
    while (first < price.length && Number.isNaN(price[first])) first++
    let last = price.length - 1
    while (last >= 0 && Number.isNaN(price[last])) last--
    const life = last < 0 ? { first: -1, last: -1 } : { first, last }
    this.lives.set(symbol, life)
    return life
  }

  /** The last day index with a price for `symbol` (-1 if none). */
  async lastPriced(symbol: number): Promise<number> {
    return (await this.listedLife(symbol)).last
  }

  /**
   * The latest state of a symbol: its fields on the last day it has a price (data_as_of for a
   * listed stock, the last trading day for a delisted one). `t` is -1 when it never traded.
   */
  async latest(
    symbol: number,
    fields: readonly StoreField[],
  ): Promise<{ t: number; values: Record<string, number> }> {
    const t = await this.lastPriced(symbol)
    const values: Record<string, number> = {}
    if (t < 0) return { t, values }
    let known = this.latestValues.get(symbol)
    if (!known) {
      known = new Map()
      this.latestValues.set(symbol, known)
    }
    const missing = fields.filter((f) => !known.has(f))
    if (missing.length > 0) {
      const h = await this.history(symbol, missing, t, t + 1)
      for (const f of missing) known.set(f, h[f][0])
    }
    for (const f of fields) values[f] = known.get(f) as number // every field is known by now (set above)
    return { t, values }
  }

  /** An ETF's daily returns and closes over the whole calendar (NaN before inception). */
  async etfSeries(ticker: string): Promise<{ returns: Float64Array; close: Float64Array } | null> {
    const i = this.resolve(ticker)
    if (i < 0 || this.symbols[i].asset_type !== 'etf') return null
    const h = await this.history(i, ['returns_gross', 'price_close'])
    return { returns: h.returns_gross as Float64Array, close: h.price_close as Float64Array }
  }

  private requireFactors(): FactorMeta[] {
    if (this.factors === null)
      refuse(`${this.dir} was built before the macro and style factor series existed; rebuild the store`)
    return this.factors
  }

  /**
   * Every macro and style factor's daily return over the whole calendar (meta/factors.json
   * order; NaN before inception or where the dataset has no series), read once and kept: the
   * arrays are shared by every caller, so treat them as read-only.
   */
  async factorReturns(): Promise<{ keys: string[]; returns: Float64Array[] }> {
    const factors = this.requireFactors()
    if (!this.factorCache) {
      const p = this.zarr.readAll2D(STORE_FILES.factorReturns).then((cols) => ({
        keys: factors.map((f) => f.key),
        returns: cols as Float64Array[],
      }))
      this.factorCache = p
      p.catch(() => {
        this.factorCache = null
      })
    }
    return this.factorCache
  }

  /**
   * A JSON document of the build (STORE_FILES.fundamentals(cik), STORE_FILES.rates), parsed once
   * and kept among the last DOCUMENT_CACHE used; null when the build has none. Callers share the
   * parsed value: treat it as read-only. Gzip bytes are inflated on this thread, like the parse:
   * a digest inflates in about 0.25 ms and parses in 2.8 ms, and the async API's trips to libuv's
   * pool took 0.4–0.9 ms (docs/performance.md). When a `.gz` path is missing, the same name
   * without `.gz` is read as plain JSON (a build made before the fundamentals digests were
   * compressed). A document that cannot be inflated or parsed rejects with an Error naming the
   * file (a 500 logged with its cause, as any failed read).
   */
  document(path: string): Promise<unknown> {
    const hit = this.documents.get(path)
    if (hit) {
      this.documents.delete(path)
      this.documents.set(path, hit)
      return hit
    }
    const p = this.readDocument(path)
    p.catch(() => this.documents.delete(path))
    this.documents.set(path, p)
    if (this.documents.size > DOCUMENT_CACHE) {
      const oldest = this.documents.keys().next().value
      if (oldest !== undefined) this.documents.delete(oldest)
    }
    return p
  }

  private async readDocument(path: string): Promise<unknown> {
    let name = path
    let bytes = await this.readBytes(name)
    if (bytes === null && name.endsWith('.gz')) {
      name = name.slice(0, -'.gz'.length)
      bytes = await this.readBytes(name)
    }
    if (bytes === null) return null
    try {
      return JSON.parse(utf8.decode(isGzip(bytes) ? gunzipSync(bytes) : bytes)) as unknown
    } catch (e) {
      throw new Error(
        `model store: ${this.dir}/${name} is corrupt (${(e as Error).message}); rebuild the store`,
      )
    }
  }

  /** The VIX level on every calendar day (NaN = none). */
  async vixLevel(): Promise<Float64Array> {
    this.requireFactors()
    return (await this.readColumn(STORE_FILES.vixLevel, 0)) as Float64Array
  }

  /** One day's values of a field across all symbols. */
  async crossSection(field: StoreField, t: number): Promise<Column> {
    if (!isDerived(field)) return this.zarr.readRow(this.path(field), t)
    return this.derived.crossSection(field, t, this.symbols.length)
  }

  /** Any array of the build (products, rankings) by path. */
  async readColumn(path: string, symbol: number, from?: number, to?: number): Promise<Column> {
    const derived = derivedAt(path)
    if (!derived) return this.zarr.readColumn(path, symbol, from, to)
    return (await this.history(symbol, [derived], from, to))[derived]
  }

  /** An array's shape, dtype and chunk shape, as its zarr.json gives them. */
  arrayMeta(path: string): { shape: number[]; dtype: DType; chunks: number[] } {
    const { shape, dtype, chunks } = this.zarr.meta(path)
    return { shape, dtype, chunks }
  }

  /** An array's attributes, or null when the build has no such array. */
  arrayAttributes(path: string): Record<string, unknown> | null {
    try {
      return this.zarr.meta(path).attributes
    } catch {
      return null
    }
  }

  /** A whole 1-D array of the build (e.g. universe/mask_as_of), read once and kept. */
  readArray1D(path: string): Promise<Column> {
    let a = this.arrays1D.get(path)
    if (!a) {
      a = this.zarr.readArray1D(path)
      this.arrays1D.set(path, a)
      a.catch(() => this.arrays1D.delete(path))
    }
    return a
  }

  readRow(path: string, t: number): Promise<Column> {
    const derived = derivedAt(path)
    return derived ? this.crossSection(derived, t) : this.zarr.readRow(path, t)
  }

  /** Days [from, to) of symbols [first, first + targets.length) into `targets`. */
  readInto(path: string, first: number, from: number, to: number, targets: Column[]): Promise<void> {
    return this.readManyInto([path], first, from, to, [targets])
  }

  /**
   * readInto of several arrays at once (`targets[j]` for `paths[j]`): the fields the store
   * derives share the reads of their inputs.
   */
  async readManyInto(
    paths: readonly string[],
    first: number,
    from: number,
    to: number,
    targets: readonly Column[][],
  ): Promise<void> {
    const derived: DerivedField[] = []
    const into: Column[][] = []
    const reads: Promise<void>[] = []
    paths.forEach((p, j) => {
      const d = derivedAt(p)
      if (d) {
        derived.push(d)
        into.push(targets[j])
      } else reads.push(this.zarr.readInto(p, first, from, to, targets[j]))
    })
    if (derived.length > 0) reads.push(this.derived.readInto(derived, first, from, to, into))
    await Promise.all(reads)
  }

  close(): Promise<void> {
    return this.zarr.close()
  }
}
