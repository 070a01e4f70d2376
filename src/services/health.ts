import ipaddr from 'ipaddr.js'
import type { ServiceContext } from './context.ts'
import { datasetOf } from './models.ts'
import { dataAge, isMonitored } from './updates/data-status.ts'

const startedAt = Date.now()
const SERVICE_VERSION = '0.1.0'

/** Whole days between a data_as_of date and now (calendar days; weekends count). */
function ageDays(iso: string, now: number): number {
  return Math.floor((now - Date.parse(`${iso}T00:00:00Z`)) / 86_400_000)
}

/** A word of a message that says where something is: a path, a URL or an address (with its port). */
function isLocation(word: string): boolean {
  if (word.startsWith('/') || /^[A-Za-z]:\\/.test(word) || word.includes('://')) return true
  const host = word.replace(/^\[(.*)\](:\d+)?$/, '$1').replace(/^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/, '$1')
  // A bare number (`5432`) parses as an IPv4 address too: an address has dots or colons.
  return /[.:]/.test(host) && ipaddr.isValid(host)
}

/**
 * A component's detail or error as the public may read it: the words that locate files, servers
 * or buckets (the database file, a store's directory or URL, Redis's address) become `…`. The
 * operator finds them in the log.
 */
function withoutLocations(text: string): string {
  return text.replace(/[^\s'"(),]+/g, (word) => (isLocation(word.replace(/[.:;]+$/, '')) ? '…' : word))
}

/** The `data` component: the age of data_as_of and what the last update did. */
function dataView(ctx: ServiceContext, dataAsOf: string | null, now: number) {
  const last = ctx.dataStatus?.lastUpdate ?? null
  const readError = ctx.dataStatus?.readError ?? null
  const byKind: Record<string, number> = {}
  for (const f of last?.findings ?? []) byKind[f.kind] = (byKind[f.kind] ?? 0) + 1
  return {
    ...dataAge(dataAsOf, now, {
      staleAfterSessions: ctx.config.updates.staleAfterSessions,
      monitored: isMonitored(ctx.dataStatus),
    }),
    last_update: last && {
      outcome: last.outcome,
      started_at: last.started_at,
      finished_at: last.finished_at,
      message: withoutLocations(last.message),
      error: last.error === null ? null : withoutLocations(last.error),
      days: last.days,
      build: last.build,
      findings: last.findings.length,
      findings_by_kind: byKind,
    },
    status_error: readError === null ? null : withoutLocations(readError),
  }
}

/** GET /health: every component, and the worst of them as `status`. */
export async function healthView(ctx: ServiceContext) {
  const live = ctx.models.peek('live')
  const sandbox = ctx.models.peek('test')
  const [database, limits] = await Promise.all([
    ctx.accounts.health().catch((e: Error) => ({ ok: false, detail: e.message })),
    ctx.limits.health().catch((e: Error) => ({ ok: false, degraded: true, detail: e.message })),
  ])
  const now = ctx.now()
  const failure = ctx.models.lastReloadFailure
  const model = {
    ok: live !== null,
    model_version: live?.manifest.model_version ?? null,
    data_as_of: live?.dataAsOf ?? null,
    built_at: live?.manifest.built_at ?? null,
    stale_days: live ? ageDays(live.dataAsOf, now) : null,
    sandbox_data_as_of: sandbox?.dataAsOf ?? null,
    dataset: live ? datasetOf(live) : null,
    build_id: live?.buildId ?? null,
    loaded_at: live ? new Date(live.openedAt).toISOString() : null,
    last_reload_failure: failure
      ? {
          build: failure.build,
          error: withoutLocations(failure.error),
          at: new Date(failure.at).toISOString(),
        }
      : null,
  }
  const data = dataView(ctx, model.data_as_of, now)
  const down = !database.ok || !model.ok || !limits.ok
  const degraded = limits.degraded || sandbox === null || data.stale
  return {
    status: down ? ('down' as const) : degraded ? ('degraded' as const) : ('ok' as const),
    version: SERVICE_VERSION,
    uptime_s: Math.round((Date.now() - startedAt) / 1000),
    model,
    data,
    database: { ok: database.ok, backend: ctx.accounts.backend, detail: withoutLocations(database.detail) },
    limits: {
      ok: limits.ok,
      backend: ctx.limits.backend,
      degraded: limits.degraded,
      detail: withoutLocations(limits.detail),
    },
  }
}
