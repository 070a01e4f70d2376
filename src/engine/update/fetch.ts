/**
 * `erm3 data fetch`: the backfill. Listings → universe → identity registry, then one task per
 * file (bar histories, shares, company facts, submissions headers, rates, ETF holdings) run with
 * bounded concurrency, then the classification from the files on disk (classification.ts). Each finished task is recorded in state.json, so a re-run (after Ctrl-C, a kill or
 * failures) does only what is missing or was fetched through an earlier date. At the end the
 * dataset is assembled aside and swapped in; a fetch with failures leaves dataset/ untouched.
 */
import { AppError } from '../../platform/errors.ts'
import { type Progress, silentProgress } from '../../platform/progress.ts'
import type { DatasetManifest, ImportReport } from '../data/format.ts'
import type { Source } from '../sources/types.ts'
import { assembleDataset } from './assemble.ts'
import { classifyDataDir, type Overrides } from './classification.ts'
import { type FetchState, readFetchState, writeFetchState } from './data-dir.ts'
import {
  type FetchTask,
  filerTasks,
  holdingsTasks,
  priceTasks,
  rateTask,
  sourceWith,
  submissionsTasks,
  type TaskContext,
} from './fetch-tasks.ts'
import {
  type IdentityEvent,
  type IdentityRow,
  readIdentity,
  reconcileIdentity,
  writeIdentity,
} from './identity.ts'
import { selectUniverse, type UniverseOptions } from './universe.ts'

export interface FetchOptions extends UniverseOptions {
  dataDir: string
  sources: readonly Source[]
  /** ISO dates of the history wanted. */
  from: string
  to: string
  /** Tasks in flight at once (default 4). */
  concurrency?: number
  signal?: AbortSignal
  /** The user's classification by ticker (parseOverrides): wins over holdings and SIC codes. */
  overrides?: Overrides
  /** The fetch state is written after this many finished tasks (default 25) and at the end. */
  stateEvery?: number
}

export interface FetchSummary {
  tasks: number
  /** Tasks already done through `to` by an earlier run. */
  skipped: number
  done: number
  failed: { task: string; error: string }[]
  aborted: boolean
  universe: { stocks: number; etfs: number; delisted: string[]; unlisted: string[] }
  identity: IdentityEvent[]
  /** classification.csv as computed after the tasks (null when the fetch was interrupted). */
  classification: { stocks: number; bySource: Record<string, number>; unclassified: string[] } | null
  /** The assembled dataset, or null when the fetch failed, was aborted, or assembling failed. */
  dataset: { manifest: DatasetManifest; report: ImportReport } | null
  /** Why dataset/ was not replaced. */
  datasetError: string | null
}

