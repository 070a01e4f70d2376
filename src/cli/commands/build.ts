import type { Command } from 'commander'
import { createCliProgress } from '../progress.ts'
import { describePublish, publishTo } from './publish.ts'

export function registerBuild(program: Command): void {
  program
    .command('build')
    .description(
      'compute the model (every field of docs/methodology.md §2–§12) from a dataset into a model store',
    )
    .requiredOption('--dataset <dir>', 'dataset directory (erm3 data synth / erm3 data import)')
    .requiredOption('--store <dir>', 'model store root (a new build is switched in atomically at the end)')
    .option(
      '--incremental',
      'append the new days of the dataset to the current build (same numbers as a full build)',
    )
    .option(
      '--publish <target>',
      'then upload the build to s3://bucket/prefix or a directory served over HTTP (as erm3 publish)',
    )
    .action(async (o: { dataset: string; store: string; incremental?: boolean; publish?: string }) => {
      const { buildStore } = await import('../../engine/build/index.ts')
      const m = await buildStore(
        { dataset: o.dataset, store: o.store, incremental: o.incremental === true },
        createCliProgress(),
      )
      process.stdout.write(
        `model store built at ${o.store} (${m.model_version}, data as of ${m.data_as_of})\n` +
          `  ${m.counts.stocks} stocks, ${m.counts.etfs} ETFs, ${m.calendar.days} days; universe_size ${m.universe_size}\n` +
          `  ${m.incremental_from ? `incremental from ${m.incremental_from}; ` : ''}${Object.entries(
            m.timings_s,
          )
            .map(([k, v]) => `${k} ${v} s`)
            .join(', ')}\n`,
      )
      if (o.publish) process.stdout.write(describePublish(await publishTo(o.store, o.publish), o.publish))
    })
}
