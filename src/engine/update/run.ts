/**
 * `erm3 update`: brings the data directory, the model store and (optionally) a published copy up
 * to the latest closed trading day (docs/data-sources.md §"Daily update"):
 *
 *   lock → new days → fetch → quality gate → append bars → SEC filings since the last run →
 *   assemble → incremental build → publish → status/update.json (store root and target) +
 *   reports/<day>.json (data directory)
 *
 * Nothing is written before the gate passes, so a quarantined day or a vendor failure leaves the
 * data directory and the serving build as they were. A run that finds nothing new writes nothing
 * at all. A build or publish that fails after the bars were appended is completed by the next run
 * (the store is behind the data directory, so it assembles and builds without fetching).
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { buildStore } from '../build/index.ts'
import { STORE_FILES } from '../model-store/layout.ts'
import { publishStore } from '../model-store/publish.ts'
import type { BlobWriter } from '../object-store/types.ts'
import type { Source } from '../sources/types.ts'
import { type StoredBars, tailStart, updateDataset } from './append.ts'
import { DATA_DIR_FILES, extendBars, writeFileAtomically } from './data-dir.ts'
import { DEFAULT_GRACE_MINUTES, newSessions } from './days.ts'
import { DEFAULT_GATE, type GateSettings } from './gate.ts'
import { writeIdentity } from './identity.ts'
import { acquireUpdateLock, DEFAULT_LOCK_TTL_MS } from './lock.ts'
import { gateNewDays, mergeNewBars } from './merge.ts'
import { fetchNewDays } from './new-bars.ts'
import { DEFAULT_RESTATE_TOLERANCE } from './reconcile.ts'
import { findRenames } from './renames.ts'
import { refreshFilers } from './sec-refresh.ts'
import { writeUpdateStatus } from './status.ts'
import { lastDay, readUniverse, wholeHistory } from './stored.ts'
import type { QualityPolicy, UpdateFinding, UpdateOutcome } from './types.ts'

interface UpdateSettings extends GateSettings {
  /** Minutes after the close before a session counts as published by the vendors. */
  graceMinutes: number
  /** Relative tolerance of "the vendor's adjusted history is the stored one times a constant". */
  restateTolerance: number
  lockTtlMs: number
}

const DEFAULT_UPDATE_SETTINGS: UpdateSettings = {
  ...DEFAULT_GATE,
  graceMinutes: DEFAULT_GRACE_MINUTES,
  restateTolerance: DEFAULT_RESTATE_TOLERANCE,
  lockTtlMs: DEFAULT_LOCK_TTL_MS,
}

export interface UpdateOptions {
  dataDir: string
  /** The local model store root the build goes to. */
  store: string
  /** Where the build is published after it (erm3 publish's target). */
  publish?: BlobWriter
  /** The price source is the first with `prices`; actions come from the first with `actions`. */
  sources: readonly Source[]
  policy?: QualityPolicy
  settings?: Partial<Omit<UpdateSettings, 'policy'>>
  /** The clock (default: the real one); `erm3 update --date` sets it after that day's close. */
  now?: Date
  signal?: AbortSignal
  /**
   * Data directory → its canonical dataset in `<dataDir>/dataset` (default: updateDataset, an
   * append to the previous dataset when possible), given the bars the run holds in memory.
   */
  assemble?: (dataDir: string, stored: StoredBars) => Promise<{ note: string | null }>
}

/** What a run did before its outcome is known: shared by every exit path. */
interface Run {
  opts: UpdateOptions
  settings: UpdateSettings
  started: string
  before: string | null
  findings: UpdateFinding[]
  calls: number
  /** Seconds per stage reached (UpdateOutcome.timings_s). */
  timings: Record<string, number>
}

/** Runs one stage of `run`, adding its wall time to the run's timings. */
async function timed<T>(run: Run, stage: string, work: () => Promise<T> | T): Promise<T> {
  const t0 = performance.now()
  try {
    return await work()
  } finally {
    run.timings[stage] = (run.timings[stage] ?? 0) + (performance.now() - t0) / 1000
  }
}

/** Never throws: every failure is a `failed` outcome, written to the status like any other. */
export async function runUpdate(opts: UpdateOptions): Promise<UpdateOutcome> {
  const settings: UpdateSettings = { ...DEFAULT_UPDATE_SETTINGS, ...opts.settings }
  if (opts.policy) settings.policy = opts.policy
  const run: Run = {
    opts,
    settings,
    started: new Date().toISOString(),
    before: null,
    findings: [],
    calls: 0,
    timings: {},
  }
  let release: () => Promise<void>
  try {
    release = await acquireUpdateLock(opts.dataDir, settings.lockTtlMs)
  } catch (e) {
    // Another run owns the status file: report to the caller only.
    return outcome(run, 'failed', { message: 'another update is running', error: (e as Error).message })
  }
  try {
    run.before = (await currentBuild(opts.store)).dataAsOf
    const o = await update(run)
    if (o.outcome !== 'unchanged') await record(run, o)
    return o
  } catch (e) {
    const error = (e as Error).message
    const o = outcome(run, 'failed', {
      message: `update failed; the previous build keeps serving: ${error}`,
      error,
    })
    await record(run, o).catch(() => {})
    return o
  } finally {
    await release()
  }
}

