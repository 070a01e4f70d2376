import { isoFromDay } from '../../../platform/dates.ts'
import type { Dataset, ImportReport, QualityFinding } from '../format.ts'

const KIND_ORDER: readonly QualityFinding['kind'][] = [
  'gap',
  'flat_run',
  'large_move',
  'dropped_rows',
  'note',
]

/**
 * The import report: findings grouped by kind (data problems first, notes last; stable inside a
 * kind) and a flat summary of counts that the CLI prints and import-report.json keeps.
 * `volumeSeries` counts the price series with a volume when `ds.prices.volume` does not hold
 * whole series (the update's append writes only the last days' panels).
 */
export function buildReport(
  ds: Omit<Dataset, 'report'>,
  findings: readonly QualityFinding[],
  volumeSeries?: number,
): ImportReport {
  const sorted = [...findings].sort((a, b) => KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind))
  const stocks = ds.securities.filter((s) => s.assetType === 'stock').length
  const summary: Record<string, number | string> = {
    price_series: ds.symbols.length,
    stocks,
    etfs: ds.securities.length - stocks,
    calendar_days: ds.calendar.length,
    first_date: ds.calendar.length > 0 ? isoFromDay(ds.calendar[0]) : '',
    last_date: ds.calendar.length > 0 ? isoFromDay(ds.calendar[ds.calendar.length - 1]) : '',
    factors: ds.factors.length,
    rate_tenors: ds.rates ? ds.rates.tenors.join(',') : '',
    rate_days: ds.rates ? ds.rates.days.length : 0,
    volume_series:
      volumeSeries ??
      (ds.prices.volume ? ds.prices.volume.filter((v) => v.some((x) => !Number.isNaN(x))).length : 0),
    fundamentals: ds.fundamentals.length,
    findings: sorted.length,
  }
  for (const kind of KIND_ORDER) summary[`findings_${kind}`] = sorted.filter((f) => f.kind === kind).length
  return { findings: sorted, summary }
}
