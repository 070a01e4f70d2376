/** Whole-store checks shared by the Zarr property tests. */
import assert from 'node:assert/strict'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { openZarrStore } from '../../src/engine/zarr/index.ts'
import { assertSameColumn, type Case2D, listFiles, makeColumn, zarritaRead } from './zarr-arb.ts'

export async function checkOurReader(root: string, path: string, c: Case2D): Promise<void> {
  const { days, symbols } = c.spec
  // Small budgets exercise eviction; both read modes must agree.
  const blockingReads = (days + symbols) % 2 === 0
  const r = await openZarrStore(root, { cacheBytes: 4096, maxOpenFiles: 3, blockingReads })
  try {
    const all = await r.readAll2D(path)
    assert.equal(all.length, symbols)
    for (const [j, col] of all.entries()) assertSameColumn(col, c.columns[j], `readAll2D sym ${j}`)
    for (let j = 0; j < symbols; j++) {
      assertSameColumn(await r.readColumn(path, j), c.columns[j], `readColumn ${j}`)
      const from = Math.floor(days / 3)
      const to = Math.max(from, days - 1)
      assertSameColumn(await r.readColumn(path, j, from, to), c.columns[j].subarray(from, to), `slice ${j}`)
    }
    for (let d = 0; d < days; d++) {
      const row = c.columns.map((col) => col[d])
      assertSameColumn(await r.readRow(path, d), makeColumn(c.spec.dtype, row), `readRow ${d}`)
    }
    assert.deepEqual(r.meta(path).shape, [days, symbols])
    assert.deepEqual(r.attributes(path), c.spec.attributes)
  } finally {
    await r.close()
  }
  // Short windows (a day, the last few days: under half the column's chunks) read and cache
  // their own day-chunk runs; read twice (miss, then hit), before any whole column is cached.
  const r3 = await openZarrStore(root)
  const windows = [
    [0, 1],
    [days - 1, days],
    [Math.floor(days / 2), Math.floor(days / 2) + 1],
    [Math.max(0, days - 40), days],
  ].filter(([a, b]) => a >= 0 && b <= days && a < b)
  for (let j = 0; j < symbols; j++)
    for (const [from, to] of windows)
      for (const pass of ['miss', 'hit'])
        assertSameColumn(
          await r3.readColumn(path, j, from, to),
          c.columns[j].subarray(from, to),
          `window [${from}, ${to}) ${pass} ${j}`,
        )
  await r3.close()
  // Rows first, so the column reads below are served from cached whole chunks.
  const r2 = await openZarrStore(root)
  for (let d = 0; d < days; d++) await r2.readRow(path, d)
  for (let j = 0; j < symbols; j++) {
    const from = Math.min(days, 1)
    assertSameColumn(await r2.readColumn(path, j, from), c.columns[j].subarray(from), `cached chunk ${j}`)
  }
  await r2.close()
}

export async function checkZarrita(root: string, path: string, c: Case2D): Promise<void> {
  const z = await zarritaRead(root, path)
  assert.deepEqual(z.shape, [c.spec.days, c.spec.symbols])
  for (let j = 0; j < c.spec.symbols; j++)
    for (let d = 0; d < c.spec.days; d++)
      if (!Object.is(z.at([d, j]), c.columns[j][d])) assert.fail(`zarrita [${d}, ${j}]: ${z.at([d, j])}`)
}

/** Early, same-symbol chunks are hard links to the previous store's files; the rest are not. */
export async function assertLinks(
  prev: string,
  inc: string,
  c: Case2D,
  pd: number,
  ps: number,
  fromDay: number,
) {
  const { days, symbols } = c.spec
  const cd = c.spec.chunkDays ?? 256
  const cs = c.spec.chunkSymbols ?? 256
  const dir = join(inc, 'f')
  const files = (await listFiles(dir)).filter((f) => f.startsWith('c.'))
  for (const f of files) {
    const [i, k] = f.slice(2).split('.').map(Number)
    const early = (i + 1) * cd <= Math.min(fromDay, pd, days)
    const sameSyms = Math.min((k + 1) * cs, symbols) === Math.min((k + 1) * cs, ps)
    const prevStat = await stat(join(prev, 'f', f)).catch(() => null)
    const linked = prevStat !== null && prevStat.ino === (await stat(join(dir, f))).ino
    assert.equal(linked, early && sameSyms, `chunk ${f} linked=${linked}`)
  }
}
