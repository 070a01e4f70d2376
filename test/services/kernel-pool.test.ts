import assert from 'node:assert/strict'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { test } from 'node:test'
import { type EngineBlock, runEngine } from '../../src/engine/build/engine.ts'
import { factorSeries } from '../../src/engine/build/factors.ts'
import { buildStore } from '../../src/engine/build/index.ts'
import { buildInputs } from '../../src/engine/build/inputs.ts'
import { writeDataset } from '../../src/engine/data/dataset-writer.ts'
import { generateSynthetic } from '../../src/engine/data/synth/index.ts'
import { DEFAULT_PARAMS } from '../../src/engine/model/params.ts'

const ds = generateSynthetic({
  seed: 11,
  stocks: 60,
  start: '2010-01-04',
  end: '2013-12-31',
  fundamentals: false,
})
const x = buildInputs(ds)
const factors = factorSeries(ds, x)
const style = factors.returns.filter((_, j) => factors.meta[j].group === 'style')

/** Every output byte of a full engine run, in symbol order (copied: pooled buffers are reused). */
async function outputs(threads: number): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>()
  const copy = (a: Float64Array | Int16Array) =>
    Buffer.from(new Uint8Array(a.buffer, a.byteOffset, a.byteLength))
  await runEngine(x, DEFAULT_PARAMS, { from: 0, blockSize: 256, style, threads }, async (b: EngineBlock) => {
    for (const [f, cols] of Object.entries(b.fields))
      cols.forEach((c, k) => {
        out.set(`${f}/${b.first + k}`, copy(c))
      })
    b.subEff.forEach((c, k) => {
      out.set(`subEff/${b.first + k}`, copy(c))
    })
    b.state.forEach((c, k) => {
      out.set(`state/${b.first + k}`, copy(c))
    })
  })
  return out
}

test('the kernel on worker threads writes the bytes of a run on the calling thread', async () => {
  assert.ok(x.calendar.length >= 512, 'enough days for the pool to be used')
  const one = await outputs(1)
  const three = await outputs(3)
  assert.equal(three.size, one.size)
  let differing = 0
  for (const [key, bytes] of one) if (!bytes.equals(three.get(key) ?? Buffer.alloc(0))) differing++
  assert.equal(differing, 0)
  // Not vacuous: the runs computed models (finite L3 explained-risk shares) for some stock.
  const er = [...one]
    .filter(([k]) => k.startsWith('l3_res_er/'))
    .map(([, b]) => new Float64Array(b.buffer, b.byteOffset, b.length / 8))
  assert.ok(er.some((a) => a.some((v) => Number.isFinite(v))))
})

test('a build with threads (kernel pool, industry panel worker) writes the files of one without', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'erm3-threads-'))
  try {
    const dataset = join(dir, 'dataset')
    await writeDataset(ds, dataset)
    const files = async (store: string, threads: number) => {
      await buildStore({ dataset, store, threads })
      const cur = JSON.parse(await readFile(join(store, 'CURRENT'), 'utf8')).build as string
      const base = join(store, 'builds', cur)
      const out = new Map<string, Buffer>()
      for (const e of await readdir(base, { recursive: true, withFileTypes: true }))
        if (e.isFile() && e.name !== 'manifest.json') {
          const p = join(e.parentPath, e.name)
          out.set(relative(base, p), await readFile(p))
        }
      return out
    }
    const one = await files(join(dir, 'one'), 1)
    const two = await files(join(dir, 'two'), 2)
    assert.deepEqual([...two.keys()].sort(), [...one.keys()].sort())
    for (const [rel, bytes] of one) assert.ok(bytes.equals(two.get(rel) ?? Buffer.alloc(0)), `${rel} differs`)
    const panel = [...one.keys()].filter((rel) => rel.startsWith('products/industry_panel/'))
    assert.ok(panel.length >= 12, `${panel.length} industry panel files`)
    assert.ok(one.has('kernel/state/c.0.0'))
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
