import type { JWK } from 'jose'
import canonicalize from 'canonicalize'
import { LRUCache } from 'lru-cache'
import type { A2AConfig, CardSigning } from '../../schemas/config.js'
import { signingKeyOf, type SigningKey } from '../config/signing-key.js'

/** An `AgentCardSignature` (A2A v1.0 §8.4 and v0.3 alike): a detached JWS in the flattened JSON serialization. */
export interface AgentCardSignature {
  protected: string
  signature: string
  header?: Record<string, unknown>
}

/**
 * How a2a.proto (v1.0) writes a field, the presence rules both official verifiers apply before they canonicalize:
 * `string` and `bool` (no presence) are dropped at their default ("" and false); `optionalBool` (proto3 `optional`)
 * is kept when set, false included; lists, maps and messages are dropped when empty; a `struct` is kept as JSON.
 */
type Field = 'string' | 'bool' | 'optionalBool' | 'strings' | 'stringMap' | 'struct' | { message: string, repeated?: true, map?: true }

interface MessageShape {
  fields: Record<string, Field>
  /** The fields form a oneof: the first one set, in declaration order, is the only one read. */
  oneof?: true
}

const flow = (required: string[], optional: string[] = ['refreshUrl']): MessageShape =>
  ({ fields: { ...Object.fromEntries([...required, ...optional].map(name => [name, 'string' as const])), scopes: 'stringMap' } })

/**
 * a2a.proto v1.0.1's `AgentCard` and the messages under it, fields in declaration order, as JSON names. A field not
 * listed here (every v0.3-only one: protocolVersion, url, preferredTransport, additionalInterfaces, security, ...) is
 * not part of the signed payload. `documentationUrl` and `iconUrl` are `optional string`: an empty one is dropped all
 * the same by the verifiers' cleaning, so `string` says it.
 */
const MESSAGES: Record<string, MessageShape> = {
  AgentCard: {
    fields: {
      name: 'string',
      description: 'string',
      supportedInterfaces: { message: 'AgentInterface', repeated: true },
      provider: { message: 'AgentProvider' },
      version: 'string',
      documentationUrl: 'string',
      capabilities: { message: 'AgentCapabilities' },
      securitySchemes: { message: 'SecurityScheme', map: true },
      securityRequirements: { message: 'SecurityRequirement', repeated: true },
      defaultInputModes: 'strings',
      defaultOutputModes: 'strings',
      skills: { message: 'AgentSkill', repeated: true },
      iconUrl: 'string'
    }
  },
  AgentInterface: { fields: { url: 'string', protocolBinding: 'string', tenant: 'string', protocolVersion: 'string' } },
  AgentProvider: { fields: { url: 'string', organization: 'string' } },
  AgentCapabilities: {
    fields: {
      streaming: 'optionalBool',
      pushNotifications: 'optionalBool',
      extensions: { message: 'AgentExtension', repeated: true },
      extendedAgentCard: 'optionalBool'
    }
  },
  AgentExtension: { fields: { uri: 'string', description: 'string', required: 'bool', params: 'struct' } },
  AgentSkill: {
    fields: {
      id: 'string',
      name: 'string',
      description: 'string',
      tags: 'strings',
      examples: 'strings',
      inputModes: 'strings',
      outputModes: 'strings',
      securityRequirements: { message: 'SecurityRequirement', repeated: true }
    }
  },
  SecurityRequirement: { fields: { schemes: { message: 'StringList', map: true } } },
  StringList: { fields: { list: 'strings' } },
  SecurityScheme: {
    oneof: true,
    fields: {
      apiKeySecurityScheme: { message: 'APIKeySecurityScheme' },
      httpAuthSecurityScheme: { message: 'HTTPAuthSecurityScheme' },
      oauth2SecurityScheme: { message: 'OAuth2SecurityScheme' },
      openIdConnectSecurityScheme: { message: 'OpenIdConnectSecurityScheme' },
      mtlsSecurityScheme: { message: 'MutualTlsSecurityScheme' }
    }
  },
  APIKeySecurityScheme: { fields: { description: 'string', location: 'string', name: 'string' } },
  HTTPAuthSecurityScheme: { fields: { description: 'string', scheme: 'string', bearerFormat: 'string' } },
  OAuth2SecurityScheme: { fields: { description: 'string', flows: { message: 'OAuthFlows' }, oauth2MetadataUrl: 'string' } },
  OpenIdConnectSecurityScheme: { fields: { description: 'string', openIdConnectUrl: 'string' } },
  MutualTlsSecurityScheme: { fields: { description: 'string' } },
  OAuthFlows: {
    oneof: true,
    fields: {
      authorizationCode: { message: 'AuthorizationCodeOAuthFlow' },
      clientCredentials: { message: 'ClientCredentialsOAuthFlow' },
      implicit: { message: 'ImplicitOAuthFlow' },
      password: { message: 'PasswordOAuthFlow' },
      deviceCode: { message: 'DeviceCodeOAuthFlow' }
    }
  },
  AuthorizationCodeOAuthFlow: { fields: { ...flow(['authorizationUrl', 'tokenUrl']).fields, pkceRequired: 'bool' } },
  ClientCredentialsOAuthFlow: flow(['tokenUrl']),
  ImplicitOAuthFlow: flow(['authorizationUrl']),
  PasswordOAuthFlow: flow(['tokenUrl']),
  DeviceCodeOAuthFlow: flow(['deviceAuthorizationUrl', 'tokenUrl'])
}

