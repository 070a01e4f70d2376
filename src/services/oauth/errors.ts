import { AppError } from '../../platform/errors.ts'

/**
 * RFC 6749 §5.2 / RFC 7591 §3.2.2 / RFC 7009 error codes. They travel as an AppError whose
 * `extra.oauth_error` names the OAuth code; the API layer renders operations declared with
 * `errorStyle: 'oauth'` as `{error, error_description}` (src/api/oauth-error.ts).
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  /** RFC 8707 §2: the `resource` is not this server. */
  | 'invalid_target'

export function oauthError(error: OAuthErrorCode, description: string): AppError {
  // invalid_client is 401 (RFC 6749 §5.2); everything else here is 400.
  const code = error === 'invalid_client' ? 'INVALID_KEY' : 'INVALID_REQUEST'
  return new AppError(code, description, { extra: { oauth_error: error } })
}
