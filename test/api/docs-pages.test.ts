import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { prefersMarkdown } from '../../src/api/routes/docs.ts'
import {
  METHODOLOGY_SECTIONS,
  type MethodologyKey,
  methodologyHeading,
} from '../../src/contract/methodology.ts'
import { headingSlug, renderMarkdown } from '../../src/platform/markdown.ts'
import { MODEL_VERSION } from '../../src/platform/model-version.ts'
import { startTestApp, type TestApp } from '../helpers/test-app.ts'

const SOURCE = readFileSync(new URL('../../docs/methodology.md', import.meta.url))

/** Tags and attributes the renderer may emit; anything else came from the source unescaped. */
const TAGS = new Set(
  'h1 h2 h3 h4 h5 h6 p a code pre ul ol li table thead tbody tr th td div strong em del br hr blockquote'.split(
    ' ',
  ),
)
const ATTRS = new Set(['id', 'href', 'title', 'class', 'align', 'start'])
function assertOnlySafeMarkup(html: string) {
  for (const m of html.matchAll(/<\/?([a-zA-Z][a-zA-Z0-9]*)([^>]*)>/g)) {
    assert.ok(TAGS.has((m[1] as string).toLowerCase()), `tag <${m[1]}> in ${m[0]}`)
    for (const a of (m[2] as string).matchAll(/\s([a-zA-Z-]+)=/g))
      assert.ok(ATTRS.has((a[1] as string).toLowerCase()), `attribute ${a[1]} in ${m[0]}`)
  }
}