/** The ProtoJSON parsers take a field's proto name too: `supported_interfaces` for `supportedInterfaces`. */
const snake = (name: string): string => name.replace(/[A-Z]/g, c => '_' + c.toLowerCase())

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null
const isSet = (value: unknown): boolean => value !== undefined && value !== null

/** A value with its empty strings, nulls, empty lists and empty objects removed, at every depth; undefined if empty. */
function clean (value: unknown): unknown {
  if (value === '' || value === null || value === undefined) return undefined
  if (Array.isArray(value)) {
    const items = value.map(clean).filter(item => item !== undefined)
    return items.length > 0 ? items : undefined
  }
  if (isObject(value)) {
    const entries = Object.entries(value).map(([key, item]) => [key, clean(item)]).filter(([, item]) => item !== undefined)
    return entries.length > 0 ? Object.fromEntries(entries) : undefined
  }
  return value
}

/** A field's value (never null nor undefined) as read by the ProtoJSON parsers. */
function projectField (field: Field, value: unknown): unknown {
  switch (field) {
    case 'string': return String(value)
    case 'bool': return value ? true : undefined
    case 'optionalBool': return Boolean(value)
    case 'strings': return Array.isArray(value) ? value.map(item => String(item)) : undefined
    case 'stringMap': return isObject(value) ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, String(v)])) : undefined
    case 'struct': return isObject(value) ? value : undefined
  }
  if (field.repeated === true) return Array.isArray(value) ? value.map(item => projectMessage(field.message, item)) : undefined
  if (field.map === true) {
    return isObject(value) ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, projectMessage(field.message, v)])) : undefined
  }
  return projectMessage(field.message, value)
}

function projectMessage (type: string, value: unknown): Record<string, unknown> {
  const shape = MESSAGES[type]
  const source = isObject(value) ? value : {}
  const out: Record<string, unknown> = {}
  for (const [name, field] of Object.entries(shape.fields)) {
    const given = isSet(source[name]) ? source[name] : source[snake(name)]
    if (!isSet(given)) continue
    out[name] = projectField(field, given)
    if (shape.oneof === true) break
  }
  return out
}

