import assert from 'node:assert/strict'
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { pieceCache } from '../../src/engine/zarr/cache.ts'
import { FilePool } from '../../src/engine/zarr/files.ts'
import {
  type Column,
  openZarrStore,
  writeArray1D,
  writeArray2D,
  writeArray2DIncremental,
  writeGroup,
} from '../../src/engine/zarr/index.ts'
import { ENTRY_OVERHEAD_BYTES } from '../../src/platform/byte-lru.ts'
import * as fc from '../helpers/fc.ts'
import {
  assertSameColumn,
  assertSameTree,
  case2DArb,
  chunkFiles,
  DTYPE_LIST,
  listFiles,
  makeColumn,
  zarritaAttrs,
  zarritaRead,
} from './zarr-arb.ts'
import { assertLinks, checkOurReader, checkZarrita } from './zarr-checks.ts'

const base = await mkdtemp(join(tmpdir(), 'erm3-zarr-'))
after(() => rm(base, { recursive: true, force: true }))
let seq = 0
const freshDir = async () => {
  const d = join(base, `s${seq++}`)
  await mkdir(d, { recursive: true })
  return d
}

describe('zarr v3 store', () => {
  test('2-D arrays round-trip through our reader and zarrita, every dtype and odd shape', async () => {
    await fc.assert(
      fc.asyncProperty(case2DArb, async (c) => {
        const root = await freshDir()
        await writeArray2D(root, 'g/field', c.columns, c.spec)
        await checkOurReader(root, 'g/field', c)
        await checkZarrita(root, 'g/field', c)
        await rm(root, { recursive: true })
      }),
      { numRuns: 80 },
    )
  })

  test('1-D arrays round-trip through our reader and zarrita', async () => {
    const arb = fc.record({
      dtype: fc.constantFrom(...DTYPE_LIST),
      n: fc.integer({ min: 0, max: 50 }),
      chunk: fc.option(fc.integer({ min: 1, max: 16 }), { nil: undefined }),
      seed: fc.integer({ min: 0, max: 1000 }),
    })
    await fc.assert(
      fc.asyncProperty(arb, async ({ dtype, n, chunk, seed }) => {
        const values = Array.from({ length: n }, (_, i) => (i < n / 3 ? 0 : ((i * 37 + seed) % 200) - 100))
        const data = makeColumn(dtype, dtype.startsWith('float') ? values.map((v) => v / 8) : values)
        const root = await freshDir()
        await writeArray1D(root, 'dates', data, { chunk, attributes: { kind: 'dates' } })
        const r = await openZarrStore(root)
        assertSameColumn(await r.readArray1D('dates'), data, 'readArray1D')
        assert.deepEqual(r.attributes('/dates/'), { kind: 'dates' })
        await r.close()
        const z = await zarritaRead(root, 'dates')
        for (let i = 0; i < n; i++) assert.ok(Object.is(z.at([i]), data[i]), `zarrita [${i}]`)
        await rm(root, { recursive: true })
      }),
      { numRuns: 40 },
    )
  })

  test('metadata is standard Zarr v3 and groups carry attributes', async () => {
    const root = await freshDir()
    await writeGroup(root, '', { model_version: 'ERM3-L3-v1' })
    await writeGroup(root, 'fields', { n: 2 })
    const cols = [new Float64Array([Number.NaN, 1, 2]), new Float64Array([3, 4, 5])]
    await writeArray2D(root, 'fields/ret', cols, {
      dtype: 'float64',
      days: 3,
      symbols: 2,
      attributes: { u: 'x' },
    })
    assert.deepEqual(JSON.parse(await readFile(join(root, 'fields/ret/zarr.json'), 'utf8')), {
      zarr_format: 3,
      node_type: 'array',
      shape: [3, 2],
      data_type: 'float64',
      chunk_grid: { name: 'regular', configuration: { chunk_shape: [256, 256] } },
      chunk_key_encoding: { name: 'default', configuration: { separator: '.' } },
      fill_value: 'NaN',
      codecs: [
        { name: 'transpose', configuration: { order: [1, 0] } },
        { name: 'bytes', configuration: { endian: 'little' } },
      ],
      attributes: { u: 'x' },
      dimension_names: ['day', 'symbol'],
    })
    // Edge chunks are full-size on disk (Zarr v3), symbol-major.
    const chunk = await readFile(join(root, 'fields/ret/c.0.0'))
    assert.equal(chunk.length, 256 * 256 * 8)
    assert.equal(new Float64Array(chunk.buffer, chunk.byteOffset, 512)[256 + 2], 5)
    assert.deepEqual(await zarritaAttrs(root, ''), { model_version: 'ERM3-L3-v1' })
    const r = await openZarrStore(root)
    assert.deepEqual(r.attributes(''), { model_version: 'ERM3-L3-v1' })
    assert.deepEqual(r.attributes('fields'), { n: 2 })
    await assert.rejects(r.readColumn('fields', 0), /is a group, not an array/)
    await assert.rejects(r.readColumn('nope', 0), /"nope" does not exist/)
    await assert.rejects(r.readColumn('fields/ret', 2), /symbol 2 is outside \[0, 2\)/)
    await r.close()
  })

  test('float fills survive exactly: -0 as a hex bit pattern, float32 rounded', async () => {
    const root = await freshDir()
    const spec = {
      dtype: 'float64',
      days: 3,
      symbols: 2,
      chunkDays: 1,
      chunkSymbols: 1,
      fillValue: -0,
    } as const
    await writeArray2D(root, 'z', [Float64Array.from([-0, -0, 1]), Float64Array.from([0, -0, 2])], spec)
    const doc = JSON.parse(await readFile(join(root, 'z', 'zarr.json'), 'utf8'))
    assert.equal(doc.fill_value, '0x8000000000000000')
    assert.deepEqual(await chunkFiles(join(root, 'z')), ['c.0.1', 'c.2.0', 'c.2.1'])
    await writeArray2D(root, 'f', [Float32Array.from([0.1])], {
      dtype: 'float32',
      days: 1,
      symbols: 1,
      fillValue: 0.1,
    })
    const r = await openZarrStore(root)
    assertSameColumn(await r.readRow('z', 1), Float64Array.from([-0, -0]), 'row of -0 fills')
    assertSameColumn(await r.readRow('z', 0), Float64Array.from([-0, 0]), 'row with +0')
    assert.equal(r.meta('f').fillValue, Math.fround(0.1))
    assert.ok(Object.isFrozen(r.meta('f').shape))
    await r.close()
    assert.deepEqual(await listFiles(join(root, 'f')), ['zarr.json'])
  })

  test('an array of "/" chunk keys (store version 3, other writers) reads the same', async () => {
    const root = await freshDir()
    const spec = { dtype: 'float64', days: 5, symbols: 3, chunkDays: 2, chunkSymbols: 2 } as const
    const cols = [0, 1, 2].map((j) => Float64Array.from([1, 2, 3, 4, 5], (v) => v * 10 + j))
    await writeArray2D(root, 'a', cols, spec)
    const dir = join(root, 'a')
    // Rewrite it as c/<i>/<k> with the separator "/" in its zarr.json.
    for (const f of await chunkFiles(dir)) {
      const [, i, k] = f.split('.')
      await mkdir(join(dir, 'c', i), { recursive: true })
      await rename(join(dir, f), join(dir, 'c', i, k))
    }
    const doc = JSON.parse(await readFile(join(dir, 'zarr.json'), 'utf8'))
    doc.chunk_key_encoding.configuration.separator = '/'
    await writeFile(join(dir, 'zarr.json'), JSON.stringify(doc))
    assert.deepEqual(await chunkFiles(dir), [])
    const r = await openZarrStore(root)
    for (const [j, c] of cols.entries()) assertSameColumn(await r.readColumn('a', j), c, `column ${j}`)
    await r.close()
    const z = await zarritaRead(root, 'a')
    for (const [j, c] of cols.entries()) for (let t = 0; t < 5; t++) assert.equal(z.at([t, j]), c[t])
  })

  test('all-fill chunks are not written; rewriting an array drops stale chunks', async () => {
    const root = await freshDir()
    const spec = { dtype: 'int16', days: 4, symbols: 4, chunkDays: 2, chunkSymbols: 2 } as const
    const full = Array.from({ length: 4 }, () => Int16Array.from([1, 2, 3, 4]))
    await writeArray2D(root, 'a', full, spec)
    assert.equal((await chunkFiles(join(root, 'a'))).length, 4)
    const sparse = Array.from({ length: 4 }, (_, j) => Int16Array.from(j === 3 ? [0, 0, 0, 9] : [0, 0, 0, 0]))
    await writeArray2D(root, 'a', sparse, spec)
    assert.deepEqual(await chunkFiles(join(root, 'a')), ['c.1.1'])
    const r = await openZarrStore(root)
    assertSameColumn(await r.readColumn('a', 0), sparse[0], 'fill column')
    await r.close()
  })
})

