/** Names that carry credentials, anywhere in the name: redacting a harmless one costs nothing, logging a token does. */
const CREDENTIAL_NAME = /token|key|secret|passw|pwd|auth|credential|session|signature|^sig$|^code$/i

/** What a credential's value becomes in logs and traces. */
export const REDACTED = '[redacted]'

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

/** A request URL as logs and spans may show it: credentials in the query string redacted. */
export function redactUrl (url: string): string {
  const question = url.indexOf('?')
  return question === -1 ? url : `${url.slice(0, question)}?${redactQuery(url.slice(question + 1))}`
}
