import assert from 'node:assert/strict'
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { type EngineBlock, runEngine } from '../../src/engine/build/engine.ts'
import { factorSeries } from '../../src/engine/build/factors.ts'
import { buildStore } from '../../src/engine/build/index.ts'
import { buildInputs } from '../../src/engine/build/inputs.ts'
import { readDataset } from '../../src/engine/data/dataset-reader.ts'
import { synthesizeDataset } from '../../src/engine/data/synthesize.ts'
import { DEFAULT_PARAMS } from '../../src/engine/model/params.ts'
import type { StockField } from '../../src/engine/model/stock-kernel.ts'
import { DERIVED_FIELDS } from '../../src/engine/model-store/derived.ts'
import { FLOAT_FIELDS } from '../../src/engine/model-store/layout.ts'
import { ModelStore } from '../../src/engine/model-store/reader.ts'
import { zarritaRead } from './zarr-arb.ts'

/**
 * The fields the store no longer holds (stock_var, vol_23d, l{1,2,3}_cfr, l{1,2,3}_fr,
 * l{1,2,3}_rr, lstar_rr, l{1,2,3}_res_er, l1_mkt_hr, l2_sec_hr, l3_sub_hr) are derived
 * when read: every value served must be bit for bit the kernel's own output, NaN included. The
 * kernel runs here directly on the same dataset, and every read path of the store is compared
 * with it with Object.is.
 */
const work = await mkdtemp(join(tmpdir(), 'erm3-derived-'))
after(() => rm(work, { recursive: true, force: true }))
const datasetDir = join(work, 'dataset')
const storeDir = join(work, 'store')
await synthesizeDataset(datasetDir, {
  stocks: 30,
  start: '2014-01-02',
  end: '2018-12-31',
  fundamentals: false,
})
await buildStore({ dataset: datasetDir, store: storeDir })
const { dataset: ds } = await readDataset(datasetDir)
const x = buildInputs(ds)
const factors = factorSeries(ds, x)
const style = factors.returns.filter((_, j) => factors.meta[j].group === 'style')
const kernel = {} as Record<StockField, Float64Array[]>
await runEngine(x, DEFAULT_PARAMS, { from: 0, blockSize: 16, style }, async (b: EngineBlock) => {
  for (const [k, v] of Object.entries(b.fields)) {
    const list = kernel[k as StockField] ?? []
    for (const col of v) list.push(Float64Array.from(col))
    kernel[k as StockField] = list
  }
})
const store = await ModelStore.open(storeDir)
after(() => store.close())
const T = x.calendar.length
const N = x.symbols.length

function same(got: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  assert.equal(got.length, want.length, `${what}: length`)
  for (let i = 0; i < want.length; i++)
    if (!Object.is(got[i], want[i])) assert.fail(`${what}[${i}]: ${got[i]} ≠ kernel ${want[i]}`)
}

