/** Whether `work` settled within `ms` (it is left running when it did not): the bounded waits of a close. */
export async function within (work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<boolean>(resolve => { timer = setTimeout(resolve, ms, false) })
  const settled = await Promise.race([work.then(() => true), expired])
  clearTimeout(timer)
  return settled
}
