/**
 * The update's dataset append (engine/update/append.ts) against a full assemble of the same data
 * directory: every file's sha256 and row-group digests must be the same, through a row-group
 * boundary, a dividend (kept scale), a new shares filing and a delisting; a restated history and
 * a shares filing that changes old days fall back to the full assemble, with the reason.
 */
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { readManifest } from '../../src/engine/data/dataset-reader.ts'
import { PANEL_ROW_GROUP_DAYS } from '../../src/engine/data/format.ts'
import type { DailyBar } from '../../src/engine/sources/types.ts'
import { assembleDataset } from '../../src/engine/update/assemble.ts'
import { DATA_DIR_FILES, readBars } from '../../src/engine/update/data-dir.ts'
import { afterClose } from '../../src/engine/update/days.ts'
import { writeShares } from '../../src/engine/update/dir-files.ts'
import { readIdentity, writeIdentity } from '../../src/engine/update/identity.ts'
import { runUpdate } from '../../src/engine/update/run.ts'
import { fakeVendor, makeDataDir, makeMarket, vendorBar } from './market.ts'

const dir = await mkdtemp(join(tmpdir(), 'erm3-append-'))
after(() => rm(dir, { recursive: true, force: true }))
const m = await makeMarket(dir)
const dataDir = join(dir, 'data')
const store = join(dir, 'store')
const vendor = fakeVendor(m)
const G = PANEL_ROW_GROUP_DAYS
assert.ok(m.days.length >= G + 8, `${m.days.length} sessions`)
// Two sessions short of a complete first row group.
await makeDataDir(m, dataDir, m.days[G - 3])
await assembleDataset(dataDir)

const stocks = m.ds.symbols.filter(
  (s) => m.latest.get(s)?.assetType === 'stock' && m.latest.get(s)?.validTo === null,
)
const tickerOf = (s: string) => m.latest.get(s)?.ticker ?? ''
const cikOf = (s: string) => m.latest.get(s)?.cik ?? 0
const update = (t: number) =>
  runUpdate({
    dataDir,
    store,
    sources: [vendor.source],
    now: afterClose(m.days[t]),
    settings: { maxShrink: 0.2 },
  })

/** The dataset the update wrote is, file for file and part for part, a full assemble's. */
async function assertSameAsFull(): Promise<void> {
  const out = join(dir, 'full')
  const full = await assembleDataset(dataDir, { out })
  const appended = await readManifest(join(dataDir, DATA_DIR_FILES.dataset))
  assert.deepEqual(appended.files, full.manifest.files)
  assert.deepEqual(appended, full.manifest)
  await rm(out, { recursive: true })
}

/** The vendor's history of stock s scaled by `k` before day index `t` (a dividend or restatement). */
function scaledHistory(
  s: string,
  t: number,
  k: (u: number) => number,
  action: Partial<DailyBar>,
): DailyBar[] {
  const i = m.ds.symbols.indexOf(s)
  const out: DailyBar[] = []
  for (let u = 0; u < m.days.length; u++) {
    const b = vendorBar(m, i, u)
    if (b) out.push({ ...b, adjClose: b.adjClose * (u < t ? k(u) : 1), ...(u === t ? action : {}) })
  }
  return out
}

describe('the update appends to the dataset', () => {
  test('two days to a complete first row group: an append, equal to a full assemble', async () => {
    const o = await update(G - 1)
    assert.equal(o.outcome, 'updated', o.message)
    assert.deepEqual(o.days, m.days.slice(G - 2, G))
    assert.equal(o.assemble_note, null)
    const mf = await readManifest(join(dataDir, DATA_DIR_FILES.dataset))
    assert.equal(mf.calendar.days, G)
    await assertSameAsFull()
  })

  test('across the boundary, with a dividend, a new filing and a delisting: still an append', async () => {
    const [div, filer, gone] = stocks
    // A dividend on day G+1: the vendor rescales the history before it by a constant.
    vendor.override.set(
      tickerOf(div),
      scaledHistory(div, G + 1, () => 0.98, { dividend: 0.5 }),
    )
    // A filing made on day G: it changes shares from then on only.
    await writeShares(dataDir, cikOf(filer), [
      { cik: cikOf(filer), end: m.days[G - 30], filed: m.days[G], shares: 1_000_000 },
    ])
    // The third stock is delisted after day G: no bars after it, its window closed.
    const rows = await readIdentity(dataDir)
    await writeIdentity(
      dataDir,
      rows.map((r) => (r.symbol === gone && r.validTo === null ? { ...r, validTo: m.days[G] } : r)),
    )
    const goneBars = scaledHistory(gone, 0, () => 1, {}).filter((b) => b.date <= m.days[G])
    vendor.override.set(tickerOf(gone), goneBars)
    const o = await update(G + 2)
    assert.equal(o.outcome, 'updated', o.message)
    assert.deepEqual(o.days, m.days.slice(G, G + 3))
    assert.ok(o.findings.some((f) => f.kind === 'corporate_action' && f.symbol === div))
    assert.ok(!o.findings.some((f) => f.kind === 'restated'))
    assert.equal(o.assemble_note, null)
    assert.equal((await readBars(dataDir, gone)).at(-1)?.date, m.days[G])
    const mf = await readManifest(join(dataDir, DATA_DIR_FILES.dataset))
    assert.equal(mf.calendar.days, G + 3)
    // Two row groups: the first complete one's bytes kept.
    assert.equal(mf.files['prices/adj_close.parquet'].parts?.length, 4)
    await assertSameAsFull()
  })

  test('a real restatement rewrites the bar file and assembles in full, correctly', async () => {
    const s = stocks[3]
    // Not a constant factor: every other old day moves differently, with a split on day G+3.
    vendor.override.set(
      tickerOf(s),
      scaledHistory(s, G + 3, (u) => (u % 2 === 0 ? 0.5 : 0.51), { splitFactor: 2 }),
    )
    const o = await update(G + 3)
    assert.equal(o.outcome, 'updated', o.message)
    assert.ok(o.findings.some((f) => f.kind === 'restated' && f.symbol === s))
    assert.match(o.assemble_note ?? '', /restated bar history: /)
    await assertSameAsFull()
  })

  test('a shares filing dated on a kept day assembles in full, correctly', async () => {
    const s = stocks[4]
    await writeShares(dataDir, cikOf(s), [{ cik: cikOf(s), end: m.days[10], filed: m.days[12], shares: 5e6 }])
    const o = await update(G + 4)
    assert.equal(o.outcome, 'updated', o.message)
    assert.match(o.assemble_note ?? '', /a shares filing of .* changes .*, a kept day/)
    await assertSameAsFull()
  })

  test('the next day appends again', async () => {
    const o = await update(G + 5)
    assert.equal(o.outcome, 'updated', o.message)
    assert.equal(o.assemble_note, null)
    await assertSameAsFull()
  })
})
