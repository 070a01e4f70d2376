import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import semver from 'semver'

// What `npm ci` installs must run on every Node erm3 declares, and its install scripts must be
// declared the way current npm expects (npm 11 already warns about unlisted ones; a later npm
// skips them, which would leave better-sqlite3 without its native binding).
const root = fileURLToPath(new URL('../..', import.meta.url))

interface Manifest {
  name: string
  version: string
  engines?: { node?: string }
  scripts?: Record<string, string>
  allowScripts?: Record<string, boolean>
}

const read = (dir: string): Manifest => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))

/** Every installed package directory, nested node_modules and scopes included. */
function installed(dir = join(root, 'node_modules')): string[] {
  if (!existsSync(dir)) return []
  const out: string[] = []
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.')) continue
    const p = join(dir, name)
    if (name.startsWith('@')) {
      for (const sub of readdirSync(p)) out.push(...withNested(join(p, sub)))
    } else out.push(...withNested(p))
  }
  return out
}

function withNested(dir: string): string[] {
  if (!existsSync(join(dir, 'package.json'))) return []
  return [dir, ...installed(join(dir, 'node_modules'))]
}

const own = read(root)
const packages = installed()

test('node_modules is installed (these checks need it)', () => {
  assert.ok(packages.length > 100, `only ${packages.length} packages found under node_modules`)
})

test("no installed package requires a newer Node than erm3's engines.node", () => {
  const ours = own.engines?.node
  assert.ok(ours && semver.validRange(ours), 'package.json declares engines.node')
  const offending: string[] = []
  for (const dir of packages) {
    const m = read(dir)
    const theirs = m.engines?.node
    // A range npm cannot parse is not a requirement npm enforces either.
    if (!theirs || !semver.validRange(theirs)) continue
    if (!semver.subset(ours, theirs))
      offending.push(`${relative(root, dir)}@${m.version} needs node ${theirs}`)
  }
  assert.deepEqual(offending, [], `erm3 declares node ${ours}`)
})

test('every install script of an installed package is declared in allowScripts', () => {
  const allowed = own.allowScripts ?? {}
  const needs: string[] = []
  for (const dir of packages) {
    const m = read(dir)
    const s = m.scripts ?? {}
    // npm runs `node-gyp rebuild` for a package with binding.gyp and no install script of its own.
    const scripted =
      ['preinstall', 'install', 'postinstall'].some((k) => k in s) || existsSync(join(dir, 'binding.gyp'))
    if (!scripted) continue
    // Declared either way: true runs it; false denies it on purpose (@scarf/scarf, swagger-ui-dist's
    // install-time analytics, also switched off by scarfSettings).
    if (typeof allowed[m.name] === 'boolean' || typeof allowed[`${m.name}@${m.version}`] === 'boolean')
      continue
    needs.push(`${m.name}@${m.version}`)
  }
  assert.deepEqual(needs, [], 'add them to allowScripts in package.json (npm install-scripts approve …)')
})
