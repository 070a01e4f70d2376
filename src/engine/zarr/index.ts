/** The model store's Zarr v3 array I/O: our own uncompressed writer and partial-read reader. */
export { writeArray2DIncremental } from './incremental.ts'
export { ZarrFormatError } from './metadata.ts'
export { type OpenOptions, openRemoteZarrStore, openZarrStore, type ZarrStoreReader } from './reader.ts'
export type { Array2DSpec, ArrayMeta, Column, DType } from './types.ts'
export {
  DEFAULT_CHUNK_DAYS,
  DEFAULT_CHUNK_SYMBOLS,
  writeArray1D,
  writeArray2D,
  writeGroup,
} from './writer.ts'
