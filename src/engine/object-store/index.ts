/**
 * Opens the storage a model store location names (ERM3_STORE, `erm3 publish`'s target):
 *   s3://bucket/prefix         an S3-compatible bucket (AWS variables for endpoint, region, keys)
 *   http://… or https://…      a store published under a static file server (read only)
 *   anything else              a local directory
 */
import { AppError } from '../../platform/errors.ts'
import { CachedBlobs } from './cache.ts'
import { HttpBlobs } from './http.ts'
import { LocalBlobs } from './local.ts'
import { S3Blobs, type S3Options } from './s3.ts'
import type { BlobReader, BlobWriter } from './types.ts'

export { CachedBlobs } from './cache.ts'
export { LocalBlobs } from './local.ts'
export { S3Blobs } from './s3.ts'
export type { BlobWriter } from './types.ts'

export type StoreLocation =
  | { kind: 'local'; dir: string }
  | { kind: 's3'; bucket: string; prefix: string }
  | { kind: 'http'; url: string }

export function parseStoreLocation(spec: string): StoreLocation {
  if (/^s3:\/\//i.test(spec)) {
    const m = /^s3:\/\/([^/]+)\/?(.*)$/i.exec(spec)
    if (!m || m[1].length < 3)
      throw new AppError('CONFIG_INVALID', `${spec} is not an s3://bucket/prefix location`)
    return { kind: 's3', bucket: m[1], prefix: m[2].replace(/^\/+|\/+$/g, '') }
  }
  if (/^https?:\/\//i.test(spec)) {
    try {
      new URL(spec)
    } catch {
      throw new AppError('CONFIG_INVALID', `${spec} is not a valid URL`)
    }
    return { kind: 'http', url: spec.replace(/\/+$/, '') }
  }
  return { kind: 'local', dir: spec }
}

export interface RemoteOptions {
  s3: Omit<S3Options, 'timeoutMs'>
  timeoutMs: number
  /** Budget of the range cache of remote stores, bytes. */
  cacheBytes: number
}

/** A reader of a remote location, with its bounded range cache; null for a local directory. */
export function openRemoteReader(loc: StoreLocation, opts: RemoteOptions): CachedBlobs | null {
  if (loc.kind === 'local') return null
  const inner: BlobReader =
    loc.kind === 's3'
      ? new S3Blobs(loc.bucket, loc.prefix, { ...opts.s3, timeoutMs: opts.timeoutMs })
      : new HttpBlobs(loc.url, opts.timeoutMs)
  return new CachedBlobs(inner, opts.cacheBytes)
}

/** Where `erm3 publish` writes: a bucket or a directory (HTTP locations are published as directories). */
export function openWriter(loc: StoreLocation, opts: Pick<RemoteOptions, 's3' | 'timeoutMs'>): BlobWriter {
  if (loc.kind === 's3') return new S3Blobs(loc.bucket, loc.prefix, { ...opts.s3, timeoutMs: opts.timeoutMs })
  if (loc.kind === 'local') return new LocalBlobs(loc.dir)
  throw new AppError(
    'INVALID_INPUT',
    `${loc.url}: an HTTP location is read-only; publish to the directory its server serves (erm3 publish <store> <dir>)`,
  )
}
