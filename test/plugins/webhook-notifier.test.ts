import t from 'tap'
import { build, call, receiver, until, userMessage } from '../helper.js'

t.test('a task the memory store evicts takes its push configs with it', async t => {
  const hook = await receiver(t)
  const app = await build(t, {
    config: { tasks: { max_tasks: 1 }, push_notifications: { config: { allowed_networks: ['127.0.0.0/8'] } } }
  })
  const first = await call(app, 'message/send', {
    message: userMessage('with a push config'),
    configuration: { pushNotificationConfig: { url: `${hook.url}/hook` } }
  })
  const id = first.body.result.id
  t.equal(first.body.result.status.state, 'completed')
  await until(() => hook.received.some(r => r.body?.id === id && r.body?.status?.state === 'completed'))
  t.equal(app.a2aPushConfigs.holds?.(id), true, 'the config is held while the task is')

  // max_tasks is 1: the next task evicts the first, a terminal one, and its config goes too.
  const second = await call(app, 'message/send', { message: userMessage('no push config') })
  t.equal(second.body.result.status.state, 'completed')
  t.equal((await call(app, 'tasks/get', { id })).body.error.code, -32001)
  t.equal(app.a2aPushConfigs.holds?.(id), false)
  t.same(await app.a2aPushConfigs.list(id), [])
  t.equal(hook.received.filter(r => r.body?.id === second.body.result.id).length, 0, 'a task without a config is not delivered')
})
