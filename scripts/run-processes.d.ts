// Types of scripts/run-processes.js, for the tests that use it.
export interface MarkedProcess { pid: number, command: string }
export declare const RUN_MARKER: string
export declare function killGroup (pgid: number): void
export declare function newRunId (): string
export declare function nestedMarker (id: string, outer?: string): string
export declare function markedProcesses (id: string, proc?: string): MarkedProcess[]
export declare function reapLeftovers (id: string, options?: {
  graceMs?: number
  proc?: string
  kill?: (pid: number, signal: string) => unknown
}): Promise<MarkedProcess[]>
export declare function leftoverReport (left: MarkedProcess[]): string[]
