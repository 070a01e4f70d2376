import assert from 'node:assert/strict'
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { after, describe, test } from 'node:test'
import { buildStore } from '../../src/engine/build/index.ts'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import { writeDataset } from '../../src/engine/data/dataset-writer.ts'
import type { Dataset } from '../../src/engine/data/format.ts'
import { synthesizeDataset } from '../../src/engine/data/synthesize.ts'
import { publishStore } from '../../src/engine/model-store/publish.ts'
import { ModelStore } from '../../src/engine/model-store/reader.ts'
import { CachedBlobs, S3Blobs } from '../../src/engine/object-store/index.ts'
import { AppError } from '../../src/platform/errors.ts'
import { loggingProxy, s3Server } from '../helpers/store-servers.ts'

const dir = await mkdtemp(join(tmpdir(), 'erm3-incremental-'))
after(() => rm(dir, { recursive: true, force: true }))
const fullDir = join(dir, 'full')
await synthesizeDataset(fullDir, {
  seed: 33,
  stocks: 50,
  start: '2014-01-02',
  end: '2016-12-30',
  fundamentals: true,
})
const { dataset: full } = await readDataset(fullDir, { fundamentals: true })

/** The same dataset without its last `drop` days: what yesterday's update looked like. */
async function prefix(
  drop: number,
  out: string,
  restate?: { field: 'adj_close' | 'volume'; day: number },
): Promise<void> {
  const T = full.calendar.length - drop
  const cut = (p: Float64Array[] | null) => p?.map((s) => s.slice(0, T)) ?? null
  const ds: Dataset = {
    ...full,
    calendar: full.calendar.slice(0, T),
    prices: {
      adj_close: cut(full.prices.adj_close) ?? [],
      close: cut(full.prices.close),
      volume: cut(full.prices.volume),
      shares_out: cut(full.prices.shares_out),
    },
    series: full.series ? { ...full.series, values: full.series.values.map((v) => v.slice(0, T)) } : null,
  }
  // A value the full dataset later restates (the prefix had it differently).
  const panel = restate && ds.prices[restate.field]
  if (restate && panel) panel[7][restate.day] *= 1.01
  await writeDataset(ds, out)
}

async function files(root: string): Promise<Map<string, string>> {
  const cur = JSON.parse(await readFile(join(root, 'CURRENT'), 'utf8')).build as string
  const base = join(root, 'builds', cur)
  const out = new Map<string, string>()
  const walk = async (d: string) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name)
      if (e.isDirectory()) await walk(p)
      else out.set(relative(base, p), p)
    }
  }
  await walk(base)
  return out
}

async function assertSameBuild(a: string, b: string): Promise<number> {
  const fa = await files(a)
  const fb = await files(b)
  assert.deepEqual([...fa.keys()].sort(), [...fb.keys()].sort())
  let n = 0
  for (const [rel, pa] of fa) {
    if (rel === 'manifest.json') continue
    const pb = fb.get(rel) ?? ''
    assert.ok((await readFile(pa)).equals(await readFile(pb)), `${rel} differs`)
    n++
  }
  return n
}

