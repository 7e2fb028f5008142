// `node --import ./scripts/ts-import.js file.ts`: runs the project's TypeScript (scripts/ts-hooks.js says how).
import { register } from 'node:module'

register('./ts-hooks.js', import.meta.url)
