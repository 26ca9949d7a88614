import type { FastifyInstance, FastifyReply } from 'fastify';

/**
 * Answers ready in one turn of the event loop are written together, at the end of the turn
 * (`setImmediate`), instead of each as soon as it is ready: the writes of a turn then reach the
 * clients as one burst. The sockets' syscalls are the same; what is saved is the waking of the
 * readers, which on a busy machine costs the writer as much as the write (`npm run bench`:
 * Fastify answering the earning-rules page from memory goes from 36 to 28 µs of CPU per request,
 * docs/benchmarks.md). An answer waits at most for the rest of its turn: nothing when the
 * process is idle. Registered after the app's own `onSend` hooks; a plugin's run after it.
 */
export function registerSendBatching(app: FastifyInstance): void {
  let waiting: Array<() => void> = [];
  // A new Set for each turn, never one emptied with clear(): a Set that lived long enough to be in
  // V8's old generation gets its new tables there too, and each clear() leaves the last table
  // (garbage only a full collection finds) pointing at the turn's replies, which every young
  // collection then kept alive with their requests and answers: a quarter of what a read
  // allocated went to the old generation, and collecting cost 10 times as much (issue 50,
  // test/http/send-batching.test.ts).
  let replies = new Set<FastifyReply>();
  const writeAll = () => {
    const batch = waiting;
    waiting = [];
    replies = new Set();
    for (const write of batch) {
      try {
        write();
      } catch (error) {
        // One answer that cannot be written must not keep the others of its turn.
        app.log.error({ err: error }, 'writing an answer failed');
      }
    }
  };
  app.addHook('onSend', (request, reply, _payload, done) => {
    // While its answer waits here `reply.sent` is still false, so an async handler that calls
    // `reply.send()` and resolves to nothing has Fastify send again (without batching the first
    // would already be written, and Fastify would not). The second is dropped, as Fastify would:
    // written too, it would fail with ERR_HTTP_HEADERS_SENT after the first.
    if (replies.has(reply)) {
      request.log.debug('a second send of an answer still waiting to be written was dropped');
      return;
    }
    if (waiting.length === 0) setImmediate(writeAll);
    waiting.push(done);
    replies.add(reply);
  });
}
