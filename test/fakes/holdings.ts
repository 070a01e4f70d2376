/**
 * Fakes of ETF issuers' holdings downloads, on the issuers' real paths so the default URL
 * templates work with the fake's origin:
 * - State Street: `/us/en/intermediary/library-content/products/fund-data/etfs/us/holdings-daily-us-en-{etf}.xlsx`,
 *   a real xlsx (a zip of the workbook XML, built with yazl) laid out like SSGA's: title rows
 *   (`Fund Name:`, `Ticker Symbol:`, `Holdings:` / `As of 08-Aug-2024`), a blank row, the header
 *   `Name, Ticker, Identifier, SEDOL, Weight, Sector, Shares Held, Local Currency`, the holdings
 *   (weights as numbers, in percent), then a disclaimer row;
 * - iShares: `/us/products/{product}/fund/1467271812596.ajax?fileType=csv&fileName={ETF}_holdings&dataType=fund`,
 *   a CSV with the fund's name, `Fund Holdings as of,"Aug 07, 2024"` and other title rows, the
 *   header `Ticker,Name,Sector,Asset Class,Market Value,Weight (%),…`, rows, a blank line, a disclaimer;
 * - other issuers: `/holdings/{ETF}.csv`, `ticker,weight`.
 * A fund the test did not give is a 404. Holdings rows are what the test gives (malformed welcome).
 *
 *   const h = await startHoldingsFake({ ssga: [{ etf: 'XLK', name: '…', asOf: '2024-08-08', rows: [{ ticker: 'AAPL', weight: 14.5 }] }] })
 *   holdingsSource({ ssgaUrl: `${h.url}${SSGA_PATH}`, isharesUrl: `${h.url}${ISHARES_PATH}`, csvUrl: `${h.url}/holdings/{etf}.csv` })
 */
import { ZipFile } from 'yazl'
import { type FakeServer, startFake } from './ref-server.ts'

export interface FundHoldings {
  etf: string
  /** The fund's name (iShares files begin with it). */
  name?: string
  /** ISO date. */
  asOf: string
  /** iShares: the product id in the URL. */
  product?: string
  rows: { ticker: string; name?: string; weight: number | string; assetClass?: string }[]
}

export const SSGA_PATH =
  '/us/en/intermediary/library-content/products/fund-data/etfs/us/holdings-daily-us-en-{etf_lower}.xlsx'
export const ISHARES_PATH =
  '/us/products/{product}/fund/1467271812596.ajax?fileType=csv&fileName={etf}_holdings&dataType=fund'

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
const parts = (iso: string) => iso.split('-').map(Number) as [number, number, number]
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
const col = (i: number) => String.fromCharCode(65 + i)

/** A sheet row: strings go to the shared-string table (one as an inline string), numbers stay numbers. */
function rowXml(r: number, cells: (string | number | null)[], strings: string[]): string {
  const cs = cells.map((v, i) => {
    const ref = `${col(i)}${r}`
    if (v === null) return ''
    if (typeof v === 'number') return `<c r="${ref}" s="1"><v>${v}</v></c>`
    if (i === 2) return `<c r="${ref}" t="inlineStr"><is><t>${esc(v)}</t></is></c>`
    strings.push(v)
    return `<c r="${ref}" t="s"><v>${strings.length - 1}</v></c>`
  })
  return `<row r="${r}">${cs.join('')}</row>`
}

