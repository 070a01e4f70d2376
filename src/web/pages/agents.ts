import type { ResponseOf } from '../../contract/client.ts'
import { call } from '../api.ts'
import { el, errorMessage, message, rowAction, table } from '../dom.ts'

/**
 * Sections of the Keys page: the agents the account approved through OAuth (with Revoke), and
 * the account's recent audit log, where approvals and revocations show.
 */

type Grant = ResponseOf<'listOAuthGrants'>['grants'][number]
type AuditEntry = ResponseOf<'getAccountAudit'>['entries'][number]

const short = (iso: string | null) => (iso ? iso.slice(0, 16).replace('T', ' ') : null)

/** A table wide enough to scroll (long ids, URIs) must be reachable by keyboard to scroll it. */
function scrollable(t: HTMLTableElement): HTMLTableElement {
  t.setAttribute('tabindex', '0')
  return t
}

/** The recent audit log: what changed, by whom, when. */
export function activitySection(): { section: HTMLElement; render: () => Promise<void> } {
  const list = el('div', { id: 'activity-list' })
  async function render(): Promise<void> {
    const r = await call<ResponseOf<'getAccountAudit'>>('/account/audit?limit=20')
    const entries: AuditEntry[] = r.data.entries
    list.replaceChildren(
      scrollable(
        table(
          ['When', 'Who', 'What', 'On', 'Details'],
          entries.map((e) => [
            short(e.at),
            `${e.actor.type}: ${e.actor.id}`,
            e.action,
            e.target,
            e.detail
              ? Object.entries(e.detail)
                  .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
                  .join(', ')
              : null,
          ]),
          'Recent account activity',
        ),
      ),
    )
  }
  const section = el('section', { 'aria-labelledby': 'activity-title' })
  section.append(el('h2', { id: 'activity-title', text: 'Account activity' }), list)
  return { section, render }
}

/** Agents with access to the account (OAuth grants): what they are, when last used, Revoke. */
export function agentsSection(changed: () => Promise<void>): {
  section: HTMLElement
  render: () => Promise<void>
} {
  const out = el('div', { 'aria-live': 'polite' })
  const list = el('div', { id: 'grant-list' })
  async function render(): Promise<void> {
    const r = await call<ResponseOf<'listOAuthGrants'>>('/account/oauth-grants')
    const grants: Grant[] = r.data.grants
    if (grants.length === 0) {
      list.replaceChildren(message('No agent has access to your account through OAuth.'))
      return
    }
    const t = table(
      ['Agent', 'Client id', 'Returns to', 'Scope', 'Approved', 'Last used', 'Status', 'Actions'],
      grants.map((g) => [
        g.client_name,
        g.client_id,
        g.approved_redirect_uri ?? g.redirect_uris.join(' '),
        g.scope,
        short(g.created_at),
        short(g.last_used_at),
        g.active ? 'active' : 'inactive (tokens expired)',
        '',
      ]),
      'Agents you approved',
    )
    t.querySelectorAll('tbody tr').forEach((tr, i) => {
      const g = grants[i] as Grant
      rowAction(
        tr.lastElementChild as HTMLElement,
        'Revoke',
        `Revoke ${g.client_name}`,
        async () => {
          if (!confirm(`Revoke ${g.client_name}? Its tokens stop working at once.`)) return
          await call(`/account/oauth-grants/${encodeURIComponent(g.client_id)}`, { method: 'DELETE' })
          await render()
          out.replaceChildren(message(`${g.client_name} can no longer use your account.`))
          await changed()
        },
        (e) => out.replaceChildren(errorMessage(e)),
      )
    })
    list.replaceChildren(scrollable(t))
  }
  const section = el('section', { 'aria-labelledby': 'agents-title' })
  section.append(
    el('h2', { id: 'agents-title', text: 'Connected agents' }),
    el('p', {
      text:
        'Applications you approved through OAuth (e.g. an MCP client). Each can spend your balance on ' +
        'analytics and read your account data and brokerage holdings until you revoke it.',
    }),
    out,
    list,
  )
  return { section, render }
}