/**
 * What is signed of a card (A2A v1.0 §8.4.1), as both official SDKs rebuild it to verify: the card read as a v1.0
 * `AgentCard` (fields outside a2a.proto dropped, fields at their proto3 default dropped), without `signatures`, then
 * cleaned of empty values. Works on the hybrid card, the pure v1.0 one and any card JSON a client receives.
 */
export function cardPayload (card: unknown): Record<string, unknown> {
  return (clean(projectMessage('AgentCard', card)) ?? {}) as Record<string, unknown>
}

/** The bytes signed: the RFC 8785 (JCS) form of `cardPayload(card)`. */
export function signedPayload (card: unknown): string {
  return canonicalize(cardPayload(card)) as string
}

/** How many signed cards a signer keeps, by their unsigned JSON (the extended card has one form per set of scopes). */
const SIGNED_CARDS = 256

/** Signs cards with the configured key; the same card is signed once, so its bytes (and ETag) stay the same. */
export class CardSigner {
  readonly #key: SigningKey
  readonly #jku: string | undefined
  readonly #kid: Promise<string>
  readonly #signed = new LRUCache<string, Promise<AgentCardSignature>>({ max: SIGNED_CARDS })

  constructor (key: SigningKey, options: { kid?: string, jku?: string } = {}) {
    this.#key = key
    this.#jku = options.jku
    // jose is loaded when a card is first signed, so a server that signs nothing never loads it.
    this.#kid = options.kid === undefined
      ? import('jose').then(jose => jose.calculateJwkThumbprint(key.publicJwk as JWK))
      : Promise.resolve(options.kid)
  }

  /** The key id in the signatures' header: the configured `kid`, else the public key's RFC 7638 thumbprint. */
  kid (): Promise<string> {
    return this.#kid
  }

  /** The public key as a JWK set, as `/.well-known/jwks.json` serves it. */
  async jwks (): Promise<{ keys: JWK[] }> {
    return { keys: [{ ...this.#key.publicJwk, kid: await this.#kid, alg: this.#key.alg, use: 'sig' } as JWK] }
  }

  /** The card with its signature: `signatures` (any already there is replaced) holds one, made over `signedPayload`. */
  async sign<T extends object> (card: T): Promise<T & { signatures: AgentCardSignature[] }> {
    const { signatures: _, ...unsigned } = card as T & { signatures?: unknown }
    const key = JSON.stringify(unsigned)
    let signature = this.#signed.get(key)
    if (signature === undefined) {
      signature = this.#signature(unsigned)
      this.#signed.set(key, signature)
    }
    return { ...unsigned, signatures: [await signature] } as T & { signatures: AgentCardSignature[] }
  }

  async #signature (card: object): Promise<AgentCardSignature> {
    const header = { alg: this.#key.alg, typ: 'JOSE', kid: await this.#kid, ...(this.#jku === undefined ? {} : { jku: this.#jku }) }
    const { FlattenedSign } = await import('jose')
    const jws = await new FlattenedSign(new TextEncoder().encode(signedPayload(card))).setProtectedHeader(header).sign(this.#key.privateKey)
    return { protected: jws.protected as string, signature: jws.signature }
  }
}

const signers = new WeakMap<CardSigning, CardSigner>()

/**
 * The signer of `agent.card_signing`, one per configuration (every card route and method shares it and its cache);
 * undefined when cards are not signed. Throws `SigningKeyError` for a key that cannot sign (validation has said so).
 */
export function cardSignerOf (config: A2AConfig): CardSigner | undefined {
  const signing = config.agent.card_signing
  if (signing === undefined) return undefined
  let signer = signers.get(signing)
  if (signer === undefined) {
    signer = new CardSigner(signingKeyOf(signing), { kid: signing.kid, jku: signing.jku })
    signers.set(signing, signer)
  }
  return signer
}

/** The card signed when a signer is given, else as it is. */
export async function signedCard<T extends object> (signer: CardSigner | undefined, card: T): Promise<T & { signatures?: AgentCardSignature[] }> {
  return signer === undefined ? card : await signer.sign(card)
}
