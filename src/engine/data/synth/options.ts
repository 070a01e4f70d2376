import { parseIsoDay } from '../../../platform/dates.ts'
import { AppError } from '../../../platform/errors.ts'

export interface SynthOptions {
  seed: number
  /** Stocks listed at the end date (≈ the universe size); about 10 % more exist over the history. */
  stocks: number
  start: string
  end: string
  /** Write companyfacts-like fundamentals for every company. */
  fundamentals: boolean
}

/** Bump when the generator's output changes for the same options (recorded in the manifest). */
export const GENERATOR_VERSION = 1

export const DEFAULT_SYNTH: SynthOptions = {
  seed: 42,
  stocks: 3000,
  start: '2006-01-03',
  end: '2026-10-30',
  fundamentals: true,
}

export interface ResolvedSynth extends SynthOptions {
  startDay: number
  endDay: number
}

export function resolveSynthOptions(partial: Partial<SynthOptions>): ResolvedSynth {
  const o: SynthOptions = { ...DEFAULT_SYNTH, ...partial }
  if (!Number.isInteger(o.seed) || o.seed < 0 || o.seed > 0xffffffff) {
    throw new AppError('INVALID_REQUEST', `--seed must be an integer in 0..4294967295, got ${o.seed}`)
  }
  if (!Number.isInteger(o.stocks) || o.stocks < 20 || o.stocks > 20000) {
    throw new AppError('INVALID_REQUEST', `--stocks must be an integer in 20..20000, got ${o.stocks}`)
  }
  const startDay = parseIsoDay(o.start)
  const endDay = parseIsoDay(o.end)
  if (startDay === null)
    throw new AppError('INVALID_REQUEST', `--start must be a date YYYY-MM-DD, got ${o.start}`)
  if (endDay === null) throw new AppError('INVALID_REQUEST', `--end must be a date YYYY-MM-DD, got ${o.end}`)
  if (endDay - startDay < 365)
    throw new AppError('INVALID_REQUEST', '--end must be at least one year after --start')
  return { ...o, startDay, endDay }
}