export async function ssgaXlsx(f: FundHoldings): Promise<Buffer> {
  const [y, m, d] = parts(f.asOf)
  const strings: string[] = []
  const sheetRows: (string | number | null)[][] = [
    ['Fund Name:', f.name ?? `${f.etf} fund`],
    ['Ticker Symbol:', f.etf],
    ['Holdings:', `As of ${String(d).padStart(2, '0')}-${MONTHS[m - 1]}-${y}`],
    [],
    ['Name', 'Ticker', 'Identifier', 'SEDOL', 'Weight', 'Sector', 'Shares Held', 'Local Currency'],
    ...f.rows.map((r) => [
      r.name ?? `${r.ticker} INC`,
      r.ticker,
      '000000000',
      '0000000',
      r.weight,
      '-',
      1000,
      'USD',
    ]),
    [],
    ['Past performance is not a reliable indicator of future performance.'],
  ]
  const rows = sheetRows.map((c, i) => rowXml(i + 1, c, strings)).join('')
  const files: Record<string, string> = {
    '[Content_Types].xml':
      '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>',
    'xl/workbook.xml':
      '<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="holdings" sheetId="1" r:id="rId3"/><sheet name="notes" sheetId="2" r:id="rId1"/></sheets></workbook>',
    'xl/_rels/workbook.xml.rels':
      '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet2.xml"/></Relationships>',
    // The first sheet of the workbook is sheet2.xml: the reader must follow the relationships.
    'xl/worksheets/sheet1.xml':
      '<worksheet><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>notes</t></is></c></row></sheetData></worksheet>',
    'xl/worksheets/sheet2.xml': `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${rows}</sheetData></worksheet>`,
    'xl/sharedStrings.xml': `<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="${strings.length}">${strings.map((s) => `<si><t xml:space="preserve">${esc(s)}</t></si>`).join('')}</sst>`,
  }
  const zip = new ZipFile()
  for (const [name, text] of Object.entries(files)) zip.addBuffer(Buffer.from(text), name)
  zip.end()
  const chunks: Buffer[] = []
  for await (const c of zip.outputStream) chunks.push(c as Buffer)
  return Buffer.concat(chunks)
}

const q = (s: string | number) => `"${String(s).replace(/"/g, '""')}"`

export function isharesCsv(f: FundHoldings): string {
  const [y, m, d] = parts(f.asOf)
  const title = [
    f.name ?? `iShares ${f.etf} ETF`,
    `Fund Holdings as of,${q(`${MONTHS[m - 1]} ${String(d).padStart(2, '0')}, ${y}`)}`,
    'Inception Date,"May 01, 2006"',
    'Shares Outstanding,"12,350,000.00"',
    'Stock,"-"',
    'Bond,"-"',
    'Cash,"-"',
    'Other,"-"',
    '\u00a0',
  ]
  const header =
    'Ticker,Name,Sector,Asset Class,Market Value,Weight (%),Notional Value,Quantity,Price,Location,Exchange,Currency,FX Rate,Market Currency,Accrual Date'
  const rows = f.rows.map((r) =>
    [
      r.ticker,
      r.name ?? `${r.ticker} INC`,
      'Information Technology',
      r.assetClass ?? 'Equity',
      '1,234,567.89',
      r.weight,
      '1,234,567.89',
      '10,000.00',
      '123.45',
      'United States',
      'NASDAQ',
      'USD',
      '1.00',
      'USD',
      '-',
    ]
      .map(q)
      .join(','),
  )
  return `${title.join('\n')}\n${header}\n${rows.join('\n')}\n \n"The content contained herein is owned or licensed by BlackRock."\n`
}

export function genericCsv(f: FundHoldings): string {
  return `ticker,weight\n${f.rows.map((r) => `${r.ticker},${r.weight}`).join('\n')}\n`
}

export interface HoldingsFakeData {
  ssga?: FundHoldings[]
  ishares?: FundHoldings[]
  csv?: FundHoldings[]
}

export async function startHoldingsFake(data: HoldingsFakeData): Promise<FakeServer> {
  const xlsx = new Map<string, Buffer>()
  for (const f of data.ssga ?? []) xlsx.set(f.etf.toLowerCase(), await ssgaXlsx(f))
  return startFake((url) => {
    const s = /\/holdings-daily-us-en-([a-z0-9.]+)\.xlsx$/.exec(url.pathname)
    if (s && url.pathname.startsWith('/us/en/intermediary/')) {
      const body = xlsx.get(s[1] ?? '')
      return body ? { body, type: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' } : null
    }
    const i = /^\/us\/products\/(\d+)\/fund\/1467271812596\.ajax$/.exec(url.pathname)
    if (i) {
      // Like iShares, the product id alone picks the fund; fileName only names the download.
      const f = data.ishares?.find((x) => x.product === i[1])
      return f && url.searchParams.get('fileType') === 'csv'
        ? { body: isharesCsv(f), type: 'text/csv' }
        : null
    }
    const g = /^\/holdings\/([A-Z0-9.]+)\.csv$/.exec(url.pathname)
    const f = g ? data.csv?.find((x) => x.etf === g[1]) : undefined
    return f ? { body: genericCsv(f), type: 'text/csv' } : null
  })
}
