/**
 * Finds and validates every node of a store once, at open time: the reader never touches
 * metadata again. Arrays have no children, so their chunk trees are not walked.
 */
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { BlobReader } from '../object-store/types.ts'
import type { Grid2D } from './layout.ts'
import { type ParsedNode, parseNodeJson, ZarrFormatError } from './metadata.ts'
import { runBounded } from './pool.ts'
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

/**
 * The same tree for a store under key `root` of a remote reader, from the listing of its objects
 * (`files`, keys relative to the reader): every zarr.json not inside an array is a node.
 * Array nodes' `dir` is then a key prefix (chunk keys are joined with "/").
 */
export async function walkListing(
  blobs: BlobReader,
  root: string,
  files: ReadonlyMap<string, number>,
  known: ReadonlyMap<string, string> = new Map(),
): Promise<StoreTree> {
  const tree: StoreTree = { arrays: new Map(), groups: new Map() }
  const base = root === '' ? '' : `${root}/`
  const rels: string[] = []
  for (const key of files.keys()) {
    if (!key.startsWith(base)) continue
    const rel = key.slice(base.length)
    if (rel === 'zarr.json') rels.push('')
    else if (rel.endsWith('/zarr.json')) rels.push(rel.slice(0, -'/zarr.json'.length))
  }
  if (!rels.includes(''))
    throw new ZarrFormatError(`store ${blobs.url}/${root}`, 'no zarr.json at the root of the build')
  const docs: { rel: string; key: string; text: string }[] = []
  const fetch: string[] = []
  for (const rel of rels) {
    const key = `${base}${rel === '' ? '' : `${rel}/`}zarr.json`
    const text = known.get(key)
    if (text === undefined) fetch.push(rel)
    else docs.push({ rel, key, text })
  }
  // Listings without the documents (they carry them since erm3 publish does): fetch, a few at a time.
  await runBounded(
    fetch.length,
    16,
    () => null,
    async (_, n) => {
      const rel = fetch[n]
      const key = `${base}${rel === '' ? '' : `${rel}/`}zarr.json`
      const bytes = await blobs.get(key)
      if (bytes === null)
        throw new ZarrFormatError(`store ${blobs.url}/${root}`, `${key} is listed but missing`)
      docs.push({ rel, key, text: new TextDecoder().decode(bytes) })
    },
  )
  // Parents first, so a zarr.json inside an array (chunk keys never end so, but be strict) is skipped.
  docs.sort((a, b) => a.rel.split('/').length - b.rel.split('/').length)
  const isInsideArray = (rel: string) => {
    for (const a of tree.arrays.keys()) if (a === '' || rel.startsWith(`${a}/`)) return true
    return false
  }
  for (const d of docs) {
    if (d.rel !== '' && isInsideArray(d.rel)) continue
    const node = parseNodeJson(d.text, d.rel, `${blobs.url}/${d.key}`)
    if (node.kind === 'array') tree.arrays.set(d.rel, toArrayNode(node, `${base}${d.rel}`))
    else tree.groups.set(d.rel, deepFreeze(node.attributes))
  }
  return tree
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
