import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { rmSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { InputError } from '../../src/platform/errors.ts'

/** Small helpers shared by the importer tests. */

const made: string[] = []
process.once('exit', () => {
  for (const d of made) rmSync(d, { recursive: true, force: true })
})

/** A fresh temporary directory, removed when the test process exits. */
export async function tempDir(prefix = 'erm3-import-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  made.push(dir)
  return dir
}

export async function put(dir: string, name: string, content: string | Uint8Array): Promise<string> {
  const path = join(dir, name)
  await mkdir(dirname(path), { recursive: true })
  await writeFile(path, content)
  return path
}

export async function exists(path: string): Promise<boolean> {
  try {
    await stat(path)
    return true
  } catch {
    return false
  }
}

/** Nothing at `out`, and no temporary sibling left behind by an atomic write. */
export async function assertNothingWritten(out: string): Promise<void> {
  assert.equal(await exists(out), false, `${out} must not exist`)
  const leftovers = (await readdir(dirname(out))).filter((n) => n.startsWith('.') && n.includes('.tmp-'))
  assert.deepEqual(leftovers, [], 'no temporary directories left behind')
}

export interface Expected {
  file: string
  line: number
  column?: string | number
  message?: RegExp
}

/** The promise rejects with an InputError at file/line(/column) whose message names them. */
export async function assertInputError(p: Promise<unknown>, want: Expected): Promise<InputError> {
  let caught: unknown
  try {
    await p
  } catch (err) {
    caught = err
  }
  assert.ok(caught instanceof InputError, `expected an InputError, got ${String(caught)}`)
  const loc = caught.location
  assert.equal(loc.file, want.file, caught.message)
  assert.equal(loc.line, want.line, caught.message)
  assert.notEqual(loc.column, undefined, `error names a column: ${caught.message}`)
  if (want.column !== undefined) assert.equal(loc.column, want.column, caught.message)
  assert.ok(
    caught.message.startsWith(`${want.file}:${want.line}`),
    `message names file and line: ${caught.message}`,
  )
  if (want.message) assert.match(caught.message, want.message)
  return caught
}

/** path → sha256 of every file under dir (for "left unchanged" checks). */
export async function snapshot(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue
    const path = join(entry.parentPath, entry.name)
    out.set(
      path.slice(dir.length),
      createHash('sha256')
        .update(await readFile(path))
        .digest('hex'),
    )
  }
  return out
}
