/**
 * Reads back, day range by day range, what the build has just written: the cross-sectional stage
 * (products.ts) needs whole cross-sections of a few per-stock fields, and reading them from the
 * new store keeps only one range of days of them in memory instead of whole panels. Everything
 * the stage reads goes through `readDays`, so a change of the store's layout or encoding changes
 * only this file.
 */

import { type Ctor, columnsOf } from '../model/columns.ts'
import { DerivedReader } from '../model-store/derive-read.ts'
import { type DerivedField, isDerived } from '../model-store/derived.ts'
import { type Column, openZarrStore, type ZarrStoreReader } from '../zarr/index.ts'
import type { BuildInputs } from './inputs.ts'

/** Days read back at once: one day-chunk of the store (a whole chunk file per symbol chunk). */
const READ_BACK_DAYS = 256

/** The build directory's arrays, and the fields it derives instead of holding (derived.ts). */
export interface BuildReader {
  zarr: ZarrStoreReader
  derived: DerivedReader
  close(): Promise<void>
}

/** A reader of the build directory, without a piece cache (each range is read once). */
export async function openBuildReader(
  dir: string,
  x: Pick<BuildInputs, 'isStock' | 'etfSymbols'>,
): Promise<BuildReader> {
  const zarr = await openZarrStore(dir, { cacheBytes: 1 })
  const derived = new DerivedReader({
    zarr,
    isStock: (i) => x.isStock[i] === 1,
    etfSymbols: [...x.etfSymbols],
  })
  return { zarr, derived, close: () => zarr.close() }
}

/**
 * Days [from, to) of the [day, symbol] array at `path`, every symbol: column j holds symbol j's
 * values at their calendar index, so kernels index them with t as they would the whole panel.
 * Only days [from, to) are meaningful: the columns are overlapping views of one buffer
 * (columnsOf's firstDay), and index t < from holds another symbol's days. A field
 * the store derives is derived from its stored inputs as the model store's reader does.
 */
export async function readDays<C extends Column>(
  reader: BuildReader,
  path: string,
  ctor: Ctor<C>,
  symbols: number,
  from: number,
  to: number,
): Promise<C[]> {
  const cols = columnsOf(ctor, symbols, to, false, from)
  const field = path.startsWith('fields/') ? path.slice('fields/'.length) : ''
  if (isDerived(field)) await reader.derived.readInto([field], 0, from, to, [cols])
  else await reader.zarr.readInto(path, 0, from, to, cols)
  return cols
}

/**
 * readDays of several float fields at once: the fields the store derives are derived together,
 * so their shared inputs are read once, while the stored ones are read alongside.
 */
export async function readFieldsDays(
  reader: BuildReader,
  fields: readonly string[],
  symbols: number,
  from: number,
  to: number,
): Promise<Float64Array[][]> {
  const cols = fields.map(() => columnsOf(Float64Array, symbols, to, false, from))
  const derived = fields.flatMap((f, j) => (isDerived(f) ? [j] : []))
  await Promise.all([
    derived.length > 0
      ? reader.derived.readInto(
          derived.map((j) => fields[j] as DerivedField),
          0,
          from,
          to,
          derived.map((j) => cols[j]),
        )
      : undefined,
    ...fields.map((f, j) =>
      isDerived(f) ? undefined : reader.zarr.readInto(`fields/${f}`, 0, from, to, cols[j]),
    ),
  ])
  return cols
}

/**
 * Runs `work` over each day range in order with what `read` read for it, reading the next range
 * while this one is worked on (a failed read surfaces when its range is reached, never unhandled).
 */
export async function readAhead<R>(
  ranges: readonly [number, number][],
  read: (a: number, b: number) => Promise<R>,
  work: (data: R, a: number, b: number) => void,
): Promise<void> {
  let next = ranges.length > 0 ? read(ranges[0][0], ranges[0][1]) : null
  for (let r = 0; r < ranges.length && next; r++) {
    const data = await next
    next = r + 1 < ranges.length ? read(ranges[r + 1][0], ranges[r + 1][1]) : null
    next?.catch(() => {})
    work(data, ranges[r][0], ranges[r][1])
  }
}

/** Chunk-aligned day ranges covering [start, days): the first may start mid-chunk. */
export function dayRanges(start: number, days: number): [number, number][] {
  const out: [number, number][] = []
  for (let a = start; a < days; a = (Math.floor(a / READ_BACK_DAYS) + 1) * READ_BACK_DAYS)
    out.push([a, Math.min(days, (Math.floor(a / READ_BACK_DAYS) + 1) * READ_BACK_DAYS)])
  return out
}
