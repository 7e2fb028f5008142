// The peer on PostgreSQL: @a2a-js/sdk 1.3 with express, its DefaultRequestHandler, and its own database stores
// (DatabaseTaskStore and DatabasePushNotificationStore on Kysely and pg, a pool of 10 as ours), the database migrated
// beforehand with the SDK's `a2a-db upgrade`. The executor does the work of our built-in agent (bench/peer-v1-agent.js).
// It speaks A2A v1.0 (SendMessage over JSON-RPC).
// Usage: node bench/peer-v1-postgres.js PORT DATABASE_URL
import express from 'express'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { DefaultPushNotificationSender, DefaultRequestHandler } from '@a2a-js/sdk-v1/server'
import { DatabasePushNotificationStore, DatabaseTaskStore } from '@a2a-js/sdk-v1/server/database'
import { UserBuilder, jsonRpcHandler } from '@a2a-js/sdk-v1/server/express'
import { EchoExecutor, peerCard } from './peer-v1-agent.js'

const port = Number(process.argv[2] ?? 0)
const url = process.argv[3]

const pool = new pg.Pool({ connectionString: url, max: 10 })
const db = new Kysely({ dialect: new PostgresDialect({ pool }) })
const pushStore = new DatabasePushNotificationStore(db)
const handler = new DefaultRequestHandler(peerCard(port), new DatabaseTaskStore(db), new EchoExecutor(), undefined, pushStore,
  new DefaultPushNotificationSender(pushStore))
const app = express()
app.use(express.json({ limit: '16mb' }))
app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }))
const server = app.listen(port, '127.0.0.1')
process.on('SIGTERM', () => {
  server.close(() => { db.destroy().finally(() => process.exit(0)) })
  server.closeAllConnections()
})
