import assert from 'node:assert/strict'
import { createWriteStream } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { describe, test } from 'node:test'
import { gunzipSync, gzipSync } from 'node:zlib'
import { ZipFile } from 'yazl'
import type { Dataset, QualityFinding } from '../../src/engine/data/format.ts'
import { readCompanyFactsZip } from '../../src/engine/data/import/companyfacts-zip.ts'
import { buildImportedDataset, importDataset } from '../../src/engine/data/import/index.ts'
import { AppError, InputError } from '../../src/platform/errors.ts'
import { silentProgress } from '../../src/platform/progress.ts'
import { REAL, realDataPresent } from '../helpers/real-data.ts'
import { assertNothingWritten, put, tempDir } from './import-helpers.ts'

/**
 * The importer's SEC inputs: a directory or SEC's bulk companyfacts.zip (written here with yazl,
 * real deflate) and SEC's ticker → CIK map (company_tickers.json).
 */

const cikName = (cik: number) => `CIK${String(cik).padStart(10, '0')}.json`

/** A small companyfacts document; `pad` makes it big enough for deflate to matter. */
function doc(cik: number, name = `Company ${cik}`, pad = 50): string {
  const units = Array.from({ length: pad }, (_, i) => ({
    end: '2020-03-31',
    val: cik * 1000 + i,
    filed: '2020-05-01',
  }))
  return JSON.stringify({
    cik,
    entityName: name,
    facts: { 'us-gaap': { Revenues: { units: { USD: units } } } },
  })
}

async function writeZip(
  path: string,
  entries: [string, string | Uint8Array][],
  compress = true,
): Promise<string> {
  const zip = new ZipFile()
  for (const [name, body] of entries) zip.addBuffer(Buffer.from(body), name, { compress })
  zip.end()
  await pipeline(zip.outputStream, createWriteStream(path))
  return path
}

/** Three days of SPY and the given stocks, a securities file (`TICKER` or `TICKER=CIK`). */
async function market(dir: string, stocks: string[]): Promise<{ prices: string; securities: string }> {
  const tickers = stocks.map((s) => s.split('=')[0])
  const row = (d: string, k: number) => [d, 100 + k, ...tickers.map((_, i) => 10 + i + k)].join(',')
  const prices = await put(
    dir,
    'prices.csv',
    `date,SPY,${tickers.join(',')}\n${['2021-01-04', '2021-01-05', '2021-01-06'].map(row).join('\n')}\n`,
  )
  const lines = stocks.map((s) => s.replace('=', ','))
  const securities = await put(
    dir,
    'securities.csv',
    `Symbol,CIK\n${lines.map((l) => (l.includes(',') ? l : `${l},`)).join('\n')}\n`,
  )
  return { prices, securities }
}

const cikMapJson = (entries: [string, number][]) =>
  JSON.stringify(
    Object.fromEntries(
      entries.map(([ticker, cik], i) => [String(i), { cik_str: cik, ticker, title: ticker }]),
    ),
  )

const notes = (ds: Dataset) =>
  (ds.report?.findings ?? []).filter((f: QualityFinding) => f.kind === 'note').map((f) => f.detail)
const cikOf = (ds: Dataset, ticker: string) => ds.securities.find((s) => s.ticker === ticker)?.cik

/** Runs a failing import and returns its InputError, checking that nothing was written. */
async function importError(opts: Parameters<typeof importDataset>[0]): Promise<InputError> {
  const err = await importDataset(opts).catch((e: unknown) => e)
  assert.ok(err instanceof InputError, `expected an InputError, got ${String(err)}`)
  await assertNothingWritten(opts.out)
  return err
}

