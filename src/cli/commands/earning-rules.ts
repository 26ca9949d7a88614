import type { Command } from 'commander';

/** Earning-rule commands (issue 4). */
export function registerEarningRuleCommands(_program: Command): void {}
