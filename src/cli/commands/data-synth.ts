import { type Command, InvalidArgumentError } from 'commander'
import { DEFAULT_SYNTH } from '../../engine/data/synth/index.ts'
import { createCliProgress } from '../progress.ts'

function intOption(value: string): number {
  const n = Number(value)
  if (!Number.isInteger(n))
    throw new InvalidArgumentError(`expected an integer, got ${JSON.stringify(value)}`)
  return n
}

export function registerDataSynth(data: Command): void {
  data
    .command('synth')
    .description('generate the deterministic synthetic market (with its true parameters in truth/)')
    .requiredOption('--out <dir>', 'dataset directory to write (replaced atomically)')
    .option('--seed <n>', 'random seed', intOption, DEFAULT_SYNTH.seed)
    .option('--stocks <n>', 'stocks listed at the end date', intOption, DEFAULT_SYNTH.stocks)
    .option('--start <date>', 'first calendar date', DEFAULT_SYNTH.start)
    .option('--end <date>', 'last calendar date', DEFAULT_SYNTH.end)
    .option('--no-fundamentals', 'skip the companyfacts documents')
    .action(
      async (o: {
        out: string
        seed: number
        stocks: number
        start: string
        end: string
        fundamentals: boolean
      }) => {
        const { synthesizeDataset } = await import('../../engine/data/synthesize.ts')
        const { manifest, seconds } = await synthesizeDataset(o.out, o, createCliProgress())
        process.stdout.write(
          `synthetic dataset written to ${o.out}\n` +
            `  ${manifest.counts.stocks} stocks, ${manifest.counts.etfs} ETFs, ${manifest.calendar.days} days ` +
            `(${manifest.calendar.first} … ${manifest.calendar.last}), ${manifest.counts.fundamentals} companyfacts\n` +
            `  digest ${manifest.digest} (${seconds.toFixed(1)} s)\n`,
        )
      },
    )
}
