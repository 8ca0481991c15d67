import { BUILD_INFO } from '../config/build-info.js'

/** The `user-agent` of every delivery: receivers can tell (and allow-list) where it comes from. */
export const USER_AGENT = `plant-store/${BUILD_INFO.version}`