describe('incremental writes', () => {
  const incArb = case2DArb.chain((c) =>
    fc
      .record({
        prevDays: fc.integer({ min: 0, max: c.spec.days }),
        prevSymbols: fc.integer({ min: 0, max: c.spec.symbols }),
        fromDay: fc.integer({ min: 0, max: c.spec.days }),
      })
      .map((p) => ({ c, ...p, fromDay: Math.min(p.fromDay, p.prevDays) })),
  )

  test('equal a fresh write byte for byte, and hard-link the early chunks', async () => {
    await fc.assert(
      fc.asyncProperty(incArb, async ({ c, prevDays, prevSymbols, fromDay }) => {
        const [prev, inc, fresh] = [await freshDir(), await freshDir(), await freshDir()]
        const prevCols = c.columns.slice(0, prevSymbols).map((col) => col.slice(0, prevDays))
        await writeArray2D(prev, 'f', prevCols, { ...c.spec, days: prevDays, symbols: prevSymbols })
        await writeArray2DIncremental(inc, prev, 'f', c.columns, c.spec, fromDay)
        await writeArray2D(fresh, 'f', c.columns, c.spec)
        await assertSameTree(join(inc, 'f'), join(fresh, 'f'))
        await assertLinks(prev, inc, c, prevDays, prevSymbols, fromDay)
        await Promise.all([prev, inc, fresh].map((d) => rm(d, { recursive: true })))
      }),
      { numRuns: 60 },
    )
  })

  test('a real-sized append links every full early chunk', async () => {
    const days = 1000
    const cols = Array.from({ length: 600 }, (_, j) =>
      Float64Array.from({ length: days }, (_, d) => d * 1e-3 + j),
    )
    const spec = { dtype: 'float64', days, symbols: 600 } as const
    const [prev, inc] = [await freshDir(), await freshDir()]
    await writeArray2D(
      prev,
      'x',
      cols.map((c) => c.slice(0, 999)),
      { ...spec, days: 999 },
    )
    await writeArray2DIncremental(inc, prev, 'x', cols, spec, 999)
    let linked = 0
    for (const f of await chunkFiles(join(inc, 'x')))
      if ((await stat(join(inc, 'x', f))).ino === (await stat(join(prev, 'x', f))).ino) linked++
    assert.equal(linked, 3 * 3) // day-chunks 0..2 of 0..3, all three symbol-chunks
  })

  test('a changed layout or a new array falls back to a full write', async () => {
    const cols = [Float64Array.from([1, 2, 3, 4])]
    const [prev, inc, fresh] = [await freshDir(), await freshDir(), await freshDir()]
    const spec = { dtype: 'float64', days: 4, symbols: 1, chunkDays: 2 } as const
    await writeArray2D(prev, 'x', cols, { ...spec, chunkDays: 1 })
    await writeArray2DIncremental(inc, prev, 'x', cols, spec, 4)
    await writeArray2D(fresh, 'x', cols, spec)
    await assertSameTree(join(inc, 'x'), join(fresh, 'x'))
    await writeArray2DIncremental(inc, prev, 'new-field', cols, spec, 4)
    await assertSameTree(join(inc, 'new-field'), join(fresh, 'x'))
    await assert.rejects(writeArray2DIncremental(prev, prev, 'x', cols, spec, 4), /needs a new root/)
  })
})

