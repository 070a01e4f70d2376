/** A store under s3://bucket/prefix on any S3-compatible service, through @aws-sdk/client-s3. */
import {
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3'
import { type BlobReader, type BlobWriter, DEFAULT_TIMEOUT_MS, storeUnavailable } from './types.ts'

export interface S3Options {
  /** AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL; null = AWS itself. */
  endpoint: string | null
  /** AWS_REGION (default us-east-1: S3-compatible servers rarely care). */
  region: string
  /** ERM3_S3_FORCE_PATH_STYLE: http://endpoint/bucket/key instead of http://bucket.endpoint/key. */
  forcePathStyle: boolean
  /** AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN); null = the SDK's default chain. */
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | null
  timeoutMs?: number
}

function notFound(err: unknown): boolean {
  if (err instanceof S3ServiceException)
    return err.name === 'NoSuchKey' || err.name === 'NotFound' || err.$metadata?.httpStatusCode === 404
  return false
}

function rangeNotSatisfiable(err: unknown): boolean {
  return err instanceof S3ServiceException && err.$metadata?.httpStatusCode === 416
}

export class S3Blobs implements BlobReader, BlobWriter {
  private readonly client: S3Client
  private readonly timeoutMs: number

  constructor(
    readonly bucket: string,
    /** Key prefix without leading or trailing "/" ("" = the bucket's root). */
    readonly prefix: string,
    opts: S3Options,
  ) {
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS
    this.client = new S3Client({
      region: opts.region,
      ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
      forcePathStyle: opts.forcePathStyle,
      ...(opts.credentials ? { credentials: opts.credentials } : {}),
      // One retry: a request waits at most about two timeouts before it gets its 503.
      maxAttempts: 2,
      requestHandler: {
        connectionTimeout: this.timeoutMs,
        requestTimeout: this.timeoutMs,
        // Without it the SDK only warns when a request outlives requestTimeout.
        throwOnRequestTimeout: true,
      },
    })
  }

  get url(): string {
    return `s3://${this.bucket}/${this.prefix}`
  }

  private key(k: string): string {
    return this.prefix ? `${this.prefix}/${k}` : k
  }

  get(key: string): Promise<Uint8Array | null> {
    return this.fetch(key, undefined)
  }

  getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    if (length <= 0) return Promise.resolve(new Uint8Array(0))
    return this.fetch(key, `bytes=${offset}-${offset + length - 1}`)
  }

  private async fetch(key: string, range: string | undefined): Promise<Uint8Array | null> {
    try {
      const r = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: this.key(key), Range: range }),
        { abortSignal: AbortSignal.timeout(this.timeoutMs) },
      )
      if (!r.Body) return new Uint8Array(0)
      return await r.Body.transformToByteArray()
    } catch (err) {
      if (notFound(err)) return null
      if (range && rangeNotSatisfiable(err)) return new Uint8Array(0)
      throw storeUnavailable(this.url, `GET ${key}${range ? ` ${range}` : ''}`, err)
    }
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    // A PUT replaces the object as a whole: readers see the old or the new one, never a mix.
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.key(key), Body: body }))
  }

  async list(prefix: string): Promise<Map<string, number>> {
    const out = new Map<string, number>()
    const base = this.prefix ? `${this.prefix}/` : ''
    let token: string | undefined
    do {
      const r = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: base + prefix, ContinuationToken: token }),
      )
      for (const o of r.Contents ?? []) if (o.Key) out.set(o.Key.slice(base.length), o.Size ?? 0)
      token = r.IsTruncated ? r.NextContinuationToken : undefined
    } while (token)
    return out
  }

  close(): void {
    this.client.destroy()
  }
}
