import { call } from '../api.ts'
import { el, errorMessage, message } from '../dom.ts'

/** Passwordless sign-in: an e-mailed one-time link sets the session cookie and comes back here. */
export async function signInPage(root: HTMLElement, params: URLSearchParams): Promise<void> {
  const next = params.get('next') ?? '#/explorer'
  const email = el('input', {
    id: 'email',
    type: 'email',
    name: 'email',
    autocomplete: 'email',
    required: true,
  })
  const status = el('div', { 'aria-live': 'polite' })
  const form = el(
    'form',
    { novalidate: false },
    el('label', { for: 'email', text: 'E-mail address' }),
    email,
    el('button', { type: 'submit', text: 'Send me a sign-in link' }),
    status,
  )
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault()
    status.replaceChildren()
    try {
      await call('/auth/login', { body: { email: email.value, next: `/app${next}` } })
      status.append(message(`A sign-in link is on its way to ${email.value}. It works once, for 15 minutes.`))
    } catch (e) {
      status.append(errorMessage(e))
    }
  })
  root.append(
    el('p', {
      text: 'No password: we e-mail you a link that signs you in on this browser. Opened in another browser, it first asks you to confirm which account it signs in to.',
    }),
    form,
  )
}
