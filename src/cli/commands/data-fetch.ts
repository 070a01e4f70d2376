import type { Command } from 'commander'
import type { Source } from '../../engine/sources/types.ts'
import type { FetchSummary } from '../../engine/update/fetch.ts'
import { isoFromDay, parseIsoDay } from '../../platform/dates.ts'
import { AppError } from '../../platform/errors.ts'
import type { Progress } from '../../platform/progress.ts'
import { createCliProgress } from '../progress.ts'

export interface DataFetchFlags {
  source: string
  from?: string
  to?: string
  dataDir?: string
  tickers?: string
  include?: string
  exclude?: string
  concurrency?: string
  classification?: string
}

/** Days of history fetched when --from is not given. */
const DEFAULT_YEARS = 10

export function registerDataFetch(data: Command): void {
  data
    .command('fetch')
    .description('download market data into the data directory (resumable) and assemble its dataset')
    .requiredOption('--source <names>', 'comma-separated sources, e.g. tiingo,sec,treasury')
    .option('--from <date>', `first date of history (default: ${DEFAULT_YEARS} years before --to)`)
    .option('--to <date>', 'last date of history (default: today)')
    .option('--data-dir <dir>', 'the data directory (default: ERM3_DATA_DIR, else $ERM3_HOME/data)')
    .option('--tickers <list>', 'only these stocks (comma-separated); the factor ETFs are always fetched')
    .option('--include <file>', 'file of tickers always fetched (default: ERM3_UNIVERSE_INCLUDE)')
    .option('--exclude <file>', 'file of tickers never fetched (default: ERM3_UNIVERSE_EXCLUDE)')
    .option('--concurrency <n>', 'requests in flight at once', '4')
    .option(
      '--classification <csv>',
      'ticker,sector,industry overrides, winning over ETF holdings and SIC (default: ERM3_CLASSIFICATION_OVERRIDES)',
    )
    .action(async (flags: DataFetchFlags) => {
      const ac = new AbortController()
      const stop = () => ac.abort()
      process.once('SIGINT', stop)
      try {
        const { sourcesFromNames } = await import('../../engine/sources/index.ts')
        const names = flags.source
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '')
        const code = await dataFetch(flags, {
          env: process.env,
          sources: sourcesFromNames(names, process.env),
          signal: ac.signal,
          progress: createCliProgress(),
          write: (s) => process.stdout.write(s),
        })
        process.exitCode = code
      } finally {
        process.off('SIGINT', stop)
      }
    })
}

export interface DataFetchDeps {
  env: NodeJS.ProcessEnv
  sources: Source[]
  signal?: AbortSignal
  progress?: Progress
  write(text: string): void
}

/** The command's work: flags → fetchData → a summary; the exit code (1 when anything is left to do). */
export async function dataFetch(flags: DataFetchFlags, deps: DataFetchDeps): Promise<number> {
  const { dataFetchConfig } = await import('../../platform/config.ts')
  const { fetchData } = await import('../../engine/update/fetch.ts')
  const { parseTickers, readTickerList } = await import('../../engine/update/universe.ts')
  const cfg = dataFetchConfig(deps.env)
  const to = flags.to ?? new Date().toISOString().slice(0, 10)
  const toDay = dateFlag('--to', to)
  const from = flags.from ?? isoFromDay(toDay - Math.round(DEFAULT_YEARS * 365.25))
  dateFlag('--from', from)
  const concurrency = Number(flags.concurrency ?? 4)
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64)
    throw new AppError(
      'INVALID_REQUEST',
      `--concurrency must be an integer in 1..64, got ${flags.concurrency}`,
    )
  const include = flags.include ?? cfg.include
  const exclude = flags.exclude ?? cfg.exclude
  const overridesFile = flags.classification ?? cfg.overrides
  const summary = await fetchData(
    {
      dataDir: flags.dataDir ?? cfg.dataDir,
      sources: deps.sources,
      from,
      to,
      concurrency,
      signal: deps.signal,
      tickers: flags.tickers ? parseTickers(flags.tickers.split(','), '--tickers') : undefined,
      include: include ? await readTickerList(include) : undefined,
      exclude: exclude ? await readTickerList(exclude) : undefined,
      overrides: overridesFile ? await readOverrides(overridesFile) : undefined,
    },
    deps.progress,
  )
  deps.write(summaryText(summary, flags.dataDir ?? cfg.dataDir))
  return summary.dataset ? 0 : 1
}

async function readOverrides(file: string) {
  const { readFile } = await import('node:fs/promises')
  const { parseOverrides } = await import('../../engine/sources/classify.ts')
  const text = await readFile(file, 'utf8').catch((e: NodeJS.ErrnoException) => {
    throw new AppError('INVALID_REQUEST', `--classification ${file}: cannot read it (${e.code ?? e.message})`)
  })
  return parseOverrides(text, file)
}

function dateFlag(flag: string, value: string): number {
  const d = parseIsoDay(value)
  if (d === null)
    throw new AppError('INVALID_REQUEST', `${flag} must be a date YYYY-MM-DD, got ${JSON.stringify(value)}`)
  return d
}

function summaryText(s: FetchSummary, dataDir: string): string {
  const renames = s.identity.filter((e) => e.kind === 'rename')
  const lines = [
    `Fetched into ${dataDir}: ${s.done} task(s) done, ${s.skipped} already done, ${s.failed.length} failed (of ${s.tasks})`,
    `  universe  ${s.universe.stocks} stocks (${s.universe.delisted.length} delisted), ${s.universe.etfs} ETFs`,
    `  renames   ${renames.length > 0 ? renames.map((e) => `${e.from} → ${e.ticker} (${e.date})`).join(', ') : 'none'}`,
    ...classificationLines(s),
    ...s.failed.map((f) => `  failed    ${f.task}: ${f.error}`),
  ]
  if (s.dataset) {
    const m = s.dataset.manifest
    lines.push(
      `  dataset   ${m.counts.stocks} stocks, ${m.counts.etfs} ETFs, ${m.calendar.first} … ${m.calendar.last}`,
    )
    lines.push(`  digest    ${m.digest}`)
  } else lines.push(`  dataset   not replaced: ${s.datasetError}`)
  return `${lines.join('\n')}\n`
}

function classificationLines(s: FetchSummary): string[] {
  const c = s.classification
  if (!c) return []
  const by = Object.entries(c.bySource)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${n} from ${k}`)
  const lines = [
    `  sectors   ${c.stocks - c.unclassified.length} of ${c.stocks} stocks (${by.join(', ') || 'none'})`,
  ]
  if (c.unclassified.length > 0) {
    const list = c.unclassified.slice(0, 20).join(', ')
    lines.push(`  no sector ${c.unclassified.length}: ${list}${c.unclassified.length > 20 ? ', …' : ''}`)
  }
  return lines
}
