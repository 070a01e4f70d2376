/**
 * zarr.json documents (Zarr v3 core spec): writing the one layout we produce, and parsing with
 * validation so a store we cannot read correctly fails at open time with a message naming the
 * node, instead of returning wrong numbers later.
 */
import { AppError } from '../../platform/errors.ts'
import { CHUNK_SEPARATOR } from './layout.ts'
import { type ArrayMeta, DTYPES, type DType, isDType } from './types.ts'

export class ZarrFormatError extends AppError {
  constructor(where: string, problem: string) {
    super('UNSUPPORTED_FORMAT', `zarr: ${where}: ${problem}`)
    this.name = 'ZarrFormatError'
  }
}

export type ParsedNode =
  | { kind: 'group'; attributes: Record<string, unknown> }
  | { kind: 'array'; meta: ArrayMeta; separator: '/' | '.' }

/** Symbol-major chunks (order [1,0]): one symbol's days inside a chunk are contiguous bytes. */
const CODECS_2D = [
  { name: 'transpose', configuration: { order: [1, 0] } },
  { name: 'bytes', configuration: { endian: 'little' } },
]
const CODECS_1D = [{ name: 'bytes', configuration: { endian: 'little' } }]

export function groupJson(attributes: Record<string, unknown>): string {
  return `${JSON.stringify({ zarr_format: 3, node_type: 'group', attributes }, null, 2)}\n`
}

export function arrayJson(m: Omit<ArrayMeta, 'path'>): string {
  const doc: Record<string, unknown> = {
    zarr_format: 3,
    node_type: 'array',
    shape: m.shape,
    data_type: m.dtype,
    chunk_grid: { name: 'regular', configuration: { chunk_shape: m.chunks } },
    chunk_key_encoding: { name: 'default', configuration: { separator: CHUNK_SEPARATOR } },
    fill_value: encodeFill(m.dtype, m.fillValue),
    codecs: m.shape.length === 2 ? CODECS_2D : CODECS_1D,
    attributes: m.attributes,
  }
  if (m.dimensionNames) doc.dimension_names = m.dimensionNames
  return `${JSON.stringify(doc, null, 2)}\n`
}

/** JSON has no NaN/Infinity, and -0 would print as 0: the spec's string forms cover these. */
function encodeFill(dtype: DType, v: number): number | string {
  checkFill(dtype, v, 'fill value')
  if (Number.isNaN(v)) return 'NaN'
  if (v === Infinity) return 'Infinity'
  if (v === -Infinity) return '-Infinity'
  if (Object.is(v, -0)) return dtype === 'float64' ? '0x8000000000000000' : '0x80000000'
  return v
}

export function checkFill(dtype: DType, v: number, what: string): void {
  const info = DTYPES[dtype]
  if (typeof v !== 'number') throw new TypeError(`zarr: ${what} must be a number`)
  if (info.float) return
  if (!Number.isInteger(v) || v < info.min || v > info.max)
    throw new RangeError(`zarr: ${what} ${v} is not a valid ${dtype}`)
}

const ARRAY_KEYS = new Set([
  'zarr_format',
  'node_type',
  'shape',
  'data_type',
  'chunk_grid',
  'chunk_key_encoding',
  'fill_value',
  'codecs',
  'attributes',
  'dimension_names',
  'storage_transformers',
])
// consolidated_metadata: zarr-python writes it on groups; it only duplicates child metadata.
const GROUP_KEYS = new Set(['zarr_format', 'node_type', 'attributes', 'consolidated_metadata'])

export function parseNodeJson(text: string, path: string, file: string): ParsedNode {
  const where = `${path === '' ? 'root node' : `node "${path}"`} (${file})`
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch (err) {
    throw new ZarrFormatError(where, `zarr.json is not valid JSON (${(err as Error).message})`)
  }
  if (!isRecord(doc)) throw new ZarrFormatError(where, 'zarr.json is not a JSON object')
  if (doc.zarr_format !== 3)
    throw new ZarrFormatError(
      where,
      `zarr_format ${JSON.stringify(doc.zarr_format)} is not supported (need 3)`,
    )
  const attributes = doc.attributes === undefined ? {} : doc.attributes
  if (!isRecord(attributes)) throw new ZarrFormatError(where, 'attributes must be an object')
  if (doc.node_type === 'group') {
    checkExtraKeys(doc, GROUP_KEYS, where)
    return { kind: 'group', attributes }
  }
  if (doc.node_type !== 'array')
    throw new ZarrFormatError(where, `node_type ${JSON.stringify(doc.node_type)} is not "array" or "group"`)
  checkExtraKeys(doc, ARRAY_KEYS, where)
  return parseArray(doc, path, attributes, where)
}

