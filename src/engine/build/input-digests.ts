import { createHash } from 'node:crypto'
import { type Dataset, type DatasetManifest, PANEL_ROW_GROUP_DAYS, PRICE_FIELDS } from '../data/format.ts'
import { DATASET_FILES } from '../data/layout.ts'
import type { InputDigests } from '../model-store/layout.ts'

/**
 * What a build records of its price panels so that the next incremental build can prove, without
 * reading the old days, that they were not restated: the dataset manifest's digest of every
 * complete row group, and a digest of the values in the last, incomplete one (its bytes change
 * when days are appended, its first days must not).
 */
export function inputDigests(ds: Dataset, dm: DatasetManifest): InputDigests | null {
  const days = ds.calendar.length
  const complete = Math.floor(days / PANEL_ROW_GROUP_DAYS)
  const files: InputDigests['files'] = {}
  for (const field of PRICE_FIELDS) {
    const panel = ds.prices[field]
    if (!panel) continue
    const parts = dm.files[DATASET_FILES.price(field)]?.parts
    // Version 1 datasets have no row-group digests: their builds cannot be extended.
    if (!parts) return null
    files[field] = {
      row_groups: parts.slice(1, 1 + complete).map((p) => p.sha256),
      partial: partialDigest(panel, complete * PANEL_ROW_GROUP_DAYS, days),
    }
  }
  return { row_group_days: PANEL_ROW_GROUP_DAYS, days, files }
}

/** sha256 of days [from, to) of every column, in dataset column order; null for no days. */
function partialDigest(panel: Float64Array[], from: number, to: number): string | null {
  if (to <= from) return null
  const h = createHash('sha256')
  for (const s of panel) h.update(new Uint8Array(s.buffer, s.byteOffset + from * 8, (to - from) * 8))
  return h.digest('hex')
}

/**
 * Why the dataset's complete row groups before day `days` differ from those a build recorded,
 * or null when they agree (checked from the manifest alone, before any panel is read).
 */
export function restatedGroups(recorded: InputDigests, dm: DatasetManifest): string | null {
  if (recorded.row_group_days !== PANEL_ROW_GROUP_DAYS) return 'the dataset row groups changed size'
  const fields = PRICE_FIELDS.filter((f) => dm.price_fields.includes(f))
  if (fields.join() !== Object.keys(recorded.files).join()) return 'the set of price fields changed'
  for (const field of fields) {
    const parts = dm.files[DATASET_FILES.price(field)]?.parts
    if (!parts) return 'the dataset has no row-group digests (format version 1)'
    const old = recorded.files[field].row_groups
    for (let g = 0; g < old.length; g++)
      if (parts[1 + g]?.sha256 !== old[g]) return `${field} changed in row group ${g} (restated history)`
  }
  return null
}

/** Why the days of the recorded incomplete row group differ now, or null when they agree. */
export function restatedPartial(recorded: InputDigests, ds: Dataset): string | null {
  const from = Math.floor(recorded.days / recorded.row_group_days) * recorded.row_group_days
  for (const [field, digests] of Object.entries(recorded.files)) {
    const panel = ds.prices[field as (typeof PRICE_FIELDS)[number]]
    if (!panel) return 'the set of price fields changed'
    if (partialDigest(panel, from, recorded.days) !== digests.partial)
      return `${field} changed in its last recorded days (restated history)`
  }
  return null
}
