export type Ctor<C> = new (length: number) => C

/** A typed array of `length` zeros on a SharedArrayBuffer: worker threads see it without a copy. */
export function sharedArray<C>(ctor: Ctor<C>, length: number): C {
  const typed = ctor as unknown as { BYTES_PER_ELEMENT: number; new (b: SharedArrayBuffer): C }
  return new typed(new SharedArrayBuffer(length * typed.BYTES_PER_ELEMENT))
}

/**
 * `count` columns of `days` values carved from one buffer. A large buffer is zeroed lazily by the
 * OS, so pages a tail-only build never touches cost nothing (thousands of small arrays would each
 * be zeroed, and V8 would collect them). `shared`: on a SharedArrayBuffer (sharedArray).
 */
export function columnsOf<C extends Float64Array | Int32Array | Int16Array | Int8Array | Uint8Array>(
  ctor: Ctor<C>,
  count: number,
  days: number,
  shared = false,
): C[] {
  const buf = shared ? sharedArray(ctor, count * days) : new ctor(count * days)
  return Array.from({ length: count }, (_, j) => buf.subarray(j * days, (j + 1) * days) as C)
}
