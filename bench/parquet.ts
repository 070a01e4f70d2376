/**
 * Encode/decode timings of our Parquet codec against hyparquet-writer/hyparquet on a price-panel
 * shaped table: 5,240 rows × 3,400 DOUBLE columns plus a DATE column, ~10% nulls in leading runs
 * (pre-listing days). Run: node --import tsx bench/parquet.ts [runs]
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parquetRead } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'
import { parquetWriteBuffer } from 'hyparquet-writer'
import {
  decodeParquet,
  encodeParquet,
  type ParquetColumn,
  readParquetFile,
  writeParquetFile,
} from '../src/engine/parquet/index.ts'

const ROWS = 5240
const COLS = 3400
const RUNS = Number(process.argv[2] ?? 5)

function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function panel(): ParquetColumn[] {
  const rand = rng(42)
  const dates = new Int32Array(ROWS)
  for (let i = 0; i < ROWS; i++) dates[i] = 10957 + i
  const cols: ParquetColumn[] = [{ name: 'date', type: 'DATE', values: dates }]
  for (let c = 0; c < COLS; c++) {
    const v = new Float64Array(ROWS)
    // E[u²] = 1/3, so leading null runs average 10% of the rows.
    const lead = Math.floor(rand() ** 2 * 0.3 * ROWS)
    let p = 10 + rand() * 100
    for (let i = 0; i < ROWS; i++) {
      p *= 1 + (rand() - 0.5) * 0.04
      v[i] = i < lead ? Number.NaN : p
    }
    cols.push({ name: `S${String(c).padStart(4, '0')}`, type: 'DOUBLE', values: v })
  }
  return cols
}

async function median(fn: () => unknown): Promise<number> {
  const times: number[] = []
  for (let r = 0; r < RUNS; r++) {
    const t0 = performance.now()
    await fn()
    times.push(performance.now() - t0)
  }
  if (process.env.BENCH_VERBOSE) console.log(times.map((t) => t.toFixed(0)).join(' '))
  times.sort((a, b) => a - b)
  return times[Math.floor(times.length / 2)]
}

async function hyparquetDecode(buf: ArrayBuffer): Promise<void> {
  const cols = new Map<string, unknown[]>()
  await parquetRead({
    file: buf,
    compressors,
    onChunk: ({ columnName, columnData }) => {
      cols.set(columnName, Array.from(columnData))
    },
  })
}

const columns = panel()
const ms = (x: number) => `${x.toFixed(0).padStart(6)} ms`
const ours = encodeParquet({ columns })
const oursEncode = await median(() => encodeParquet({ columns }))
const oursDecode = await median(() => decodeParquet(ours))
const dir = await mkdtemp(join(tmpdir(), 'parquet-bench-'))
const path = join(dir, 'panel.parquet')
const oursWrite = await median(() => writeParquetFile(path, { columns }))
const oursRead = await median(() => readParquetFile(path))
await rm(dir, { recursive: true, force: true })

// The baseline gets the same panel in hyparquet-writer's shape: nulls as null, dates as timestamps.
const columnData = columns.map((c) => {
  if (c.type === 'DATE') {
    return {
      name: c.name,
      data: Array.from(c.values, (d) => new Date(d * 86_400_000)),
      type: 'TIMESTAMP' as const,
    }
  }
  if (c.type !== 'DOUBLE') throw new Error('panel columns are DATE or DOUBLE')
  return {
    name: c.name,
    data: Array.from(c.values, (x) => (Number.isNaN(x) ? null : x)),
    type: 'DOUBLE' as const,
  }
})
const theirs = parquetWriteBuffer({ columnData })
const baseEncode = await median(() => parquetWriteBuffer({ columnData }))
const baseDecode = await median(() => hyparquetDecode(theirs))

console.log(`panel ${ROWS} rows × ${COLS} DOUBLE columns (+ date), median of ${RUNS} runs`)
console.log(`            erm3 codec   hyparquet(-writer)   speed-up`)
console.log(`encode   ${ms(oursEncode)}      ${ms(baseEncode)}      ${(baseEncode / oursEncode).toFixed(1)}×`)
console.log(`decode   ${ms(oursDecode)}      ${ms(baseDecode)}      ${(baseDecode / oursDecode).toFixed(1)}×`)
console.log(`file write ${ms(oursWrite)}, file read ${ms(oursRead)} (erm3 codec, includes file I/O)`)
console.log(
  `size     ${(ours.length / 1e6).toFixed(1).padStart(6)} MB      ${(theirs.byteLength / 1e6).toFixed(1).padStart(6)} MB (SNAPPY)`,
)
