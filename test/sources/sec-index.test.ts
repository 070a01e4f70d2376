import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { secSource } from '../../src/engine/sources/sec.ts'
import { dailyIndexPath, parseMasterIndex, REPORT_FORMS } from '../../src/engine/sources/sec-index.ts'
import { startSecFake } from '../fakes/sec.ts'

// The head and first rows of a daily master index as EDGAR publishes it (daily-index/…/master.YYYYMMDD.idx).
const SAMPLE = [
  'Description:           Daily Index of EDGAR Dissemination Feed by Company Name',
  'Last Data Received:    Jan 03, 2023',
  'Comments:              webmaster@sec.gov',
  'Anonymous FTP:         ftp://ftp.sec.gov/edgar/',
  ' ',
  ' ',
  ' ',
  'CIK|Company Name|Form Type|Date Filed|File Name',
  '--------------------------------------------------------------------------------',
  '1000045|NICHOLAS FINANCIAL INC|8-K|20230103|edgar/data/1000045/0000950170-23-000049.txt',
  '320193|Apple Inc.|10-Q/A|20230103|edgar/data/320193/0000320193-23-000006.txt',
  '1067983|BERKSHIRE HATHAWAY INC|4|20230103|edgar/data/1067983/0001067983-23-000001.txt',
  '',
].join('\r\n')

test('a daily master index: the rows after the dashes, dates as ISO', () => {
  assert.deepEqual(parseMasterIndex(SAMPLE, 'master.20230103.idx'), [
    {
      cik: 1000045,
      company: 'NICHOLAS FINANCIAL INC',
      form: '8-K',
      filed: '2023-01-03',
      path: 'edgar/data/1000045/0000950170-23-000049.txt',
    },
    {
      cik: 320193,
      company: 'Apple Inc.',
      form: '10-Q/A',
      filed: '2023-01-03',
      path: 'edgar/data/320193/0000320193-23-000006.txt',
    },
    {
      cik: 1067983,
      company: 'BERKSHIRE HATHAWAY INC',
      form: '4',
      filed: '2023-01-03',
      path: 'edgar/data/1067983/0001067983-23-000001.txt',
    },
  ])
  // The quarterly files' spelling: `Filename`, dates with dashes.
  const quarterly =
    'CIK|Company Name|Form Type|Date Filed|Filename\n---\n1000045|NICHOLAS|10-K|2023-06-14|edgar/data/1000045/x.txt\n'
  assert.equal(parseMasterIndex(quarterly, 'q.idx')[0].filed, '2023-06-14')
})

test('an unreadable index is an error naming the file and line', () => {
  assert.throws(
    () => parseMasterIndex('<html>Not an index</html>', 'master.20230103.idx'),
    /master\.20230103\.idx: not an EDGAR master index/,
  )
  const bad = SAMPLE.replace('320193|Apple Inc.|10-Q/A|20230103', '320193|Apple Inc.|10-Q/A|2023013')
  assert.throws(() => parseMasterIndex(bad, 'm.idx'), /m\.idx:11: unreadable index row: 320193\|Apple/)
})

test('index paths by quarter; the report forms', () => {
  assert.equal(dailyIndexPath('2023-01-03'), 'Archives/edgar/daily-index/2023/QTR1/master.20230103.idx')
  assert.equal(dailyIndexPath('2016-07-05'), 'Archives/edgar/daily-index/2016/QTR3/master.20160705.idx')
  assert.equal(dailyIndexPath('2024-12-31'), 'Archives/edgar/daily-index/2024/QTR4/master.20241231.idx')
  for (const f of ['10-K', '10-Q/A', '20-F', '40-F/A', '10-KT']) assert.ok(REPORT_FORMS.has(f), f)
  for (const f of ['8-K', '6-K', '4', 'S-1', 'DEF 14A']) assert.ok(!REPORT_FORMS.has(f), f)
})

test('the sec source reads a day from the fake EDGAR; a day without an index is null', async () => {
  const sec = await startSecFake({
    dailyIndex: { '2023-01-03': [{ cik: 320193, company: 'Apple Inc.', form: '10-Q' }] },
  })
  after(() => sec.close())
  const s = secSource({ userAgent: 'Test admin@example.com', wwwBaseUrl: sec.url, dataBaseUrl: sec.url })
  const rows = await s.filings.dailyIndex('2023-01-03')
  assert.deepEqual(
    rows?.map((r) => [r.cik, r.form, r.filed]),
    [[320193, '10-Q', '2023-01-03']],
  )
  assert.equal(await s.filings.dailyIndex('2023-01-01'), null)
  await assert.rejects(s.filings.dailyIndex('20230103'), /daily index date must be YYYY-MM-DD/)
  assert.equal(sec.requests.at(-1)?.headers['user-agent'], 'Test admin@example.com')
})
