// Types of scripts/tap-failures.js, for its test.
export interface TapFailure { path: string[], name: string, diagnostic: string[] }
export declare function tapFailures (text: string): TapFailure[]
export declare function formatFailure (failure: TapFailure): string
