import { join } from 'node:path'
import type { Command } from 'commander'
import type { Dataset, DatasetManifest, QualityFinding } from '../../engine/data/format.ts'
import type { ImportOptions } from '../../engine/data/import/index.ts'
import { createCliProgress } from '../progress.ts'

/** Findings printed on stderr; the full list is always in import-report.json. */
const MAX_PRINTED_FINDINGS = 200

interface DataImportFlags {
  prices: string[]
  securities: string
  classificationMap: string
  rates?: string[]
  fundamentals?: string
  cikMap?: string
  volume?: string
  series?: string[]
  out: string
}

export function registerDataImport(data: Command): void {
  data
    .command('import')
    .description('Turn your own price, classification, rate, volume and SEC files into a dataset directory')
    .requiredOption(
      '--prices <spec...>',
      'price files: wide (date,<TICKER>…) or long (date,ticker,adj_close[,close,volume,shares_out]); CSV, CSV.gz or Parquet; ' +
        "path=close[:TICKER,…] takes a long OHLCV file's close as the adjusted close (of the listed tickers only)",
    )
    .requiredOption(
      '--securities <csv>',
      'constituents CSV (Symbol,Security,GICS Sector,GICS Sub-Industry,…,CIK); listed tickers are stocks',
    )
    .requiredOption(
      '--classification-map <csv>',
      'GICS → ETF map (gics_sector,sector_etf,gics_sub_industry,industry_etf,alt_industry_etf)',
    )
    .option(
      '--rates <spec...>',
      'rate files: path, path=TENOR or path=TENOR:percent|fraction (earlier files win on overlaps)',
    )
    .option(
      '--fundamentals <path>',
      "SEC companyfacts: a directory of CIK##########.json[.gz] files (all taken), or SEC's bulk companyfacts.zip " +
        "(streamed; only the entries of the stocks' CIKs are read)",
    )
    .option(
      '--cik-map <json>',
      "SEC's company_tickers.json[.gz]: fills the CIK of stocks the securities file gives none (BRK-B matches BRK.B)",
    )
    .option('--volume <csv>', 'long OHLCV CSV(.gz) (ticker,date,…,volume); only volume is used')
    .option(
      '--series <spec...>',
      'index-level files: path or path=NAME, e.g. a FRED VIXCLS CSV (date,VIXCLS; "." = missing) for the VIX series',
    )
    .requiredOption('--out <dir>', 'dataset directory to write (replaced atomically)')
    .action(async (flags: DataImportFlags) => {
      const opts: ImportOptions = { ...flags }
      const { importDataset } = await import('../../engine/data/import/index.ts')
      const { dataset, manifest } = await importDataset(opts, createCliProgress())
      process.stdout.write(summaryText(dataset, manifest, flags.out))
      process.stderr.write(findingsText(dataset.report?.findings ?? []))
    })
}

function summaryText(ds: Dataset, m: DatasetManifest, out: string): string {
  const s = ds.report?.summary ?? {}
  const lines = [
    `Imported ${m.counts.symbols} price series (${m.counts.stocks} stocks, ${m.counts.etfs} ETFs) into ${out}`,
    `  calendar     ${m.calendar.first} … ${m.calendar.last} (${m.calendar.days} trading days)`,
    `  factors      ${ds.factors.length} (${countRoles(ds)})`,
    `  price fields ${m.price_fields.join(', ')}`,
    `  rates        ${ds.rates ? `${ds.rates.tenors.join(', ')} on ${ds.rates.days.length} dates` : 'none'}`,
    `  fundamentals ${m.counts.fundamentals} companyfacts file(s)`,
    `  findings     ${s.findings ?? 0} (${findingCounts(s)})`,
    `  report       ${join(out, 'import-report.json')}`,
    `  digest       ${m.digest}`,
  ]
  return `${lines.join('\n')}\n`
}

function countRoles(ds: Dataset): string {
  const counts = new Map<string, number>()
  for (const f of ds.factors) counts.set(f.role, (counts.get(f.role) ?? 0) + 1)
  return [...counts].map(([role, n]) => `${n} ${role}`).join(', ')
}

function findingCounts(summary: Record<string, number | string>): string {
  return Object.entries(summary)
    .filter(([k, v]) => k.startsWith('findings_') && v !== 0)
    .map(([k, v]) => `${k.slice('findings_'.length)} ${v}`)
    .join(', ')
}

function findingsText(findings: readonly QualityFinding[]): string {
  const shown = findings.slice(0, MAX_PRINTED_FINDINGS).map((f) => {
    const span = f.to && f.to !== f.from ? `${f.from} … ${f.to}` : f.from
    const where = [f.symbol, span].filter(Boolean).join(' ')
    return `  ${f.kind.padEnd(12)} ${where ? `${where}: ` : ''}${f.detail}`
  })
  if (findings.length > MAX_PRINTED_FINDINGS) {
    shown.push(`  … and ${findings.length - MAX_PRINTED_FINDINGS} more in import-report.json`)
  }
  return shown.length > 0 ? `Findings:\n${shown.join('\n')}\n` : ''
}
