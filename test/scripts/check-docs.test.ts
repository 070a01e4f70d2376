import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { anchorProblems, checkDocs, citationProblems, headingProblems } from '../../scripts/check-docs.ts'
import { GENERATED_BLOCKS, REPO_ROOT, renderDocs, replaceBlock, staleDocs } from '../../scripts/docs.ts'
import { METHODOLOGY_DOC, methodologyRef } from '../../src/contract/methodology.ts'
import { MODEL_VERSION } from '../../src/platform/model-version.ts'

const DOC = readFileSync(join(REPO_ROOT, METHODOLOGY_DOC), 'utf8')
const dir = mkdtempSync(join(tmpdir(), 'erm3-check-docs-'))
after(() => rmSync(dir, { recursive: true, force: true }))

/** A repository root holding only docs/methodology.md with `text`. */
function repoWith(name: string, text: string): string {
  const root = join(dir, name)
  mkdirSync(join(root, 'docs'), { recursive: true })
  writeFileSync(join(root, METHODOLOGY_DOC), text)
  return root
}

describe('check-docs', () => {
  test('the repository is in step: headings, links, citations, generated pieces', async () => {
    assert.deepEqual(await checkDocs(REPO_ROOT), [])
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/docs.ts', '--check'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    })
    assert.equal(r.status, 0, r.stderr)
  })

  test('a renumbered heading fails, as does a reordered, renamed or extra one', () => {
    const renumbered = DOC.replace(
      '## 9. Lstar and the recommended level',
      '## 10. Lstar and the recommended level',
    )
    assert.notEqual(renumbered, DOC)
    const p = headingProblems(renumbered)
    assert.ok(
      p.some((x) => x.includes('missing heading "## 9. Lstar and the recommended level"')),
      p.join('\n'),
    )
    assert.ok(p.some((x) => x.includes('"## 10. Lstar and the recommended level" is not in the section map')))
    const swapped = DOC.replace('### Rankings', '### TMP')
      .replace('### Industry beta panel', '### Rankings')
      .replace('### TMP', '### Industry beta panel')
    assert.match(headingProblems(swapped).join('\n'), /heading \d+ is "### Industry beta panel"/)
    assert.equal(headingProblems(DOC.replace('### Portfolio risk', '### Portfolio Risk')).length, 2)
    assert.ok(headingProblems(`${DOC}\n## 16. Appendix\n`).length > 0)
    // A heading inside a code block is not a heading.
    assert.deepEqual(headingProblems(`${DOC}\n\`\`\`\n## 16. Appendix\n\`\`\`\n`), [])
  })

  test('a stale version line fails, and npm run docs repairs it', async () => {
    // The temporary repository holds only the methodology: check its blocks alone.
    const blocks = GENERATED_BLOCKS.filter((b) => b.file === METHODOLOGY_DOC)
    const stale = DOC.replace(`\`${MODEL_VERSION}\``, '`ERM3-L3-v2`')
    assert.notEqual(stale, DOC)
    const root = repoWith('stale', stale)
    assert.deepEqual(await staleDocs(root, blocks), [METHODOLOGY_DOC])
    assert.ok(
      (await checkDocs(root, blocks)).includes(
        `${METHODOLOGY_DOC}: generated text is stale (run npm run docs)`,
      ),
    )
    const [fixed] = await renderDocs(root, blocks)
    assert.equal(fixed?.after, DOC)
    // A hand edit inside the contents block is stale too.
    assert.deepEqual(
      await staleDocs(repoWith('contents', DOC.replace('[1 Parameters]', '[1 Params]')), blocks),
      [METHODOLOGY_DOC],
    )
  })

  test('in-page links must name a heading', () => {
    assert.deepEqual(anchorProblems(DOC), [])
    const p = anchorProblems(`${DOC}\nSee [there](#9-lstar).\n`)
    assert.equal(p.length, 1)
    assert.match(p[0] as string, /link #9-lstar names no heading/)
  })

  test('citations name a section that exists, with one of its titles', () => {
    assert.equal(methodologyRef('lstar'), 'docs/methodology.md §9 "Lstar and the recommended level"')
    assert.equal(methodologyRef('portfolioRisk'), 'docs/methodology.md §13 "Portfolio risk"')
    assert.equal(methodologyRef('confidence'), 'docs/methodology.md §14 "_agent.confidence"')
    const ok = [
      methodologyRef('lstar'),
      'docs/methodology.md §9 "Lstar ..."',
      'docs/methodology.md §13 "Portfolio risk"',
      'docs/methodology.md §12',
      'docs/methodology.md §14 "_agent.confidence"',
    ].join('\n')
    assert.deepEqual(citationProblems('src/services/x.ts', ok), [])
    // Built from parts, so that this file's own text cites nothing wrong.
    const cite = (rest: string) => `docs/methodology.md ${rest}`
    const bad = citationProblems('src/services/x.ts', `a\n${cite('§16')}\n(${cite('§9 "Universes"')})`)
    assert.equal(bad.length, 2)
    assert.match(bad[0] as string, /^src\/services\/x\.ts:2: .*no section 16/)
    assert.match(bad[1] as string, /^src\/services\/x\.ts:3: .*§9 is "Lstar and the recommended level"/)
    assert.equal(citationProblems('src/contract/ops/x.ts', '// METHODOLOGY §7 rule').length, 1)
    assert.equal(citationProblems('src/services/x.ts', '// METHODOLOGY §7 rule').length, 0)
  })

  test('a generated piece replaces exactly the text between its markers', () => {
    const text = 'a\n<!-- generated:x -->\nold\n<!-- /generated:x -->\nb\n'
    const once = replaceBlock(text, 'x', 'new\n')
    assert.equal(once, 'a\n<!-- generated:x -->\nnew\n<!-- /generated:x -->\nb\n')
    assert.equal(replaceBlock(once, 'x', 'new'), once)
    assert.throws(() => replaceBlock(text, 'y', 'z'), /expected one "<!-- generated:y -->"/)
    assert.throws(() => replaceBlock(`${text}${text}`, 'x', 'z'), /found 2 and 2/)
    assert.throws(
      () => replaceBlock('<!-- /generated:x -->\n<!-- generated:x -->\n', 'x', 'z'),
      /comes before/,
    )
  })
})
