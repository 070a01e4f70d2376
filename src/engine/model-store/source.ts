/**
 * Where a serving node's model store comes from — a local root or a published store on S3 or
 * HTTP (ERM3_STORE) — as the two things hot reload needs: which build CURRENT names now, and
 * opening a given build.
 */
import {
  type CachedBlobs,
  openRemoteReader,
  parseStoreLocation,
  type RemoteOptions,
} from '../object-store/index.ts'
import { ModelStore, remoteCurrentBuild } from './reader.ts'
import { currentBuild } from './writer.ts'

export interface BuildSource {
  /** The location as configured (never credentials). */
  readonly url: string
  /** The remote reader with its range cache (null for a local root). */
  readonly remote: CachedBlobs | null
  /** The build CURRENT names now; null when there is none. A remote store that cannot be read throws UNAVAILABLE. */
  current(): Promise<string | null>
  /** Opens (and so checks) a build: the one CURRENT names when `build` is omitted. */
  open(build?: string): Promise<ModelStore>
  close(): void
}

export function openBuildSource(spec: string, opts: RemoteOptions): BuildSource {
  const loc = parseStoreLocation(spec)
  const remote = openRemoteReader(loc, opts)
  if (!remote) {
    return {
      url: spec,
      remote: null,
      current: () => currentBuild(spec),
      open: (build) => ModelStore.open(spec, build ? { build } : {}),
      close() {},
    }
  }
  return {
    url: remote.url,
    remote,
    current: () => remoteCurrentBuild(remote),
    open: (build) => ModelStore.openRemote(remote, build ? { build } : {}),
    close: () => remote.close(),
  }
}
