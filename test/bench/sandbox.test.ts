import assert from 'node:assert/strict'
import { test } from 'node:test'
import { runSandboxBench } from '../../bench/sandbox.js'

/** Per tenant file, checkpointed and closed, with 10 plants: its tables' pages and no WAL. */
const MAX_TENANT_BYTES = 128 * 1024

// The 10,000-tenant run is `npm run bench:sandbox` (figures in docs/performance.md); this is the same run, small.
test('sandbox at small scale: every write lands, memory stays under 300 MB with few stores open, the disk per tenant ' +
  'is bounded, expiry leaves no file', async () => {
  const result = await runSandboxBench({ tenants: 30, plantsPerTenant: 10, concurrency: 30, openTenants: 8 })
  assert.deepEqual({
    written: result.plantsWritten,
    failures: result.failures,
    files: result.tenantsStored,
    left: result.tenantsAfterExpiry
  },
  { written: 300, failures: 0, files: 30, left: 0 })
  assert.ok(result.peakRssMb !== null && result.peakRssMb <= 300, `peak RSS ${result.peakRssMb ?? ''} MB`)
  assert.ok(result.diskBytes <= 30 * MAX_TENANT_BYTES + 1024 * 1024, `${result.diskBytes} bytes on disk`)
})