export async function fetchData(
  opts: FetchOptions,
  progress: Progress = silentProgress,
): Promise<FetchSummary> {
  const lister = sourceWith(opts.sources, 'securities')
  if (!lister?.securities)
    throw new AppError(
      'INVALID_REQUEST',
      'no source lists securities: add one with listings (tiingo or polygon)',
    )
  if (!sourceWith(opts.sources, 'prices'))
    throw new AppError('INVALID_REQUEST', 'no source has prices: add tiingo or polygon')
  if (!(opts.from <= opts.to))
    throw new AppError('INVALID_REQUEST', `--from ${opts.from} is after --to ${opts.to}`)
  const { signal } = opts
  const listings = await lister.securities.list({ signal })
  const changes = (await lister.securities.changes?.(opts.from, opts.to, { signal })) ?? []
  const universe = selectUniverse(listings, opts)
  const prior = await readIdentity(opts.dataDir)
  const { rows: identity, events } = reconcileIdentity(prior, universe.listings, changes, opts.to)
  await writeIdentity(opts.dataDir, identity)
  const ctx: TaskContext = { dataDir: opts.dataDir, from: opts.from, to: opts.to, identity }
  const tasks = planTasks(opts, ctx)
  const state = await readFetchState(opts.dataDir)
  const todo = tasks.filter((t) => !isDone(state, t.key, opts.to))
  const run = await runTasks(todo, state, opts, progress)
  const summary: FetchSummary = {
    tasks: tasks.length,
    skipped: tasks.length - todo.length,
    done: run.done,
    failed: run.failed,
    aborted: signal?.aborted ?? false,
    universe: {
      stocks: universe.listings.filter((l) => l.assetType === 'stock').length,
      etfs: universe.listings.filter((l) => l.assetType === 'etf').length,
      delisted: universe.delisted,
      unlisted: universe.unlisted,
    },
    identity: events,
    classification: null,
    dataset: null,
    datasetError: null,
  }
  // After every task (never racing them): the classification reads the files they wrote.
  if (!summary.aborted) summary.classification = await classification(opts, identity)
  if (summary.aborted) summary.datasetError = 'the fetch was interrupted; run it again to finish'
  else if (run.failed.length > 0)
    summary.datasetError = `${run.failed.length} task(s) failed; run it again to retry them`
  else {
    const names = [...new Set(opts.sources.map((s) => s.name))].sort()
    summary.dataset = await assembleDataset(opts.dataDir, { sources: names, progress }).catch((e: Error) => {
      summary.datasetError = `assembling the dataset failed: ${e.message}`
      return null
    })
  }
  return summary
}

function planTasks(opts: FetchOptions, ctx: TaskContext): FetchTask[] {
  const prices = sourceWith(opts.sources, 'prices')
  return [
    ...(prices ? priceTasks(prices, ctx) : []),
    ...filerTasks(opts.sources, ctx),
    ...submissionsTasks(opts.sources, ctx),
    ...rateTask(opts.sources, ctx),
    ...holdingsTasks(opts.sources, ctx),
  ]
}

async function classification(
  opts: FetchOptions,
  identity: readonly IdentityRow[],
): Promise<NonNullable<FetchSummary['classification']>> {
  const { rows, unclassified } = await classifyDataDir(opts.dataDir, identity, opts.overrides)
  const bySource: Record<string, number> = {}
  for (const r of rows) {
    const kind = r.source.split(':')[0]
    bySource[kind] = (bySource[kind] ?? 0) + 1
  }
  return { stocks: rows.length + unclassified.length, bySource, unclassified }
}

function isDone(state: FetchState, key: string, to: string): boolean {
  const t = state.tasks[key]
  return t !== undefined && t.through !== null && t.through >= to
}

/** A pool of `concurrency` workers; a task's failure is recorded and the others go on. */
async function runTasks(
  tasks: readonly FetchTask[],
  state: FetchState,
  opts: FetchOptions,
  progress: Progress,
) {
  const failed: { task: string; error: string }[] = []
  const every = opts.stateEvery ?? 25
  let next = 0
  let done = 0
  let sinceWrite = 0
  let writing: Promise<void> = Promise.resolve()
  const save = () => {
    const snapshot: FetchState = { version: 1, tasks: { ...state.tasks } }
    writing = writing.then(() => writeFetchState(opts.dataDir, snapshot))
    return writing
  }
  progress.start('fetch', tasks.length)
  const worker = async () => {
    while (next < tasks.length && !opts.signal?.aborted) {
      const task = tasks[next++]
      try {
        await task.run({ signal: opts.signal })
        state.tasks[task.key] = { done_at: new Date().toISOString(), through: opts.to }
        done++
        if (++sinceWrite >= every) {
          sinceWrite = 0
          await save()
        }
      } catch (e) {
        if (opts.signal?.aborted) break
        failed.push({ task: task.key, error: (e as Error).message })
      }
      progress.update(done + failed.length)
    }
  }
  const n = Math.max(1, Math.min(opts.concurrency ?? 4, 64))
  await Promise.all(Array.from({ length: n }, worker))
  await save()
  progress.stop()
  return { done, failed }
}
