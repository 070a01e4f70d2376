import { join } from 'node:path'
import type { Command } from 'commander'
import type { Source } from '../../engine/sources/types.ts'
import { afterClose } from '../../engine/update/days.ts'
import type { UpdateOutcome } from '../../engine/update/types.ts'
import { storeAccess, updateSettings } from '../../platform/config.ts'
import { AppError } from '../../platform/errors.ts'

/** The sources a run uses, from `--source` (undefined: the configured default). */
export type SourcesFor = (name: string | undefined) => Source[]

export interface UpdateCliOptions {
  dataDir: string
  store: string
  publish?: string
  source?: string
  policy?: string
  date?: string
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
    dataDir: o.dataDir,
    store: o.store,
    publish: o.publish
      ? openWriter(parseStoreLocation(o.publish), { s3: a.s3, timeoutMs: a.timeoutMs })
      : undefined,
    sources,
    policy,
    settings,
    now: o.date ? afterClose(o.date, settings.graceMinutes) : new Date(),
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

const home = () => process.env.ERM3_HOME || '.erm3'

export function registerUpdate(program: Command, sourcesFor: SourcesFor): void {
  program
    .command('update')
    .description(
      'fetch the trading days closed since the data directory ends, check them, append them, build incrementally and publish',
    )
    .option('--data-dir <dir>', 'data directory (erm3 data fetch)', join(home(), 'data'))
    .option('--store <dir>', 'local model store root', join(home(), 'store'))
    .option(
      '--publish <target>',
      'then publish the build to s3://bucket/prefix or a directory served over HTTP',
    )
    .option('--source <name>', 'price source (default: the configured one)')
    .option('--policy <policy>', 'drop or quarantine (default ERM3_UPDATE_POLICY)')
    .option('--date <YYYY-MM-DD>', "pretend the time is just after that day's close + grace")
    .option('--json', 'print the outcome as JSON')
    .action(async (o: UpdateCliOptions & { json?: boolean }) => {
      const outcome = await updateCommand(o, sourcesFor(o.source))
      process.stdout.write(o.json ? `${JSON.stringify(outcome, null, 2)}\n` : describeUpdate(outcome))
      process.exitCode = UPDATE_EXIT_CODES[outcome.outcome]
    })
}
