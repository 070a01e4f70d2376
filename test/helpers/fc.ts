/**
 * fast-check as every property test of the suite uses it (`import * as fc from '…/helpers/fc.ts'`),
 * with one knob for flushing out rare counterexamples locally (never in CI, which runs each
 * property at its own numRuns):
 *
 *   FC_RUNS_FACTOR=50 FC_SEED=12345 node --import tsx --test test/model/cross.test.ts
 *
 * multiplies every property's numRuns and fixes the seed of every run. A failure prints its seed
 * and path as usual; a counterexample worth keeping goes into the test file as a regression case.
 */
import {
  type IAsyncProperty,
  type IProperty,
  type IRawProperty,
  type Parameters,
  assert as runAssert,
} from 'fast-check'

export * from 'fast-check'

const factor = Number(process.env.FC_RUNS_FACTOR ?? '1')
const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED)
if (!(factor > 0) || (seed !== undefined && !Number.isInteger(seed)))
  throw new Error('FC_RUNS_FACTOR must be a positive number and FC_SEED an integer')

function tuned<Ts>(params: Parameters<Ts> | undefined): Parameters<Ts> | undefined {
  if (factor === 1 && seed === undefined) return params
  const numRuns = Math.ceil((params?.numRuns ?? 100) * factor)
  return { ...params, numRuns, ...(seed === undefined ? {} : { seed, path: undefined }) }
}

export function assert<Ts>(property: IAsyncProperty<Ts>, params?: Parameters<Ts>): Promise<void>
export function assert<Ts>(property: IProperty<Ts>, params?: Parameters<Ts>): void
export function assert<Ts>(property: IRawProperty<Ts>, params?: Parameters<Ts>): Promise<void> | void {
  return runAssert(property, tuned(params))
}
