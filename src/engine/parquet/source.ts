import { type FileHandle, open } from 'node:fs/promises'

/** Random access to the bytes of a Parquet file, in memory or on disk. */
export interface ByteSource {
  readonly size: number
  read(start: number, end: number): Promise<Uint8Array>
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
    return await fn({ size, read: (start, end) => readRange(fh, start, end, size) })
  } finally {
    await fh.close()
  }
}

async function readRange(fh: FileHandle, start: number, end: number, size: number): Promise<Uint8Array> {
  if (start < 0 || end > size || end < start)
    throw new Error(`read of bytes ${start}..${end} outside a ${size}-byte file`)
  const out = new Uint8Array(end - start)
  let done = 0
  while (done < out.length) {
    const { bytesRead } = await fh.read(out, done, out.length - done, start + done)
    if (bytesRead === 0) throw new Error('file shrank while reading')
    done += bytesRead
  }
  return out
}
