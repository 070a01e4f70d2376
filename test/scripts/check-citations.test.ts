import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, describe, test } from 'node:test'
import { CitationChecker, checkCitations, codePieces } from '../../scripts/check-citations.ts'

const root = mkdtempSync(join(tmpdir(), 'erm3-citations-'))
after(() => rmSync(root, { recursive: true, force: true }))

function put(rel: string, text: string): void {
  mkdirSync(dirname(join(root, rel)), { recursive: true })
  writeFileSync(join(root, rel), text)
}

put(
  'docs/methodology.md',
  '# Methodology\n\n## 1. Parameters\n\ntext\n\n## 2. Inputs\n\n### 2.1 Not a section\n',
)
put('docs/decisions/money.md', '# Money\n')
put('CONTRIBUTING.md', '# Contributing\n\n## Style\n')

const checker = new CitationChecker(root)
const messages = (rel: string, text: string) =>
  checker.checkText(rel, text).map((f) => `${f.line}: ${f.message}`)

describe('forbidden citation forms', () => {
  const forms: [string, string][] = [
    ['METHODOLOGY §5', 'METHODOLOGY'],
    ['DECISIONS.md "Money"', 'DECISIONS.md'],
    ['DECISIONS "Money"', 'DECISIONS'],
    ['DESIGN.md §2', 'DESIGN.md'],
    ['STYLE.md §8', 'STYLE.md'],
    ['spec §2.7', 'spec §'],
    ['Spec §8', 'Spec §'],
    ['issue 17 §1', 'issue 17'],
    ['Issue 6 acceptance', 'Issue 6'],
    ['the issue-14 budgets', 'issue-14'],
  ]
  for (const [form, match] of forms) {
    test(`"${form}" fails in a comment, a string, Markdown, HTML and CSS`, () => {
      const line = (n: number) => new RegExp(`^${n}: "${match.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}": `)
      const ts = messages('src/a.ts', `const x = 1\n// see ${form}\nexport const y = 2\n`)
      assert.equal(ts.length, 1, ts.join('\n'))
      assert.match(ts[0] ?? '', line(2))
      const jsdoc = messages('bench/b.ts', `/**\n * A bench (${form}).\n */\nexport {}\n`)
      assert.match(jsdoc[0] ?? '', line(2))
      const name = messages(
        'test/c.test.ts',
        `test('${form}: keys', () => {})\ntest(\`x \${1} ${form}\`, f)\n`,
      )
      assert.deepEqual(
        name.map((m) => m.split(':')[0]),
        ['1', '2'],
      )
      assert.match(messages('docs/d.md', `# D\n\nAs ${form} says.\n`)[0] ?? '', line(3))
      assert.match(messages('src/web/e.html', `<p>${form}</p>\n`)[0] ?? '', line(1))
      assert.match(messages('src/web/f.css', `/* ${form} */\n`)[0] ?? '', line(1))
    })
  }

  test('a constant named after a document is code, not a citation', () => {
    assert.deepEqual(
      messages(
        'src/g.ts',
        "const METHODOLOGY = new URL('../../docs/methodology.md', import.meta.url)\n" +
          'export const METHODOLOGY_VERSION = 3\nexport const text = readFile(METHODOLOGY)\n',
      ),
      [],
    )
  })

  test('RFC section references and ordinary words pass', () => {
    assert.deepEqual(
      messages(
        'src/h.ts',
        '// RFC 8414 §3; RFC 7591 §2. The issue is the second one; a spec of 3 columns.\n' +
          "const re = /issue 1/ // a regex is neither comment nor string: 'DESIGN.md'\n",
      ),
      ['2: "DESIGN.md": cite docs/architecture.md §n instead of DESIGN.md'],
    )
  })
})

describe('references to docs/', () => {
  test('an existing file and section pass; a missing file or section fails', () => {
    const text = [
      '/**',
      ' * docs/methodology.md §2, docs/methodology.md §1–§2, docs/decisions/money.md and',
      ' * CONTRIBUTING.md, "Style".',
      ' */',
      '// docs/methodology.md §9 is dangling',
      '// so is docs/missing.md, and docs/methodology.md §1–§3, §7',
      "const u = '../../docs/nothing-here.md'",
      "const web = 'https://example.com/docs/elsewhere.md'",
    ].join('\n')
    assert.deepEqual(messages('src/i.ts', text), [
      '5: docs/methodology.md has no section §9 (no heading "## 9.")',
      '6: docs/missing.md does not exist',
      '6: docs/methodology.md has no section §3 (no heading "## 3.")',
      '6: docs/methodology.md has no section §7 (no heading "## 7.")',
      '7: docs/nothing-here.md does not exist',
    ])
  })

  test('a subsection heading is not a section', () => {
    assert.deepEqual(messages('docs/j.md', 'See docs/methodology.md §2.1.\n'), [])
    assert.deepEqual(messages('docs/j.md', 'See docs/methodology.md §21.\n'), [
      '1: docs/methodology.md has no section §21 (no heading "## 21.")',
    ])
  })
})

describe('Markdown links', () => {
  test('relative links in docs/ and README must resolve; URLs, site paths, anchors and code do not count', () => {
    const md = [
      '# Guide',
      '[ok](methodology.md#1-parameters) [up](../CONTRIBUTING.md) [anchor](#guide)',
      '[web](https://example.com/missing.md) [site](/docs/methodology) [mail](mailto:a@b.c)',
      '[bad](missing.md) ![img](img/none.png)',
      '`[code](nope.md)`',
      '```',
      '[fenced](nope.md)',
      '```',
      '[ref]: gone.md',
    ].join('\n')
    assert.deepEqual(messages('docs/guide.md', md), [
      '4: link to missing.md resolves to nothing',
      '4: link to img/none.png resolves to nothing',
      '9: link to gone.md resolves to nothing',
    ])
    assert.deepEqual(messages('README.md', '[m](docs/methodology.md) [x](docs/x.md)\n'), [
      '1: link to docs/x.md resolves to nothing',
    ])
  })
})

describe('the tree', () => {
  test('scans the documented roots and extensions, and exempts only the check and its test', () => {
    put('src/k.ts', '// METHODOLOGY §1\n')
    put('test/l.mjs', '// issue 3\n')
    put('scripts/m.js', '// DESIGN.md §1\n')
    put('src/n.json', '{"a": "METHODOLOGY §1"}\n')
    put('other/o.ts', '// METHODOLOGY §1\n')
    put('README.md', 'See [bad](docs/none.md).\n')
    put('scripts/check-citations.ts', '// METHODOLOGY §1\n')
    put('test/scripts/check-citations.test.ts', '// issue 1\n')
    assert.deepEqual(
      checkCitations(root).map((f) => `${f.file}:${f.line}`),
      ['src/k.ts:1', 'test/l.mjs:1', 'scripts/m.js:1', 'README.md:1'],
    )
  })

  test('comments and strings are found through templates, regexes and nested braces', () => {
    const text = [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal
      'const a = `x ${b ? `y ${c}` : { d: 1 }.d} z` // one',
      'const r = a.length / 2 / 3 // two',
      "const s = /['\"`]/.test(a) ? '\\'' : \"q\" /* three */",
    ].join('\n')
    assert.deepEqual(
      codePieces(text).map((p) => p.text),
      ['`x ${', '`y ${', '}`', '} z`', '// one', '// two', "'\\''", '"q"', '/* three */'],
    )
  })
})
