import assert from 'node:assert/strict'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { readDataset, readManifest } from '../../src/engine/data/dataset-reader.ts'
import { writeDataset } from '../../src/engine/data/dataset-writer.ts'
import { generateSynthetic } from '../../src/engine/data/synth/index.ts'
import { synthesizeDataset } from '../../src/engine/data/synthesize.ts'
import { sha256File } from '../../src/platform/digest.ts'
import { panelDigest } from './panel-digest.ts'

const dir = await mkdtemp(join(tmpdir(), 'erm3-dataset-io-'))
after(() => rm(dir, { recursive: true, force: true }))
const small = { seed: 11, stocks: 40, start: '2015-01-02', end: '2017-06-30' }

describe('dataset directory', () => {
  test('write → read round-trips every value bit for bit', async () => {
    const ds = generateSynthetic(small)
    const out = join(dir, 'rt')
    const manifest = await writeDataset(ds, out)
    const { dataset: back, manifest: m2 } = await readDataset(out, { fundamentals: true, truth: true })
    assert.deepEqual(m2, manifest)
    assert.deepEqual(back.symbols, ds.symbols)
    assert.deepEqual(Array.from(back.calendar), Array.from(ds.calendar))
    assert.deepEqual(back.securities, ds.securities)
    assert.deepEqual(back.factors, ds.factors)
    for (const field of ['adj_close', 'close', 'volume', 'shares_out'] as const) {
      const a = ds.prices[field] ?? []
      const b = back.prices[field] ?? []
      assert.equal(b.length, a.length)
      for (const [i, s] of a.entries()) {
        assert.ok(
          s.every((v, t) => Object.is(v, b[i][t])),
          `${field} ${ds.symbols[i]}`,
        )
      }
    }
    assert.deepEqual(back.rates?.tenors, ds.rates?.tenors)
    for (const [k, v] of (ds.rates?.values ?? []).entries()) {
      assert.deepEqual(Array.from(back.rates?.values[k] ?? []), Array.from(v))
    }
    assert.equal(back.fundamentals.length, ds.fundamentals.length)
    assert.deepEqual(
      back.fundamentals[0].gzipped,
      ds.fundamentals.find((f) => f.cik === back.fundamentals[0].cik)?.gzipped,
    )
    // truth is stored as FLOAT: equal after rounding to single precision
    const tb = ds.truth?.fields.beta_mkt ?? []
    for (const [i, s] of tb.entries()) {
      assert.ok(s.every((v, t) => Object.is(Math.fround(v), back.truth?.fields.beta_mkt[i][t])))
    }
  })

  test('same seed → byte-identical dataset digest; another seed → another digest', async () => {
    const a = await synthesizeDataset(join(dir, 'a'), small)
    const b = await synthesizeDataset(join(dir, 'b'), small)
    const c = await synthesizeDataset(join(dir, 'c'), { ...small, seed: 12 })
    assert.equal(a.manifest.digest, b.manifest.digest)
    assert.deepEqual(a.manifest.files, b.manifest.files)
    assert.notEqual(a.manifest.digest, c.manifest.digest)
    const bytesA = await readFile(join(dir, 'a', 'prices', 'adj_close.parquet'))
    const bytesB = await readFile(join(dir, 'b', 'prices', 'adj_close.parquet'))
    assert.ok(bytesA.equals(bytesB))
  })

  test('a failing write leaves no dataset and keeps the previous one intact', async () => {
    const out = join(dir, 'atomic')
    await synthesizeDataset(out, small)
    const before = await readFile(join(out, 'manifest.json'), 'utf8')
    const bad = generateSynthetic(small)
    bad.prices.adj_close[3] = new Float64Array(5) // wrong length: rejected
    await assert.rejects(writeDataset(bad, out), /has 5 days/)
    const bad2 = generateSynthetic(small)
    bad2.fundamentals.push({ cik: bad2.fundamentals[0].cik, gzipped: new Uint8Array(1) })
    Object.defineProperty(bad2, 'report', {
      get: () => {
        throw new Error('disk on fire')
      },
    })
    await assert.rejects(writeDataset(bad2, out), /disk on fire/)
    assert.equal(await readFile(join(out, 'manifest.json'), 'utf8'), before)
    const leftovers = (await readdir(dir)).filter((n) => n.includes('.tmp-'))
    assert.deepEqual(leftovers, [])
  })

  test('a tail read decodes the row groups from a day on, bit for bit (earlier days unspecified)', async () => {
    const out = join(dir, 'tail')
    const { manifest } = await synthesizeDataset(out, small)
    const { dataset: whole } = await readDataset(out)
    const T = whole.calendar.length
    // 256-day row groups, each with its own digest between the magic and the footer.
    assert.equal(manifest.files['prices/adj_close.parquet'].parts?.length, Math.ceil(T / 256) + 2)
    // The writer hashes the bytes as it writes them: the digests equal the files read back.
    for (const [path, want] of Object.entries(manifest.files)) {
      if (path.endsWith('.parquet')) assert.deepEqual(await panelDigest(join(out, path)), want, path)
      else assert.deepEqual(await sha256File(join(out, path)), want, path)
    }
    for (const fromDay of [1, 255, 256, 300, T - 1]) {
      const { dataset: tail } = await readDataset(out, { fromDay })
      const first = Math.floor(fromDay / 256) * 256
      assert.equal(tail.panelsFrom, first)
      for (const field of ['adj_close', 'close', 'volume', 'shares_out'] as const) {
        for (const [i, s] of (whole.prices[field] ?? []).entries()) {
          const got = tail.prices[field]?.[i] ?? new Float64Array()
          assert.ok(
            got.length === s.length && s.every((v, t) => t < first || Object.is(v, got[t])),
            `${field} ${whole.symbols[i]} from ${fromDay}`,
          )
        }
      }
    }
  })

  test('a tail read checks the parts it reads and only those', async () => {
    const out = join(dir, 'tail-tamper')
    const { manifest } = await synthesizeDataset(out, small)
    const path = join(out, 'prices', 'volume.parquet')
    const parts = manifest.files['prices/volume.parquet'].parts ?? []
    const bytes = await readFile(path)
    // Flip a byte inside the first row group: a tail read skips it, a whole read refuses it.
    bytes[parts[0].bytes + 100] ^= 1
    await writeFile(path, bytes)
    // A whole read checks every part (the first refuses it); without verifying, it is not checked.
    await assert.rejects(readDataset(out), /volume\.parquet: part 1 .* does not match its manifest digest/)
    const { dataset } = await readDataset(out, { fromDay: 300 })
    assert.equal(dataset.panelsFrom, 256)
    // Inside the last row group: the tail read refuses it too.
    bytes[bytes.length - parts[parts.length - 1].bytes - 100] ^= 1
    await writeFile(path, bytes)
    await assert.rejects(readDataset(out, { fromDay: 300 }), /volume\.parquet: part \d+ .* does not match/)
  })

  test('version 1 datasets (one row group, no part digests) are still read, whole', async () => {
    const out = join(dir, 'v1')
    await synthesizeDataset(out, small)
    const m = JSON.parse(await readFile(join(out, 'manifest.json'), 'utf8'))
    for (const entry of Object.values(m.files) as { parts?: unknown }[]) delete entry.parts
    await writeFile(join(out, 'manifest.json'), JSON.stringify({ ...m, format_version: 1 }))
    const { dataset } = await readDataset(out, { fromDay: 300 })
    assert.equal(dataset.panelsFrom, undefined)
    const { dataset: whole } = await readDataset(out)
    const same = dataset.prices.adj_close.every((s, i) =>
      s.every((v, t) => Object.is(v, whole.prices.adj_close[i][t])),
    )
    assert.ok(same, 'a version 1 tail read returns the whole panels')
  })

  test('tampered files and unknown format versions are refused with a clear error', async () => {
    const out = join(dir, 'tamper')
    await synthesizeDataset(out, small)
    await writeFile(join(out, 'calendar.csv'), 'date\r\n2015-01-02\r\n')
    await assert.rejects(readDataset(out), /calendar\.csv does not match its manifest digest/)
    const m = JSON.parse(await readFile(join(out, 'manifest.json'), 'utf8'))
    await writeFile(join(out, 'manifest.json'), JSON.stringify({ ...m, format_version: 99 }))
    await assert.rejects(readManifest(out), /format_version 99 is not supported/)
    await assert.rejects(readManifest(join(dir, 'nowhere')), /no manifest\.json/)
  })
})
