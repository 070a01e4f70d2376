export type Ctor<C> = new (length: number) => C

/**
 * `count` columns of `days` values carved from one buffer. A large buffer is zeroed lazily by the
 * OS, so pages a tail-only build never touches cost nothing (thousands of small arrays would each
 * be zeroed, and V8 would collect them).
 */
export function columnsOf<C extends Float64Array | Int32Array | Int16Array | Int8Array | Uint8Array>(
  ctor: Ctor<C>,
  count: number,
  days: number,
): C[] {
  const buf = new ctor(count * days)
  return Array.from({ length: count }, (_, j) => buf.subarray(j * days, (j + 1) * days) as C)
}
