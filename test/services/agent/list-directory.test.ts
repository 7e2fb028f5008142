import { execFileSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { lstat } from 'node:fs/promises'
import { join, relative } from 'node:path'
import pino from 'pino'
import t, { type Test } from 'tap'
import { RpcCode } from '../../../services/kernel/errors.js'
import { ensureDefaultRoot, listDirectory } from '../../../services/agent/list-directory.js'
import { DEFAULT_ROOT } from '../../../schemas/config.js'
import { logCapture } from '../../helper.js'

const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

/** A root with files, a directory, symlinks inside and out, next to a directory outside the root. */
function tree (t: Test): { dir: string, root: string } {
  const dir = t.testdir({
    root: {
      'a.txt': 'hello',
      sub: {
        'inner.txt': 'x',
        deeper: {}
      },
      'link-in': t.fixture('symlink', 'sub'),
      'link-file': t.fixture('symlink', 'a.txt'),
      'link-out': t.fixture('symlink', '../outside'),
      'link-out-file': t.fixture('symlink', '../outside/secret.txt'),
      'link-out-missing': t.fixture('symlink', '../outside/missing'),
      'link-up': t.fixture('symlink', '..'),
      dangling: t.fixture('symlink', 'nowhere'),
      loop: t.fixture('symlink', 'loop')
    },
    outside: { 'secret.txt': 'secret' },
    'root-link': t.fixture('symlink', 'root')
  })
  return { dir, root: join(dir, 'root') }
}

function refusal (reason: string) {
  return { code: RpcCode.invalidParams, message: 'Invalid params', data: `params.path: ${reason}` }
}

t.test('lists the root, sorted by name, from lstat', async t => {
  const { root } = tree(t)
  const listing = await listDirectory(root, '.')
  t.equal(listing.path, '.')
  t.same(listing.entries.map(e => [e.name, e.type]), [
    ['a.txt', 'file'],
    ['dangling', 'symlink'],
    ['link-file', 'symlink'],
    ['link-in', 'symlink'],
    ['link-out', 'symlink'],
    ['link-out-file', 'symlink'],
    ['link-out-missing', 'symlink'],
    ['link-up', 'symlink'],
    ['loop', 'symlink'],
    ['sub', 'directory']
  ])
  const file = listing.entries[0]
  const info = await lstat(join(root, 'a.txt'))
  t.same(file, { name: 'a.txt', type: 'file', size: 5, modified: info.mtime.toISOString() })
  const link = listing.entries[3]
  t.equal(link.size, 'sub'.length, 'a symlink is not followed: its size is its own')
  for (const entry of listing.entries) t.match(entry.modified, ISO_UTC)
})

t.test('the root may be written relative to the working directory', async t => {
  const { root } = tree(t)
  const listing = await listDirectory(relative(process.cwd(), root), 'sub')
  t.same(listing.entries.map(e => e.name), ['deeper', 'inner.txt'])
})

t.test('the root may itself be a symlink', async t => {
  const { dir } = tree(t)
  const listing = await listDirectory(join(dir, 'root-link'), 'link-in')
  t.equal(listing.path, 'link-in')
  t.same(listing.entries.map(e => e.name), ['deeper', 'inner.txt'])
})

t.test('the path in the result is normalized', async t => {
  const { root } = tree(t)
  for (const [asked, shown] of [
    ['', '.'], ['./', '.'], ['sub/..', '.'], ['sub/deeper/../..', '.'], ['./sub/./deeper/../..', '.'], ['sub/', 'sub'], ['./sub//deeper/', join('sub', 'deeper')],
    ['sub/deeper/../deeper', join('sub', 'deeper')]
  ]) {
    t.equal((await listDirectory(root, asked)).path, shown, asked)
  }
  t.same((await listDirectory(root, 'sub/deeper')).entries, [])
})

t.test('a symlink to a directory inside the root is listed through', async t => {
  const { root } = tree(t)
  const listing = await listDirectory(root, 'link-in')
  t.equal(listing.path, 'link-in')
  t.same(listing.entries.map(e => [e.name, e.type]), [['deeper', 'directory'], ['inner.txt', 'file']])
})

t.test('a path through a symlink that leaves the root is refused', async t => {
  const { root } = tree(t)
  for (const path of ['link-out', 'link-up', 'link-up/outside', 'link-out-file']) {
    await t.rejects(listDirectory(root, path), refusal('resolves outside the root through a symbolic link'), path)
  }
})

t.test('under a link that leaves the root, a path that exists out there and one that does not get the same answer', async t => {
  const { root } = tree(t)
  for (const path of ['link-out/secret.txt', 'link-out/missing', 'link-out/missing/deeper', 'link-out/secret.txt/below',
    'link-up/outside/missing', 'link-out-missing', 'link-out-file', 'sub/../link-out/missing']) {
    await t.rejects(listDirectory(root, path), refusal('resolves outside the root through a symbolic link'), path)
  }
})

t.test('a path that escapes the root through .. is refused, even where it comes back in', async t => {
  const { root } = tree(t)
  for (const path of ['..', '../outside', 'sub/../../outside', '../root', '../root/sub', 'sub/../..', 'sub/deeper/../../..']) {
    await t.rejects(listDirectory(root, path), refusal('escapes the root through ..'), path)
  }
  // A name that merely starts with two dots is no escape.
  await t.rejects(listDirectory(root, '..hidden'), refusal('does not exist'))
})

t.test('an absolute path is refused, even one inside the root', async t => {
  const { root } = tree(t)
  for (const path of ['/', '/etc', root, join(root, 'sub')]) {
    await t.rejects(listDirectory(root, path), refusal('must be relative to the root, not absolute'), path)
  }
})

t.test('a missing path, or one through a missing or dangling link, does not exist', async t => {
  const { root } = tree(t)
  for (const path of ['missing', 'sub/missing', 'dangling', 'a.txt/below']) {
    await t.rejects(listDirectory(root, path), refusal('does not exist'), path)
  }
})

t.test('a file, or a symlink to one, is not a directory', async t => {
  const { root } = tree(t)
  for (const path of ['a.txt', 'sub/inner.txt', 'link-file']) {
    await t.rejects(listDirectory(root, path), refusal('is not a directory'), path)
  }
})

t.test('a symlink loop, a NUL byte and an overlong name are refused', async t => {
  const { root } = tree(t)
  await t.rejects(listDirectory(root, 'loop'), refusal('has too many levels of symbolic links'))
  await t.rejects(listDirectory(root, 'sub\0'), refusal('must not contain NUL bytes'))
  await t.rejects(listDirectory(root, '\0/..'), refusal('must not contain NUL bytes'))
  await t.rejects(listDirectory(root, 'x'.repeat(300)), refusal('is too long'))
})

t.test('a missing root is refused, naming the root', async t => {
  const { root } = tree(t)
  const missing = refusal('the list_directory root does not exist')
  await t.rejects(listDirectory(join(root, 'nope'), '.'), missing)
  await t.rejects(listDirectory(join(root, 'a.txt', 'below'), 'sub'), missing)
})

t.test('an fs error the path did not cause propagates as it is', async t => {
  await t.rejects(listDirectory('bad\0root', '.'), { code: 'ERR_INVALID_ARG_VALUE' })
})

t.test('entries that are neither files, directories nor symlinks are other', async t => {
  const dir = t.testdir({ 'plain.txt': '' })
  execFileSync('mkfifo', [join(dir, 'pipe')])
  const listing = await listDirectory(dir, '.')
  t.same(listing.entries.map(e => [e.name, e.type]), [['pipe', 'other'], ['plain.txt', 'file']])
})

t.test('names sort in code-point order, not UTF-16 order', async t => {
  const names = ['b', '\u{1F600}', 'a', '\uFF61', 'B', 'a0']
  const dir = t.testdir(Object.fromEntries(names.map(n => [n, ''])))
  const listing = await listDirectory(dir, '.')
  // U+1F600 is 0xD83D 0xDE00 in UTF-16, which would sort it before U+FF61.
  t.same(listing.entries.map(e => e.name), ['B', 'a', 'a0', 'b', '\uFF61', '\u{1F600}'])
})

const NOBODY = 65534

/**
 * Runs `fn` as an unprivileged user: root reads every directory whatever its mode, so when the tests run as root
 * the effective uid and gid are `nobody` while it runs (root may take them back; glibc applies the switch to every
 * thread, the fs thread pool included).
 */
async function unprivileged<T> (fn: () => Promise<T>): Promise<T> {
  if (process.getuid?.() !== 0) return fn()
  process.setegid?.(NOBODY)
  process.seteuid?.(NOBODY)
  try {
    return await fn()
  } finally {
    process.seteuid?.(0)
    process.setegid?.(0)
  }
}

t.test('a directory the server may not read is refused', async t => {
  // Under the system's temp dir, which any user may traverse (the checkout may not be).
  const root = mkdtempSync(join(tmpdir(), 'a2a-list-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  chmodSync(root, 0o755)
  const locked = join(root, 'locked')
  const open = join(root, 'open')
  mkdirSync(locked)
  mkdirSync(open)
  writeFileSync(join(open, 'f'), '')
  chmodSync(locked, 0o000)
  // Readable but not searchable: the names can be read, their lstat cannot.
  chmodSync(open, 0o444)
  const denied = refusal('permission denied')
  await unprivileged(async () => {
    await t.rejects(listDirectory(root, 'locked'), denied)
    await t.rejects(listDirectory(root, 'locked/inner'), denied)
    await t.rejects(listDirectory(root, 'open'), denied)
  })
  t.same((await unprivileged(() => listDirectory(root, '.'))).entries.map(e => e.name), ['locked', 'open'], 'the root itself lists')
  t.equal(process.geteuid?.(), process.getuid?.(), 'the test process has its own uid back')
})

t.test('the default root is created at start when missing; another root never is', async t => {
  const dir = t.testdir({ taken: { workspace: 'a file where the directory would go' } })
  const cwd = process.cwd()
  t.teardown(() => process.chdir(cwd))
  const logs = logCapture()
  const log = pino(logs.stream)
  process.chdir(dir)
  t.equal(await ensureDefaultRoot('./elsewhere', log), undefined, 'a configured root is the operator\'s')
  await t.rejects(listDirectory('./elsewhere', '.'), refusal('the list_directory root does not exist'), 'and its absence stays an error')
  t.equal(await ensureDefaultRoot(DEFAULT_ROOT, log), join(dir, 'workspace'))
  t.same((await listDirectory(DEFAULT_ROOT, '.')).entries, [], 'the card\'s own example answers at once')
  t.equal(await ensureDefaultRoot(DEFAULT_ROOT, log), undefined, 'there already: nothing to do')
  process.chdir(join(dir, 'taken'))
  t.equal(await ensureDefaultRoot(DEFAULT_ROOT, log), undefined, 'cannot be made (a file is in the way)')
  t.same(logs.lines().map(l => `${pino.levels.labels[l.level]}: ${l.msg}`), [
    'info: created the default list_directory root',
    'warn: the default list_directory root could not be created'
  ])
})