describe('metadata validation', () => {
  async function storeWith(zarrJson: string, file = 'zarr.json'): Promise<string> {
    const root = await freshDir()
    await writeArray2D(root, 'good', [Float64Array.from([1])], { dtype: 'float64', days: 1, symbols: 1 })
    await mkdir(join(root, 'bad'))
    await writeFile(join(root, 'bad', file), zarrJson)
    return root
  }
  const goodDoc = async () => {
    const root = await freshDir()
    await writeArray2D(root, 'a', [Float64Array.from([1])], { dtype: 'float64', days: 1, symbols: 1 })
    return JSON.parse(await readFile(join(root, 'a', 'zarr.json'), 'utf8')) as Record<string, unknown>
  }

  test('corrupt JSON names the node', async () => {
    await assert.rejects(openZarrStore(await storeWith('{"zarr_format": 3,')), /node "bad" .*not valid JSON/)
  })
  test('unsupported codec is named', async () => {
    const doc = await goodDoc()
    doc.codecs = [
      { name: 'bytes', configuration: { endian: 'little' } },
      { name: 'zstd', configuration: {} },
    ]
    await assert.rejects(
      openZarrStore(await storeWith(JSON.stringify(doc))),
      /node "bad".*unsupported codec "zstd"/,
    )
  })
  test('unsupported dtype, transposition, and unknown extension fields are rejected', async () => {
    const doc = await goodDoc()
    const bad = [
      { ...doc, data_type: 'complex128' },
      { ...doc, codecs: [{ name: 'bytes', configuration: { endian: 'little' } }] },
      { ...doc, my_extension: { must_understand: true } },
      { ...doc, zarr_format: 4 },
    ]
    const msgs = [
      /data_type "complex128"/,
      /codec chain \[bytes\]/,
      /unknown metadata field "my_extension"/,
      /zarr_format 4/,
    ]
    for (const [i, d] of bad.entries())
      await assert.rejects(openZarrStore(await storeWith(JSON.stringify(d))), msgs[i])
    const ok = await storeWith(JSON.stringify({ ...doc, extra: { must_understand: false } }))
    await (await openZarrStore(ok)).close()
  })
  test('a Zarr v2 store is refused with a clear message', async () => {
    await assert.rejects(openZarrStore(await storeWith('{"zarr_format": 2}', '.zarray')), /Zarr v2 store/)
  })
  test('a truncated chunk file is an error, not silent garbage', async () => {
    const root = await freshDir()
    await writeArray2D(root, 'a', [Float64Array.from([1, 2])], { dtype: 'float64', days: 2, symbols: 1 })
    await writeFile(join(root, 'a', 'c.0.0'), new Uint8Array(8))
    const r = await openZarrStore(root)
    await assert.rejects(r.readRow('a', 0), /shorter than the chunk shape/)
    await r.close()
  })
})