describe('fields derived at read time', () => {
  test('the store holds only the stored fields, and its own fields are the kernel’s', async () => {
    assert.deepEqual(
      store.symbols.map((s) => s.symbol),
      x.symbols,
    )
    const fieldsDir = join(store.dir, 'fields')
    const onDisk = (await readdir(fieldsDir)).sort()
    const stored = FLOAT_FIELDS.filter((f) => !(DERIVED_FIELDS as string[]).includes(f))
    assert.deepEqual(onDisk, [...stored].sort())
    assert.deepEqual(store.manifest.float_fields, stored)
    assert.equal(DERIVED_FIELDS.length, 18)
    // The inputs the derivations read are the kernel's, bit for bit (so the comparison below is fair).
    for (const f of [
      'l3_mkt_hr',
      'l3_sub_beta',
      'l1_mkt_er',
      'l2_sec_beta',
      'l3_sub_er',
      'l3_style_er',
    ] as const) {
      for (let i = 0; i < N; i++) same((await store.history(i, [f]))[f], kernel[f][i], `${f} of ${i}`)
    }
    for (let i = 0; i < N; i++)
      same((await store.history(i, ['returns_gross'])).returns_gross, x.returns[i], `returns of ${i}`)
  })

  test('history: every symbol, whole calendar and a window, equals the kernel', async () => {
    const levels = new Set<number>()
    let finite = 0
    for (let i = 0; i < N; i++) {
      const all = await store.history(i, DERIVED_FIELDS)
      const win = await store.history(i, [...DERIVED_FIELDS, 'l1_cfr'], 300, 700)
      for (const f of DERIVED_FIELDS) {
        same(all[f], kernel[f][i], `${f} of ${i}`)
        same(win[f], kernel[f][i].subarray(300, 700), `${f} of ${i} in [300, 700)`)
        for (const v of all[f]) if (Number.isFinite(v)) finite++
      }
      for (const v of kernel.lstar_level[i]) levels.add(v)
      same(await store.readColumn('fields/lstar_rr', i, 1, 2), kernel.lstar_rr[i].subarray(1, 2), 'day 1')
    }
    assert.ok(
      [1, 2, 3].every((l) => levels.has(l)),
      `L* levels seen: ${[...levels]}`,
    )
    assert.ok(finite > 18 * 25 * 1000, `${finite} finite derived values`)
  })

  test('cross-sections (day 0, day 1, any day) equal the kernel', async () => {
    for (const t of [0, 1, 2, 261, 262, 800, T - 1]) {
      for (const f of DERIVED_FIELDS) {
        const want = Float64Array.from({ length: N }, (_, i) => kernel[f][i][t])
        same(await store.crossSection(f, t), want, `${f} on day ${t}`)
        same(await store.readRow(`fields/${f}`, t), want, `fields/${f} row ${t}`)
      }
    }
  })

  test('a kept cross-section is served as a copy: writing into one answer spoils no other', async () => {
    const want = Float64Array.from({ length: N }, (_, i) => kernel.stock_var[i][T - 1])
    const first = await store.crossSection('stock_var', T - 1)
    first.fill(42)
    same(await store.crossSection('stock_var', T - 1), want, 'stock_var on the last day, again')
  })

  test('readInto (whole panel, and a window into offset targets) equals the kernel', async () => {
    for (const f of DERIVED_FIELDS) {
      const whole = Array.from({ length: N }, () => new Float64Array(T))
      await store.readInto(`fields/${f}`, 0, 0, T, whole)
      for (let i = 0; i < N; i++) same(whole[i], kernel[f][i], `${f} of ${i}`)
      // Symbols [3, 20), days [500, 900): only those days are written.
      const targets = Array.from({ length: 17 }, () => new Float64Array(900).fill(7))
      await store.readInto(`fields/${f}`, 3, 500, 900, targets)
      targets.forEach((c, k) => {
        same(c.subarray(500), kernel[f][3 + k].subarray(500, 900), `${f} of ${3 + k} in [500, 900)`)
        assert.ok(
          c.subarray(0, 500).every((v) => v === 7),
          'days before from untouched',
        )
      })
    }
  })

  test('zarrita reads the stored arrays; a version-2 store is refused', async () => {
    const z = await zarritaRead(store.dir, 'fields/l3_sub_beta')
    assert.deepEqual(z.shape, [T, N])
    for (const [t, i] of [
      [T - 1, 5],
      [400, N - 1],
    ])
      assert.ok(Object.is(z.at([t, i]), kernel.l3_sub_beta[i][t]), `zarrita l3_sub_beta[${t}, ${i}]`)
    const manifest = JSON.parse(await readFile(join(store.dir, 'manifest.json'), 'utf8'))
    assert.equal(manifest.store_version, 4)
    // A version-2 store (six of the derived fields stored) is refused, never read with this layout.
    const old = join(work, 'old-build')
    await cp(store.dir, old, { recursive: true })
    await writeFile(join(old, 'manifest.json'), JSON.stringify({ ...manifest, store_version: 2 }))
    await assert.rejects(ModelStore.open(old), /store_version 2 is not supported.*rebuild the store/)
  })
})
