/**
 * The Redis the tests that need a real one use (rate limits shared between instances): only when
 * TEST_REDIS_URL is set (CI sets it), so `npm test` passes on a machine with nothing but Node.js.
 */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL

/** For `test(name, { skip: NO_REDIS }, …)`: why a test that needs Redis did not run, or false. */
export const NO_REDIS: string | false = TEST_REDIS_URL === undefined ? 'TEST_REDIS_URL is not set' : false
