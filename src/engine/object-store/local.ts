/** A store root on the local filesystem as a BlobReader/BlobWriter (publishing to a directory). */
import { randomBytes } from 'node:crypto'
import { copyFile, link, mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { dirname, join, relative, sep } from 'node:path'
import type { BlobReader, BlobWriter } from './types.ts'

/** Errors meaning "this file system cannot hard-link here": copy the file instead. */
const NO_LINK = new Set(['EXDEV', 'EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EMLINK', 'ENOSYS'])

function missing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code
  return code === 'ENOENT' || code === 'ENOTDIR'
}

export class LocalBlobs implements BlobReader, BlobWriter {
  constructor(readonly root: string) {}

  get url(): string {
    return this.root
  }

  async get(key: string): Promise<Uint8Array | null> {
    try {
      return await readFile(join(this.root, key))
    } catch (err) {
      if (missing(err)) return null
      throw err
    }
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    let h: Awaited<ReturnType<typeof open>>
    try {
      h = await open(join(this.root, key), 'r')
    } catch (err) {
      if (missing(err)) return null
      throw err
    }
    try {
      const buf = new Uint8Array(length)
      const { bytesRead } = await h.read(buf, 0, length, offset)
      return buf.subarray(0, bytesRead)
    } finally {
      await h.close()
    }
  }

  /** Written to a temporary file and renamed: a reader never sees half an object. */
  async put(key: string, body: Uint8Array): Promise<void> {
    const file = join(this.root, key)
    await mkdir(dirname(file), { recursive: true })
    const tmp = join(dirname(file), `.${randomBytes(6).toString('hex')}.tmp`)
    await writeFile(tmp, body)
    await rename(tmp, file)
  }

  /**
   * A hard link (published objects are never written in place: `put` renames a new file over the
   * key), else a file copy; made under a temporary name and renamed, so `to` appears whole.
   */
  async copy(from: string, to: string): Promise<void> {
    const file = join(this.root, to)
    await mkdir(dirname(file), { recursive: true })
    const tmp = join(dirname(file), `.${randomBytes(6).toString('hex')}.tmp`)
    try {
      await link(join(this.root, from), tmp)
    } catch (err) {
      if (!NO_LINK.has((err as NodeJS.ErrnoException).code ?? '')) throw err
      await copyFile(join(this.root, from), tmp)
    }
    try {
      await rename(tmp, file)
    } catch (err) {
      await rm(tmp, { force: true })
      throw err
    }
  }

  async list(prefix: string): Promise<Map<string, number>> {
    const out = new Map<string, number>()
    const walk = async (dir: string): Promise<void> => {
      let entries: import('node:fs').Dirent[]
      try {
        entries = await readdir(dir, { withFileTypes: true })
      } catch (err) {
        if (missing(err)) return
        throw err
      }
      for (const e of entries) {
        if (e.name.startsWith('.')) continue
        const p = join(dir, e.name)
        if (e.isDirectory()) await walk(p)
        else if (e.isFile()) out.set(relative(this.root, p).split(sep).join('/'), (await stat(p)).size)
      }
    }
    await walk(join(this.root, prefix))
    return out
  }

  close(): void {}
}
