/**
 * A small Parquet codec for flat, wide numeric tables. Writing produces one row group of
 * uncompressed PLAIN pages, which both we and other readers decode at memory speed; reading takes
 * a fast path for such chunks (ours or anyone's) and hands everything else to hyparquet.
 */
export { decodeParquet, decodeSource, readMeta } from './decode.ts'
export { encodeParquet } from './encode.ts'
export {
  readKeptGroups,
  readParquetColumnNames,
  readParquetFile,
  writeParquetContinuation,
  writeParquetFile,
} from './file.ts'
export { type ByteSource, memorySource, withFileSource } from './source.ts'
export type { ParquetColumn, ParquetTable, WritableColumn } from './types.ts'
