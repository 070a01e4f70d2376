import assert from 'node:assert/strict'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

// Node 20 runs only the test files it is given: a file missing from the list would silently
// never run. This pins the list in package.json to the files on disk.
const root = fileURLToPath(new URL('../..', import.meta.url))

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n)
    return statSync(p).isDirectory() ? walk(p) : n.endsWith('.test.ts') ? [relative(root, p)] : []
  })
}

test('every *.test.ts file is in the npm test command, and nothing else', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { test: string } }
  const listed = pkg.scripts.test
    .split(/\s+/)
    .filter((w) => w.endsWith('.test.ts'))
    .sort()
  assert.deepEqual(listed, walk(join(root, 'test')).sort())
})
