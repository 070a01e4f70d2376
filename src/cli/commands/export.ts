import type { Command } from 'commander'
import { AppError } from '../../platform/errors.ts'
import {
  EXPORT_FIELDS,
  exportBlocks,
  INTEGER_FIELDS,
  planExport,
  TEXT_FIELDS,
} from '../../services/analytics/export-panel.ts'

const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)

export function registerExport(program: Command): void {
  program
    .command('export')
    .description(
      'write the long panel (one row per date and ticker) of a model store to CSV, CSV.gz or Parquet',
    )
    .requiredOption('--store <dir>', 'model store root')
    .requiredOption('--out <file>', 'output file: .csv, .csv.gz or .parquet')
    .option('--tickers <list>', 'comma-separated tickers (default: all)', list)
    .option('--from <date>', 'first date, YYYY-MM-DD')
    .option('--to <date>', 'last date, YYYY-MM-DD')
    .option('--fields <list>', `comma-separated fields (default: all): ${EXPORT_FIELDS.join(',')}`, list)
    .action(
      async (o: {
        store: string
        out: string
        tickers?: string[]
        from?: string
        to?: string
        fields?: string[]
      }) => {
        const kind = o.out.endsWith('.parquet')
          ? 'parquet'
          : o.out.endsWith('.csv') || o.out.endsWith('.csv.gz')
            ? 'csv'
            : null
        if (!kind)
          throw new AppError('INVALID_REQUEST', `--out must end in .csv, .csv.gz or .parquet, got ${o.out}`)
        const [{ ModelStore }, { CsvTableWriter }, { ParquetTableWriter }] = await Promise.all([
          import('../../engine/model-store/reader.ts'),
          import('../../engine/export/csv-table.ts'),
          import('../../engine/export/parquet-table.ts'),
        ])
        const store = await ModelStore.open(o.store)
        try {
          const plan = planExport(store, o)
          const writer =
            kind === 'csv'
              ? new CsvTableWriter(o.out, plan.fields)
              : new ParquetTableWriter(o.out, plan.fields, { integers: INTEGER_FIELDS, texts: TEXT_FIELDS })
          let rows = 0
          for await (const block of exportBlocks(store, plan)) {
            await writer.write(block)
            rows += block.date.length
          }
          await writer.close()
          process.stdout.write(`exported ${rows} rows × ${plan.fields.length + 2} columns to ${o.out}\n`)
        } finally {
          await store.close()
        }
      },
    )
}
