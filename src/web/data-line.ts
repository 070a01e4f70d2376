/** /health's `data` component, as much of it as the banner shows. */
export interface HealthData {
  age_days: number | null
  age_sessions: number | null
  monitored: boolean
  stale: boolean
  last_update: {
    outcome: string
    finished_at: string
    findings: number
    findings_by_kind: Record<string, number>
  } | null
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

/** The banner's second sentence: the data's age, and what the last daily update did. */
export function dataLine(d: HealthData | undefined): string {
  if (!d || d.age_days === null) return ''
  const behind = d.age_sessions ? `, ${plural(d.age_sessions, 'session')} behind` : ''
  const parts = [`${d.stale ? 'Stale: ' : ''}${plural(d.age_days, 'day')} old${d.monitored ? behind : ''}.`]
  const u = d.last_update
  if (u) {
    const kinds = Object.entries(u.findings_by_kind)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')
    const when = u.finished_at.slice(0, 16).replace('T', ' ')
    parts.push(
      `Last update ${u.outcome} (${when} UTC), ${plural(u.findings, 'finding')}${kinds ? `: ${kinds}` : ''}.`,
    )
  }
  return ` ${parts.join(' ')}`
}
