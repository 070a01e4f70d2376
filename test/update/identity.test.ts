import assert from 'node:assert/strict'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { canonicalTicker } from '../../src/engine/data/aliases.ts'
import type { Listing } from '../../src/engine/sources/types.ts'
import {
  type IdentityRow,
  identityCsv,
  latestWindows,
  parseIdentityCsv,
  readIdentity,
  reconcileIdentity,
  symbolOfTicker,
  writeIdentity,
} from '../../src/engine/update/identity.ts'
import { tempDir } from '../data/import-helpers.ts'

const TODAY = '2024-01-02'
const META_CIK = 1326801
const GOOG_CIK = 1652044

function listing(ticker: string, o: Partial<Listing> = {}): Listing {
  return {
    ticker,
    name: `${ticker} Inc.`,
    exchange: 'NASDAQ',
    assetType: 'stock',
    cik: null,
    permanentId: null,
    firstDate: '2010-01-04',
    lastDate: null,
    active: true,
    ...o,
  }
}

const windows = (rows: IdentityRow[], symbol: string) =>
  rows
    .filter((r) => r.symbol === symbol)
    .sort((a, b) => a.validFrom.localeCompare(b.validFrom))
    .map((r) => [r.ticker, r.validFrom, r.validTo])

describe('identity registry', () => {
  test('an explicit ticker change continues the symbol, and a re-run changes nothing', () => {
    const fb = listing('FB', { cik: META_CIK, firstDate: '2012-05-18' })
    const first = reconcileIdentity([], [fb], [], '2020-01-02').rows
    const change = { date: '2022-06-09', from: 'FB', to: 'META', permanentId: null, cik: META_CIK }
    const meta = listing('META', { cik: META_CIK, firstDate: '2012-05-18' })
    const { rows, events } = reconcileIdentity(first, [meta], [change], TODAY)
    assert.deepEqual(windows(rows, 'FB'), [
      ['FB', '2012-05-18', '2022-06-08'],
      ['META', '2022-06-09', null],
    ])
    assert.deepEqual(events, [
      { kind: 'rename', symbol: 'FB', ticker: 'META', from: 'FB', date: '2022-06-09' },
    ])
    assert.equal(symbolOfTicker(rows, 'FB', '2021-01-04'), 'FB')
    assert.equal(symbolOfTicker(rows, 'META', '2023-01-03'), 'FB')
    const again = reconcileIdentity(rows, [meta], [change], TODAY)
    assert.deepEqual(again.rows, rows)
    assert.deepEqual(again.events, [])
  })

  test('an old ticker that stops while one of the same CIK starts is a rename', () => {
    const fb = listing('FB', {
      cik: META_CIK,
      firstDate: '2012-05-18',
      lastDate: '2022-06-08',
      active: false,
    })
    const meta = listing('META', { cik: META_CIK, firstDate: '2022-06-09' })
    const { rows, events } = reconcileIdentity([], [meta, fb], [], TODAY)
    assert.deepEqual(windows(rows, 'FB'), [
      ['FB', '2012-05-18', '2022-06-08'],
      ['META', '2022-06-09', null],
    ])
    assert.equal(new Set(rows.map((r) => r.symbol)).size, 1)
    assert.deepEqual(
      events.map((e) => [e.kind, e.ticker]),
      [
        ['new', 'FB'],
        ['rename', 'META'],
      ],
    )
  })

  test('a second share class of a live CIK is a new security (GOOG / GOOGL)', () => {
    const googl = listing('GOOGL', { cik: GOOG_CIK, firstDate: '2004-08-19' })
    const goog = listing('GOOG', { cik: GOOG_CIK, firstDate: '2014-04-03' })
    const { rows } = reconcileIdentity([], [goog, googl], [], TODAY)
    assert.deepEqual([...latestWindows(rows).keys()].sort(), ['GOOG', 'GOOGL'])
    // A class that stopped does not become the new class while another class of the CIK trades.
    const old = listing('GOOGX', {
      cik: GOOG_CIK,
      firstDate: '2004-08-19',
      lastDate: '2014-04-02',
      active: false,
    })
    const r2 = reconcileIdentity([], [old, googl, goog], [], TODAY).rows
    assert.deepEqual([...latestWindows(r2).keys()].sort(), ['GOOG', 'GOOGL', 'GOOGX'])
  })

  test('a later company reusing a ticker gets its own symbol', () => {
    const first = reconcileIdentity(
      [],
      [listing('ABC', { cik: 11, firstDate: '2001-02-01', lastDate: '2015-01-02', active: false })],
      [],
      '2016-01-04',
    ).rows
    const { rows, events } = reconcileIdentity(
      first,
      [listing('ABC', { cik: 22, firstDate: '2019-03-04' })],
      [],
      TODAY,
    )
    assert.deepEqual(windows(rows, 'ABC'), [['ABC', '2001-02-01', '2015-01-02']])
    assert.deepEqual(windows(rows, 'ABC_20190304'), [['ABC', '2019-03-04', null]])
    assert.deepEqual(events, [{ kind: 'reuse', symbol: 'ABC_20190304', ticker: 'ABC', date: '2019-03-04' }])
    assert.equal(canonicalTicker('ABC_20190304'), 'ABC_20190304', 'the key passes the ticker rule unchanged')
    assert.equal(symbolOfTicker(rows, 'ABC', '2010-06-01'), 'ABC')
    assert.equal(symbolOfTicker(rows, 'ABC', '2020-06-01'), 'ABC_20190304')
  })

  test('a CIK that reappears years later is not a rename; a permanent id always is', () => {
    const gone = listing('OLD', { cik: 33, firstDate: '2001-02-01', lastDate: '2010-01-04', active: false })
    const r1 = reconcileIdentity(
      [],
      [gone, listing('NEW', { cik: 33, firstDate: '2018-01-02' })],
      [],
      TODAY,
    ).rows
    assert.deepEqual([...latestWindows(r1).keys()].sort(), ['NEW', 'OLD'])
    const p = { permanentId: 'US0001' }
    const r2 = reconcileIdentity(
      [],
      [{ ...gone, ...p }, listing('NEW', { cik: 33, firstDate: '2018-01-02', ...p })],
      [],
      TODAY,
    ).rows
    assert.deepEqual(windows(r2, 'OLD'), [
      ['OLD', '2001-02-01', '2010-01-04'],
      ['NEW', '2018-01-02', null],
    ])
  })

  test('securities.csv round-trips names with commas and quotes; bad rows name file, line, column', async () => {
    const dir = await tempDir('erm3-identity-')
    const { rows } = reconcileIdentity(
      [],
      [listing('BRK-B', { name: 'Berkshire "B", Inc.', cik: 1067983 })],
      [],
      TODAY,
    )
    await writeIdentity(dir, rows)
    const back = await readIdentity(dir)
    assert.deepEqual(back, rows)
    assert.equal(back[0].ticker, 'BRK.B')
    assert.equal(back[0].name, 'Berkshire "B", Inc.')
    const text = identityCsv(rows).replace('BRK.B,BRK.B', 'BRK.B,brk b')
    await writeFile(join(dir, 'bad.csv'), text)
    assert.throws(
      () => parseIdentityCsv(text, 'securities.csv'),
      /securities\.csv:2 \(column ticker\): "brk b" is not a canonical ticker/,
    )
    assert.throws(
      () => parseIdentityCsv('symbol,ticker\r\n', 'securities.csv'),
      /expected the header symbol,ticker,name/,
    )
  })
})
