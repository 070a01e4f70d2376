/**
 * A full garbage collection on request. The build drops whole panels (the dataset's prices, the
 * engine's blocks) at known points; their memory lives outside V8's small heap, so V8 sees no
 * reason to run a full collection for a long while and the next stage's allocations would come
 * on top of the dropped ones (the peak memory of a build, docs/performance.md). Collecting there
 * costs a few milliseconds: the heap itself is small.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

let gc: (() => void) | null | undefined

export function collectGarbage(): void {
  if (gc === undefined) {
    try {
      // `gc` is installed in contexts made after the flag is set.
      setFlagsFromString('--expose-gc')
      gc = runInNewContext('gc') as () => void
    } catch {
      gc = null
    }
  }
  gc?.()
}
