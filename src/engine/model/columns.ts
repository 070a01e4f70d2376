export type Ctor<C> = new (length: number) => C

/** A typed array of `length` zeros on a SharedArrayBuffer: worker threads see it without a copy. */
export function sharedArray<C>(ctor: Ctor<C>, length: number): C {
  const typed = ctor as unknown as { BYTES_PER_ELEMENT: number; new (b: SharedArrayBuffer): C }
  return new typed(new SharedArrayBuffer(length * typed.BYTES_PER_ELEMENT))
}

/**
 * `count` columns of `days` values carved from one buffer (thousands of small arrays would each
 * be zeroed, and V8 would collect them). `shared`: on a SharedArrayBuffer (sharedArray).
 *
 * `firstDay` > 0 (a tail-only build): each column owns only days [firstDay, days). The columns are
 * overlapping views, `days` long and spaced days − firstDay apart, so index t < firstDay of one
 * column holds another's days: callers must neither read nor write a day before firstDay. The
 * buffer is count × (days − firstDay) + firstDay values, all of them touched: a first write to
 * a page costs a page fault (about 13 µs on the 2-core virtual machines of docs/performance.md),
 * so the pages a column's tail spans, not the bytes, set the cost.
 */
export function columnsOf<
  C extends Float64Array | Float32Array | Int32Array | Int16Array | Int8Array | Uint8Array,
>(ctor: Ctor<C>, count: number, days: number, shared = false, firstDay = 0): C[] {
  const first = Math.min(Math.max(0, firstDay), days)
  const L = days - first
  const length = count === 0 ? 0 : count * L + first
  const buf = shared ? sharedArray(ctor, length) : new ctor(length)
  return Array.from({ length: count }, (_, j) => buf.subarray(j * L, j * L + days) as C)
}
