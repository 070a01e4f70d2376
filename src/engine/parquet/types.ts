export type ParquetColumn =
  | { name: string; type: 'DOUBLE'; values: Float64Array }
  | { name: string; type: 'FLOAT'; values: Float32Array }
  | { name: string; type: 'INT32'; values: Int32Array }
  | { name: string; type: 'DATE'; values: Int32Array }
  | { name: string; type: 'STRING'; values: (string | null)[] }

export type ColumnType = ParquetColumn['type']

export interface ParquetTable {
  numRows: number
  columns: ParquetColumn[]
  metadata: Record<string, string>
  /**
   * First row decoded (see DecodeOptions.fromRow); earlier rows hold NaN, 0 or null (or, with
   * DecodeOptions.skippedRows 'untouched', unspecified: other columns' rows or null).
   */
  firstRow: number
}

/**
 * Column types the writers produce but the decoder does not read back (it returns only
 * ParquetColumn types). All OPTIONAL: INT64 and TIMESTAMP_MILLIS hold integer values with NaN
 * for null; BOOLEAN uses null.
 */
type WriteOnlyColumn =
  | { name: string; type: 'INT64'; values: Float64Array }
  | { name: string; type: 'TIMESTAMP_MILLIS'; values: Float64Array }
  | { name: string; type: 'BOOLEAN'; values: (boolean | null)[] }

export type WritableColumn = ParquetColumn | WriteOnlyColumn

export interface ParquetInput {
  columns: WritableColumn[]
  metadata?: Record<string, string>
}

export interface DecodeOptions {
  columns?: string[]
  /**
   * Decode only the row groups holding rows from this one on; rows of the skipped groups hold
   * NaN (floating point), 0 (integers, dates) or null (strings). Default 0: every row.
   */
  fromRow?: number
  /**
   * 'untouched': the rows of skipped groups are unspecified (numeric columns are overlapping
   * views that own only the rows decoded, so those rows hold other columns' values; strings hold
   * null), and no memory is spent on them: for callers that never read or write the skipped rows
   * (a tail read of a long panel). Default 'missing'.
   */
  skippedRows?: 'missing' | 'untouched'
}

// Values copied verbatim between typed arrays and file bytes assume the file's little-endian layout.
if (new Uint8Array(Uint16Array.of(1).buffer)[0] !== 1) {
  throw new Error('parquet codec requires a little-endian platform')
}

export const PhysicalType = {
  BOOLEAN: 0,
  INT32: 1,
  INT64: 2,
  INT96: 3,
  FLOAT: 4,
  DOUBLE: 5,
  BYTE_ARRAY: 6,
  FIXED_LEN_BYTE_ARRAY: 7,
} as const

export const Repetition = { REQUIRED: 0, OPTIONAL: 1, REPEATED: 2 } as const

export const ConvertedType = {
  UTF8: 0,
  ENUM: 4,
  DECIMAL: 5,
  DATE: 6,
  TIME_MILLIS: 7,
  TIME_MICROS: 8,
  TIMESTAMP_MILLIS: 9,
  TIMESTAMP_MICROS: 10,
  UINT_8: 11,
  UINT_16: 12,
  UINT_32: 13,
  UINT_64: 14,
  INT_8: 15,
  INT_16: 16,
  INT_32: 17,
  INT_64: 18,
  JSON: 19,
} as const

/** Field ids of the LogicalType union. */
export const LogicalTypeId = {
  STRING: 1,
  ENUM: 4,
  DECIMAL: 5,
  DATE: 6,
  TIME: 7,
  TIMESTAMP: 8,
  INTEGER: 10,
  JSON: 12,
  UUID: 14,
  FLOAT16: 15,
} as const

export const Encoding = { PLAIN: 0, RLE: 3 } as const
export const Codec = { UNCOMPRESSED: 0 } as const
export const PageType = { DATA_PAGE: 0, INDEX_PAGE: 1, DICTIONARY_PAGE: 2, DATA_PAGE_V2: 3 } as const

export const MAGIC = Uint8Array.of(0x50, 0x41, 0x52, 0x31) // "PAR1"

/** Parquet page and row counts are i32 on the wire; this also bounds what a corrupt footer can make us allocate. */
export const MAX_ROWS = 0x7fffffff
