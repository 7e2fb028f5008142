/** Who is calling. With security off every caller is ANONYMOUS, which holds every scope. */
export interface Principal {
  /** Stable id: tasks and push configs belong to it (CONTRACT.md §9, tenancy). */
  readonly id: string
  readonly scheme: 'anonymous' | 'api_key' | 'bearer' | 'oauth2'
  /** Granted scopes after expansion through `security.scope_hierarchy`. */
  readonly scopes: ReadonlySet<string>
  /** True when the expanded scopes include `*`. */
  readonly all: boolean
}

export const ANONYMOUS: Principal = Object.freeze({
  id: 'anonymous',
  scheme: 'anonymous',
  scopes: new Set(['*']),
  all: true
})

export type ScopeHierarchy = Readonly<Record<string, readonly string[]>>

/**
 * Expands granted scopes through the hierarchy, transitively. Cycles are harmless: a scope already seen is not
 * walked again.
 */
export function expandScopes (granted: Iterable<string>, hierarchy: ScopeHierarchy): Set<string> {
  const out = new Set<string>()
  const todo = [...granted]
  while (todo.length > 0) {
    const scope = todo.pop() as string
    if (out.has(scope)) continue
    out.add(scope)
    const implied = Object.hasOwn(hierarchy, scope) ? hierarchy[scope] : undefined
    if (implied) todo.push(...implied)
  }
  return out
}

export function createPrincipal (id: string, scheme: Principal['scheme'], granted: Iterable<string>,
  hierarchy: ScopeHierarchy): Principal {
  const scopes = expandScopes(granted, hierarchy)
  return { id, scheme, scopes, all: scopes.has('*') }
}

/** The scopes of `needed` the principal lacks; empty when it may go ahead. */
export function missingScopes (principal: Principal, needed: readonly string[]): readonly string[] {
  if (principal.all) return NONE
  // On the path of every request: no array made when nothing is missing, which is the common case.
  for (const scope of needed) {
    if (!principal.scopes.has(scope)) return needed.filter(s => !principal.scopes.has(s))
  }
  return NONE
}

const NONE: readonly string[] = Object.freeze([])

/** Admins see every principal's tasks (CONTRACT.md §9, tenancy). */
export function isAdmin (principal: Principal): boolean {
  return principal.all || principal.scopes.has('admin')
}
