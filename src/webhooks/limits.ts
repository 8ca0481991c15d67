/** How many subscriptions one owner (token) may have by default (WEBHOOK_MAX_SUBSCRIPTIONS). */
export const DEFAULT_MAX_SUBSCRIPTIONS = 25
