import t from 'tap'
import { MemoryPushConfigStore } from '../../../services/push/memory-store.js'
import { pushStoreContract } from './store-contract.js'

pushStoreContract(t, 'memory', async () => {
  const store = new MemoryPushConfigStore()
  return { store, cleanup: () => store.close() }
})
