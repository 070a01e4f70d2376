export { decodeParquet } from './decode.ts'
export { encodeParquet } from './encode.ts'
export { readParquetColumnNames, readParquetFile, writeParquetFile } from './file.ts'
export type { ParquetColumn, ParquetTable } from './types.ts'
