import { Command } from 'commander';
import { VERSION } from '../version.js';
import { registerAccountCommands } from './commands/accounts.js';
import { registerApiKeyCommands } from './commands/api-keys.js';
import { registerAppCommands } from './commands/apps.js';
import { registerCustomerCommands } from './commands/customers.js';
import { registerDemoCommand } from './commands/demo.js';
import { registerEarningRuleCommands } from './commands/earning-rules.js';
import {
  registerActivityTypeCommands,
  registerPointsProductCommands,
  registerPointsSettingsCommands,
  registerRewardFulfillmentCommands,
  registerVipTierCommands,
} from './commands/engine.js';
import { registerExportCommands } from './commands/exports.js';
import { registerImportCommands } from './commands/imports.js';
import { registerMigrateCommand } from './commands/migrate.js';
import { registerReferralSettingsCommands } from './commands/referral-settings.js';
import { registerReferralCommands } from './commands/referrals.js';
import { registerTokenCommands } from './commands/tokens.js';
import { registerUserCommands } from './commands/users.js';
import { registerWebhookCommands } from './commands/webhooks.js';

/** The `loyalty` admin command: every subcommand calls the same services as the HTTP routes. */
export function buildProgram(): Command {
  const program = new Command('loyalty')
    .description(
      'Administer the loyalty API: accounts, users, credentials, apps, referral settings, earning rules, ' +
        'activity types, customers, VIP tiers, points settings, points products and reward codes. Start with `loyalty demo`.\n' +
        'Uses DATABASE_URL like the server (default sqlite:./data/loyalty.db) and migrates it when needed.',
    )
    .version(VERSION, '--version', 'print the version of the service and its CLI')
    .option('--json', 'print exactly one JSON value on stdout')
    .showHelpAfterError()
    .configureOutput({ outputError: (text, write) => write(text) });
  registerAccountCommands(program);
  registerApiKeyCommands(program);
  registerAppCommands(program);
  registerTokenCommands(program);
  registerReferralSettingsCommands(program);
  registerEarningRuleCommands(program);
  registerCustomerCommands(program);
  registerActivityTypeCommands(program);
  registerVipTierCommands(program);
  registerPointsSettingsCommands(program);
  registerPointsProductCommands(program);
  registerRewardFulfillmentCommands(program);
  registerImportCommands(program);
  registerExportCommands(program);
  registerUserCommands(program);
  registerWebhookCommands(program);
  registerReferralCommands(program);
  registerMigrateCommand(program);
  registerDemoCommand(program);
  return program;
}

await buildProgram().parseAsync(process.argv);
