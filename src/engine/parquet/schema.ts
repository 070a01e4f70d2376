import type { SchemaNode, TopColumn } from './footer.ts'
import type { TStruct } from './thrift.ts'
import {
  type ColumnType,
  ConvertedType as CT,
  LogicalTypeId as LT,
  PhysicalType as PT,
  Repetition,
} from './types.ts'

/**
 * Which in-memory column shape a file column becomes. It depends on the schema alone (never on
 * the encoding), so a file reads the same whether the fast path or the hyparquet fallback decodes it.
 */
export function targetType(col: TopColumn): ColumnType {
  if (col.nested)
    throw new Error(`parquet column "${col.name}" is nested (list/struct/map), which is not supported`)
  const { type, convertedType: ct, logical } = col.leaf
  if (ct === CT.DATE || has(logical, LT.DATE)) return 'DATE'
  if (
    ct === CT.TIMESTAMP_MILLIS ||
    ct === CT.TIMESTAMP_MICROS ||
    has(logical, LT.TIMESTAMP) ||
    type === PT.INT96
  ) {
    return 'DATE'
  }
  switch (type) {
    case PT.DOUBLE:
      return 'DOUBLE'
    case PT.FLOAT:
      return 'FLOAT'
    case PT.INT32:
      return col.leaf.repetition === Repetition.REQUIRED && isInt32(col.leaf) ? 'INT32' : 'DOUBLE'
    case PT.INT64:
    case PT.BOOLEAN:
      return 'DOUBLE'
    case PT.BYTE_ARRAY:
      return isDecimal(col.leaf) ? 'DOUBLE' : 'STRING'
    case PT.FIXED_LEN_BYTE_ARRAY:
      if (isDecimal(col.leaf) || has(logical, LT.FLOAT16)) return 'DOUBLE'
      if (has(logical, LT.UUID)) return 'STRING'
  }
  throw new Error(`parquet column "${col.name}" has an unsupported type (physical type ${type ?? 'none'})`)
}

/** Whether our own page decoder understands this column's values (codec and encodings are checked per chunk). */
export function isNativeColumn(col: TopColumn, target: ColumnType): boolean {
  const leaf = col.leaf
  switch (leaf.type) {
    case PT.DOUBLE:
    case PT.FLOAT:
      return true
    case PT.INT32:
      return target === 'DATE' || target === 'INT32' || (target === 'DOUBLE' && isInt32(leaf))
    case PT.BYTE_ARRAY:
      return target === 'STRING' && !has(leaf.logical, LT.UUID)
    default:
      return false
  }
}

/** Plain signed 32-bit integers (or narrower types that fit), i.e. no scaling or reinterpretation needed. */
function isInt32(leaf: SchemaNode): boolean {
  const ct = leaf.convertedType
  const plainCt = ct === undefined || ct === CT.INT_8 || ct === CT.INT_16 || ct === CT.INT_32
  const smallUnsigned = ct === CT.UINT_8 || ct === CT.UINT_16
  if (!plainCt && !smallUnsigned) return false
  const lt = leaf.logical
  if (lt === undefined) return true
  const int = lt[LT.INTEGER]
  if (int === undefined || typeof int !== 'object' || Array.isArray(int) || int instanceof Uint8Array)
    return false
  return int[2] === true || (typeof int[1] === 'number' && int[1] < 32)
}

function isDecimal(leaf: SchemaNode): boolean {
  return leaf.convertedType === CT.DECIMAL || has(leaf.logical, LT.DECIMAL)
}

function has(logical: TStruct | undefined, id: number): boolean {
  return logical !== undefined && logical[id] !== undefined
}
