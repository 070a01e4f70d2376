/**
 * A string's UTF-8 bytes in a new Buffer, for response-sized strings.
 *
 * `Buffer.from(string)` takes a native path that is slow for response-sized strings (its memory
 * comes back from the kernel fresh every time); sizing first and writing into `Buffer.allocUnsafe`
 * memory is many times cheaper (docs/performance.md, "Design experiments"). The bytes are
 * identical; every byte is written.
 */
export function utf8Bytes(s: string): Buffer {
  const out = Buffer.allocUnsafe(Buffer.byteLength(s, 'utf8'))
  out.write(s, 0, 'utf8')
  return out
}

/**
 * The bytes in a buffer of their own, for a Buffer kept long. A small Buffer is usually a slice of
 * an 8 KiB slab shared with other allocations (`Buffer.allocUnsafe`, `Buffer.from`); keeping the
 * slice keeps the whole slab alive, so a cache bounded by its entries' lengths would hold several
 * times its bound.
 */
export function ownBytes(b: Buffer): Buffer {
  if (b.byteOffset === 0 && b.buffer.byteLength === b.length) return b
  const own = Buffer.allocUnsafeSlow(b.length)
  b.copy(own)
  return own
}
