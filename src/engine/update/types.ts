/**
 * The daily update's contract with whoever runs it (`erm3 update`, the in-process scheduler of
 * `erm3 serve --update-at`, a cron job) and with whoever reports on it (/health, the dashboard,
 * operator alerts). engine/update/run.ts implements `runUpdate`.
 */

/** One data-quality finding of an update (docs/data-sources.md §"Quality gate" lists the kinds). */
export interface UpdateFinding {
  kind:
    | 'missing' // an expected security has no bar for the day
    | 'stale' // the bar repeats the previous close and volume (the vendor did not update it)
    | 'nonpositive' // a zero or negative price
    | 'large_move' // |return| beyond the bound with no matching corporate action
    | 'duplicate_date' // the vendor sent one date twice
    | 'calendar' // a bar on a day the exchange was closed, or none from anyone on a session
    | 'universe_shrank' // fewer stocks priced than the previous day by more than the bound
    | 'restated' // a vendor's adjusted history changed beyond a constant factor
    | 'rename' // a ticker change carried onto the same symbol
    | 'corporate_action' // a split or dividend on the day (history re-downloaded)
    | 'filings' // SEC shares and facts refreshed after new filings, or the refresh failed
  ticker?: string
  symbol?: string
  date?: string
  detail: string
  /** What the gate did about it. */
  action: 'dropped' | 'quarantined' | 'kept' | 'info'
}

export type QualityPolicy = 'quarantine' | 'drop'

type UpdateOutcomeKind =
  | 'updated' // new day(s) appended, built and published
  | 'unchanged' // nothing new (a holiday, a weekend, or already up to date)
  | 'quarantined' // the gate held the day back; the previous build keeps serving
  | 'failed' // an error (a vendor down, a build failure); the previous build keeps serving

/** What one run did: also the `status/update.json` document the store carries (see status.ts). */
export interface UpdateOutcome {
  outcome: UpdateOutcomeKind
  /** ISO timestamps of the run. */
  started_at: string
  finished_at: string
  /** The trading days the run appended (empty unless `updated`). */
  days: string[]
  /** data_as_of before and after the run. */
  data_as_of_before: string | null
  data_as_of: string | null
  /** The published build id (null when nothing was published). */
  build: string | null
  /** `incremental`, or `full` with the reason. */
  build_kind: 'incremental' | 'full' | null
  build_note: string | null
  /**
   * Null when the dataset was appended to (only its last row groups encoded), else why it was
   * assembled in full. Absent when the run assembled nothing, and in documents written before it.
   */
  assemble_note?: string | null
  findings: UpdateFinding[]
  /** Counts by finding kind, and the vendor calls made. */
  summary: Record<string, number>
  /** One line for people: what happened and why. */
  message: string
  /** The error message when `failed`. */
  error: string | null
  /**
   * Seconds spent in each stage the run reached (read, fetch, gate, append, assemble, build,
   * publish), for operators and `npm run bench update`. Absent in documents written before it.
   */
  timings_s?: Record<string, number>
}
