// Types of scripts/redis-server.js, for the tests that use it.
export declare const INSTALL_HINT: string
export declare function hasRedisServer (): boolean
export declare function freePort (): Promise<number>
export declare function ping (url: string): Promise<boolean>
export declare function startRedis (missing?: string): Promise<{ url: string, port: number, pid: number, stop (): Promise<void> }>
