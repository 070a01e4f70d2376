/**
 * Model-store I/O: our Zarr v3 writer/reader against zarrita reading the same store, on a
 * default-sized panel (5,240 days × 3,400 symbols float64, ~10% NaN in leading runs, 10 fields),
 * with a warm OS page cache. Prints write throughput, then medians over random calls of one
 * symbol's full history of 10 fields (budget ≤ 5 ms) and one day's row of one field (≤ 20 ms).
 * Run: node --import tsx bench/zarr.ts [calls]
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FileSystemStore } from '@zarrita/storage'
import * as zarr from 'zarrita'
import {
  openZarrStore,
  writeArray2D,
  writeArray2DIncremental,
  type ZarrStoreReader,
} from '../src/engine/zarr/index.ts'

const DAYS = 5240
const SYMBOLS = 3400
const FIELDS = 10
const CALLS = Number(process.argv[2] ?? 200)
const MB = 1e6

function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function panel(days: number): Float64Array[] {
  const rand = rng(42)
  return Array.from({ length: SYMBOLS }, () => {
    const v = new Float64Array(days)
    // E[u²] = 1/3, so leading NaN runs average 10% of the days.
    const lead = Math.floor(rand() ** 2 * 0.3 * days)
    let p = 10 + rand() * 100
    for (let d = 0; d < days; d++) {
      p *= 1 + (rand() - 0.5) * 0.04
      v[d] = d < lead ? Number.NaN : p
    }
    return v
  })
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  await fn()
  return performance.now() - t0
}

async function stats(fn: (n: number) => Promise<unknown>): Promise<{ median: number; p90: number }> {
  const times: number[] = []
  for (let n = 0; n < CALLS; n++) times.push(await timed(() => fn(n)))
  times.sort((a, b) => a - b)
  return { median: times[Math.floor(CALLS / 2)], p90: times[Math.floor(CALLS * 0.9)] }
}

const fmt = (s: { median: number; p90: number }) => `${s.median.toFixed(2)} ms (p90 ${s.p90.toFixed(2)})`
const spec = { dtype: 'float64', days: DAYS, symbols: SYMBOLS } as const
const fieldPath = (f: number) => `fields/f${f}`

async function benchWrites(dir: string, fields: Float64Array[][]): Promise<void> {
  const bytes = DAYS * SYMBOLS * 8
  const rate = (ms: number, n = 1) => `${((n * bytes) / MB / (ms / 1e3)).toFixed(0)} MB/s`
  // Baseline: the same number of 512 KiB files written by plain writeFile, 8 in flight, so the
  // machine's page-cache write speed is measured next to ours in the same run.
  const block = new Uint8Array(256 * 256 * 8).fill(1)
  const files = Math.ceil(DAYS / 256) * Math.ceil(SYMBOLS / 256)
  const rawWrite = async (root: string) => {
    for (let i = 0; i < Math.ceil(DAYS / 256); i++) await mkdir(join(root, String(i)), { recursive: true })
    let next = 0
    const worker = async () => {
      for (let n = next++; n < files; n = next++)
        await writeFile(join(root, String(n % 21), String(n)), block)
    }
    await Promise.all(Array.from({ length: 8 }, worker))
  }
  const ours: number[] = []
  const raw: number[] = []
  for (let r = 0; r < 5; r++) {
    ours.push(await timed(() => writeArray2D(join(dir, `w${r}`), 'x', fields[0], spec)))
    raw.push(await timed(() => rawWrite(join(dir, `raw${r}`))))
  }
  const med = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  console.log(
    `write one field (${(bytes / MB).toFixed(0)} MB), median of 5:  ours ${rate(med(ours))}   plain writeFile of the same bytes ${rate(med(raw))}   [budget 500 MB/s]`,
  )
  const all = await timed(async () => {
    for (let f = 0; f < FIELDS; f++) await writeArray2D(join(dir, 'store'), fieldPath(f), fields[f], spec)
  })
  console.log(`write ${FIELDS} fields in a row: ${all.toFixed(0)} ms = ${rate(all, FIELDS)}`)
  const longer = fields.map((cols) =>
    cols.map((c) => Float64Array.from({ length: DAYS + 1 }, (_, d) => c[d] ?? 1)),
  )
  const inc = await timed(async () => {
    for (let f = 0; f < FIELDS; f++)
      await writeArray2DIncremental(
        join(dir, 'inc'),
        join(dir, 'store'),
        fieldPath(f),
        longer[f],
        { ...spec, days: DAYS + 1 },
        DAYS,
      )
  })
  console.log(`incremental +1 day, ${FIELDS} fields (hard links + last day-chunk): ${inc.toFixed(0)} ms`)
}

type ZArr = zarr.Array<zarr.DataType, FileSystemStore>

async function benchReads(root: string): Promise<void> {
  const rand = rng(7)
  const syms = Array.from({ length: CALLS }, () => Math.floor(rand() * SYMBOLS))
  const days = Array.from({ length: CALLS }, () => Math.floor(rand() * DAYS))
  const zroot = zarr.root(new FileSystemStore(root))
  const zarrs: ZArr[] = []
  for (let f = 0; f < FIELDS; f++) zarrs.push(await zarr.open(zroot.resolve(fieldPath(f)), { kind: 'array' }))
  const plain = await openZarrStore(root, { cacheBytes: 0 })
  const blocking = await openZarrStore(root, { cacheBytes: 0, blockingReads: true })
  const cached = await openZarrStore(root)
  await sanityCheck(plain, zarrs[0], syms[0], days[0])

  const history = (r: ZarrStoreReader) => (n: number) =>
    Promise.all(Array.from({ length: FIELDS }, (_, f) => r.readColumn(fieldPath(f), syms[n])))
  const row = (r: ZarrStoreReader) => (n: number) => r.readRow(fieldPath(0), days[n])
  const zHistory = (n: number) => Promise.all(zarrs.map((a) => zarr.get(a, [null, syms[n]])))
  const zRow = (n: number) => zarr.get(zarrs[0], [days[n], null])

  console.log(`\n${CALLS} random calls, warm page cache; median (p90):`)
  const theirs = await stats(zHistory)
  const first = await stats(history(plain))
  const ours = await stats(history(plain))
  const ourBlocking = await stats(history(blocking))
  await stats(history(cached))
  const ourCached = await stats(history(cached))
  const ratio = (s: { median: number }) => `${(theirs.median / s.median).toFixed(0)}x`
  console.log(`history of ${FIELDS} fields [budget 5 ms]      zarrita ${fmt(theirs)}`)
  console.log(`  ours, first pass (opening files)   ${fmt(first)}   ratio ${ratio(first)}`)
  console.log(`  ours, files open, no cache         ${fmt(ours)}   ratio ${ratio(ours)}`)
  console.log(`  ours, blockingReads, no cache      ${fmt(ourBlocking)}   ratio ${ratio(ourBlocking)}`)
  console.log(`  ours, column cache hit (2nd pass)  ${fmt(ourCached)}   ratio ${ratio(ourCached)}`)
  const theirsRow = await stats(zRow)
  const oursRow = await stats(row(plain))
  await stats(row(cached))
  const oursRowCached = await stats(row(cached))
  const rowRatio = (s: { median: number }) => `${(theirsRow.median / s.median).toFixed(1)}x`
  console.log(`row of one field [budget 20 ms]             zarrita ${fmt(theirsRow)}`)
  console.log(`  ours, no cache                     ${fmt(oursRow)}   ratio ${rowRatio(oursRow)}`)
  console.log(`  ours, chunk cache hit (2nd pass)   ${fmt(oursRowCached)}   ratio ${rowRatio(oursRowCached)}`)
  await Promise.all([plain.close(), blocking.close(), cached.close()])
}

async function sanityCheck(r: ZarrStoreReader, a: ZArr, sym: number, day: number): Promise<void> {
  const mine = await r.readColumn(fieldPath(0), sym)
  const theirs = (await zarr.get(a, [null, sym])).data as unknown as ArrayLike<number>
  const mineRow = await r.readRow(fieldPath(0), day)
  const theirsRow = (await zarr.get(a, [day, null])).data as unknown as ArrayLike<number>
  for (let d = 0; d < DAYS; d++)
    if (!Object.is(mine[d], theirs[d])) throw new Error(`column mismatch at ${d}`)
  for (let j = 0; j < SYMBOLS; j++)
    if (!Object.is(mineRow[j], theirsRow[j])) throw new Error(`row mismatch at ${j}`)
}

const dir = await mkdtemp(join(tmpdir(), 'erm3-bench-zarr-'))
try {
  const base = panel(DAYS)
  const fields = Array.from({ length: FIELDS }, (_, f) => base.map((c) => c.map((v) => v * (1 + f / 10))))
  console.log(`panel ${DAYS} days × ${SYMBOLS} symbols float64, ${FIELDS} fields, chunks 256×256`)
  await benchWrites(dir, fields)
  await benchReads(join(dir, 'store'))
} finally {
  await rm(dir, { recursive: true, force: true })
}