async function update(run: Run): Promise<UpdateOutcome> {
  const { opts, settings } = run
  // Only the bar files' ends when there is a dataset to append to (append.ts).
  const universe = await timed(run, 'read', async () =>
    readUniverse(opts.dataDir, await tailStart(opts.dataDir)),
  )
  const rewritten = new Set<string>()
  const last = lastDay(universe, opts.dataDir)
  const days = newSessions(last, opts.now ?? new Date(), settings.graceMinutes)
  if (days.length === 0 && run.before === last)
    return outcome(run, 'unchanged', { message: `up to date: no session has closed since ${last}` })
  if (days.length > 0) {
    const prices = opts.sources.find((s) => s.prices)?.prices
    if (!prices) throw new Error('no price source: configure one (docs/data-sources.md)')
    const actions = opts.sources.find((s) => s.actions)?.actions
    const fetched = await timed(run, 'fetch', () =>
      fetchNewDays(universe, days, prices, actions, opts.signal),
    )
    run.calls += fetched.calls
    const renames = await findRenames(opts.dataDir, universe, days, fetched, opts.sources, opts.signal)
    run.calls += renames.calls
    run.findings.push(...renames.findings)
    const gated = await timed(run, 'gate', () => gateNewDays(universe, days, fetched, settings))
    run.findings.push(...gated.findings)
    if (gated.quarantine !== null)
      return outcome(run, 'quarantined', {
        days: [],
        message: `${gated.quarantine}: nothing appended, the previous build keeps serving`,
      })
    await timed(run, 'append', async () => {
      const merged = await mergeNewBars(
        universe,
        gated.accepted,
        fetched.actions,
        prices,
        settings,
        (s) => wholeHistory(opts.dataDir, s),
        opts.signal,
      )
      run.findings.push(...merged.findings)
      run.calls += merged.calls
      if (renames.rows) await writeIdentity(opts.dataDir, renames.rows)
      const bySymbol = new Map(universe.map((s) => [s.symbol, s]))
      for (const [symbol, b] of merged.bars) {
        const s = bySymbol.get(symbol)
        if (!s) continue
        if ((await extendBars(opts.dataDir, symbol, s.bars, b, !s.complete)) === 'rewritten')
          rewritten.add(symbol)
        s.bars = b
      }
    })
    const sec = await timed(run, 'sec', () =>
      refreshFilers(opts.dataDir, opts.sources, last, days[days.length - 1], opts),
    )
    run.findings.push(...sec.findings)
    run.calls += sec.calls
  }
  // Every symbol's bars as stored once this run has appended: the assemble need not read them again.
  const stored: StoredBars = {
    bars: new Map(universe.map((s) => [s.symbol, s.bars])),
    complete: new Set(universe.filter((s) => s.complete).map((s) => s.symbol)),
    rewritten,
    storedThrough: last,
  }
  const assembled = await timed(run, 'assemble', () => (opts.assemble ?? updateDataset)(opts.dataDir, stored))
  const m = await timed(run, 'build', () =>
    buildStore({ dataset: join(opts.dataDir, DATA_DIR_FILES.dataset), store: opts.store, incremental: true }),
  )
  const build = (await currentBuild(opts.store)).build
  const target = opts.publish
  if (target) await timed(run, 'publish', () => publishStore(opts.store, target))
  const note = m.notes.find((n) => n.startsWith('incremental build not possible')) ?? null
  const dropped = run.findings.filter((f) => f.action === 'dropped').length
  return outcome(run, 'updated', {
    days,
    data_as_of: m.data_as_of,
    build,
    build_kind: note ? 'full' : 'incremental',
    build_note: note,
    assemble_note: assembled.note,
    message:
      `${days.length > 0 ? `appended ${days.join(', ')}` : `built the days already fetched through ${last}`}` +
      `${dropped > 0 ? ` (${dropped} bar(s) dropped by the quality gate)` : ''}; ` +
      `${note ? 'full' : 'incremental'} build ${build ?? ''}${opts.publish ? `, published to ${opts.publish.url}` : ''}`,
  })
}

function outcome(
  run: Run,
  kind: UpdateOutcome['outcome'],
  o: Partial<UpdateOutcome> & { message: string },
): UpdateOutcome {
  const summary: Record<string, number> = { vendor_calls: run.calls }
  for (const f of run.findings) summary[f.kind] = (summary[f.kind] ?? 0) + 1
  return {
    outcome: kind,
    started_at: run.started,
    finished_at: new Date().toISOString(),
    days: [],
    data_as_of_before: run.before,
    data_as_of: run.before,
    build: null,
    build_kind: null,
    build_note: null,
    findings: run.findings,
    summary,
    error: null,
    timings_s: Object.fromEntries(
      Object.entries(run.timings).map(([k, v]) => [k, Math.round(v * 1000) / 1000]),
    ),
    ...o,
  }
}

/** The status document in the store root (and the target), and the report in the data directory. */
async function record(run: Run, o: UpdateOutcome): Promise<void> {
  const day = o.days[o.days.length - 1] ?? o.data_as_of ?? run.started.slice(0, 10)
  await writeFileAtomically(
    join(run.opts.dataDir, DATA_DIR_FILES.reports, `${day}.json`),
    `${JSON.stringify(o, null, 1)}\n`,
  )
  await writeUpdateStatus(run.opts.store, o, run.opts.publish)
}

/** The build CURRENT names and its data_as_of; nulls when the store has none yet. */
async function currentBuild(store: string): Promise<{ build: string | null; dataAsOf: string | null }> {
  try {
    const build = (JSON.parse(await readFile(join(store, STORE_FILES.current), 'utf8')) as { build: string })
      .build
    const manifest = await readFile(join(store, STORE_FILES.builds, build, STORE_FILES.manifest), 'utf8')
    return { build, dataAsOf: (JSON.parse(manifest) as { data_as_of: string }).data_as_of }
  } catch {
    return { build: null, dataAsOf: null }
  }
}
