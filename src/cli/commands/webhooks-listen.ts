import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Command } from 'commander';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { WEBHOOK_SECRET_PREFIX } from '../../webhooks/secrets.js';

/** The largest delivery the listener reads (the service's events are a few KiB). */
const MAX_BODY = 1024 * 1024;

/**
 * `loyalty webhooks listen`: a receiver on this machine for trying webhooks out. It verifies every
 * delivery with the `standardwebhooks` package (what any receiver would use), prints each verified
 * event (one JSON line each with --json) and refuses the rest with `400`. It runs until stopped.
 */
export function addWebhooksListenCommand(webhooks: Command): void {
  webhooks
    .command('listen')
    .description(
      'receive webhooks on this machine: verify each delivery with the endpoint secret and print it ' +
        '(the server needs WEBHOOK_ALLOW_PRIVATE_NETWORKS=true to deliver to 127.0.0.1); runs until Ctrl-C',
    )
    .requiredOption('--secret <whsec>', "the endpoint's signing secret (shown by `loyalty webhooks create`)")
    .option('--port <port>', 'the port to listen on', '4000')
    .option('--host <host>', 'the address to listen on', '127.0.0.1')
    .action(async (opts: { secret: string; port: string; host: string }, cmd: Command) => {
      const json = Boolean(cmd.optsWithGlobals().json);
      if (!opts.secret.startsWith(WEBHOOK_SECRET_PREFIX)) {
        process.stderr.write(`--secret must be an endpoint secret (${WEBHOOK_SECRET_PREFIX}…)\n`);
        process.exitCode = 1;
        return;
      }
      const port = Number(opts.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) {
        process.stderr.write(`--port must be a whole number from 0 to 65535, got "${opts.port}"\n`);
        process.exitCode = 1;
        return;
      }
      const verifier = new Webhook(opts.secret);
      const server = createServer((request, response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        request.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= MAX_BODY) chunks.push(chunk);
        });
        request.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          try {
            if (size > MAX_BODY) throw new WebhookVerificationError(`the body is over ${MAX_BODY} bytes`);
            const event = verifier.verify(body, request.headers as Record<string, string>) as {
              id: string;
              type: string;
              created_at: string;
            };
            process.stdout.write(
              json
                ? `${JSON.stringify(event)}\n`
                : `verified ${event.type} ${event.id} (${event.created_at})\n${body}\n`,
            );
            response.writeHead(204).end();
          } catch (error) {
            process.stderr.write(
              `refused a delivery (${request.headers['webhook-id'] ?? 'no webhook-id'}): ${(error as Error).message}\n`,
            );
            response.writeHead(400, { 'content-type': 'text/plain' }).end('signature not verified\n');
          }
        });
      });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, opts.host, resolve);
      }).catch((error: Error) => {
        process.stderr.write(`Cannot listen on ${opts.host}:${port}: ${error.message}\n`);
        process.exit(1);
      });
      const bound = (server.address() as AddressInfo).port;
      const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
      // The command it suggests must work as printed: an http:// loopback URL is refused at save
      // unless WEBHOOK_ALLOW_PRIVATE_NETWORKS=true, and the server needs it too to deliver here.
      process.stderr.write(
        `listening for webhooks at http://${host}:${bound}/ ; Ctrl-C stops\n` +
          `point an endpoint there (with the server started with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true, for tests ` +
          `only):\n  WEBHOOK_ALLOW_PRIVATE_NETWORKS=true npx loyalty webhooks create --account ID --url ` +
          `http://${host}:${bound}/\n`,
      );
      const stop = () => server.close(() => process.exit(0));
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
}
