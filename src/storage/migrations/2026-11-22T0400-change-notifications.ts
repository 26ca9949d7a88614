import { type Kysely, sql } from 'kysely';
import { isPostgres } from './dialect.js';

// PostgreSQL only: every commit that changes an account's referral settings or earning rules
// sends a notification on the `loyalty_changes` channel ("schema kind account_id"), so each
// server process can keep those in memory and forget them the moment they change, whichever
// process, node or tool made the change (see src/storage/change-feed.ts). Triggers rather than
// calls in the code, so no write path can forget. Earning-rules changes already raise
// accounts.earning_rules_version in their transaction; the trigger watches that column.
// SQLite has no notifications; its processes read the (local) database on every request.

export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`
    create function loyalty_notify_referral_settings() returns trigger language plpgsql as $$
    begin
      perform pg_notify('loyalty_changes', tg_table_schema || ' referral_settings ' ||
        case when tg_op = 'DELETE' then old.account_id else new.account_id end);
      return null;
    end $$`.execute(db);
  await sql`
    create trigger referral_settings_changed after insert or update or delete on referral_settings
    for each row execute function loyalty_notify_referral_settings()`.execute(db);
  await sql`
    create function loyalty_notify_earning_rules() returns trigger language plpgsql as $$
    begin
      perform pg_notify('loyalty_changes', tg_table_schema || ' earning_rules ' || new.id);
      return null;
    end $$`.execute(db);
  await sql`
    create trigger earning_rules_changed after update of earning_rules_version on accounts
    for each row execute function loyalty_notify_earning_rules()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`drop trigger earning_rules_changed on accounts`.execute(db);
  await sql`drop function loyalty_notify_earning_rules()`.execute(db);
  await sql`drop trigger referral_settings_changed on referral_settings`.execute(db);
  await sql`drop function loyalty_notify_referral_settings()`.execute(db);
}
