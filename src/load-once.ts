/**
 * Runs `load` for `key` unless a load for the same key is already in flight, in which case its
 * result (or failure) is shared. The caches use it so that when a busy entry expires, the
 * requests waiting for it make one query rather than one each. Deleting the key from `inFlight`
 * makes the next caller start a new load (after a change, a load begun before it must not be
 * shared).
 */
export function loadOnce<K, V>(inFlight: Map<K, Promise<V>>, key: K, load: () => Promise<V>): Promise<V> {
  const pending = inFlight.get(key);
  if (pending !== undefined) return pending;
  const started = load().finally(() => {
    if (inFlight.get(key) === started) inFlight.delete(key);
  });
  inFlight.set(key, started);
  return started;
}
