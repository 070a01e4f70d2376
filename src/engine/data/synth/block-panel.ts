/**
 * Collects a [day × symbol] panel day by day and stores it per symbol. Writing straight into
 * per-symbol arrays would touch a new cache line for every stock every day; buffering a block
 * of days day-major and flushing it as a small transpose keeps both sides sequential.
 */
export class BlockPanel<A extends Float64Array | Float32Array = Float64Array> {
  readonly panel: A[]
  private readonly buf: Float64Array
  private start = 0
  private filled = 0

  constructor(
    private readonly n: number,
    days: number,
    private readonly block = 32,
    /** Float32Array stores single precision (the truth panels, which the dataset keeps as FLOAT). */
    kind: { new (length: number): A } = Float64Array as unknown as { new (length: number): A },
  ) {
    // No NaN pre-fill needed: every day passes through the buffer, which is NaN where unwritten.
    // One allocation for the whole panel, viewed per symbol: thousands of separate typed arrays
    // made every young-generation GC of the generator pay for tracking their backing stores.
    const all = new kind(n * days)
    this.panel = Array.from({ length: n }, (_, i) => all.subarray(i * days, (i + 1) * days) as A)
    this.buf = new Float64Array(n * block).fill(Number.NaN)
  }

  /** The row to write day `t`'s values into (index = symbol); NaN-filled. */
  row(t: number): Float64Array {
    if (this.filled === 0) this.start = t
    const b = t - this.start
    this.filled = b + 1
    return this.buf.subarray(b * this.n, (b + 1) * this.n)
  }

  /** Moves buffered days into the per-symbol arrays; call after the last day of each block. */
  flush(): void {
    const { n, buf, start, filled } = this
    // Tiled transpose: a tile of 64 symbols × one block of days stays in L1.
    for (let i0 = 0; i0 < n; i0 += 64) {
      const i1 = Math.min(n, i0 + 64)
      for (let b = 0; b < filled; b++) {
        const off = b * n
        const t = start + b
        for (let i = i0; i < i1; i++) this.panel[i][t] = buf[off + i]
      }
    }
    buf.fill(Number.NaN)
    this.filled = 0
  }

  /** True when the block that day `t` belongs to is full after writing it. */
  full(t: number): boolean {
    return t - this.start + 1 >= this.block
  }
}
