/**
 * Where a model store's bytes live: a local directory, an S3-compatible bucket or a static HTTP
 * server. The model-store reader needs three things of it — a whole object, a byte range, and to
 * know that an object is absent — and the publisher two more (put, list). Keys are relative to
 * the store root and always use "/".
 */
import { AppError } from '../../platform/errors.ts'

export interface BlobReader {
  /** Where the store is (for messages and /health; never credentials). */
  readonly url: string
  /** The whole object, or null when it does not exist. */
  get(key: string): Promise<Uint8Array | null>
  /**
   * Bytes [offset, offset + length) of the object (fewer at its end, none past it), or null when it
   * does not exist. Remote implementations fetch only that range.
   */
  getRange(key: string, offset: number, length: number): Promise<Uint8Array | null>
  /** Releases connections; the reader is not used afterwards. */
  close(): void
}

export interface BlobWriter {
  readonly url: string
  /** The whole object, or null when it does not exist (the publisher reads the target's CURRENT). */
  get(key: string): Promise<Uint8Array | null>
  /** Writes (replaces) one object. Objects whose key is CURRENT are replaced atomically. */
  put(key: string, body: Uint8Array): Promise<void>
  /**
   * Makes `to` a copy of the existing object `from`, storage-side: no bytes pass through erm3 (S3
   * CopyObject; a hard link, else a file copy, in a directory). Atomic like `put`.
   */
  copy(from: string, to: string): Promise<void>
  /** Every object under `prefix` (keys relative to the store root) with its size in bytes. */
  list(prefix: string): Promise<Map<string, number>>
}

/** A remote store answered with an error, timed out or could not be reached: 503 for the request. */
export function storeUnavailable(url: string, what: string, cause: unknown): AppError {
  const reason = cause instanceof Error ? cause.message : String(cause)
  return new AppError('UNAVAILABLE', `The model store at ${url} could not be read (${what}: ${reason})`, {
    retryAfterSeconds: 5,
    cause,
  })
}

/** Default time a remote read may take before the request gets 503 (ERM3_STORE_TIMEOUT_MS). */
export const DEFAULT_TIMEOUT_MS = 10_000
