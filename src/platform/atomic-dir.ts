import { mkdir, rename, rm, stat } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'

/**
 * Builds a directory under a temporary sibling name and renames it into place at the end, so a
 * reader never sees a half-written result: on failure the temporary directory is removed and a
 * previous directory at the target (if any) is left untouched.
 */
export async function writeDirAtomically<T>(
  target: string,
  fill: (tmpDir: string) => Promise<T>,
): Promise<T> {
  const parent = dirname(target)
  await mkdir(parent, { recursive: true })
  const tmp = join(parent, `.${basename(target)}.tmp-${process.pid}-${Date.now().toString(36)}`)
  await mkdir(tmp, { recursive: false })
  try {
    const result = await fill(tmp)
    if (await exists(target)) {
      const old = join(parent, `.${basename(target)}.old-${process.pid}-${Date.now().toString(36)}`)
      await rename(target, old)
      await rename(tmp, target)
      await rm(old, { recursive: true, force: true })
    } else {
      await rename(tmp, target)
    }
    return result
  } catch (err) {
    await rm(tmp, { recursive: true, force: true })
    throw err
  }
}

export async function exists(path: string): Promise<boolean> {
  try {
    await stat(path)
    return true
  } catch {
    return false
  }
}
