/**
 * The data directory's update lock: one `erm3 update` at a time per data directory. A file
 * created with O_EXCL holding the holder's pid, host and start time. A lock older than the TTL, or
 * held by a process of this host that no longer exists, is stale and taken over (a crashed run
 * never blocks the next one). Nodes that share a data directory coordinate with a lease on top.
 */
import { open, readFile, rm } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { AppError } from '../../platform/errors.ts'
import { DATA_DIR_FILES } from './data-dir.ts'

/** Longer than any update takes: past it a lock is taken over even if its pid seems alive. */
export const DEFAULT_LOCK_TTL_MS = 6 * 3_600_000

interface LockBody {
  pid: number
  host: string
  started_at: string
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Why the lock at `path` is stale, or null when its holder may still be running. */
async function staleness(path: string, now: number, ttlMs: number): Promise<string | null> {
  let body: Partial<LockBody>
  try {
    body = JSON.parse(await readFile(path, 'utf8')) as Partial<LockBody>
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'released meanwhile'
    return 'unreadable'
  }
  const started = Date.parse(body.started_at ?? '')
  if (!(now - started < ttlMs)) return `started ${body.started_at ?? 'at an unknown time'}, past the TTL`
  if (body.host === hostname() && typeof body.pid === 'number' && !alive(body.pid))
    return `process ${body.pid} no longer runs`
  return null
}

/** Takes the lock or throws CONFLICT naming the holder. Returns the release function. */
export async function acquireUpdateLock(
  dataDir: string,
  ttlMs = DEFAULT_LOCK_TTL_MS,
  now = Date.now(),
): Promise<() => Promise<void>> {
  const path = join(dataDir, DATA_DIR_FILES.lock)
  const body: LockBody = { pid: process.pid, host: hostname(), started_at: new Date(now).toISOString() }
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fh = await open(path, 'wx')
      await fh.writeFile(`${JSON.stringify(body)}\n`)
      await fh.close()
      return () => rm(path, { force: true })
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
    }
    const stale = await staleness(path, now, ttlMs)
    if (stale === null) break
    await rm(path, { force: true })
  }
  const holder = await readFile(path, 'utf8').catch(() => 'unknown')
  throw new AppError('CONFLICT', `another update holds ${path} (${holder.trim()})`)
}
