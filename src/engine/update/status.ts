/**
 * `status/update.json`: the last update's `UpdateOutcome`, kept in the model store root (and in the
 * publish target, where serving nodes read it). It is the only contract between the update and
 * whoever reports on it (/health, the scheduler, alerts).
 */
import { join } from 'node:path'
import { AppError } from '../../platform/errors.ts'
import type { BlobReader, BlobWriter } from '../object-store/types.ts'
import { readOptional, writeFileAtomically } from './data-dir.ts'
import type { UpdateOutcome } from './types.ts'

const UPDATE_STATUS_FILE = 'status/update.json'

const OUTCOMES = ['updated', 'unchanged', 'quarantined', 'failed']

export async function writeUpdateStatus(
  storeRoot: string,
  o: UpdateOutcome,
  target?: BlobWriter,
): Promise<void> {
  const text = `${JSON.stringify(o, null, 1)}\n`
  await writeFileAtomically(join(storeRoot, UPDATE_STATUS_FILE), text)
  await target?.put(UPDATE_STATUS_FILE, new TextEncoder().encode(text))
}

/**
 * The last update's outcome from a local store root or any store location (a BlobReader over S3,
 * HTTP or a directory); null when no update has run there.
 */
export async function readUpdateStatus(store: string | BlobReader): Promise<UpdateOutcome | null> {
  const text =
    typeof store === 'string'
      ? await readOptional(join(store, UPDATE_STATUS_FILE))
      : await store.get(UPDATE_STATUS_FILE).then((b) => (b === null ? null : new TextDecoder().decode(b)))
  if (text === null) return null
  const where = typeof store === 'string' ? store : store.url
  let o: Partial<UpdateOutcome>
  try {
    o = JSON.parse(text) as Partial<UpdateOutcome>
  } catch {
    throw new AppError('UNAVAILABLE', `${where}/${UPDATE_STATUS_FILE} is not JSON`)
  }
  if (
    !OUTCOMES.includes(o.outcome as string) ||
    typeof o.finished_at !== 'string' ||
    !Array.isArray(o.findings)
  )
    throw new AppError('UNAVAILABLE', `${where}/${UPDATE_STATUS_FILE} is not an update status`)
  return o as UpdateOutcome
}