describe('data import: SEC companyfacts.zip', () => {
  test('keeps only the stocks’ CIKs, documents byte-equal to the entries', async () => {
    const dir = await tempDir()
    const { prices, securities } = await market(dir, ['AAA=101', 'BBB=202', 'CCC'])
    const bodies = new Map([101, 202, 303, 404, 505].map((c) => [c, doc(c)]))
    const zip = await writeZip(join(dir, 'companyfacts.zip'), [
      ...[...bodies].map(([c, b]): [string, string] => [cikName(c), b]),
      ['README.txt', 'not a filer'],
    ])
    const ds = await buildImportedDataset({
      prices: [prices],
      securities,
      fundamentals: zip,
      out: join(dir, 'out'),
    })
    assert.deepEqual(
      ds.fundamentals.map((f) => f.cik),
      [101, 202],
    )
    for (const f of ds.fundamentals) assert.equal(gunzipSync(f.gzipped).toString('utf8'), bodies.get(f.cik))
    assert.ok(
      notes(ds).some((n) =>
        /companyfacts\.zip has 6 entries: 2 matched a stock's CIK, 4 skipped without inflating; 0 wanted CIK\(s\) missing$/.test(
          n,
        ),
      ),
      notes(ds).join('\n'),
    )
    assert.deepEqual(
      ds.source.kind === 'import'
        ? ds.source.inputs.filter((i) => i.role === 'fundamentals').map((i) => i.path)
        : [],
      [zip],
    )
  })

  test('a wanted CIK missing from the zip is a note naming it', async () => {
    const dir = await tempDir()
    const { prices, securities } = await market(dir, ['AAA=101', 'BBB=999'])
    const zip = await writeZip(join(dir, 'companyfacts.zip'), [
      [cikName(101), doc(101)],
      [cikName(303), doc(303)],
    ])
    const ds = await buildImportedDataset({
      prices: [prices],
      securities,
      fundamentals: zip,
      out: join(dir, 'out'),
    })
    assert.deepEqual(
      ds.fundamentals.map((f) => f.cik),
      [101],
    )
    assert.ok(
      notes(ds).some((n) => /1 matched .* 1 skipped .*; 1 wanted CIK\(s\) missing: 999 \(BBB\)$/.test(n)),
      notes(ds).join('\n'),
    )
  })

  test('an entry that is not JSON, or whose cik disagrees with its name: InputError naming the entry', async () => {
    const dir = await tempDir()
    const { prices, securities } = await market(dir, ['AAA=101', 'BBB=202'])
    const notJson = await writeZip(join(dir, 'bad-json.zip'), [
      [cikName(101), doc(101)],
      [cikName(202), '{"cik": 202,\n "facts": {,}}'],
      [cikName(303), 'not even JSON, but not wanted either'],
    ])
    const e1 = await importError({
      prices: [prices],
      securities,
      fundamentals: notJson,
      out: join(dir, 'out1'),
    })
    assert.equal(e1.location.file, `${notJson} (entry ${cikName(202)})`)
    assert.equal(e1.location.line, 2)
    assert.match(e1.message, /CIK0000000202\.json.*invalid JSON/)

    const mismatch = await writeZip(join(dir, 'mismatch.zip'), [[cikName(202), doc(7)]])
    const e2 = await importError({
      prices: [prices],
      securities,
      fundamentals: mismatch,
      out: join(dir, 'out2'),
    })
    assert.equal(e2.location.file, `${mismatch} (entry ${cikName(202)})`)
    assert.match(e2.message, /file name says CIK 202 but the document says 7/)

    const twice = await writeZip(join(dir, 'twice.zip'), [
      [cikName(101), doc(101)],
      [`again/${cikName(101)}`, doc(101)],
    ])
    const e3 = await importError({
      prices: [prices],
      securities,
      fundamentals: twice,
      out: join(dir, 'out3'),
    })
    assert.match(e3.message, /CIK 101 given twice/)
  })

  test('a truncated or corrupt zip: InputError naming the file', async () => {
    const dir = await tempDir()
    const { prices, securities } = await market(dir, ['AAA=101'])
    const zip = await writeZip(join(dir, 'companyfacts.zip'), [
      [cikName(101), doc(101, 'A', 400)],
      [cikName(202), doc(202, 'B', 400)],
    ])
    const bytes = await readFile(zip)

    const truncated = await put(dir, 'truncated.zip', bytes.subarray(0, Math.floor(bytes.length / 2)))
    const e1 = await importError({
      prices: [prices],
      securities,
      fundamentals: truncated,
      out: join(dir, 'o1'),
    })
    assert.equal(e1.location.file, truncated)
    assert.match(e1.message, /not a readable zip file/)

    // Damage the deflate stream of the wanted (first) entry, past its local header.
    const damaged = Buffer.from(bytes)
    for (let i = 200; i < 260; i++) damaged[i] ^= 0x5a
    const corrupt = await put(dir, 'corrupt.zip', damaged)
    const e2 = await importError({
      prices: [prices],
      securities,
      fundamentals: corrupt,
      out: join(dir, 'o2'),
    })
    assert.equal(e2.location.file, `${corrupt} (entry ${cikName(101)})`)
    assert.match(e2.message, /corrupt zip entry/)

    // A stored (uncompressed) entry with a flipped byte inflates fine: only its CRC-32 tells.
    const storedZip = await writeZip(join(dir, 'stored.zip'), [[cikName(101), doc(101)]], false)
    const stored = await readFile(storedZip)
    const at = stored.indexOf('"Revenues"')
    stored[at + 2] ^= 0x01
    const flipped = await put(dir, 'flipped.zip', stored)
    const e4 = await importError({
      prices: [prices],
      securities,
      fundamentals: flipped,
      out: join(dir, 'o4'),
    })
    assert.equal(e4.location.file, `${flipped} (entry ${cikName(101)})`)
    assert.match(e4.message, /CRC-32/)

    const text = await put(dir, 'plain.zip', 'this is not a zip file at all')
    const e3 = await importError({ prices: [prices], securities, fundamentals: text, out: join(dir, 'o3') })
    assert.match(e3.message, /not a readable zip file/)
  })

  test('a zip with no stock carrying a CIK is an error, not an empty import', async () => {
    const dir = await tempDir()
    const { prices, securities } = await market(dir, ['AAA'])
    const zip = await writeZip(join(dir, 'companyfacts.zip'), [[cikName(101), doc(101)]])
    const err = await importError({ prices: [prices], securities, fundamentals: zip, out: join(dir, 'out') })
    assert.match(err.message, /no stock has a CIK/)
  })

  test('scanning 2,000 entries of which 4 are wanted (timing printed, not asserted)', async (t) => {
    const dir = await tempDir()
    const entries: [string, string][] = []
    for (let c = 1; c <= 2_000; c++) entries.push([cikName(c * 7), doc(c * 7, `Dummy ${c}`, 1)])
    // Long-named stray entries make the central directory (≈ 1.3 MB) cross the reader's 1 MiB
    // read-ahead window, as SEC's 19,000 entries do.
    for (let k = 0; k < 20; k++) entries.splice(k * 100, 0, [`pad/${'x'.repeat(60_000)}${k}.txt`, ''])
    const zip = await writeZip(join(dir, 'companyfacts.zip'), entries)
    const wanted = new Map([7, 700, 7_007, 14_000].map((c): [number, string[]] => [c, [`T${c}`]]))
    const times: number[] = []
    for (let run = 0; run < 3; run++) {
      const findings: QualityFinding[] = []
      const t0 = performance.now()
      const files = await readCompanyFactsZip(zip, wanted, findings, silentProgress)
      times.push(performance.now() - t0)
      assert.deepEqual(
        files.map((f) => f.cik),
        [7, 700, 7_007, 14_000],
      )
      assert.match(findings[0]?.detail ?? '', /has 2020 entries: 4 matched a stock's CIK, 2016 skipped/)
    }
    const [cold, ...warm] = times.map((ms) => `${ms.toFixed(1)} ms`)
    t.diagnostic(`scanned ${entries.length} zip entries, 4 wanted: ${cold} cold, then ${warm.join(', ')}`)
  })
})

