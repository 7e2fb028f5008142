// Two instances on PostgreSQL alone, in one process: the scenarios every shared backend passes
// (test/scale-out-scenarios.ts). A dead instance's tasks: test/scale-out-processes.test.ts.
import t from 'tap'
import type { A2AConfigInput } from '../index.js'
import { postgresSchema, testDatabase } from './helper.js'
import { scaleOutScenarios } from './scale-out-scenarios.js'

const database = testDatabase(t)
/** The URL of the schema the running test has to itself. */
let url = ''

function shared (extra: A2AConfigInput = {}): A2AConfigInput {
  return {
    services: { postgres: { url } },
    tasks: { backend: 'postgres' },
    push_notifications: { backend: 'postgres', config: { allowed_networks: ['127.0.0.0/8'], retry_delay: 0.05 } },
    server: { shutdown_timeout: 0.5 },
    ...extra
  }
}

scaleOutScenarios(t, { shared, fresh: async t => { url = await postgresSchema(t, await database) } })
