import type { Command } from 'commander';

/** Customer and customer-identity commands (issue 3). */
export function registerCustomerCommands(_program: Command): void {}
