import { fixed } from './format.ts'

/** Small DOM helpers: elements built with textContent only (no innerHTML anywhere). */

type Attrs = Record<string, string | number | boolean | undefined>

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Node | string | null | undefined)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue
    if (k === 'text') e.textContent = String(v)
    else e.setAttribute(k, v === true ? '' : String(v))
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c)
  return e
}

export function table(
  headers: string[],
  rows: (string | number | null)[][],
  caption?: string,
): HTMLTableElement {
  const t = el('table')
  if (caption) t.append(el('caption', { text: caption }))
  t.append(el('thead', {}, el('tr', {}, ...headers.map((h) => el('th', { scope: 'col', text: h })))))
  const body = el('tbody')
  for (const r of rows)
    body.append(el('tr', {}, ...r.map((c) => el('td', { text: c === null ? '—' : String(c) }))))
  t.append(body)
  return t
}

/** A number to `digits` decimals with a real minus sign (format.ts); null when missing. */
export const num = (x: number | null | undefined, digits = 3) => fixed(x, digits)

export function message(text: string, kind: 'error' | 'info' = 'info'): HTMLElement {
  return el('p', { class: kind, role: kind === 'error' ? 'alert' : 'status', text })
}

/** An error as the page shows it (role=alert). */
export function errorMessage(e: unknown): HTMLElement {
  return message(e instanceof Error ? e.message : String(e), 'error')
}

/**
 * A table row's action: a secondary button whose accessible name says what it acts on; a failed
 * action is handed to `fail` (the page's error line).
 */
export function rowAction(
  cell: HTMLElement,
  label: string,
  ariaLabel: string,
  fn: () => Promise<void>,
  fail: (e: unknown) => void,
): void {
  const b = el('button', { type: 'button', class: 'secondary', text: label, 'aria-label': ariaLabel })
  b.addEventListener('click', () => fn().catch(fail))
  cell.append(b, ' ')
}
