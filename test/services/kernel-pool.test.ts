import assert from 'node:assert/strict'
import { test } from 'node:test'
import { type EngineBlock, runEngine } from '../../src/engine/build/engine.ts'
import { factorSeries } from '../../src/engine/build/factors.ts'
import { buildInputs } from '../../src/engine/build/inputs.ts'
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
