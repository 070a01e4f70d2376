import { sharedArray } from '../model/columns.ts'
import type { StockField } from '../model/stock-kernel.ts'

/**
 * Memory for engine blocks. Allocating a fresh full-length array per symbol and field made V8
 * run a mark-compact for every few hundred MB of ArrayBuffers (about 180 of them per build), so:
 * fields the cross-sectional stage keeps get one lazily zeroed buffer for all symbols, and the
 * rest come from a pool of block-sized buffers recycled once their block is on disk. All are
 * SharedArrayBuffers, which the kernel's worker threads (KernelPool) write without a copy.
 */
export class BlockBuffers {
  private readonly keptBuffers = new Map<StockField, Float64Array>()
  private readonly free: Float64Array[] = []

  /**
   * `firstDay`: the first day any column is read or written (an incremental build's tail, 0 for a
   * full build). Each column then owns only days [firstDay, days) of its buffer: the columns are
   * overlapping views, T long, spaced days − firstDay apart, so index t < firstDay of one column
   * holds another's days, and a block of an incremental build takes a few MB instead of
   * blockSize × T values per field.
   */
  constructor(
    private readonly symbols: number,
    private readonly days: number,
    private readonly blockSize: number,
    private readonly kept: ReadonlySet<StockField>,
    private readonly firstDay = 0,
  ) {}

  /**
   * Per-symbol arrays of field f for symbols [first, first + count). Contents are zero for kept
   * fields and stale for pooled ones: callers write every day they later read, and touch no day
   * before firstDay.
   */
  columns(f: StockField, first: number, count: number, recyclable: Float64Array[]): Float64Array[] {
    const T = this.days
    const L = T - this.firstDay
    const length = (symbols: number) => symbols * L + this.firstDay
    if (this.kept.has(f)) {
      let buf = this.keptBuffers.get(f)
      if (!buf) {
        buf = sharedArray(Float64Array, length(this.symbols))
        this.keptBuffers.set(f, buf)
      }
      const b = buf
      return Array.from({ length: count }, (_, k) => b.subarray((first + k) * L, (first + k) * L + T))
    }
    const buf = this.free.pop() ?? sharedArray(Float64Array, length(this.blockSize))
    recyclable.push(buf)
    return Array.from({ length: count }, (_, k) => buf.subarray(k * L, k * L + T))
  }

  recycle(buffers: Float64Array[]): void {
    this.free.push(...buffers)
  }
}
