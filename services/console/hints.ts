// What the console offers to type in its empty chat (CONTRACT.md §3, `GET /console`).
import { BUILTIN_SKILL } from '../a2a/agent-card.js'

/** A message the console offers: clicking it fills the chat input. */
export interface ChatHint {
  text: string
  /** What the message does, shown on hover. */
  title: string
}

/**
 * The built-in agent's commands (services/agent/builtin.ts; its tools are services/json-rpc/agent-tools.ts), offered
 * while the card lists the built-in skill. Any other text is echoed back.
 */
export const BUILTIN_HINTS: readonly ChatHint[] = [
  { text: 'status', title: 'status tool: the agent\'s name, version and uptime' },
  { text: 'capabilities', title: 'capabilities tool: the methods you may call, and the agent\'s capabilities' },
  { text: 'list_directory .', title: 'list_directory tool: the entries of a directory under tools.list_directory.root' },
  { text: 'hello', title: 'anything else is echoed back as the task\'s artifact' }
]

/** The id of the skill the card lists for the built-in agent. */
export const BUILTIN_SKILL_ID = BUILTIN_SKILL.id
