import { pino } from 'pino'
import type { UpdateOutcome } from '../../../src/engine/update/types.ts'
import type { Logger } from '../../../src/platform/logger.ts'

/** A pino logger that keeps its JSON lines in memory. */
export function memoryLogger(): { log: Logger; lines: () => Record<string, unknown>[] } {
  const raw: string[] = []
  const log = pino({ level: 'debug' }, { write: (s: string) => void raw.push(s) })
  return { log, lines: () => raw.map((s) => JSON.parse(s) as Record<string, unknown>) }
}

/** An update outcome as runUpdate would write it. */
export function outcomeOf(kind: UpdateOutcome['outcome'], over: Partial<UpdateOutcome> = {}): UpdateOutcome {
  return {
    outcome: kind,
    started_at: '2025-07-07T22:30:00.000Z',
    finished_at: '2025-07-07T22:41:00.000Z',
    days: kind === 'updated' ? ['2025-07-07'] : [],
    data_as_of_before: '2025-07-03',
    data_as_of: kind === 'updated' ? '2025-07-07' : '2025-07-03',
    build: kind === 'updated' ? 'b-20250707' : null,
    build_kind: kind === 'updated' ? 'incremental' : null,
    build_note: null,
    findings:
      kind === 'quarantined'
        ? [
            {
              kind: 'large_move',
              ticker: 'ABC',
              date: '2025-07-07',
              detail: '+85% with no action',
              action: 'quarantined',
            },
          ]
        : [],
    summary: kind === 'quarantined' ? { large_move: 1 } : {},
    message: `${kind} for the test`,
    error: kind === 'failed' ? 'the vendor answered 503' : null,
    ...over,
  }
}
