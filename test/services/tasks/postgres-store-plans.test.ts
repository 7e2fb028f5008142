// The plans PostgreSQL makes for a page of `list` (services/tasks/postgres-store.ts LIST_SQL), on a table of 20,000
// tasks of 20 owners: a filtered page is read from the index of its filter, newest first, never by a scan of the
// table; a page costs about its size.
import t from 'tap'
import { connectOnce } from '../../../services/postgres/connect.js'
import { migrate } from '../../../services/postgres/migrate.js'
import { LIST_SQL } from '../../../services/tasks/postgres-store.js'
import { testDatabase } from '../../helper.js'

interface PlanNode { 'Node Type': string, 'Index Name'?: string, 'Actual Rows'?: number, 'Rows Removed by Filter'?: number, Plans?: PlanNode[] }

const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)]

t.test('each filter of a page is served by its index, and reads about the page', async t => {
  const url = await testDatabase(t)
  const client = await connectOnce(url)
  t.teardown(() => client.end())
  await migrate(client)
  // 20,000 tasks: 20 owners, 50 contexts, four states, half of them terminal and expiring.
  await client.query(`INSERT INTO a2a_tasks (id, owner, context_id, state, version, created_at, updated_at, expires_at, record)
    SELECT 't' || i, 'owner' || (i % 20), 'ctx' || (i % 50), (ARRAY['submitted', 'working', 'completed', 'failed'])[1 + i % 4],
      1, i, i, CASE WHEN i % 4 >= 2 THEN 9000000000000 END, '{"task":{}}'
    FROM generate_series(1, 20000) AS i`)
  await client.query('ANALYZE a2a_tasks')
  const cases: Array<[string, Array<string | null>, string]> = [
    ['by owner', [null, null], 'a2a_tasks_by_owner'],
    ['by owner and context', ['ctx10', null], 'a2a_tasks_by_context'],
    ['by owner and state', [null, 'completed'], 'a2a_tasks_by_state']
  ]
  for (const [name, [contextId, state], index] of cases) {
    const { rows: [row] } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${LIST_SQL}`, ['owner10', contextId, state, null, 1, 11])
    const plan = nodes((row['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0].Plan)
    t.notOk(plan.some(n => n['Node Type'] === 'Seq Scan'), `${name}: no scan of the table`)
    const scan = plan.find(n => n['Index Name'] !== undefined)
    t.equal(scan?.['Index Name'], index, `${name}: read from ${index}`)
    const read = (scan?.['Actual Rows'] ?? Infinity) + (scan?.['Rows Removed by Filter'] ?? 0)
    t.ok(read <= 11, `${name}: ${read} rows read for a page of 10 and one more`)
  }
})
