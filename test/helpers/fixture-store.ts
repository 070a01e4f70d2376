import { createHash } from 'node:crypto'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildStore } from '../../src/engine/build/index.ts'
import { synthesizeDataset } from '../../src/engine/data/synthesize.ts'

/**
 * Two tiny synthetic model stores for API tests: `live` and `sandbox` use different seeds, so a
 * test can tell which one answered. They are read-only for tests (a test that needs to change one
 * copies it first).
 *
 * Building them takes a few seconds and about 50 test processes use them, so they are built once
 * per version of the code and shared between processes: the cache entry is named by a digest of
 * every source file that can change a build (src/ outside the dashboard, the lockfile, the Node
 * version and the parameters below). A process that finds no entry builds one in a private
 * directory and renames it into place, so concurrent processes never see half a fixture; when two
 * build at once, the first rename wins and the other's copy is dropped.
 */
export interface FixtureStores {
  root: string
  live: string
  sandbox: string
}

const PARAMS = { stocks: 25, start: '2019-01-02', end: '2021-12-31', fundamentals: true, seeds: [101, 202] }
const REPO = fileURLToPath(new URL('../../', import.meta.url))
const CACHE = join(tmpdir(), 'erm3-fixture-cache')
/** An entry nobody has opened for this long belongs to an older version of the code. */
const STALE_MS = 30 * 60_000
const DONE = 'complete'

let pending: Promise<FixtureStores> | null = null

async function build(root: string, name: string, seed: number): Promise<string> {
  const dataset = join(root, `${name}-dataset`)
  const store = join(root, `${name}-store`)
  const { seeds: _, ...synth } = PARAMS
  await synthesizeDataset(dataset, { ...synth, seed })
  await buildStore({ dataset, store })
  return store
}

function sourceFiles(dir: string, out: string[]): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const p = join(dir, e.name)
    if (e.isDirectory()) {
      if (p !== join(REPO, 'src', 'web')) sourceFiles(p, out)
    } else out.push(p)
  }
  return out
}

/** The cache key: everything a build's bytes can depend on. */
function fixtureKey(): string {
  const h = createHash('sha256').update(JSON.stringify({ PARAMS, node: process.version }))
  for (const f of [...sourceFiles(join(REPO, 'src'), []), join(REPO, 'package-lock.json')]) {
    h.update(f.slice(REPO.length)).update('\0').update(readFileSync(f)).update('\0')
  }
  return h.digest('hex').slice(0, 24)
}

function prune(keep: string): void {
  for (const name of readdirSync(CACHE)) {
    if (name === keep) continue
    const p = join(CACHE, name)
    try {
      if (Date.now() - statSync(p).mtimeMs > STALE_MS) rmSync(p, { recursive: true, force: true })
    } catch {
      // Another process pruned it first.
    }
  }
}

/** Every file's path, size and modification time: a test that wrote into the fixture changes it. */
function seal(root: string): string {
  const h = createHash('sha256')
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name)
      const st = statSync(p)
      if (st.isDirectory()) {
        if (p !== join(root, DONE)) walk(p)
      } else h.update(`${p.slice(root.length)}\0${st.size}\0${st.mtimeMs}\n`)
    }
  }
  walk(root)
  return h.digest('hex')
}

function stores(root: string): FixtureStores {
  if (readFileSync(join(root, DONE, 'seal'), 'utf8') !== seal(root))
    throw new Error(
      `the shared fixture at ${root} was changed by a test: tests must copy it before writing (remove the directory to rebuild it)`,
    )
  return { root, live: join(root, 'live-store'), sandbox: join(root, 'sandbox-store') }
}

export function fixtureStores(): Promise<FixtureStores> {
  pending ??= (async () => {
    mkdirSync(CACHE, { recursive: true })
    const key = fixtureKey()
    const root = join(CACHE, key)
    if (existsSync(join(root, DONE))) {
      const now = new Date()
      utimesSync(root, now, now)
      return stores(root)
    }
    prune(key)
    const tmp = mkdtempSync(join(CACHE, `${key}.building-`))
    try {
      const [live, sandbox] = PARAMS.seeds
      await build(tmp, 'live', live as number)
      await build(tmp, 'sandbox', sandbox as number)
      mkdirSync(join(tmp, DONE))
      writeFileSync(join(tmp, DONE, 'seal'), seal(tmp))
      renameSync(tmp, root)
    } catch (e) {
      rmSync(tmp, { recursive: true, force: true })
      // Another process finished the same entry first: use theirs.
      if (!existsSync(join(root, DONE))) throw e
    }
    return stores(root)
  })()
  return pending
}
