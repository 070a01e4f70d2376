/**
 * Runs work(state, n) for n in [0, count) with at most `concurrency` in flight. Each worker owns
 * one `state` (e.g. a chunk buffer) that it reuses, which is safe because a worker awaits its
 * job before taking the next. The first failure stops new jobs and is rethrown.
 */
export async function runBounded<S>(
  count: number,
  concurrency: number,
  makeState: () => S,
  work: (state: S, n: number) => Promise<void>,
): Promise<void> {
  let next = 0
  let failed = false
  const worker = async (): Promise<void> => {
    const state = makeState()
    while (!failed && next < count) {
      const n = next++
      try {
        await work(state, n)
      } catch (err) {
        failed = true
        throw err
      }
    }
  }
  const workers: Promise<void>[] = []
  for (let w = 0; w < Math.min(concurrency, count); w++) workers.push(worker())
  await Promise.all(workers)
}
