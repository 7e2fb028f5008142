// The code blocks of the README and docs/ that a reader would run: each carries a marker on the line before its
// fence, `<!-- run: NAME -->` when a test runs it (the test asks for it with `snippet('NAME')`), or
// `<!-- not run: REASON -->`. test/doc-snippets.test.ts checks that every such block is marked and that every
// name is asked for by a test, so a new block cannot go unchecked by accident.
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

/** The languages whose blocks are programs or commands (a YAML or JSON block is data, shown, not run). */
export const RUNNABLE_LANGUAGES = ['sh', 'bash', 'js', 'mjs', 'cjs', 'ts', 'python']

export interface Snippet {
  /** The file, relative to the repository's root. */
  file: string
  /** The line of the opening fence, from 1. */
  line: number
  lang: string
  /** The name a test runs it by, from `<!-- run: NAME -->`. */
  run?: string
  /** Why no test runs it, from `<!-- not run: REASON -->`. */
  notRun?: string
  code: string
}

const root = new URL('../', import.meta.url)

/** The Markdown files the snippets come from: the README and every page of docs/. */
export function docFiles (): string[] {
  const pages = readdirSync(new URL('docs/', root)).filter(name => name.endsWith('.md')).sort()
  return ['README.md', ...pages.map(page => `docs/${page}`)]
}

/** Every fenced block of a Markdown text, with the marker of the line before it, if any. */
export function parseSnippets (file: string, text: string): Snippet[] {
  const out: Snippet[] = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i])
    if (open === null) continue
    let end = i + 1
    while (end < lines.length && !lines[end].startsWith('```')) end++
    const marker = /^<!-- (run|not run): (.+?) -->$/.exec(lines[i - 1] ?? '')
    const snippet: Snippet = { file, line: i + 1, lang: open[1], code: lines.slice(i + 1, end).join('\n') + '\n' }
    if (marker?.[1] === 'run') snippet.run = marker[2]
    else if (marker?.[1] === 'not run') snippet.notRun = marker[2]
    out.push(snippet)
    i = end
  }
  return out
}

/** The fenced blocks of the README and docs/. */
export function docSnippets (): Snippet[] {
  return docFiles().flatMap(file => parseSnippets(file, readFileSync(new URL(file, root), 'utf8')))
}

/** The code of the block marked `<!-- run: NAME -->`; throws when there is none. */
export function snippet (name: string): string {
  const found = docSnippets().find(s => s.run === name)
  if (found === undefined) throw new Error(`no block of the docs is marked <!-- run: ${name} -->`)
  return found.code
}

let modules = 0

/**
 * Imports a JS block as a module of its own in `dir` (in this process), with `env` set meanwhile: what it logged with
 * `console.log`, and its exports. A file of its own each time: an import of a URL already imported would not run it
 * again.
 */
export async function runSnippet (dir: string, code: string, env: Record<string, string> = {}): Promise<{ logged: unknown[][], exports: Record<string, any> }> {
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `snippet-${++modules}.mjs`)
  writeFileSync(file, code)
  const saved = Object.fromEntries(Object.keys(env).map(name => [name, process.env[name]]))
  const logged: unknown[][] = []
  const log = console.log
  console.log = (...args: unknown[]) => { logged.push(args) }
  Object.assign(process.env, env)
  try {
    return { logged, exports: await import(pathToFileURL(file).href) }
  } finally {
    console.log = log
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  }
}
