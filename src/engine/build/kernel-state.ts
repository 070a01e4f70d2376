/**
 * The per-stock kernel's state after a build's last day, stored with the build
 * (STORE_FILES.kernelState, docs/model-store.md) so that the next incremental build continues each
 * stock from it instead of replaying up to 255 days from the last scheduled rebase day. The state
 * is exact (float64 copies of the running sums), so a resumed build's numbers are a full build's
 * bit for bit; and canonical (stock-kernel.ts), so every build of the same days stores the same
 * bytes, whichever way it got there.
 */
import { columnsOf } from '../model/columns.ts'
import { kernelStateSize } from '../model/stock-kernel.ts'
import { STORE_FILES } from '../model-store/layout.ts'
import type { ModelStore } from '../model-store/reader.ts'
import type { StoreBuildWriter } from '../model-store/writer.ts'

/** Bumped whenever the state's layout or meaning changes: an older state is then not resumed from. */
const KERNEL_STATE_VERSION = 1

/** The array's attribute `kernel_state`. */
interface KernelStateInfo {
  version: number
  /** Days of the build: the state is that after day `days` − 1. */
  days: number
  style_factors: number
  values: number
}

/** Creates the build's kernel-state array: `values` (kernelStateSize) by `symbols`, one day-chunk. */
export function createKernelState(
  writer: StoreBuildWriter,
  symbols: number,
  days: number,
  styleFactors: number,
): Promise<void> {
  const values = kernelStateSize(styleFactors)
  const info: KernelStateInfo = { version: KERNEL_STATE_VERSION, days, style_factors: styleFactors, values }
  return writer.createArray(STORE_FILES.kernelState, {
    dtype: 'float64',
    days: values,
    symbols,
    chunkDays: values,
    fillValue: 0,
    attributes: { kernel_state: info },
  })
}

/**
 * Whether `prev` (a build of `from` days with the same symbols and parameters: the incremental
 * plan checked those) stored a state an engine with `styleFactors` style factors resumes from.
 */
export function canResume(prev: ModelStore, from: number, styleFactors: number): boolean {
  const info = prev.arrayAttributes(STORE_FILES.kernelState)?.kernel_state as
    | Partial<KernelStateInfo>
    | undefined
  if (!info || typeof info !== 'object') return false
  const values = kernelStateSize(styleFactors)
  const { shape } = prev.arrayMeta(STORE_FILES.kernelState)
  return (
    info.version === KERNEL_STATE_VERSION &&
    info.days === from &&
    info.style_factors === styleFactors &&
    info.values === values &&
    shape[0] === values &&
    shape[1] === prev.symbols.length
  )
}

/** Per-symbol state columns of symbols [first, first + count): zeros, or `prev`'s stored state. */
export async function kernelStateBlock(
  first: number,
  count: number,
  styleFactors: number,
  prev: ModelStore | null,
): Promise<Float64Array[]> {
  const values = kernelStateSize(styleFactors)
  // Shared: the kernel's worker threads write it without a copy (KernelPool).
  const cols = columnsOf(Float64Array, count, values, true)
  if (prev) await prev.readInto(STORE_FILES.kernelState, first, 0, values, cols)
  return cols
}
