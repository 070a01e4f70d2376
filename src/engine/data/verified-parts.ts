import { createHash } from 'node:crypto'
import type { ByteSource } from '../parquet/index.ts'
import type { FileDigest } from './format.ts'

type Parts = NonNullable<FileDigest['parts']>

/**
 * A view of a file that hands out only bytes it has checked: every read loads the whole parts
 * (manifest byte ranges) it touches, once, and compares each with its digest. A tail read of a
 * panel thus verifies its footer and the row groups it decodes, and nothing it skips.
 */
/**
 * Part buffers by bump allocation, reset between files: the parts a tail read loads from four
 * wide panels (tens of MB) then reuse one file's pages for the next, where a fresh buffer's first
 * write costs a page fault per page (docs/performance.md).
 */
export class ByteArena {
  private buf = new Uint8Array(0)
  private used = 0
  take(n: number): Uint8Array {
    if (this.used + n > this.buf.length) {
      this.buf = new Uint8Array(Math.max(n, 2 * this.buf.length, 1 << 20))
      this.used = 0
    }
    const out = this.buf.subarray(this.used, this.used + n)
    this.used += n
    return out
  }
  /** Room for `n` bytes after a reset, allocated now (in one piece) if the buffer is smaller. */
  reserve(n: number): void {
    if (this.buf.length < n) {
      this.buf = new Uint8Array(n)
      this.used = 0
    }
  }

  /** Every buffer taken so far may be overwritten from here on. */
  reset(): void {
    this.used = 0
  }
}

/**
 * `arena`: where the parts are loaded (when the source can read into a buffer); the caller
 * resets it only once nothing read through this view is used any more. `check` false: the parts
 * are loaded the same way, their digests not compared (a dataset this process has just written).
 */
export function verifiedParts(
  src: ByteSource,
  parts: Parts,
  fail: (message: string) => never,
  arena?: ByteArena,
  check = true,
): ByteSource {
  const starts: number[] = []
  let end = 0
  for (const p of parts) {
    starts.push(end)
    end += p.bytes
  }
  if (end !== src.size) fail(`its parts cover ${end} bytes, the file has ${src.size}`)
  const loaded = new Map<number, Uint8Array>()
  const part = async (n: number): Promise<Uint8Array> => {
    const hit = loaded.get(n)
    if (hit) return hit
    const [from, to] = [starts[n], starts[n] + parts[n].bytes]
    const bytes =
      arena && src.readInto ? await src.readInto(from, to, arena.take(to - from)) : await src.read(from, to)
    if (check && createHash('sha256').update(bytes).digest('hex') !== parts[n].sha256)
      fail(`part ${n} (bytes ${starts[n]}..${starts[n] + parts[n].bytes}) does not match its manifest digest`)
    loaded.set(n, bytes)
    return bytes
  }
  return {
    size: src.size,
    async read(start, stop) {
      if (start < 0 || stop > src.size || stop < start)
        fail(`read of bytes ${start}..${stop} outside a ${src.size}-byte file`)
      let out: Uint8Array | null = null
      // The last part starting at or before `start`, then onwards until `stop` is covered.
      let n = 0
      while (n + 1 < parts.length && starts[n + 1] <= start) n++
      for (let at = start; at < stop; n++) {
        const bytes = await part(n)
        const from = at - starts[n]
        const take = Math.min(stop, starts[n] + bytes.length) - at
        if (take === stop - start) return bytes.subarray(from, from + take)
        out ??= new Uint8Array(stop - start)
        out.set(bytes.subarray(from, from + take), at - start)
        at += take
      }
      return out ?? new Uint8Array(0)
    },
  }
}
