/** The model store's Zarr v3 array I/O: our own uncompressed writer and partial-read reader. */
export { writeArray2DIncremental } from './incremental.ts'
export { openRemoteZarrStore, openZarrStore, type ZarrStoreReader } from './reader.ts'
export type { Array2DSpec, Column, DType } from './types.ts'
export {
  ChunkScratch,
  writeArray1D,
  writeArray2D,
  writeGroup,
} from './writer.ts'
