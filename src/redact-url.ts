/**
 * Query parameter names that carry credentials when a client puts them in a URL (`?access_token=`,
 * `?api_key=`, `?sig=`): matched anywhere in the name, case-insensitively, so `X-Api-Key` and
 * `client_secret` are caught too. Redacting a harmless parameter costs nothing; logging a token does.
 */
const CREDENTIAL_NAME = /token|key|secret|passw|pwd|auth|credential|session|signature|^sig$|^code$/i

/** What a credential's value becomes in logs and traces. */
export const REDACTED = '[redacted]'

/**
 * The query string (without `?`) with the value of every parameter named like a credential
 * replaced by `[redacted]`; the other parameters, and the order, stay as sent.
 */
export function redactQuery (query: string): string {
  return query.split('&').map((part) => {
    const equals = part.indexOf('=')
    const rawName = equals === -1 ? part : part.slice(0, equals)
    let name = rawName
    try {
      name = decodeURIComponent(rawName.replace(/\+/g, ' '))
    } catch {
      // A malformed escape: judge the name as sent.
    }
    return CREDENTIAL_NAME.test(name) ? `${rawName}=${REDACTED}` : part
  }).join('&')
}

/**
 * A request URL (path and query) as logs and span attributes may show it: credentials a client
 * sent in the query string are redacted. A URL without a query string is returned as it is.
 */
export function redactUrl (url: string): string {
  const question = url.indexOf('?')
  return question === -1 ? url : `${url.slice(0, question)}?${redactQuery(url.slice(question + 1))}`
}