describe('bounded caches', () => {
  test('the piece cache never exceeds its byte budget and keeps recent entries', () => {
    const lru = pieceCache(20_000)
    for (let n = 0; n < 100; n++) {
      lru.set(`k${n}`, new Float64Array(128))
      if (n > 5) lru.get('k0')
      assert.ok(lru.bytes <= 20_000, `${lru.bytes} bytes after ${n}`)
    }
    assert.equal(lru.bytes, lru.size * (1024 + ENTRY_OVERHEAD_BYTES))
    assert.ok(lru.get('k0'), 'recently used entry survives')
    assert.equal(lru.get('k1'), undefined)
    lru.set('huge', new Float64Array(10_000))
    assert.equal(lru.get('huge'), undefined)
  })

  test('the file pool keeps at most maxOpen handles', async () => {
    const root = await freshDir()
    const cols: Column[] = Array.from({ length: 8 }, (_, j) =>
      Float64Array.from({ length: 8 }, (_, d) => d + j),
    )
    await writeArray2D(root, 'a', cols, {
      dtype: 'float64',
      days: 8,
      symbols: 8,
      chunkDays: 2,
      chunkSymbols: 2,
    })
    const pool = new FilePool(3)
    for (const f of await chunkFiles(join(root, 'a')))
      await pool.use(join(root, 'a', f), async (fd) => assert.ok(fd >= 0))
    assert.equal(pool.openCount, 3)
    assert.equal(await pool.use(join(root, 'missing'), async () => 1), undefined)
    await pool.close()
    assert.equal(pool.openCount, 0)
  })
})