describe('data import: SEC ticker → CIK map', () => {
  test('fills missing CIKs; a CIK in the securities file wins, the conflict is reported', async () => {
    const dir = await tempDir()
    const { prices, securities } = await market(dir, ['AAA', 'BBB=202', 'CCC'])
    const map = await put(
      dir,
      'company_tickers.json',
      cikMapJson([
        ['AAA', 101],
        ['BBB', 999],
        ['ZZZ', 5],
      ]),
    )
    const zip = await writeZip(join(dir, 'companyfacts.zip'), [
      [cikName(101), doc(101)],
      [cikName(202), doc(202)],
      [cikName(999), doc(999)],
    ])
    const ds = await buildImportedDataset({
      prices: [prices],
      securities,
      cikMap: map,
      fundamentals: zip,
      out: join(dir, 'out'),
    })
    assert.equal(cikOf(ds, 'AAA'), 101)
    assert.equal(cikOf(ds, 'BBB'), 202)
    assert.equal(cikOf(ds, 'CCC'), null)
    assert.equal(cikOf(ds, 'SPY'), null)
    assert.deepEqual(
      ds.fundamentals.map((f) => f.cik),
      [101, 202],
    )
    const conflict = ds.report?.findings.find((f) => f.symbol === 'BBB')
    assert.ok(conflict, 'conflict reported')
    assert.match(
      conflict.detail,
      /^warning: CIK conflict for BBB: securities\.csv says 202, company_tickers\.json says 999; kept 202/,
    )
    assert.ok(notes(ds).some((n) => /filled the CIK of 1 of 3 stock\(s\); 1 have no CIK: CCC$/.test(n)))
    assert.ok(
      ds.source.kind === 'import' && ds.source.inputs.some((i) => i.role === 'cik_map' && i.path === map),
    )
  })

  test('class shares: BRK-B, brk/b and BRK.B are one ticker; .json.gz accepted', async () => {
    const dir = await tempDir()
    const { prices, securities } = await market(dir, ['BRK.B', 'BF-B', 'MOG/A'])
    const map = await put(
      dir,
      'company_tickers.json.gz',
      gzipSync(
        cikMapJson([
          ['brk-b', 1067983],
          ['BF-B', 14693],
          ['MOG-A', 67887],
        ]),
      ),
    )
    const ds = await buildImportedDataset({
      prices: [prices],
      securities,
      cikMap: map,
      out: join(dir, 'out'),
    })
    assert.equal(cikOf(ds, 'BRK.B'), 1067983)
    assert.equal(cikOf(ds, 'BF.B'), 14693)
    assert.equal(cikOf(ds, 'MOG.A'), 67887)
  })

  test('a map that is not SEC’s shape: InputError naming the file (and entry)', async () => {
    const dir = await tempDir()
    const { prices, securities } = await market(dir, ['AAA'])
    const cases: [string, string, RegExp][] = [
      ['array.json', '[{"cik_str": 1, "ticker": "AAA"}]', /not a ticker → CIK map/],
      [
        'no-cik.json',
        '{"0": {"cik_str": 1, "ticker": "A"}, "1": {"ticker": "AAA"}}',
        /1\.cik_str.*"cik_str" is missing/,
      ],
      ['bad-ticker.json', '{"0": {"cik_str": 1, "ticker": 7}}', /0\.ticker/],
      ['empty.json', '{}', /no entries/],
      ['broken.json', '{"0": {"cik_str": 1,\n "ticker": }}', /invalid JSON/],
    ]
    for (const [name, body, message] of cases) {
      const map = await put(dir, name, body)
      const err = await importError({
        prices: [prices],
        securities,
        cikMap: map,
        out: join(dir, `out-${name}`),
      })
      assert.equal(err.location.file, map, name)
      assert.match(err.message, message, name)
    }
  })

  test('a map without a securities file is refused before reading anything', async () => {
    await assert.rejects(
      buildImportedDataset({ prices: ['p.csv'], cikMap: 'company_tickers.json', out: 'out' }),
      (e: unknown) =>
        e instanceof AppError && e.code === 'INVALID_REQUEST' && /securities file/.test(e.message),
    )
  })

  test('a directory is still taken whole, whatever CIKs the stocks carry', async () => {
    const dir = await tempDir()
    const { prices, securities } = await market(dir, ['AAA=101'])
    await put(dir, `facts/${cikName(101)}`, doc(101))
    await put(dir, `facts/${cikName(303)}.gz`, gzipSync(doc(303)))
    const ds = await buildImportedDataset({
      prices: [prices],
      securities,
      fundamentals: join(dir, 'facts'),
      out: join(dir, 'out'),
    })
    assert.deepEqual(
      ds.fundamentals.map((f) => f.cik),
      [101, 303],
    )
  })
})

