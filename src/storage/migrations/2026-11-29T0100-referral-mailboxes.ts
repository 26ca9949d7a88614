import { type Kysely, sql } from 'kysely';

// One referral per mailbox and account (issue 49): `already_referred` compares mailboxes as
// `self_referral` does, and a unique index on the receiver's mailbox decides between parallel
// referrals of two spellings of one mailbox, as the unique constraint on the normalised email
// already did for one spelling. Existing referrals get their mailbox here. Where an account
// already holds several referrals of one mailbox (made before this rule), the first keeps the
// key and the later ones keep none (null, which the index lets repeat): they stay as they were,
// rewards included, and no new referral of that mailbox can be made.

/** Referrals given their mailbox per statement. */
const BACKFILL_BATCH = 500;
const GOOGLE_DOMAINS = new Set(['gmail.com', 'googlemail.com']);

/**
 * The mailbox of a normalised email as src/referrals/email.ts keys it (no `+tag`; at Google's two
 * domains no dots, and gmail.com), written here again: migrations never import the application's
 * code.
 */
function mailboxKey(normalized: string): string {
  const at = normalized.lastIndexOf('@');
  if (at < 0) return normalized;
  let domain = normalized.slice(at + 1);
  let local = normalized.slice(0, at);
  const plus = local.indexOf('+');
  if (plus >= 0) local = local.slice(0, plus);
  if (GOOGLE_DOMAINS.has(domain)) {
    local = local.replaceAll('.', '');
    domain = 'gmail.com';
  }
  return `${local}@${domain}`;
}

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('referrals').addColumn('receiver_mailbox', 'text').execute();
  for (let after = 0; ; ) {
    const rows: { id: number; receiver_email_normalized: string }[] = await db
      .selectFrom('referrals')
      .select(['id', 'receiver_email_normalized'])
      .where('id', '>', after)
      .orderBy('id')
      .limit(BACKFILL_BATCH)
      .execute();
    if (rows.length === 0) break;
    const keys = sql.join(
      rows.map((row) => sql`when ${row.id} then ${mailboxKey(row.receiver_email_normalized)}`),
      sql` `,
    );
    await sql`update referrals set receiver_mailbox = case id ${keys} end
      where id in (${sql.join(rows.map((row) => row.id))})`.execute(db);
    after = Number(rows[rows.length - 1]!.id);
  }
  // Duplicates under the rule: every referral but the account's first of its mailbox lets go of
  // the key (an index for the lookup, dropped once the unique one can be made).
  await db.schema
    .createIndex('referrals_mailbox_backfill')
    .on('referrals')
    .columns(['account_id', 'receiver_mailbox', 'id'])
    .execute();
  await sql`update referrals set receiver_mailbox = null
    where exists (select 1 from referrals earlier
      where earlier.account_id = referrals.account_id
        and earlier.receiver_mailbox = referrals.receiver_mailbox
        and earlier.id < referrals.id)`.execute(db);
  await db.schema.dropIndex('referrals_mailbox_backfill').execute();
  await db.schema
    .createIndex('referrals_account_mailbox')
    .on('referrals')
    .columns(['account_id', 'receiver_mailbox'])
    .unique()
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('referrals_account_mailbox').execute();
  await db.schema.alterTable('referrals').dropColumn('receiver_mailbox').execute();
}
