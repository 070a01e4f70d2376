import assert from 'node:assert/strict'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { after, describe, test } from 'node:test'
import { buildStore } from '../../src/engine/build/index.ts'
import { synthesizeDataset } from '../../src/engine/data/synthesize.ts'
import { chunkSymbolsFor, codeDType } from '../../src/engine/model-store/layout.ts'

const dir = await mkdtemp(join(tmpdir(), 'erm3-store-layout-'))
after(() => rm(dir, { recursive: true, force: true }))

const window = { seed: 41, start: '2015-01-02', end: '2016-06-30', fundamentals: false } as const
// 163 stocks make a market of exactly 257 symbols (with the ETFs and the renamed or relisted).
const datasetDir = join(dir, 'dataset')
await synthesizeDataset(datasetDir, { ...window, stocks: 163 })

async function build(store: string, blockSize?: number): Promise<string> {
  await buildStore({ dataset: datasetDir, store, blockSize })
  const cur = JSON.parse(await readFile(join(store, 'CURRENT'), 'utf8')).build as string
  return join(store, 'builds', cur)
}

/** Every [day, symbol] array of a build (one column per symbol) with its chunk shape. */
async function daySymbolArrays(
  root: string,
  symbols: number,
): Promise<Map<string, { chunks: number[]; shape: number[]; dir: string }>> {
  const out = new Map<string, { chunks: number[]; shape: number[]; dir: string }>()
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name)
      if (e.isDirectory()) {
        if (e.name !== 'c') await walk(p)
      } else if (e.name === 'zarr.json') {
        const meta = JSON.parse(await readFile(p, 'utf8'))
        if (meta.shape?.length === 2 && meta.shape[1] === symbols && meta.dimension_names?.[0] !== 'ranking')
          out.set(relative(root, d), {
            chunks: meta.chunk_grid.configuration.chunk_shape,
            shape: meta.shape,
            dir: d,
          })
      }
    }
  }
  await walk(root)
  return out
}

async function filesOf(root: string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>()
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name)
      if (e.isDirectory()) await walk(p)
      else if (e.name !== 'manifest.json') out.set(relative(root, p), await readFile(p))
    }
  }
  await walk(root)
  return out
}

describe('store layout: fitted symbol chunks, narrow codes', () => {
  test('chunkSymbolsFor: the fewest chunks of at most 256 symbols, evenly filled', () => {
    assert.equal(chunkSymbolsFor(3383), 242)
    assert.equal(Math.ceil(3383 / 242) * 242 - 3383, 5)
    assert.equal(chunkSymbolsFor(257), 129)
    assert.equal(chunkSymbolsFor(256), 256)
    assert.equal(chunkSymbolsFor(133), 133)
    assert.equal(chunkSymbolsFor(1), 1)
    for (let n = 1; n <= 3000; n++) {
      const c = chunkSymbolsFor(n)
      const chunks = Math.ceil(n / c)
      assert.ok(c <= 256 && chunks === Math.ceil(n / 256), `${n}: ${c}`)
      assert.ok(chunks * c - n < chunks, `${n}: padding ${chunks * c - n}`)
    }
  })

  test('codeDType: the narrowest type the codes fit', () => {
    const t = (etfs: number, styleFactors: number) =>
      ['sector_etf', 'subsector_etf', 'style_factors', 'lstar_level'].map((c) =>
        codeDType(c as Parameters<typeof codeDType>[0], { etfs, styleFactors }),
      )
    assert.deepEqual(t(83, 8), ['int8', 'int8', 'uint8', 'int8'])
    assert.deepEqual(t(127, 8), ['int8', 'int8', 'uint8', 'int8'])
    assert.deepEqual(t(128, 9), ['int16', 'int16', 'int16', 'int8'])
  })

  test('a store of 257 symbols is 2 chunks of 129 in every [day, symbol] array', async () => {
    const root = await build(join(dir, 'store'))
    const manifest = JSON.parse(await readFile(join(root, 'manifest.json'), 'utf8'))
    assert.equal(manifest.counts.symbols, 257)
    const arrays = await daySymbolArrays(root, 257)
    for (const p of [
      'fields/returns_gross',
      'codes/sector_etf',
      'universe/mc_rank',
      'products/reversion_decile',
    ])
      assert.ok(arrays.has(p), `${p} is a [day, symbol] array`)
    assert.ok(arrays.size > 20, `${arrays.size} arrays`)
    for (const [p, a] of arrays) {
      // The kernel state is [value, symbol]: all of a symbol's values in one chunk.
      assert.deepEqual(a.chunks, [p === 'kernel/state' ? a.shape[0] : 256, 129], p)
      for (const name of await readdir(a.dir)) {
        if (name === 'zarr.json') continue
        // Chunk files beside zarr.json (store version 4), no chunk directories.
        assert.match(name, /^c\.\d+\.[01]$/, `${p}: ${name}`)
      }
    }
    const dtype = async (p: string) =>
      JSON.parse(await readFile(join(root, p, 'zarr.json'), 'utf8')).data_type
    assert.ok(JSON.parse(await readFile(join(root, 'meta/etfs.json'), 'utf8')).length <= 127)
    for (const c of ['sector_etf', 'subsector_etf', 'lstar_level', 'recommended_level'])
      assert.equal(await dtype(`codes/${c}`), 'int8', c)
    assert.equal(await dtype('codes/style_factors'), 'uint8')
    // Engine blocks of two chunk columns write the same store; a block of part of a chunk is refused.
    assert.deepEqual(await filesOf(await build(join(dir, 'store-258'), 258)), await filesOf(root))
    await assert.rejects(
      build(join(dir, 'store-100'), 100),
      /not a multiple of the store's 129-symbol chunks/,
    )
  })
})
