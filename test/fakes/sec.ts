/**
 * A fake SEC EDGAR for tests, one server standing for both www.sec.gov and data.sec.gov (give its
 * `url` as both base URLs). It serves what the test gives it, in SEC's wire format:
 * `/files/company_tickers_exchange.json` ({fields, data}), `/submissions/CIK##########.json` and
 * `/api/xbrl/companyfacts/CIK##########.json` (404 for an unknown CIK, as the SEC answers), and
 * the daily index `/Archives/edgar/daily-index/YYYY/QTRn/master.YYYYMMDD.idx` (404 for a day
 * without one). Companyfacts documents may be replaced between requests (`data` is read live).
 * Like the SEC, it answers 403 to a request whose User-Agent names no contact e-mail. Requests are recorded with their
 * arrival time (`requests[].at`) so a test can check the client's rate; `fail()` queues a 429 or 5xx.
 *
 *   const sec = await startSecFake({ tickers: [[320193, 'Apple Inc.', 'AAPL', 'Nasdaq']] })
 *   const source = secSource({ userAgent: 'Test admin@example.com', wwwBaseUrl: sec.url, dataBaseUrl: sec.url })
 */
import { type FakeServer, json, startFake } from './ref-server.ts'

export interface SecFakeData {
  /** Rows of company_tickers_exchange.json: [cik, name, ticker, exchange] (malformed rows allowed). */
  tickers?: unknown[][]
  /** Submissions documents by CIK. */
  submissions?: Record<number, unknown>
  /** Company facts by CIK: a document, or raw text (to serve a malformed body). */
  companyFacts?: Record<number, unknown>
  /** The filings of each ISO day that has a daily index. */
  dailyIndex?: Record<string, { cik: number; company: string; form: string }[]>
}

const INDEX_RE = /^\/Archives\/edgar\/daily-index\/(\d{4})\/QTR([1-4])\/master\.(\d{4})(\d{2})(\d{2})\.idx$/

/** A day's `master` index as EDGAR writes it: header lines, the column line, dashes, `|` rows. */
function masterIndexText(
  date: string,
  rows: readonly { cik: number; company: string; form: string }[],
): string {
  const ymd = date.replaceAll('-', '')
  const body = [...rows]
    .sort((a, b) => a.cik - b.cik)
    .map(
      (r, i) =>
        `${r.cik}|${r.company}|${r.form}|${ymd}|edgar/data/${r.cik}/0000950170-${ymd.slice(2, 4)}-${String(i + 1).padStart(6, '0')}.txt`,
    )
  return [
    'Description:           Daily Index of EDGAR Dissemination Feed by Company Name',
    `Last Data Received:    ${date}`,
    'Comments:              webmaster@sec.gov',
    'Anonymous FTP:         ftp://ftp.sec.gov/edgar/',
    ' ',
    ' ',
    ' ',
    'CIK|Company Name|Form Type|Date Filed|File Name',
    '--------------------------------------------------------------------------------',
    ...body,
    '',
  ].join('\n')
}

const CIK_RE = /^\/(submissions|api\/xbrl\/companyfacts)\/CIK(\d{10})\.json$/

export function startSecFake(data: SecFakeData): Promise<FakeServer> {
  return startFake((url, headers) => {
    // The SEC refuses a client that does not declare itself (fetch's default `node` included).
    if (!headers['user-agent']?.includes('@'))
      return {
        status: 403,
        body: '<h1>Your Request Originates from an Undeclared Automated Tool</h1>',
        type: 'text/html',
      }
    if (url.pathname === '/files/company_tickers_exchange.json')
      return json({ fields: ['cik', 'name', 'ticker', 'exchange'], data: data.tickers ?? [] })
    const idx = INDEX_RE.exec(url.pathname)
    if (idx) {
      const rows = data.dailyIndex?.[`${idx[3]}-${idx[4]}-${idx[5]}`]
      return rows ? { body: masterIndexText(`${idx[3]}-${idx[4]}-${idx[5]}`, rows) } : null
    }
    const m = CIK_RE.exec(url.pathname)
    if (!m) return null
    const cik = Number(m[2])
    const doc = m[1] === 'submissions' ? data.submissions?.[cik] : data.companyFacts?.[cik]
    if (doc === undefined) return null
    return typeof doc === 'string' ? { body: doc, type: 'application/json' } : json(doc)
  })
}
