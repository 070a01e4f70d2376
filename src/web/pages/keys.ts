import type { ResponseOf } from '../../contract/client.ts'
import { call } from '../api.ts'
import { el, errorMessage, message, rowAction, table } from '../dom.ts'
import { activitySection, agentsSection } from './agents.ts'

/**
 * API keys: list, create (shown once, with copy and ready-to-paste snippets), rename, rotate,
 * revoke; then the connected agents (OAuth grants) and the account's recent activity.
 */

type Keys = ResponseOf<'listAccountKeys'>
type Key = Keys['keys'][number]

const short = (iso: string | null) => (iso ? iso.slice(0, 16).replace('T', ' ') : null)

/** The one-time reveal: the key, a copy button, a curl line and an MCP client configuration. */
function reveal(apiKey: string, what: string): HTMLElement {
  const origin = location.origin
  const code = el('code', { class: 'key', id: 'new-key', text: apiKey })
  const copy = el('button', { type: 'button', class: 'secondary', text: 'Copy key' })
  copy.addEventListener('click', async () => {
    await navigator.clipboard.writeText(apiKey).catch(() => undefined)
    copy.textContent = 'Copied'
  })
  const mcp = JSON.stringify(
    { mcpServers: { erm3: { url: `${origin}/mcp`, headers: { Authorization: `Bearer ${apiKey}` } } } },
    null,
    2,
  )
  return el(
    'section',
    { class: 'card', id: 'key-reveal', role: 'status' },
    el('h2', { text: what }),
    el('p', { text: 'This is the only time the full key is shown: store it now. erm3 keeps only a hash.' }),
    code,
    copy,
    el('h3', { text: 'Try it' }),
    el(
      'pre',
      { tabindex: 0 },
      el('code', { text: `curl -H "Authorization: Bearer ${apiKey}" ${origin}/metrics/AAPL` }),
    ),
    el('h3', { text: 'MCP client configuration' }),
    el('pre', { tabindex: 0 }, el('code', { text: mcp })),
  )
}

export async function keysPage(root: HTMLElement): Promise<void> {
  const r = await call<Keys>('/account/keys')
  const out = el('div', { 'aria-live': 'polite' })
  const name = el('input', { id: 'key-name', name: 'name', maxlength: 100 })
  const env = el(
    'select',
    { id: 'key-env' },
    el('option', { value: 'live', text: 'live (charged)' }),
    el('option', { value: 'test', text: 'test (sandbox data, never charged)' }),
  )
  const form = el(
    'form',
    { id: 'create-key' },
    el('label', { for: 'key-name', text: 'Name' }),
    name,
    el('label', { for: 'key-env', text: 'Environment' }),
    env,
    el('button', { type: 'submit', text: 'Create key' }),
  )
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault()
    try {
      const c = await call<ResponseOf<'createAccountKey'>>('/account/keys', {
        body: { name: name.value.trim() || undefined, environment: env.value },
      })
      await render()
      out.replaceChildren(reveal(c.data.api_key, 'Your new key'))
    } catch (e) {
      out.replaceChildren(errorMessage(e))
    }
  })
  const list = el('div', { id: 'key-list' })
  const activity = activitySection()
  async function render(keys?: Key[]): Promise<void> {
    // After a change (no keys given) its audit entry shows at once.
    if (!keys) void activity.render().catch((e) => out.replaceChildren(errorMessage(e)))
    const all = keys ?? (await call<Keys>('/account/keys')).data.keys
    const t = table(
      ['Name', 'Prefix', 'Env', 'Status', 'Created', 'Last used', 'Expires', 'Actions'],
      all.map((k) => [
        k.name,
        k.prefix,
        k.environment,
        k.status,
        short(k.created_at),
        short(k.last_used_at),
        short(k.expires_at),
        '',
      ]),
      'Your keys',
    )
    t.querySelectorAll('tbody tr').forEach((tr, i) => {
      const k = all[i] as Key
      const cell = tr.lastElementChild as HTMLElement
      if (k.status !== 'active') return
      const act = (label: string, fn: () => Promise<void>) =>
        rowAction(cell, label, `${label} ${k.name ?? k.prefix}`, fn, (e) =>
          out.replaceChildren(errorMessage(e)),
        )
      act('Rename', async () => {
        const n = prompt('New name', k.name ?? '')
        if (n === null) return
        await call(`/account/keys/${k.id}`, { method: 'PATCH', body: { name: n.trim() || null } })
        await render()
      })
      act('Rotate', async () => {
        const hours = prompt(
          'Keep the old key working for how many hours? (0 = stop it now, at most 168)',
          '0',
        )
        if (hours === null) return
        const rr = await call<ResponseOf<'rotateAccountKey'>>(`/account/keys/${k.id}/rotate`, {
          body: { overlap_seconds: Math.round(Number(hours) * 3600) },
        })
        await render()
        out.replaceChildren(reveal(rr.data.api_key, 'The replacement key'))
      })
      act('Revoke', async () => {
        if (!confirm(`Revoke ${k.name ?? k.prefix}? Calls with it stop at once.`)) return
        await call(`/account/keys/${k.id}`, { method: 'DELETE' })
        await render()
        out.replaceChildren(message(`${k.name ?? k.prefix} is revoked.`))
      })
    })
    list.replaceChildren(t)
  }
  const agents = agentsSection(activity.render)
  await Promise.all([render(r.data.keys), agents.render(), activity.render()])
  root.append(form, out, list, agents.section, activity.section)
}
