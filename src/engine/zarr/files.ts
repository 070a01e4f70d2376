/**
 * Open chunk files, kept open across requests in a bounded LRU (opening costs more than the
 * small positioned read that follows). A handle in use is never closed under a reader; files
 * found missing are remembered, because the store is immutable once opened.
 */
import { read, readSync } from 'node:fs'
import { access, type FileHandle, open } from 'node:fs/promises'
import { AppError } from '../../platform/errors.ts'

interface Entry {
  handle: Promise<FileHandle | null>
  /** Set once the open has succeeded: lets the hot path skip awaiting `handle`. */
  fd: number
  refs: number
}

export class FilePool {
  private readonly entries = new Map<string, Entry>()
  private readonly missing = new Set<string>()

  /**
   * `sentinel`: a file that exists as long as the store does (its root metadata). A missing chunk
   * is an absent (fill-value) chunk only while the sentinel is there; if the store's directory was
   * removed under a reader (an old build pruned while a request still read it), the read fails
   * with a retryable 503 instead of answering fill values as data.
   */
  constructor(
    readonly maxOpen: number,
    private readonly sentinel: string | null = null,
  ) {}

  get openCount(): number {
    return this.entries.size
  }

  /** Runs fn with the file's descriptor; undefined (fn not called) when the file does not exist. */
  use<T>(file: string, fn: (fd: number) => Promise<T>): Promise<T | undefined> {
    const e = this.entries.get(file)
    if (e === undefined || e.fd < 0) return this.openAndUse(file, fn)
    this.entries.delete(file)
    this.entries.set(file, e)
    e.refs++
    return fn(e.fd).finally(() => this.release(e))
  }

  private async openAndUse<T>(file: string, fn: (fd: number) => Promise<T>): Promise<T | undefined> {
    if (this.missing.has(file)) return undefined
    let e = this.entries.get(file)
    if (!e) {
      const entry: Entry = { handle: openOrNull(file), fd: -1, refs: 0 }
      entry.handle.then((h) => {
        if (h) entry.fd = h.fd
      }, noop)
      this.entries.set(file, entry)
      e = entry
    }
    e.refs++
    try {
      const h = await e.handle.catch((err: unknown) => {
        // Do not keep a failed open (EMFILE, EACCES…) around: the next call retries.
        if (this.entries.get(file) === e) this.entries.delete(file)
        throw err
      })
      if (h === null) {
        if (this.sentinel !== null && !(await exists(this.sentinel)))
          throw new AppError(
            'UNAVAILABLE',
            'The model build this request was reading has been removed; retry',
            {
              retryAfterSeconds: 1,
            },
          )
        this.missing.add(file)
        if (this.entries.get(file) === e) this.entries.delete(file)
        return undefined
      }
      return await fn(h.fd)
    } finally {
      this.release(e)
    }
  }

  private release(e: Entry): void {
    e.refs--
    if (this.entries.size <= this.maxOpen) return
    for (const [file, old] of this.entries) {
      if (this.entries.size <= this.maxOpen) break
      if (old.refs > 0) continue
      this.entries.delete(file)
      void old.handle.then((h) => h?.close()).catch(noop)
    }
  }

  async close(): Promise<void> {
    const handles = [...this.entries.values()].map((e) => e.handle)
    this.entries.clear()
    this.missing.clear()
    await Promise.all(handles.map((p) => p.then((h) => h?.close()).catch(noop)))
  }
}

function noop(): void {}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file)
    return true
  } catch {
    return false
  }
}

async function openOrNull(file: string): Promise<FileHandle | null> {
  try {
    return await open(file, 'r')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
}

/**
 * Positioned read filling `buf` from byte `pos`; resolves to the bytes read (less only at end
 * of file). Uses the callback API on the raw fd: faster than FileHandle.read for the many 2 KiB
 * reads of a column fetch (docs/performance.md).
 */
export function preadFully(fd: number, buf: Uint8Array, pos: number, done = 0): Promise<number> {
  return new Promise<number>((res, rej) =>
    read(fd, buf, done, buf.length - done, pos + done, (err, n) => {
      if (err) rej(err)
      else if (n === 0 || done + n === buf.length) res(done + n)
      else preadFully(fd, buf, pos, done + n).then(res, rej)
    }),
  )
}

/**
 * The same read, blocking. From a warm page cache it takes a couple of microseconds, less than
 * a thread-pool round trip, and it does not degrade when the CPUs are busy (docs/performance.md);
 * but a cold disk would stall the event loop.
 */
export function preadFullySync(fd: number, buf: Uint8Array, pos: number): Promise<number> {
  let done = 0
  try {
    while (done < buf.length) {
      const n = readSync(fd, buf, done, buf.length - done, pos + done)
      if (n === 0) break
      done += n
    }
  } catch (err) {
    return Promise.reject(err)
  }
  return Promise.resolve(done)
}
