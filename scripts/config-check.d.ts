// Types of scripts/config-check.js, for the tests that use it.
export declare function configCheckSource (dir: URL): Promise<string>
