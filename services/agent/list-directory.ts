import { lstat, mkdir, readdir, readlink, realpath, stat } from 'node:fs/promises'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import { DEFAULT_ROOT } from '../../schemas/config.js'
import { invalidParams } from '../kernel/errors.js'
import type { Logger } from '../kernel/logger.js'

export type EntryType = 'file' | 'directory' | 'symlink' | 'other'

export interface DirectoryEntry {
  name: string
  type: EntryType
  /** Bytes, from `lstat`: a symlink's size is the length of its target path. */
  size: number
  /** Last modification, ISO 8601 UTC. */
  modified: string
}

export interface DirectoryListing {
  /** The normalized path relative to the root, `.` for the root itself. */
  path: string
  entries: DirectoryEntry[]
}

/**
 * What a client is told for the fs errors its path can cause. Anything else (EIO, EMFILE, a bad root in the
 * config) is ours, and propagates as an internal error.
 */
const PATH_ERRORS: Readonly<Record<string, string>> = {
  ENOENT: 'does not exist',
  ENOTDIR: 'does not exist',
  ELOOP: 'has too many levels of symbolic links',
  ENAMETOOLONG: 'is too long',
  EACCES: 'permission denied',
  EPERM: 'permission denied'
}

const ROOT_ERRORS: Readonly<Record<string, string>> = {
  ENOENT: 'the list_directory root does not exist',
  ENOTDIR: 'the list_directory root does not exist'
}

/**
 * Creates the default root (`./workspace` under the working directory) when it is missing, so that the card's own
 * `list_directory .` example works on a fresh start. Any other root is the operator's: a missing one stays an error
 * of the tool, never created. Returns the directory it created, if any; a root it cannot create (a read-only
 * directory) is logged, and the tool says the root does not exist.
 */
export async function ensureDefaultRoot (root: string, log: Pick<Logger, 'info' | 'warn'>): Promise<string | undefined> {
  if (root !== DEFAULT_ROOT) return undefined
  const path = resolve(root)
  try {
    if (await mkdir(path, { recursive: true }) === undefined) return undefined
  } catch (err) {
    log.warn({ err, root: path }, 'the default list_directory root could not be created')
    return undefined
  }
  log.info({ root: path }, 'created the default list_directory root')
  return path
}

/**
 * The `list_directory` tool (CONTRACT.md §5): lists `path`, relative to `root`, without ever leaving the root,
 * neither lexically (`..`, absolute paths) nor through a symbolic link. Entries come from `lstat`, so a symlink is
 * reported as one and never followed. Refusals are -32602 with `data` naming the reason.
 */
export async function listDirectory (root: string, path: string): Promise<DirectoryListing> {
  if (path.includes('\0')) throw invalidParams('params.path: must not contain NUL bytes')
  if (isAbsolute(path)) throw invalidParams('params.path: must be relative to the root, not absolute')
  // Lexical check first: a `..` that climbs above the root is refused even where the path comes back in
  // (`../root/sub`), so that a client cannot probe what lies around the root.
  if (climbsOut(path)) throw invalidParams('params.path: escapes the root through ..')
  const rootPath = resolve(root)
  const rel = relative(rootPath, resolve(rootPath, path))

  const realRoot = await guarded(realpath(rootPath), ROOT_ERRORS)
  let target: string
  try {
    target = await guarded(realpath(join(rootPath, rel)))
  } catch (err) {
    // A path under a link that leaves the root gets the same answer whether or not it exists out there, so that a
    // client cannot probe what lies around the root.
    if (await leavesRoot(realRoot, rel)) throw outside()
    throw err
  }
  if (escapes(relative(realRoot, target))) throw outside()
  if (!(await guarded(stat(target))).isDirectory()) throw invalidParams('params.path: is not a directory')

  const names = (await guarded(readdir(target))).sort(byCodePoint)
  const entries = await Promise.all(names.map(async (name): Promise<DirectoryEntry> => {
    const info = await guarded(lstat(join(target, name)))
    return { name, type: entryType(info), size: info.size, modified: info.mtime.toISOString() }
  }))
  return { path: rel === '' ? '.' : rel, entries }
}

function outside (): Error {
  return invalidParams('params.path: resolves outside the root through a symbolic link')
}

/**
 * For a path that does not resolve: whether the part of it that does (or the dangling link where it stops) leads
 * out of the root.
 */
async function leavesRoot (realRoot: string, rel: string): Promise<boolean> {
  let real = realRoot
  // `rel` is normalized (by `relative`): no empty or `.` segments, no `..` above the root.
  for (const segment of rel.split(sep)) {
    const next = join(real, segment)
    let resolved: string
    try {
      resolved = await realpath(next)
    } catch {
      const link = await readlink(next).catch(() => null)
      return link !== null && escapes(relative(realRoot, resolve(real, link)))
    }
    if (escapes(relative(realRoot, resolved))) return true
    real = resolved
  }
  /* c8 ignore start -- a path whose every segment resolves inside the root resolved as a whole a moment ago */
  return false
}
/* c8 ignore stop */

function climbsOut (path: string): boolean {
  let depth = 0
  for (const segment of path.split(sep)) {
    if (segment === '..') {
      if (--depth < 0) return true
    } else if (segment !== '' && segment !== '.') {
      depth++
    }
  }
  return false
}

function escapes (rel: string): boolean {
  // `relative` gives an absolute path only across Windows drives.
  return rel === '..' || rel.startsWith('..' + sep) || isAbsolute(rel)
}

function entryType (info: Awaited<ReturnType<typeof lstat>>): EntryType {
  if (info.isSymbolicLink()) return 'symlink'
  if (info.isDirectory()) return 'directory'
  return info.isFile() ? 'file' : 'other'
}

/** UTF-8 byte order is code-point order; `<` on strings compares UTF-16 units, which differs above U+FFFF. */
function byCodePoint (a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b))
}

/** Awaits an fs call, turning the errors listed in `reasons` into -32602; others propagate. */
async function guarded<T> (op: Promise<T>, reasons = PATH_ERRORS): Promise<T> {
  try {
    return await op
  } catch (err) {
    const code = String((err as NodeJS.ErrnoException).code)
    if (!Object.hasOwn(reasons, code)) throw err
    throw invalidParams(`params.path: ${reasons[code]}`)
  }
}
