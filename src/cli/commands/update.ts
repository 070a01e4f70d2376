import { join } from 'node:path'
import type { Command } from 'commander'
import type { Source } from '../../engine/sources/types.ts'
import { afterClose } from '../../engine/update/days.ts'
import type { UpdateOutcome } from '../../engine/update/types.ts'
import { dataFetchConfig, sourceNames, storeAccess, updateSettings } from '../../platform/config.ts'
import { AppError } from '../../platform/errors.ts'

/** The sources a run uses, from `--source` (undefined: ERM3_SOURCES). */
export type SourcesFor = (names: string | undefined) => Promise<Source[]>

/** Sources named by `--source` or ERM3_SOURCES, built from the environment (keys, base URLs). */
async function configuredSources(names: string | undefined, env: Env = process.env): Promise<Source[]> {
  const list = names === undefined ? dataFetchConfig(env).sources : sourceNames(names)
  if (list.length === 0)
    throw new AppError('CONFIG_INVALID', 'no source: give --source (e.g. polygon,sec) or set ERM3_SOURCES')
  const { sourcesFromNames } = await import('../../engine/sources/index.ts')
  return sourcesFromNames(list, env)
}

type Env = Record<string, string | undefined>

export interface UpdateCliOptions {
  dataDir?: string
  store?: string
  publish?: string
  source?: string
  policy?: string
  date?: string
  /** Aborts the run (the scheduler of `erm3 serve --update-at` passes its own). */
  signal?: AbortSignal
}

/** 0 updated or unchanged, 3 quarantined, 1 failed. */
export const UPDATE_EXIT_CODES: Record<UpdateOutcome['outcome'], number> = {
  updated: 0,
  unchanged: 0,
  quarantined: 3,
  failed: 1,
}

/** `erm3 update` without the terminal: options and sources in, the outcome out. */
export async function updateCommand(
  o: UpdateCliOptions,
  sources: readonly Source[],
  env: Record<string, string | undefined> = process.env,
): Promise<UpdateOutcome> {
  const settings = updateSettings(env)
  const policy = o.policy ?? settings.policy
  if (policy !== 'drop' && policy !== 'quarantine')
    throw new AppError(
      'INVALID_REQUEST',
      `--policy must be drop or quarantine, got ${JSON.stringify(o.policy)}`,
    )
  const [{ runUpdate }, { openWriter, parseStoreLocation }] = await Promise.all([
    import('../../engine/update/run.ts'),
    import('../../engine/object-store/index.ts'),
  ])
  const a = storeAccess(env)
  return runUpdate({
    dataDir: o.dataDir ?? dataFetchConfig(env).dataDir,
    store: o.store ?? join(dataFetchConfig(env).home, 'store'),
    publish: o.publish
      ? openWriter(parseStoreLocation(o.publish), { s3: a.s3, timeoutMs: a.timeoutMs })
      : undefined,
    sources,
    policy,
    settings,
    now: o.date ? afterClose(o.date, settings.graceMinutes) : new Date(),
    signal: o.signal,
  })
}

/** The human summary: the outcome, the message, then each finding on its own line. */
export function describeUpdate(o: UpdateOutcome): string {
  const lines = [`update ${o.outcome}: ${o.message}`]
  if (o.data_as_of) lines.push(`  data as of ${o.data_as_of}${o.build ? `, build ${o.build}` : ''}`)
  const counts = Object.entries(o.summary).map(([k, v]) => `${k} ${v}`)
  if (counts.length > 0) lines.push(`  ${counts.join(', ')}`)
  for (const f of o.findings)
    lines.push(
      `  ${f.action} ${f.kind}${f.symbol ? ` ${f.symbol}` : ''}${f.date ? ` ${f.date}` : ''}: ${f.detail}`,
    )
  return `${lines.join('\n')}\n`
}

export function registerUpdate(program: Command, sourcesFor: SourcesFor = configuredSources): void {
  program
    .command('update')
    .description(
      'fetch the trading days closed since the data directory ends, check them, append them, build incrementally and publish',
    )
    .option('--data-dir <dir>', 'data directory (default: ERM3_DATA_DIR, else $ERM3_HOME/data)')
    .option('--store <dir>', 'local model store root (default: $ERM3_HOME/store)')
    .option(
      '--publish <target>',
      'then publish the build to s3://bucket/prefix or a directory served over HTTP',
    )
    .option('--source <names>', 'comma-separated sources, e.g. polygon,sec (default: ERM3_SOURCES)')
    .option('--policy <policy>', 'drop or quarantine (default ERM3_UPDATE_POLICY)')
    .option('--date <YYYY-MM-DD>', "pretend the time is just after that day's close + grace")
    .option('--json', 'print the outcome as JSON')
    .action(async (o: UpdateCliOptions & { json?: boolean }) => {
      const c = dataFetchConfig(process.env)
      const dirs = { dataDir: o.dataDir ?? c.dataDir, store: o.store ?? join(c.home, 'store') }
      const outcome = await updateCommand({ ...o, ...dirs }, await sourcesFor(o.source))
      process.stdout.write(o.json ? `${JSON.stringify(outcome, null, 2)}\n` : describeUpdate(outcome))
      const [{ alertOperator }, { createLogger }] = await Promise.all([
        import('../../main/update-runner.ts'),
        import('../../platform/logger.ts'),
      ])
      await alertOperator(process.env, outcome, createLogger())
      process.exitCode = UPDATE_EXIT_CODES[outcome.outcome]
    })
}
