#!/usr/bin/env node
// `node scripts/tap-failures.js FILE`: the failures in a TAP log (what `npm test` prints without a terminal), each
// under the names of the tests that hold it, with its diagnostics. .ci/run prints this at the end of a failed run,
// where a reader of a long log looks first. Prints nothing when nothing failed.
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'

const MAX_DIAGNOSTIC_LINES = 40

/** The failures of a TAP text: for each, the names of its enclosing tests, its own line, its YAML block. */
export function tapFailures (text) {
  const lines = text.split('\n')
  /** The open subtests, by indentation depth: `# Subtest: name` lines. */
  const open = []
  const failures = []
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]
    const indent = line.length - line.trimStart().length
    const depth = indent / 4
    const subtest = line.match(/^\s*# Subtest: (.*)$/)
    if (subtest) {
      open.length = depth
      open[depth] = subtest[1]
      continue
    }
    const failed = line.match(/^\s*not ok \d+ - (.*?)(?: # (?:time=.*|TODO.*|SKIP.*))?$/)
    if (!failed || /# (TODO|SKIP)/.test(line)) continue
    const path = open.slice(0, depth).filter(name => name !== undefined)
    const diagnostic = []
    if (lines[i + 1]?.trim() === '---') {
      for (let j = i + 2; j < lines.length && lines[j].trim() !== '...'; j++) diagnostic.push(lines[j].slice(indent + 2))
    }
    failures.push({ path, name: failed[1], diagnostic })
  }
  // A failing test fails each test holding it; only the innermost failures say what went wrong.
  return failures.filter(f => !failures.some(o => o !== f && o.path.length > f.path.length &&
    f.path.every((name, k) => o.path[k] === name) && o.path[f.path.length] === f.name))
}

/** One failure as the summary prints it. */
export function formatFailure ({ path, name, diagnostic }) {
  const shown = diagnostic.slice(0, MAX_DIAGNOSTIC_LINES)
  if (diagnostic.length > shown.length) shown.push(`… ${diagnostic.length - shown.length} more lines`)
  return [`not ok: ${[...path, name].join(' > ')}`, ...shown.map(line => `    ${line}`)].join('\n')
}

// Run as a command (not imported by its test): the path as a URL, so that a folder with a space in it still matches.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const file = process.argv[2]
  if (!file) {
    console.error('usage: node scripts/tap-failures.js FILE')
    process.exit(2)
  }
  const failures = tapFailures(readFileSync(file, 'utf8'))
  if (failures.length > 0) {
    console.log(`\n${failures.length} failing test${failures.length === 1 ? '' : 's'}:\n`)
    console.log(failures.map(formatFailure).join('\n\n'))
  }
}