function parseArray(
  doc: Record<string, unknown>,
  path: string,
  attributes: Record<string, unknown>,
  where: string,
): ParsedNode {
  const shape = intList(doc.shape, 0, where, 'shape')
  if (shape.length !== 1 && shape.length !== 2)
    throw new ZarrFormatError(where, `only 1-D and 2-D arrays are supported, shape is [${shape}]`)
  if (!isDType(doc.data_type))
    throw new ZarrFormatError(where, `unsupported data_type ${JSON.stringify(doc.data_type)}`)
  const dtype = doc.data_type
  const grid = doc.chunk_grid
  if (!isRecord(grid) || grid.name !== 'regular' || !isRecord(grid.configuration))
    throw new ZarrFormatError(where, 'chunk_grid must be {"name":"regular", ...}')
  const chunks = intList(grid.configuration.chunk_shape, 1, where, 'chunk_shape')
  if (chunks.length !== shape.length)
    throw new ZarrFormatError(where, `chunk_shape [${chunks}] does not match the rank of shape [${shape}]`)
  const separator = parseKeyEncoding(doc.chunk_key_encoding, where)
  checkCodecs(doc.codecs, shape.length, DTYPES[dtype].itemSize, where)
  if (Array.isArray(doc.storage_transformers) && doc.storage_transformers.length > 0)
    throw new ZarrFormatError(where, 'storage_transformers are not supported')
  const fillValue = parseFill(doc.fill_value, dtype, where)
  const dimensionNames = parseDimensionNames(doc.dimension_names, shape.length, where)
  return {
    kind: 'array',
    meta: { path, shape, dtype, chunks, fillValue, attributes, dimensionNames },
    separator,
  }
}

function checkExtraKeys(doc: Record<string, unknown>, known: Set<string>, where: string): void {
  for (const [k, v] of Object.entries(doc)) {
    if (known.has(k)) continue
    // Spec: unknown metadata must make the open fail unless marked must_understand: false.
    if (isRecord(v) && v.must_understand === false) continue
    throw new ZarrFormatError(where, `unknown metadata field "${k}" (an extension this reader does not know)`)
  }
}

function parseKeyEncoding(enc: unknown, where: string): '/' | '.' {
  if (!isRecord(enc) || enc.name !== 'default')
    throw new ZarrFormatError(
      where,
      `chunk_key_encoding ${JSON.stringify(enc)} is not supported (need "default")`,
    )
  const sep = isRecord(enc.configuration) ? enc.configuration.separator : undefined
  if (sep === undefined || sep === '/') return '/'
  if (sep === '.') return '.'
  throw new ZarrFormatError(where, `chunk key separator ${JSON.stringify(sep)} is not supported`)
}

/** Only uncompressed layouts: the reader does positioned partial reads inside chunk files. */
function checkCodecs(codecs: unknown, rank: number, itemSize: number, where: string): void {
  const expected = rank === 2 ? 'transpose(order [1,0]) + bytes(little)' : 'bytes(little)'
  const fail = (why: string) =>
    new ZarrFormatError(where, `${why}; this reader handles only uncompressed chunks: ${expected}`)
  if (!Array.isArray(codecs)) throw fail('codecs is missing')
  for (const c of codecs) {
    const name = isRecord(c) ? c.name : c
    if (name !== 'transpose' && name !== 'bytes') throw fail(`unsupported codec ${JSON.stringify(name)}`)
  }
  const names = codecs.map((c) => (isRecord(c) ? c.name : c)).join(',')
  if (names !== (rank === 2 ? 'transpose,bytes' : 'bytes')) throw fail(`unsupported codec chain [${names}]`)
  if (rank === 2) {
    const order = configOf(codecs[0]).order
    if (!Array.isArray(order) || order[0] !== 1 || order[1] !== 0 || order.length !== 2)
      throw fail(`unsupported transpose order ${JSON.stringify(order)}`)
  }
  const endian = configOf(codecs[codecs.length - 1]).endian
  if (endian !== 'little' && !(itemSize === 1 && (endian === undefined || endian === 'big')))
    throw fail(`unsupported bytes endian ${JSON.stringify(endian)}`)
}

function configOf(codec: unknown): Record<string, unknown> {
  return isRecord(codec) && isRecord(codec.configuration) ? codec.configuration : {}
}

function parseFill(v: unknown, dtype: DType, where: string): number {
  const info = DTYPES[dtype]
  let x: number | undefined
  if (typeof v === 'number') x = v
  else if (info.float && typeof v === 'string') x = parseFloatFill(v, dtype)
  if (x === undefined || (!info.float && (!Number.isInteger(x) || x < info.min || x > info.max)))
    throw new ZarrFormatError(where, `fill_value ${JSON.stringify(v)} is not a valid ${dtype}`)
  return x
}

function parseFloatFill(s: string, dtype: DType): number | undefined {
  if (s === 'NaN') return Number.NaN
  if (s === 'Infinity') return Infinity
  if (s === '-Infinity') return -Infinity
  const digits = dtype === 'float64' ? 16 : 8
  if (!new RegExp(`^0x[0-9a-fA-F]{${digits}}$`).test(s)) return undefined
  // Hex fill values are the IEEE bit pattern, big-endian as written.
  const view = new DataView(new ArrayBuffer(8))
  if (dtype === 'float64') {
    view.setBigUint64(0, BigInt(s))
    return view.getFloat64(0)
  }
  view.setUint32(0, Number(s))
  return view.getFloat32(0)
}

function parseDimensionNames(v: unknown, rank: number, where: string): (string | null)[] | null {
  if (v === undefined || v === null) return null
  if (!Array.isArray(v) || v.length !== rank || !v.every((n) => n === null || typeof n === 'string'))
    throw new ZarrFormatError(where, `dimension_names must be ${rank} strings or nulls`)
  return v as (string | null)[]
}

function intList(v: unknown, min: number, where: string, what: string): number[] {
  if (!Array.isArray(v) || !v.every((x) => Number.isSafeInteger(x) && x >= min))
    throw new ZarrFormatError(where, `${what} must be a list of integers >= ${min}, got ${JSON.stringify(v)}`)
  return v as number[]
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