describe('incremental build', () => {
  const reference = join(dir, 'store-full')
  test('reference full build', async () => {
    await buildStore({ dataset: fullDir, store: reference })
  })

  test('filings parsed on a worker thread, without verifying the dataset, give the same store', async () => {
    const store = join(dir, 'store-fundamentals-thread')
    const m = await buildStore({ dataset: fullDir, store, fundamentalsThread: true, verify: false })
    assert.deepEqual(m.notes, [])
    const compared = await assertSameBuild(store, reference)
    assert.ok(compared > 100, `compared ${compared} files`)
    const digests = [...(await files(store)).keys()].filter((rel) => rel.startsWith('fundamentals/'))
    assert.equal(digests.length, full.fundamentals.length)
  })

  // 242: the previous build ends just past a chunk boundary (514 days), the tightest tail case;
  // T − 512: it ends on one, so the first new day is a rebase day and no day is replayed.
  for (const drop of [1, 7, 242, 300, full.calendar.length - 512]) {
    test(`appending ${drop} day(s) gives a store byte-identical to a full build`, async () => {
      const pre = join(dir, `prefix-${drop}`)
      const store = join(dir, `store-${drop}`)
      await prefix(drop, pre)
      await buildStore({ dataset: pre, store })
      const m = await buildStore({ dataset: fullDir, store, incremental: true })
      assert.deepEqual(m.notes, [])
      assert.equal(m.incremental_from, m.calendar.last === '2016-12-30' ? incrementalFrom(drop) : '')
      const compared = await assertSameBuild(store, reference)
      assert.ok(compared > 100, `compared ${compared} files`)
      // Old day-chunks were hard-linked, not rewritten.
      const cur = await files(store)
      const linked = [...cur.entries()].filter(([rel]) => rel.startsWith('fields/l3_mkt_hr/c.0.'))
      assert.ok(linked.length > 0, 'old chunks present')
      assert.ok((await stat(linked[0][1])).nlink >= 2, 'old chunks are hard links')
      // The same filings: the parsed fundamentals are linked too (and byte-identical, above).
      const digests = [...cur.entries()].filter(([rel]) => rel.startsWith('fundamentals/'))
      assert.equal(digests.length, full.fundamentals.length)
      for (const [, p] of digests) assert.ok((await stat(p)).nlink >= 2, `${p} linked`)
    })
  }

  /** A store of the prefix without its last 7 days, with its kernel state passed through `edit`. */
  async function prefixStore(name: string, edit: (stateDir: string) => Promise<void>): Promise<string> {
    const pre = join(dir, `prefix-${name}`)
    const store = join(dir, `store-${name}`)
    await prefix(7, pre)
    await buildStore({ dataset: pre, store })
    const cur = JSON.parse(await readFile(join(store, 'CURRENT'), 'utf8')).build as string
    await edit(join(store, 'builds', cur, 'kernel', 'state'))
    return store
  }

  test('the next build resumes from the stored kernel state (a changed state changes its numbers)', async () => {
    const store = await prefixStore('tampered-state', async (stateDir) => {
      const meta = JSON.parse(await readFile(join(stateDir, 'zarr.json'), 'utf8'))
      const [values, symbols] = meta.shape as number[]
      assert.equal(meta.attributes.kernel_state.days, full.calendar.length - 7)
      // Every stock's L1 <r, r> doubled: level 1 of the new days must come out otherwise.
      const file = join(stateDir, 'c.0.0')
      const bytes = await readFile(file)
      const v = new Float64Array(bytes.buffer, bytes.byteOffset, bytes.length / 8)
      const cs = meta.chunk_grid.configuration.chunk_shape[1] as number
      for (let j = 0; j < Math.min(cs, symbols); j++) if (v[j * values] === 1) v[j * values + 4] *= 2
      await rm(file)
      await writeFile(file, bytes)
    })
    const m = await buildStore({ dataset: fullDir, store, incremental: true })
    assert.deepEqual(m.notes, [])
    await assert.rejects(assertSameBuild(store, reference), /fields\/\w+\/c\.\d+\.0 differs/)
  })

  test('without a stored kernel state (an older build) the next build replays, byte-identical', async () => {
    const store = await prefixStore('no-state', (stateDir) => rm(stateDir, { recursive: true }))
    const m = await buildStore({ dataset: fullDir, store, incremental: true })
    assert.deepEqual(m.notes, [])
    assert.ok((await assertSameBuild(store, reference)) > 100)
  })

  test('anything but appended days falls back to a full build and says why', async () => {
    const store = join(dir, 'store-restated')
    await buildStore({ dataset: fullDir, store })
    const m = await buildStore({ dataset: fullDir, store, incremental: true })
    assert.match(m.notes.join(), /no new days/)
    assert.equal(m.incremental_from, null)
    const other = await buildStore({ dataset: fullDir, store, incremental: true, params: { halfLife: 60 } })
    assert.match(other.notes.join(), /parameters changed/)
  })

  // Day 10 lies in a complete row group (checked by manifest digests before any panel is read);
  // day 740 in the last, incomplete one of the prefix (checked on the values of the tail read).
  for (const [field, day, why] of [
    ['adj_close', 10, /adj_close changed in row group 0/],
    ['volume', 740, /volume changed in its last recorded days/],
  ] as const) {
    test(`a restated ${field} on day ${day} falls back to a full build`, async () => {
      const pre = join(dir, `prefix-restated-${day}`)
      const store = join(dir, `store-restated-${day}`)
      await prefix(7, pre, { field, day })
      await buildStore({ dataset: pre, store })
      const m = await buildStore({ dataset: fullDir, store, incremental: true })
      assert.match(m.notes.join(), why)
      assert.equal(m.incremental_from, null)
      await assertSameBuild(store, reference)
    })
  }
})

