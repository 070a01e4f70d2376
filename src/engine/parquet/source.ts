import { type FileHandle, open } from 'node:fs/promises'

/** Random access to the bytes of a Parquet file, in memory or on disk. */
export interface ByteSource {
  readonly size: number
  read(start: number, end: number): Promise<Uint8Array>
  /** read into the caller's buffer (end − start bytes long), returned; sources on files have it. */
  readInto?(start: number, end: number, into: Uint8Array): Promise<Uint8Array>
}

export function memorySource(bytes: Uint8Array): ByteSource {
  return {
    size: bytes.length,
    read: (start, end) => Promise.resolve(bytes.subarray(start, end)),
  }
}

/** Opens path, hands a source over it to fn and closes the file afterwards. */
export async function withFileSource<T>(path: string, fn: (src: ByteSource) => Promise<T>): Promise<T> {
  const fh = await open(path, 'r')
  try {
    const { size } = await fh.stat()
    return await fn({
      size,
      read: (start, end) => readRange(fh, start, end, size, new Uint8Array(Math.max(0, end - start))),
      readInto: (start, end, into) => readRange(fh, start, end, size, into),
    })
  } finally {
    await fh.close()
  }
}

async function readRange(
  fh: FileHandle,
  start: number,
  end: number,
  size: number,
  out: Uint8Array,
): Promise<Uint8Array> {
  if (start < 0 || end > size || end < start)
    throw new Error(`read of bytes ${start}..${end} outside a ${size}-byte file`)
  if (out.length !== end - start) throw new RangeError(`a ${end - start}-byte read into ${out.length} bytes`)
  let done = 0
  while (done < out.length) {
    const { bytesRead } = await fh.read(out, done, out.length - done, start + done)
    if (bytesRead === 0) throw new Error('file shrank while reading')
    done += bytesRead
  }
  return out
}
