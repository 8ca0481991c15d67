import { Type, type TUnsafe } from '@sinclair/typebox'

/** A `0`/`1` setting: an enum, so a typo (`true`, `yes`) stops the start rather than read as either. */
export const flagSetting = (defaultValue: '0' | '1', description: string): TUnsafe<'0' | '1'> =>
  Type.Unsafe<'0' | '1'>({ type: 'string', enum: ['0', '1'], default: defaultValue, description })
