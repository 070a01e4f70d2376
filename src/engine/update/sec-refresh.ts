/**
 * Keeps shares outstanding and company facts current in the daily update (docs/data-sources.md
 * §"SEC filings in the daily update"): EDGAR's daily index of every weekday since the last one
 * read names the filers that filed an annual or quarterly report (REPORT_FORMS); those in the
 * universe get their company facts downloaded again, which rewrites both their shares file and
 * their facts file (one download serves both). The last index day read is kept in the fetch
 * state (`<source>:filings`), so a day whose index was not yet published is read by the next run.
 * A failure is a finding, never a failed update: prices still go out and the next run retries.
 */
import { join } from 'node:path'
import { isoFromDay, parseIsoDay } from '../../platform/dates.ts'
import { REPORT_FORMS } from '../sources/sec-index.ts'
import type { CallOptions, Source } from '../sources/types.ts'
import { DATA_DIR_FILES, readFetchState, writeFetchState, writeFileAtomically } from './data-dir.ts'
import { writeShares } from './dir-files.ts'
import { latestWindows, readIdentity } from './identity.ts'
import type { UpdateFinding } from './types.ts'

export interface FilerRefresh {
  findings: UpdateFinding[]
  /** Index days read and filers downloaded. */
  calls: number
  /** The CIKs whose files were rewritten. */
  refreshed: number[]
}

/** Weekdays in (after, through]: EDGAR publishes no index for Saturdays and Sundays. */
function weekdays(after: string, through: string): string[] {
  const out: string[] = []
  const last = parseIsoDay(through) ?? 0
  for (let d = (parseIsoDay(after) ?? last) + 1; d <= last; d++) {
    const dow = new Date(d * 86_400_000).getUTCDay()
    if (dow !== 0 && dow !== 6) out.push(isoFromDay(d))
  }
  return out
}

/** The CIKs of the stocks still listed after `day` (the universe the update extends). */
async function universeCiks(dataDir: string, day: string): Promise<Set<number>> {
  const out = new Set<number>()
  for (const w of latestWindows(await readIdentity(dataDir)).values())
    if (w.assetType === 'stock' && w.cik !== null && (w.validTo === null || w.validTo >= day)) out.add(w.cik)
  return out
}

/**
 * Reads the daily indexes of the weekdays after the last one read (at first: after `last`, the
 * data directory's last day before this run) through `through`, and re-downloads the filers of
 * the universe that filed a report. Does nothing without a source having filings and shares.
 */
export async function refreshFilers(
  dataDir: string,
  sources: readonly Source[],
  last: string,
  through: string,
  o: CallOptions = {},
): Promise<FilerRefresh> {
  const out: FilerRefresh = { findings: [], calls: 0, refreshed: [] }
  const src = sources.find((s) => s.filings && s.shares)
  if (!src?.filings || !src.shares) return out
  const key = `${src.name}:filings`
  const state = await readFetchState(dataDir)
  const read = state.tasks[key]?.through ?? last
  const universe = await universeCiks(dataDir, read)
  const filers = new Set<number>()
  let reached: string | null = null
  for (const day of weekdays(read, through)) {
    out.calls++
    const entries = await src.filings.dailyIndex(day, o).catch((e: Error) => {
      out.findings.push(finding(`the EDGAR index of ${day} could not be read: ${e.message}`, 'kept'))
      return undefined
    })
    if (entries === undefined) break
    if (entries === null) continue
    reached = day
    for (const e of entries) if (REPORT_FORMS.has(e.form) && universe.has(e.cik)) filers.add(e.cik)
  }
  for (const cik of [...filers].sort((a, b) => a - b)) {
    out.calls++
    try {
      await writeShares(dataDir, cik, await src.shares.shares(cik, o))
      const facts = await src.fundamentals?.companyFacts(cik, o)
      if (facts) await writeFileAtomically(join(dataDir, DATA_DIR_FILES.facts(cik)), facts.gzipped)
      out.refreshed.push(cik)
    } catch (e) {
      // The index day stays unread, so the next run asks for this filer again.
      out.findings.push(
        finding(`CIK ${cik}: refreshing its shares and facts failed: ${(e as Error).message}`, 'kept'),
      )
      reached = null
    }
  }
  if (out.refreshed.length > 0)
    out.findings.push(
      finding(
        `shares and company facts refreshed after new filings: CIK ${out.refreshed.join(', ')}`,
        'info',
      ),
    )
  if (reached !== null) {
    state.tasks[key] = { done_at: new Date().toISOString(), through: reached }
    await writeFetchState(dataDir, state)
  }
  return out
}

function finding(detail: string, action: UpdateFinding['action']): UpdateFinding {
  return { kind: 'filings', detail, action }
}
