import { Type, type TString } from '@sinclair/typebox'

export const TIME_EXAMPLE = '2026-01-02T03:04:05.678Z'

/** A time as the service writes it: RFC 3339 in UTC, with milliseconds (src/store/iso-time.ts). */
export const timeSchema = (description: string): TString =>
  Type.String({ format: 'date-time', description, examples: [TIME_EXAMPLE] })