/**
 * The daily update's publish: after an incremental build, only the files whose bytes changed go
 * up; the rest are copied on the target (S3 CopyObject) from the build it serves. The build here
 * runs in a worker thread (`isolate`), as it does inside an update.
 */
describe('publish after an incremental build', () => {
  test('uploads only the changed files, copies the rest target-side, and the target serves the same numbers', async () => {
    const s3 = await s3Server('erm3-daily')
    const proxy = await loggingProxy(s3.endpoint)
    const opts = {
      endpoint: proxy.url,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    }
    const target = new S3Blobs(s3.bucket, 'daily', opts)
    const reader = new CachedBlobs(new S3Blobs(s3.bucket, 'daily', opts), 64 * 2 ** 20)
    try {
      const pre = join(dir, 'prefix-publish')
      const store = join(dir, 'store-publish')
      await prefix(3, pre)
      await buildStore({ dataset: pre, store })
      const first = await publishStore(store, target)
      assert.equal(first.previous, null)
      assert.equal(first.copied, 0)
      assert.equal(first.uploaded, first.files)

      const stages: string[] = []
      const progress = { start: (s: string) => stages.push(s), update() {}, stop() {} }
      const m = await buildStore({ dataset: fullDir, store, incremental: true, isolate: true }, progress)
      assert.deepEqual(m.notes, [])
      assert.ok(
        stages.includes('build: per-stock model (symbols)'),
        `progress forwarded from the worker: ${stages.join()}`,
      )

      // What changed, computed directly: files of the new build absent from, or not byte-equal to, the old one's.
      const now = await files(store)
      let changedBytes = 0
      let changed = 0
      let total = 0
      for (const [rel, p] of now) {
        const bytes = await readFile(p)
        total += bytes.length
        const old = await readFile(join(store, 'builds', first.build, rel)).catch(() => null)
        if (old?.equals(bytes)) continue
        changed++
        changedBytes += bytes.length
      }
      const mark = proxy.log.length
      const second = await publishStore(store, target)
      assert.equal(second.previous, first.build)
      assert.equal(second.files, now.size)
      assert.equal(second.uploaded, changed)
      assert.equal(second.bytes, changedBytes)
      assert.equal(second.copied, now.size - changed)
      assert.equal(second.copied_bytes, total - changedBytes)
      // The bytes the S3 server received: the changed files, the listing and CURRENT (and the
      // SDK's framing), far below the build's size.
      const log = proxy.log.slice(mark)
      const sent = log.reduce((n, e) => n + e.bytes, 0)
      const listing = (await target.get(`builds/${second.build}/erm3-files.json`))?.length ?? 0
      assert.ok(sent >= changedBytes + listing, `${sent} bytes sent`)
      assert.ok(sent <= changedBytes + listing + 1024 * log.length, `${sent} bytes sent`)
      // Three day-chunks of history, two of them unchanged: at most about a third goes up.
      assert.ok(sent < total / 2, `${sent} of ${total} bytes sent`)

      // The published build opens and serves the same numbers as the local one.
      const remote = await ModelStore.openRemote(reader)
      const local = await ModelStore.open(store)
      try {
        assert.equal(remote.buildId, second.build)
        const T = local.calendar.length
        const N = local.symbols.length
        for (const path of [
          'fields/l3_res_er',
          'fields/price_close',
          'products/reversion_z',
          'codes/lstar_level',
        ]) {
          const read = async (s: ModelStore) => {
            const cols = Array.from({ length: N }, () => new Float64Array(T))
            if (path.startsWith('codes/')) {
              const codes = Array.from({ length: N }, () => new Int8Array(T))
              await s.readInto(path, 0, 0, T, codes)
              return codes
            }
            await s.readInto(path, 0, 0, T, cols)
            return cols
          }
          assert.deepEqual(await read(remote), await read(local), path)
        }
      } finally {
        await remote.close()
        await local.close()
      }
    } finally {
      reader.close()
      target.close()
      await proxy.close()
      await s3.close()
    }
  })

  test('a build in a worker thread fails with the error the build raised', async () => {
    await assert.rejects(
      buildStore({ dataset: join(dir, 'no-such-dataset'), store: join(dir, 'store-none'), isolate: true }),
      (err: unknown) =>
        err instanceof AppError && err.code === 'INVALID_INPUT' && /no manifest\.json/.test(err.message),
    )
  })
})

function incrementalFrom(drop: number): string {
  const d = full.calendar[full.calendar.length - drop]
  return new Date(d * 86_400_000).toISOString().slice(0, 10)
}
