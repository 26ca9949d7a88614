import type { Command } from 'commander';
import type { CustomerIdentity } from '../../customer-identities/schemas.js';
import type { CustomerSummary } from '../../customers/schemas.js';
import { lines, parseId, run } from '../context.js';
import { registerCustomerStateCommands } from './engine.js';

interface CreateOptions {
  account: string;
  email: string;
  firstName?: string;
  lastName?: string;
}

/** `customers create|list` and `customer-identities list`, on the services the API uses. */
export function registerCustomerCommands(program: Command): void {
  const customers = program.command('customers').description("an account's customers");
  customers
    .command('create')
    .description(
      'create a customer; customer identities sent later with the same email (in any case, with or ' +
        'without surrounding spaces) link to it. An email the account already has is refused, naming ' +
        'the existing customer: nothing is changed.',
    )
    .requiredOption('--account <id>', 'the account')
    .requiredOption('--email <email>', 'e-mail address (at most 254 characters; surrounding spaces are trimmed)')
    .option('--first-name <name>', 'given name (at most 255 characters)')
    .option('--last-name <name>', 'family name (at most 255 characters)')
    .action((opts: CreateOptions, cmd: Command) =>
      run(
        cmd,
        ({ services }) =>
          services.customers.create(parseId(opts.account, 'account'), {
            email: opts.email,
            ...(opts.firstName === undefined ? {} : { first_name: opts.firstName }),
            ...(opts.lastName === undefined ? {} : { last_name: opts.lastName }),
          }),
        (c) => lines({ id: c.id, email: c.email, first_name: c.first_name ?? '', last_name: c.last_name ?? '' }),
      ),
    );
  registerCustomerStateCommands(customers);
  customers
    .command('list')
    .description("list an account's customers, oldest first")
    .requiredOption('--account <id>', 'the account')
    .action((opts: { account: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.customers.list(parseId(opts.account, 'account')),
        (all) => all.map(customerLine).join('\n') || '(no customers)',
      ),
    );

  const identities = program
    .command('customer-identities')
    .description("an account's customer identities (created by apps through the API)");
  identities
    .command('list')
    .description("list an account's customer identities, oldest first")
    .requiredOption('--account <id>', 'the account')
    .action((opts: { account: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.customerIdentities.listIdentities(parseId(opts.account, 'account')),
        (all) => all.map(identityLine).join('\n') || '(no customer identities)',
      ),
    );
}

function customerLine(c: CustomerSummary): string {
  return [c.id, c.email, fullName(c)].join('\t');
}

function identityLine(i: CustomerIdentity): string {
  return [i.id, i.distinct_id, i.email, fullName(i), `customer ${i.customer_id}`, JSON.stringify(i.properties)].join(
    '\t',
  );
}

function fullName(who: { first_name: string | null; last_name: string | null }): string {
  return [who.first_name, who.last_name].filter(Boolean).join(' ') || '-';
}
