/**
 * A store published under any static HTTP(S) server (nginx, a CDN, a bucket's website endpoint):
 * GET with a Range header. Servers that ignore Range answer 200 with the whole object; the wanted
 * bytes are cut from it (correct, only slower).
 */
import { type BlobReader, DEFAULT_TIMEOUT_MS, storeUnavailable } from './types.ts'

export class HttpBlobs implements BlobReader {
  private readonly base: string

  constructor(
    base: string,
    private readonly timeoutMs = DEFAULT_TIMEOUT_MS,
  ) {
    this.base = base.replace(/\/+$/, '')
  }

  get url(): string {
    return this.base
  }

  get(key: string): Promise<Uint8Array | null> {
    return this.fetch(key, null)
  }

  getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    if (length <= 0) return Promise.resolve(new Uint8Array(0))
    return this.fetch(key, [offset, length])
  }

  private async fetch(key: string, range: [number, number] | null): Promise<Uint8Array | null> {
    const what = `GET ${key}${range ? ` bytes=${range[0]}-${range[0] + range[1] - 1}` : ''}`
    let res: Response
    let body: Uint8Array
    try {
      res = await fetch(`${this.base}/${key}`, {
        headers: range ? { range: `bytes=${range[0]}-${range[0] + range[1] - 1}` } : {},
        signal: AbortSignal.timeout(this.timeoutMs),
      })
      if (res.status === 404) {
        await res.body?.cancel()
        return null
      }
      if (res.status === 416) {
        await res.body?.cancel()
        return new Uint8Array(0)
      }
      if (res.status !== 200 && res.status !== 206) {
        await res.body?.cancel()
        throw new Error(`HTTP ${res.status}`)
      }
      body = new Uint8Array(await res.arrayBuffer())
    } catch (err) {
      throw storeUnavailable(this.url, what, err)
    }
    if (!range || res.status === 206) return body
    // 200 to a ranged request: the server sent the whole object.
    return body.subarray(range[0], range[0] + range[1])
  }

  close(): void {}
}