const REAL_FACTS = join(REAL, 'fundamentals/companyfacts')
const REAL_MAP = join(REAL, 'fundamentals/company_tickers_sec.json.gz')

describe('data import: the real companyfacts in a zip, matched through SEC’s real ticker map', {
  skip: realDataPresent ? false : `real data not found at ${REAL} (only on development and CI machines)`,
}, () => {
  test('AAPL, NVDA, SNOW, GOOGL without CIKs → the four companies, by CIK', async () => {
    const dir = await tempDir()
    const names = (await readdir(REAL_FACTS)).filter((n) => n.endsWith('.json.gz')).sort()
    assert.equal(names.length, 4)
    const originals = new Map<string, Buffer>()
    for (const n of names)
      originals.set(n.replace(/\.gz$/, ''), gunzipSync(await readFile(join(REAL_FACTS, n))))
    const decoys: [string, string][] = [789019, 1018724, 1326801, 1, 2].map((c) => [
      cikName(c),
      doc(c, 'decoy'),
    ])
    const zip = await writeZip(join(dir, 'companyfacts.zip'), [...originals, ...decoys])
    const { prices, securities } = await market(dir, ['AAPL', 'NVDA', 'SNOW', 'GOOGL'])
    const out = join(dir, 'out')
    const { dataset: ds } = await importDataset({
      prices: [prices],
      securities,
      cikMap: REAL_MAP,
      fundamentals: zip,
      out,
    })
    assert.deepEqual(
      ['AAPL', 'NVDA', 'SNOW', 'GOOGL'].map((t) => cikOf(ds, t)),
      [320193, 1045810, 1640147, 1652044],
    )
    assert.deepEqual(
      ds.fundamentals.map((f) => f.cik),
      [320193, 1045810, 1640147, 1652044],
    )
    for (const f of ds.fundamentals) {
      assert.ok(
        gunzipSync(f.gzipped).equals(originals.get(cikName(f.cik)) ?? Buffer.alloc(0)),
        `CIK ${f.cik}`,
      )
    }
    assert.ok(
      notes(ds).some((n) => /has 9 entries: 4 matched .* 5 skipped .* 0 wanted CIK\(s\) missing$/.test(n)),
    )
  })
})
