/**
 * Exactly one updater across the nodes of a deployment. A node takes the lease before a scheduled
 * update and gives it back after; a node that cannot take it skips that day's run.
 *
 * - PostgreSQL (DATABASE_URL): a session advisory lock, `pg_try_advisory_lock`, held on a
 *   connection of its own for the run. A node that dies closes its connection and the server
 *   frees the lock. A node that hangs (its process alive, its event loop stuck) stops the
 *   heartbeat, and the server ends the idle session after `idle_session_timeout` (the lease's
 *   ttl), which frees the lock too. Every statement is bounded by `statement_timeout`.
 * - Otherwise a lease file (O_EXCL create) naming holder, pid, host and expiry, renewed while the
 *   run lasts; an expired one is taken over by one contender only (see takeOver). Nodes that share
 *   it must share its file system.
 */
import { randomBytes } from 'node:crypto'
import { open, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import pg from 'pg'

/** A lease taken for one run. */
interface HeldLease {
  /** Who holds it, for logs (no credentials). */
  readonly holder: string
  /** Aborts when the lease is lost while held (the connection closed, the file taken over). */
  readonly lost: AbortSignal
  release(): Promise<void>
}

export interface UpdateLease {
  readonly kind: 'postgres' | 'file'
  /** Takes the lease; null when another node holds it. */
  acquire(): Promise<HeldLease | null>
}

export interface LeaseOptions {
  /** How long a holder that stopped renewing keeps the lease (default 5 minutes). */
  ttlMs?: number
}

const DEFAULT_TTL_MS = 5 * 60_000
/** The advisory lock's key: "erm3" in ASCII. */
const UPDATE_LOCK_KEY = 0x65726d33

/** The lease on PostgreSQL; `key` may be changed by tests. */
export function createPostgresLease(url: string, opts: LeaseOptions & { key?: number } = {}): UpdateLease {
  const ttlMs = opts.ttlMs ?? DEFAULT_TTL_MS
  const key = opts.key ?? UPDATE_LOCK_KEY
  return {
    kind: 'postgres',
    async acquire() {
      const client = new pg.Client({
        connectionString: url,
        keepAlive: true,
        application_name: 'erm3-updater',
      })
      const lost = new AbortController()
      client.on('error', () => lost.abort(new Error('the lease connection failed')))
      await client.connect()
      try {
        await client.query(`SET statement_timeout = ${Math.min(ttlMs, 60_000)}`)
        await client.query(`SET idle_session_timeout = ${ttlMs}`)
        const r = await client.query<{ ok: boolean; pid: number }>(
          'SELECT pg_try_advisory_lock($1) AS ok, pg_backend_pid() AS pid',
          [key],
        )
        const row = r.rows[0]
        if (!row?.ok) {
          await client.end()
          return null
        }
        client.on('end', () => lost.abort(new Error('the lease connection closed')))
        const beat = setInterval(() => {
          client.query('SELECT 1').catch(() => lost.abort(new Error('the lease connection failed')))
        }, ttlMs / 3)
        beat.unref()
        return {
          holder: `postgres backend ${row.pid}`,
          lost: lost.signal,
          async release() {
            clearInterval(beat)
            await client.query('SELECT pg_advisory_unlock($1)', [key]).catch(() => undefined)
            await client.end().catch(() => undefined)
          },
        }
      } catch (e) {
        await client.end().catch(() => undefined)
        throw e
      }
    },
  }
}

interface LeaseRecord {
  holder: string
  pid: number
  host: string
  /** Unique per taking: a takeover claims the token it replaces. */
  token: string
  expires_at: string
}

async function readRecord(path: string): Promise<LeaseRecord | null | 'absent'> {
  try {
    const r = JSON.parse(await readFile(path, 'utf8')) as LeaseRecord
    return typeof r.token === 'string' && typeof r.expires_at === 'string' ? r : null
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'absent' : null
  }
}

const isCode = (e: unknown, code: string) => (e as NodeJS.ErrnoException).code === code

/** The lease file; `now` may be moved by tests. */
export function createFileLease(path: string, opts: LeaseOptions & { now?: () => number } = {}): UpdateLease {
  const ttlMs = opts.ttlMs ?? DEFAULT_TTL_MS
  const now = opts.now ?? Date.now
  const record = (token: string): LeaseRecord => ({
    holder: `${hostname()}:${process.pid}`,
    pid: process.pid,
    host: hostname(),
    token,
    expires_at: new Date(now() + ttlMs).toISOString(),
  })
  const replace = async (rec: LeaseRecord) => {
    const tmp = `${path}.${rec.token}.tmp`
    await writeFile(tmp, JSON.stringify(rec))
    await rename(tmp, path)
  }

  /** Creates the file; false when it exists. */
  const create = async (rec: LeaseRecord): Promise<boolean> => {
    try {
      const fh = await open(path, 'wx', 0o644)
      await fh.writeFile(JSON.stringify(rec)).finally(() => fh.close())
      return true
    } catch (e) {
      if (isCode(e, 'EEXIST')) return false
      throw e
    }
  }

  /**
   * Replaces an expired lease. Contenders race to create `<path>.takeover-<old token>` with O_EXCL:
   * one wins, checks the file still holds the expired token, writes its own record (rename, so
   * readers never see half of it) and only then removes the claim; a late contender that claims the
   * old token afterwards finds a new token and gives up.
   */
  const takeOver = async (old: LeaseRecord | null, rec: LeaseRecord): Promise<boolean> => {
    const claim = `${path}.takeover-${old?.token ?? 'unreadable'}`
    try {
      await (await open(claim, 'wx')).close()
    } catch (e) {
      if (isCode(e, 'EEXIST')) return false
      throw e
    }
    try {
      const again = await readRecord(path)
      const same = again === null ? old === null : again !== 'absent' && again.token === old?.token
      if (!same) return false
      await replace(rec)
      return true
    } finally {
      await unlink(claim).catch(() => undefined)
    }
  }

  const expired = async (r: LeaseRecord | null): Promise<boolean> => {
    if (r) return Date.parse(r.expires_at) <= now()
    // Unreadable (a writer died between create and write): expired once older than a ttl.
    const s = await stat(path).catch(() => null)
    return s !== null && s.mtimeMs + ttlMs <= now()
  }

  return {
    kind: 'file',
    async acquire() {
      const mine = record(randomBytes(12).toString('hex'))
      let ok = await create(mine)
      if (!ok) {
        const current = await readRecord(path)
        if (current === 'absent') ok = await create(mine)
        else if (await expired(current)) ok = await takeOver(current, mine)
      }
      if (!ok) return null
      return held(path, mine, ttlMs, { replace, refresh: () => record(mine.token) })
    },
  }
}

function held(
  path: string,
  mine: LeaseRecord,
  ttlMs: number,
  io: { replace(r: LeaseRecord): Promise<void>; refresh(): LeaseRecord },
): HeldLease {
  const lost = new AbortController()
  const stillMine = async () => {
    const r = await readRecord(path)
    return r !== null && r !== 'absent' && r.token === mine.token
  }
  let renewing: Promise<void> | null = null
  const renew = setInterval(() => {
    renewing ??= (async () => {
      if (!(await stillMine())) return lost.abort(new Error('the lease file was taken over'))
      await io.replace(io.refresh())
    })()
      .catch((e: Error) => lost.abort(e))
      .finally(() => {
        renewing = null
      })
  }, ttlMs / 3)
  renew.unref()
  return {
    holder: mine.holder,
    lost: lost.signal,
    async release() {
      clearInterval(renew)
      await renewing
      if (await stillMine()) await unlink(path).catch(() => undefined)
    },
  }
}
