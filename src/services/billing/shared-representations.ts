/**
 * Encoded answers shared by every account of a process, per build.
 *
 * A data answer is a function of the environment, the build, the canonical request and the
 * format, and of nothing about the caller. The response cache is per account, because a HIT
 * there is free for that account; this table is not a response cache. It keeps the encoded body
 * (JSON text with its number formatting, or Parquet/CSV bytes) that the first caller's request
 * produced, so the next account's MISS, or any account's `Cache-Control: no-cache` (BYPASS), is
 * served the same bytes without encoding them again: such a call is still reserved, debited and
 * marked MISS or BYPASS exactly as before. Only the encoding work is shared.
 *
 * The key holds the build (`data_as_of` and build id), so an entry never outlives its data:
 * after a reload the old build's entries are never asked for again and age out. A representation
 * is kept only when it was produced from the very store its key names (a reload between taking
 * the store and producing the answer keeps nothing). Answers about one account's own data
 * (`live` operations, e.g. brokerage holdings) never come here.
 *
 * Memory: a ByteLru, least recently used entries first out once the bodies exceed
 * SHARED_BUDGET_BYTES; a body larger than SHARED_ENTRY_MAX_BYTES is never kept (large tabular
 * exports are encoded per request, as before).
 */
import { ByteLru } from '../../platform/byte-lru.ts'
import { ownBytes } from '../../platform/utf8.ts'
import type { ServiceContext } from '../context.ts'
import type { Representation } from './metered-call.ts'

const SHARED_BUDGET_BYTES = 64 * 1024 * 1024
const SHARED_ENTRY_MAX_BYTES = 1024 * 1024

export interface SharedAnswer {
  rep: Representation
  /** Positions that succeeded (per-position pricing of batch calls). */
  positions: number
}

export class SharedRepresentations {
  private readonly entries: ByteLru<SharedAnswer>
  /** Lookups answered from the table and not (operator metrics). */
  hits = 0
  misses = 0

  constructor(
    budgetBytes = SHARED_BUDGET_BYTES,
    private readonly entryMaxBytes = SHARED_ENTRY_MAX_BYTES,
  ) {
    this.entries = new ByteLru(budgetBytes, sizeOf)
  }

  /** The key of an answer: environment, build, format and the canonical request. */
  static key(environment: string, build: string, format: string, parts: readonly string[]): string {
    return `${environment}\n${build}\n${format}\n${parts.join('\n')}`
  }

  get(key: string): SharedAnswer | undefined {
    const e = this.entries.get(key)
    if (e) this.hits++
    else this.misses++
    return e
  }

  put(key: string, given: SharedAnswer): void {
    if (sizeOf(key, given) > this.entryMaxBytes) return
    this.entries.set(key, { ...given, rep: { ...given.rep, data: ownBytes(given.rep.data) } })
  }

  /** Bytes held (bodies and keys). */
  get size(): number {
    return this.entries.bytes
  }

  get count(): number {
    return this.entries.size
  }
}

/** The body and the key (two bytes a character), plus a small allowance for the rest. */
function sizeOf(key: string, a: SharedAnswer): number {
  return a.rep.data.length + 2 * key.length + 256
}

const perRegistry = new WeakMap<ServiceContext['models'], SharedRepresentations>()

/** The table of the process's model registry (one per served set of builds). */
export function sharedRepresentations(ctx: ServiceContext): SharedRepresentations {
  let t = perRegistry.get(ctx.models)
  if (!t) {
    t = new SharedRepresentations()
    perRegistry.set(ctx.models, t)
  }
  return t
}
