// The agent of the bench's `chunks` case (`agent.executor: <this file>`): answers every message with
// A2A_BENCH_CHUNKS artifact chunks of 1 KB (default 4,000), as fast as it can: an LLM streaming one chunk per token,
// with nothing of the model's own time.
const CHUNKS = Number(process.env.A2A_BENCH_CHUNKS ?? 4000)
const CHUNK = 'x'.repeat(1024)

export default async function * chunky () {
  for (let i = 0; i < CHUNKS; i++) yield CHUNK
}