describe('/docs/methodology: the page, its Markdown, negotiation', () => {
  let t: TestApp
  before(async () => {
    t = await startTestApp()
  })
  after(() => t?.close())
  const get = (url: string, headers: Record<string, string> = {}) =>
    t.app.fastify.inject({ method: 'GET', url, headers })

  test('an HTML page with the headers of the other pages; its one style sheet is allowed by hash', async () => {
    const r = await get('/docs/methodology', { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' })
    assert.equal(r.statusCode, 200)
    assert.equal(r.headers['content-type'], 'text/html; charset=utf-8')
    assert.equal(r.headers['x-content-type-options'], 'nosniff')
    assert.equal(r.headers['referrer-policy'], 'no-referrer')
    assert.match(String(r.headers.vary), /Accept/)
    const csp = String(r.headers['content-security-policy'])
    for (const d of ["default-src 'none'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"])
      assert.ok(csp.includes(d), d)
    assert.doesNotMatch(csp, /script-src|unsafe-inline/)
    const style = /<style>([\s\S]*?)<\/style>/.exec(r.body)?.[1] ?? ''
    const hash = createHash('sha256').update(style).digest('base64')
    assert.ok(csp.includes(`style-src 'sha256-${hash}'`), 'the CSP names the hash of the inline style')
    assert.doesNotMatch(r.body, /<script|style="/, 'no script, no style attribute')
    assert.match(r.body, /<title>erm3 methodology<\/title>/)
  })

  test('every section of the map is a heading with its GitHub anchor, listed in the contents', async () => {
    const html = (await get('/docs/methodology')).body
    const nav = /<nav class="toc"[\s\S]*?<\/nav>/.exec(html)?.[0] ?? ''
    for (const key of Object.keys(METHODOLOGY_SECTIONS) as MethodologyKey[]) {
      const heading = methodologyHeading(key).replace(/^#+ /, '')
      const id = headingSlug(heading)
      const depth = METHODOLOGY_SECTIONS[key].n && methodologyHeading(key).startsWith('### ') ? 3 : 2
      assert.match(html, new RegExp(`<h${depth} id="${id}">`), `${key}: <h${depth} id="${id}">`)
      assert.ok(nav.includes(`href="#${id}"`), `${key} in the contents`)
    }
    assert.match(html, /<h2 id="9-lstar-and-the-recommended-level">9\. Lstar and the recommended level<\/h2>/)
    assert.match(html, /<h2 id="14-_agentconfidence">14\. <code>_agent\.confidence<\/code><\/h2>/)
    const ids = new Set([...html.matchAll(/ id="([^"]+)"/g)].map((m) => m[1]))
    for (const m of html.matchAll(/href="#([^"]+)"/g)) assert.ok(ids.has(m[1]), `#${m[1]} resolves`)
  })

  test('formulas are legible code (escaped, class "math"); names stay plain code; tables are styled', async () => {
    const html = (await get('/docs/methodology')).body
    assert.ok(html.includes('<code class="math">w_k = 0.5^(k / H)</code>'))
    assert.ok(html.includes('<code class="math">β_m = &lt;r,m&gt; / &lt;m,m&gt;</code>'))
    assert.ok(html.includes('<code class="math">mkt_er = β_m² &lt;m,m&gt; / &lt;r,r&gt;</code>'))
    assert.ok(html.includes('<code>l3_sub_er</code>'))
    assert.match(html, /code\.math\{/, 'formulas have their own style')
    assert.match(html, /<div class="table"><table>\s*<thead>\s*<tr>\s*<th>parameter<\/th>/)
    assert.ok(html.includes(`<code>${MODEL_VERSION}</code>`), 'the model version of this build')
    assert.doesNotMatch(html, /generated:|&lt;!--/, 'the generator markers are not shown')
    assertOnlySafeMarkup(/<main>([\s\S]*)<\/main>/.exec(html)?.[1] ?? '')
  })

  test('rendered once: repeated requests get the same page', async () => {
    const a = (await get('/docs/methodology')).body
    const b = (await get('/docs/methodology')).body
    assert.equal(a, b)
  })

  test('/docs/methodology.md is the file, byte for byte, as text/markdown', async () => {
    const r = await get('/docs/methodology.md')
    assert.equal(r.statusCode, 200)
    assert.equal(r.headers['content-type'], 'text/markdown; charset=utf-8')
    assert.equal(r.headers['x-content-type-options'], 'nosniff')
    assert.ok(r.rawPayload.equals(SOURCE), 'byte-identical to docs/methodology.md')
    const head = await t.app.fastify.inject({ method: 'HEAD', url: '/docs/methodology.md' })
    assert.equal(head.statusCode, 200)
  })

  test('Accept: text/markdown on /docs/methodology gets the Markdown; browsers and */* get the page', async () => {
    const md = await get('/docs/methodology', { accept: 'text/markdown' })
    assert.equal(md.headers['content-type'], 'text/markdown; charset=utf-8')
    assert.ok(md.rawPayload.equals(SOURCE))
    assert.match(String(md.headers.vary), /Accept/)
    for (const accept of ['*/*', 'text/html', 'text/markdown;q=0.5, text/html', 'text/*'])
      assert.equal(
        (await get('/docs/methodology', { accept })).headers['content-type'],
        'text/html; charset=utf-8',
        accept,
      )
    assert.equal(prefersMarkdown(undefined), false)
    assert.equal(prefersMarkdown('text/markdown, text/html;q=0.9'), true)
    assert.equal(prefersMarkdown('text/markdown, */*;q=0.1'), true)
    assert.equal(prefersMarkdown('text/markdown;q=0, */*'), false)
    assert.equal(prefersMarkdown('text/markdown, text/html'), false, 'a tie serves HTML')
  })

  test('OpenAPI and discovery list both documents; descriptions cite the methodology by its sections', async () => {
    const doc = JSON.parse((await get('/openapi.json')).body) as {
      paths: Record<
        string,
        Record<string, { description?: string; responses: Record<string, { content: object }> }>
      >
    }
    const content = (p: string) => Object.keys(doc.paths[p]?.get?.responses['200']?.content ?? {})
    assert.deepEqual(content('/docs/methodology'), ['text/html', 'text/markdown'])
    assert.deepEqual(content('/docs/methodology.md'), ['text/markdown'])
    assert.match(
      doc.paths['/lstar']?.get?.description ?? '',
      /docs\/methodology\.md §9 "Lstar and the recommended level" rule/,
    )
    assert.match(
      doc.paths['/returns-decomposition']?.get?.description ?? '',
      /docs\/methodology\.md §8 "Daily return decomposition"/,
    )
    const text = JSON.stringify(doc)
    assert.doesNotMatch(text, /METHODOLOGY §|DECISIONS|spec §/)
    const manifest = JSON.parse((await get('/.well-known/agent-manifest')).body) as {
      docs: Record<string, string>
      pricing: { free_endpoints: string[] }
    }
    assert.match(manifest.docs.methodology ?? '', /\/docs\/methodology$/)
    assert.match(manifest.docs.methodology_markdown ?? '', /\/docs\/methodology\.md$/)
    assert.ok(manifest.pricing.free_endpoints.includes('GET /docs/methodology.md'))
    const llms = (await get('/llms.txt')).body
    assert.match(llms, /\[Methodology as Markdown\]\(\S+\/docs\/methodology\.md\)/)
  })
})

describe('the Markdown renderer escapes what the source holds', () => {
  test('raw HTML, scripts, event handlers and unsafe links come out as text', async () => {
    const hostile = [
      '# Title <img src=x onerror=alert(1)>',
      '',
      '<script>alert(1)</script>',
      '',
      '<div onclick="alert(1)">block</div>',
      '',
      'Inline <b onmouseover="x">bold</b> and <iframe src="//evil"></iframe>.',
      '',
      '[js](javascript:alert(1)) [data](data:text/html,<b>x</b>) [ok](#title) [web](https://example.com "a\\"b")',
      '',
      '![img](https://evil.example/x.png) `<code>` and `a < b`',
      '',
      '## Head "quoted" <i>x</i>',
      '',
      '<!-- a comment --><script>no</script>',
      '',
      '| a | <b>b</b> |',
      '|---|---|',
      '| `<x>` | y |',
    ].join('\n')
    const { html, headings } = await renderMarkdown(hostile)
    assertOnlySafeMarkup(html)
    assert.doesNotMatch(html, /javascript:|data:text|<img|<script|<iframe/)
    assert.doesNotMatch(html, /<[^>]*\son\w+=/, 'no event handler inside a tag')
    assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), 'a script block is shown as text')
    assert.ok(html.includes('<a href="#title">ok</a>'))
    assert.ok(html.includes('<a href="https://example.com" title="a&quot;b">web</a>'))
    assert.ok(html.includes('&lt;code&gt;</code>'), 'code spans are escaped once')
    assert.ok(html.includes('<code class="math">a &lt; b</code>'))
    assert.deepEqual(
      headings.map((h) => [h.depth, h.id]),
      [
        [1, 'title-img-srcx-onerroralert1'],
        [2, 'head-quoted-ixi'],
      ],
    )
  })
})
