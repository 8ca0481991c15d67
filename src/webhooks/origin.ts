/** The request id of the write that caused the event, and with tracing on its span's traceparent. */
export interface EventOrigin {
  requestId?: string
  traceparent?: string
}
