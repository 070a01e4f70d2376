/**
 * A bounded in-memory cache in front of a remote BlobReader: range reads by (key, offset, length),
 * least recently used evicted first by bytes (ERM3_STORE_CACHE_MB), and concurrent misses of the
 * same range share one request. Model-store objects never change once published (a new build has
 * new keys), so entries need no expiry; whole-object reads (CURRENT, manifests) are not cached.
 */
import { type ByteLru, typedArrayLru } from '../../platform/byte-lru.ts'
import type { BlobReader } from './types.ts'

export class CachedBlobs implements BlobReader {
  private readonly lru: ByteLru<Uint8Array>
  private readonly pending = new Map<string, Promise<Uint8Array | null>>()
  /** Remote range requests made (misses) and served from memory (hits). */
  readonly stats = { hits: 0, misses: 0 }

  constructor(
    readonly inner: BlobReader,
    budgetBytes: number,
  ) {
    this.lru = typedArrayLru<Uint8Array>(budgetBytes)
  }

  get url(): string {
    return this.inner.url
  }

  /** Bytes held now (never above the budget). */
  get bytes(): number {
    return this.lru.bytes
  }

  get budgetBytes(): number {
    return this.lru.budgetBytes
  }

  get(key: string): Promise<Uint8Array | null> {
    return this.inner.get(key)
  }

  getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    const k = `${key}\0${offset}\0${length}`
    const hit = this.lru.get(k)
    if (hit) {
      this.stats.hits++
      return Promise.resolve(hit)
    }
    const p = this.pending.get(k)
    if (p) return p
    this.stats.misses++
    const q = this.inner.getRange(key, offset, length).then(
      (bytes) => {
        this.pending.delete(k)
        if (bytes) this.lru.set(k, bytes)
        return bytes
      },
      (err: unknown) => {
        this.pending.delete(k)
        throw err
      },
    )
    this.pending.set(k, q)
    return q
  }

  close(): void {
    this.lru.clear()
    this.inner.close()
  }
}
