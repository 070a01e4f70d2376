/** A store under s3://bucket/prefix on any S3-compatible service, through @aws-sdk/client-s3. */
import type { S3Client } from '@aws-sdk/client-s3'
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

type Sdk = typeof import('@aws-sdk/client-s3')

/** The SDK is loaded on first use: a node serving a local or HTTP store never pays its start-up. */
let sdk: Promise<Sdk> | null = null
const loadSdk = (): Promise<Sdk> => {
  sdk ??= import('@aws-sdk/client-s3')
  return sdk
}

function notFound({ S3ServiceException }: Sdk, err: unknown): boolean {
  if (err instanceof S3ServiceException)
    return err.name === 'NoSuchKey' || err.name === 'NotFound' || err.$metadata?.httpStatusCode === 404
  return false
}

function rangeNotSatisfiable({ S3ServiceException }: Sdk, err: unknown): boolean {
  return err instanceof S3ServiceException && err.$metadata?.httpStatusCode === 416
}

export class S3Blobs implements BlobReader, BlobWriter {
  private readonly timeoutMs: number
  private client: Promise<{ sdk: Sdk; client: S3Client }> | null = null

  constructor(
    readonly bucket: string,
    /** Key prefix without leading or trailing "/" ("" = the bucket's root). */
    readonly prefix: string,
    private readonly opts: S3Options,
  ) {
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS
  }

  private s3(): Promise<{ sdk: Sdk; client: S3Client }> {
    this.client ??= loadSdk().then((sdk) => {
      const o = this.opts
      const client = new sdk.S3Client({
        region: o.region,
        ...(o.endpoint ? { endpoint: o.endpoint } : {}),
        forcePathStyle: o.forcePathStyle,
        ...(o.credentials ? { credentials: o.credentials } : {}),
        // One retry: a request waits at most about two timeouts before it gets its 503.
        maxAttempts: 2,
        requestHandler: {
          connectionTimeout: this.timeoutMs,
          requestTimeout: this.timeoutMs,
          // Without it the SDK only warns when a request outlives requestTimeout.
          throwOnRequestTimeout: true,
        },
      })
      return { sdk, client }
    })
    return this.client
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
    let s3: { sdk: Sdk; client: S3Client } | null = null
    try {
      s3 = await this.s3()
      const r = await s3.client.send(
        new s3.sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.key(key), Range: range }),
        { abortSignal: AbortSignal.timeout(this.timeoutMs) },
      )
      if (!r.Body) return new Uint8Array(0)
      return await r.Body.transformToByteArray()
    } catch (err) {
      if (s3 && notFound(s3.sdk, err)) return null
      if (s3 && range && rangeNotSatisfiable(s3.sdk, err)) return new Uint8Array(0)
      throw storeUnavailable(this.url, `GET ${key}${range ? ` ${range}` : ''}`, err)
    }
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    // A PUT replaces the object as a whole: readers see the old or the new one, never a mix.
    const { sdk, client } = await this.s3()
    await client.send(new sdk.PutObjectCommand({ Bucket: this.bucket, Key: this.key(key), Body: body }))
  }

  /** CopyObject: the bucket copies the bytes itself (objects of the store are far below its 5 GB limit). */
  async copy(from: string, to: string): Promise<void> {
    const { sdk, client } = await this.s3()
    const source = `${this.bucket}/${this.key(from)}`.split('/').map(encodeURIComponent).join('/')
    await client.send(
      new sdk.CopyObjectCommand({ Bucket: this.bucket, Key: this.key(to), CopySource: source }),
    )
  }

  async list(prefix: string): Promise<Map<string, number>> {
    const out = new Map<string, number>()
    const base = this.prefix ? `${this.prefix}/` : ''
    const { sdk, client } = await this.s3()
    let token: string | undefined
    do {
      const r = await client.send(
        new sdk.ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: base + prefix,
          ContinuationToken: token,
        }),
      )
      for (const o of r.Contents ?? []) if (o.Key) out.set(o.Key.slice(base.length), o.Size ?? 0)
      token = r.IsTruncated ? r.NextContinuationToken : undefined
    } while (token)
    return out
  }

  close(): void {
    // As the SDK's own destroy: open sockets close; a later call opens new ones.
    void this.client?.then(
      ({ client }) => client.destroy(),
      () => undefined, // never created: nothing to close
    )
  }
}
