// Types of scripts/postgres-server.js, for the tests that use it.
export declare const POSTGRES_INSTALL_HINT: string
export declare function postgresBinDir (root?: string): string | null
export declare function pingPostgres (url: string): Promise<boolean>
export declare function childrenOf (pid: number): number[]
export declare function startPostgres (opts?: { bin?: string | null, answerWithinMs?: number, graceMs?: number, password?: string, settings?: string[] }): Promise<{ url: string, port: number, readonly pid: number, dir: string, stop (): Promise<void>, down (): Promise<void>, up (): Promise<void>, restart (): Promise<void> }>
