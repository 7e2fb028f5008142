import type { Redis } from 'ioredis'

/** A Lua script bound to a client: call it with its keys, then its arguments. */
export type RedisScript = (...args: Array<string | number>) => Promise<unknown>

/**
 * A Lua script as a command of `client` (ioredis `defineCommand`): sent as EVALSHA, the script's text going to Redis
 * only when it answers NOSCRIPT (its first use on a server, or after SCRIPT FLUSH or a restart), never on every call
 * as EVAL would. `numberOfKeys` fixed, or, when it varies, given as the first argument of each call.
 */
export function redisScript (client: Redis, name: string, lua: string, numberOfKeys?: number): RedisScript {
  const commands = client as unknown as Record<string, RedisScript | undefined>
  if (typeof commands[name] !== 'function') client.defineCommand(name, numberOfKeys === undefined ? { lua } : { numberOfKeys, lua })
  const command = commands[name] as RedisScript
  return (...args) => command.apply(client, args)
}
