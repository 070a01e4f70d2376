import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { synthesizeDataset } from '../../src/data/synthesize.ts'
import { buildStore } from '../../src/services/build/index.ts'

/**
 * Two tiny synthetic model stores for API tests: `live` and `sandbox` use different seeds, so a
 * test can tell which one answered. Built once per test process into a temp dir (about 2 s).
 */
export interface FixtureStores {
  root: string
  live: string
  sandbox: string
  cleanup(): void
}

let pending: Promise<FixtureStores> | null = null

async function build(root: string, name: string, seed: number): Promise<string> {
  const dataset = join(root, `${name}-dataset`)
  const store = join(root, `${name}-store`)
  await synthesizeDataset(dataset, {
    seed,
    stocks: 25,
    start: '2019-01-02',
    end: '2021-12-31',
    fundamentals: true,
  })
  await buildStore({ dataset, store })
  return store
}

export function fixtureStores(): Promise<FixtureStores> {
  pending ??= (async () => {
    const root = mkdtempSync(join(tmpdir(), 'erm3-fixture-'))
    // One fixture per test process; it goes when the process does (127 MB each otherwise piles up).
    process.once('exit', () => rmSync(root, { recursive: true, force: true }))
    const live = await build(root, 'live', 101)
    const sandbox = await build(root, 'sandbox', 202)
    return { root, live, sandbox, cleanup: () => rmSync(root, { recursive: true, force: true }) }
  })()
  return pending
}
