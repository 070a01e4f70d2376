import { resolve } from 'node:path'
import { AppError } from './errors.ts'

/**
 * Configuration from the environment, validated once at start: a bad value stops the process
 * with a message naming the variable, instead of failing later in some stage.
 */
export interface Config {
  /** Home of the embedded mode: dataset, model store, database, outbox. */
  home: string
  /** Overrides for the default synthetic dataset created by `erm3 start`. */
  synth: { seed?: number; stocks?: number; end?: string }
}

type Env = Record<string, string | undefined>

function intVar(env: Env, name: string, lo: number, hi: number): number | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  const n = Number(raw)
  if (!Number.isInteger(n) || n < lo || n > hi) {
    throw new AppError(
      'CONFIG_INVALID',
      `${name} must be an integer in ${lo}..${hi}, got ${JSON.stringify(raw)}`,
    )
  }
  return n
}

function dateVar(env: Env, name: string): string | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  if (!/^\d{4}-\d{2}-\d{2}$/.test(raw))
    throw new AppError('CONFIG_INVALID', `${name} must be a date YYYY-MM-DD, got ${JSON.stringify(raw)}`)
  return raw
}

export function loadConfig(env: Env = process.env): Config {
  return {
    home: resolve(env.ERM3_HOME && env.ERM3_HOME !== '' ? env.ERM3_HOME : '.erm3'),
    synth: {
      seed: intVar(env, 'ERM3_SYNTH_SEED', 0, 0xffffffff),
      stocks: intVar(env, 'ERM3_SYNTH_STOCKS', 20, 20000),
      end: dateVar(env, 'ERM3_SYNTH_END'),
    },
  }
}
