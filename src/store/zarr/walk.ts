/**
 * Finds and validates every node of a store once, at open time: the reader never touches
 * metadata again. Arrays have no children, so their chunk trees are not walked.
 */
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Grid2D } from './layout.ts'
import { type ParsedNode, parseNodeJson, ZarrFormatError } from './metadata.ts'
import { type ArrayMeta, DTYPES } from './types.ts'

export interface ArrayNode {
  meta: ArrayMeta
  dir: string
  separator: '/' | '.'
  itemSize: number
  /** Set for 2-D arrays. */
  grid: Grid2D | null
}

export interface StoreTree {
  arrays: Map<string, ArrayNode>
  groups: Map<string, Record<string, unknown>>
}

const V2_FILES = ['.zarray', '.zgroup', '.zattrs', '.zmetadata']

export async function walkStore(root: string): Promise<StoreTree> {
  const tree: StoreTree = { arrays: new Map(), groups: new Map() }
  try {
    await readdir(root)
  } catch (err) {
    throw new ZarrFormatError(`store ${root}`, `cannot read the store directory (${(err as Error).message})`)
  }
  await walkDir(root, '', tree)
  return tree
}

async function walkDir(root: string, rel: string, tree: StoreTree): Promise<void> {
  const dir = join(root, rel)
  const entries = await readdir(dir, { withFileTypes: true })
  const names = new Set(entries.map((e) => e.name))
  if (names.has('zarr.json')) {
    const file = join(dir, 'zarr.json')
    const node = parseNodeJson(await readFile(file, 'utf8'), rel, file)
    if (node.kind === 'array') {
      tree.arrays.set(rel, toArrayNode(node, dir))
      return
    }
    tree.groups.set(rel, deepFreeze(node.attributes))
  } else {
    const v2 = V2_FILES.find((f) => names.has(f))
    if (v2) {
      const where = `${rel === '' ? 'root node' : `node "${rel}"`} (${join(dir, v2)})`
      throw new ZarrFormatError(where, 'this is a Zarr v2 store; only Zarr v3 (zarr.json) is supported')
    }
  }
  // Hidden directories are temporaries of atomic writes, not nodes.
  const subdirs = entries.filter((e) => e.isDirectory() && !e.name.startsWith('.'))
  await Promise.all(subdirs.map((e) => walkDir(root, rel === '' ? e.name : `${rel}/${e.name}`, tree)))
}

function toArrayNode(node: Extract<ParsedNode, { kind: 'array' }>, dir: string): ArrayNode {
  const { meta, separator } = node
  const grid: Grid2D | null =
    meta.shape.length === 2
      ? {
          dtype: meta.dtype,
          days: meta.shape[0],
          symbols: meta.shape[1],
          cd: meta.chunks[0],
          cs: meta.chunks[1],
          fill: meta.fillValue,
        }
      : null
  // meta() hands this object to callers: freeze it so no caller can corrupt the shared copy.
  return { meta: deepFreeze(meta), dir, separator, itemSize: DTYPES[meta.dtype].itemSize, grid }
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v)
    for (const x of Object.values(v)) deepFreeze(x)
  }
  return v
}
