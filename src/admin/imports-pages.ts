import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { DomainError } from '../errors.js';
import {
  checkKind,
  csvLines,
  EXPORT_FILTERS,
  EXPORT_FORMATS,
  EXPORT_KINDS,
  type ExportFormat,
  type ExportKind,
} from '../exports/service.js';
import { MAX_ROW_BYTES } from '../imports/csv.js';
import { shortened } from '../imports/refusals.js';
import { IMPORT_COLUMNS } from '../imports/schemas.js';
import { CHECK_BUDGET_MS, type ImportCheck, MAX_UPLOAD_BYTES } from '../imports/service.js';
import { Form, formErrors } from './form.js';
import { hide, postWithId, refuseForm, sendPage, typed, withId } from './pages.js';

// Import and export (docs/imports.md, "In the console"): a CSV file uploaded, its columns mapped,
// the import run by the job runner with its progress read from the database (a reload shows how
// far it got, on any node), its refused rows as a CSV; and every export as a download.

/** Refused rows shown on a run's page (all of them are in its CSV). */
const REFUSALS_SHOWN = 50;
/** Refused rows read per statement for the CSV. */
const REFUSALS_PAGE = 1000;
const REFUSAL_COLUMNS = ['line', 'message'];
/** Fields besides the file an upload form has (its CSRF token). */
const UPLOAD_FIELDS = 2;
/** Rows of the file the mapping step shows each column's values of. */
const SAMPLE_ROWS = 3;
/** The export form's fields, by their labels. */
const EXPORT_LABELS: Record<string, string> = {
  kind: 'Records',
  format: 'Format',
  updated_at_min: 'Changed since',
  customer_id: 'Customer id',
};

const ExportQuery = Type.Object({
  kind: Type.String({ maxLength: 50 }),
  format: Type.Optional(Type.String({ maxLength: 10 })),
  customer_id: Type.Optional(Type.String({ maxLength: 30 })),
  state: Type.Optional(Type.String({ maxLength: 20 })),
  updated_at_min: Type.Optional(Type.String({ maxLength: 40 })),
});

/** What the import and export page shows besides a form's errors. */
const KIND_LABELS: Record<ExportKind, string> = {
  customers: 'Customers (with balance, points earned, tier and referral URL)',
  'points-transactions': 'Points transactions (the ledger)',
  'reward-fulfillments': 'Reward fulfillments',
  activities: 'Activities',
};

/** The import column a file's column is read as unless the merchant picks another: its own name, tidied. */
function suggestedColumn(name: string): string {
  const tidy = name
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');
  const aliases: Record<string, string> = { e_mail: 'email', email_address: 'email', balance: 'points_balance' };
  const column = aliases[tidy] ?? tidy;
  return (IMPORT_COLUMNS as readonly string[]).includes(column) ? column : '';
}

/** A column's first values as the mapping step shows them: each in quotes, shortened as refusals quote a cell. */
function sampleHint(values: readonly string[]): string {
  const shown = values.map((value) => (value.trim() === '' ? '(empty)' : `“${shortened(value.trim())}”`));
  return `${shown.length === 1 ? 'First value' : `First ${shown.length} values`}: ${shown.join(', ')}`;
}

const importsPages: FastifyPluginAsyncTypebox = async (app) => {
  const { imports, exports, sessions } = app.services;
  await app.register(multipart, {
    limits: { fileSize: MAX_UPLOAD_BYTES, files: 1, fields: UPLOAD_FIELDS, parts: UPLOAD_FIELDS + 1 },
    // A file past the limit ends early, `truncated`: the import says so in its own words.
    throwFileSizeLimit: false,
  });

  const overview = async (accountId: number) => ({
    title: 'Import and export',
    runs: await imports.recent(accountId),
    kinds: EXPORT_KINDS.map((kind) => ({ value: kind, label: KIND_LABELS[kind] })),
    formats: EXPORT_FORMATS,
    values: {},
    maxUpload: `${MAX_UPLOAD_BYTES / 1024 ** 2} MiB`,
    maxRow: `${MAX_ROW_BYTES / 1024 ** 2} MiB`,
  });

  app.get('/imports', { schema: hide }, async (request, reply) =>
    sendPage(reply, request, 200, 'imports', await overview(request.console!.user.accountId)),
  );

  // The file's bytes go to the database as they arrive; the token must come first, as the form sends it.
  app.post('/imports', { schema: hide, config: { consoleUpload: true } }, async (request, reply) => {
    const { session, user } = request.console!;
    if (!request.isMultipart()) return refuseForm(request, reply);
    let allowed = false;
    for await (const part of request.parts()) {
      if (part.type === 'field') {
        if (part.fieldname === 'csrf_token') allowed = sessions.checkCsrf(session, String(part.value));
        continue;
      }
      if (!allowed) {
        part.file.resume();
        return refuseForm(request, reply);
      }
      if (part.filename === '') {
        part.file.resume();
        break;
      }
      try {
        const uploaded = await imports.upload(user.accountId, part.filename, part.file, () => part.file.truncated);
        return reply.redirect(`/admin/imports/uploads/${uploaded.id}`, 303);
      } catch (error) {
        part.file.resume();
        if (!(error instanceof DomainError) || error.status >= 500) throw error;
        return sendPage(reply, request, error.status, 'imports', {
          ...(await overview(user.accountId)),
          uploadError: `The file ${error.message.replace(/^file /, '')}`,
        });
      }
    }
    if (!allowed) return refuseForm(request, reply);
    return sendPage(reply, request, 422, 'imports', {
      ...(await overview(user.accountId)),
      uploadError: 'Choose a CSV file to upload.',
    });
  });

  const mappingPage = async (
    accountId: number,
    uploadId: number,
    chosen?: readonly string[],
    error?: DomainError,
    setBalances = false,
    check?: ImportCheck,
  ) => {
    const upload = await imports.uploaded(accountId, uploadId);
    const samples = await imports.samples(accountId, uploadId, SAMPLE_ROWS);
    const atField = error?.details?.some((detail) => detail.field.startsWith('mapping.')) === true;
    return {
      title: `Map the columns of ${upload.fileName}`,
      upload,
      setBalances,
      noRows: samples.length === 0,
      columns: upload.names.map((name, i) => ({
        index: i,
        name,
        value: chosen?.[i] ?? suggestedColumn(name),
        hint: samples.length === 0 ? undefined : sampleHint(samples.map((row) => row[i] ?? '')),
        error: error?.details?.find((detail) => detail.field === `mapping.${i}`)?.message,
      })),
      options: [{ value: '', label: 'Ignore this column' }, ...IMPORT_COLUMNS.map((c) => ({ value: c, label: c }))],
      error: error && !atField ? capitalised(error.message) : undefined,
      check,
      checkSeconds: CHECK_BUDGET_MS / 1000,
    };
  };

  app.get('/imports/uploads/:id', { schema: withId }, async (request, reply) =>
    sendPage(
      reply,
      request,
      200,
      'import-mapping',
      await mappingPage(request.console!.user.accountId, request.params.id),
    ),
  );

  app.post('/imports/uploads/:id', { ...typed, schema: postWithId }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const form = new Form(request.body);
    const upload = await imports.uploaded(accountId, request.params.id);
    const chosen = upload.names.map((_, i) => form.text(`mapping.${i}`));
    const setBalances = form.checked('set_balances');
    if (request.consoleRestore) {
      return sendPage(
        reply,
        request,
        200,
        'import-mapping',
        await mappingPage(accountId, upload.id, chosen, undefined, setBalances),
      );
    }
    try {
      if (form.checked('check')) {
        // "Check without importing": the CLI's --dry-run, its answer shown with the form as it was sent.
        const check = await imports.check(accountId, upload.id, chosen, { setBalances, refusalsKept: REFUSALS_SHOWN });
        return sendPage(
          reply,
          request,
          200,
          'import-mapping',
          await mappingPage(accountId, upload.id, chosen, undefined, setBalances, check),
        );
      }
      const importId = await imports.start(accountId, upload.id, chosen, { setBalances });
      return reply.redirect(`/admin/imports/${importId}`, 303);
    } catch (error) {
      if (!(error instanceof DomainError) || error.status >= 500) throw error;
      return sendPage(
        reply,
        request,
        error.status,
        'import-mapping',
        await mappingPage(accountId, upload.id, chosen, error, setBalances),
      );
    }
  });

  app.get('/imports/:id', { schema: withId }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const run = await imports.progress(accountId, request.params.id);
    return sendPage(reply, request, 200, 'import', {
      title: `Import of ${run.fileName}`,
      run,
      refusals: await imports.refusals(run.id!, 0, REFUSALS_SHOWN),
    });
  });

  app.get('/imports/:id/refusals.csv', { schema: withId }, async (request, reply) => {
    const run = await imports.progress(request.console!.user.accountId, request.params.id);
    const out = new PassThrough();
    void (async () => {
      out.write(csvLines([], REFUSAL_COLUMNS, true));
      for (let after = 0; ; ) {
        const page = await imports.refusals(run.id!, after, REFUSALS_PAGE);
        if (page.length === 0) break;
        if (!out.write(csvLines(page, REFUSAL_COLUMNS, false))) await once(out, 'drain');
        after = page[page.length - 1]!.line;
      }
      out.end();
    })().catch((error: Error) => out.destroy(error));
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="refused-rows-of-import-${run.id}.csv"`)
      .send(out);
  });

  // A download: nothing is sent until the export has checked its filters. A filter it refuses shows
  // the form again, as it was sent, with the error at its field.
  app.get('/exports', { schema: { ...hide, querystring: ExportQuery } }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const { kind, format = 'csv', ...given } = request.query;
    try {
      const allowed = EXPORT_FILTERS[checkKind(kind)];
      const filters = Object.fromEntries(
        Object.entries(given).filter(([name, value]) => allowed.includes(name) && value !== undefined && value !== ''),
      );
      const out = new PassThrough();
      let begin = () => {};
      const begun = new Promise<void>((resolve) => {
        begin = resolve;
      });
      const done = exports.export(kind, accountId, format, filters, async (text) => {
        begin();
        if (!out.write(text)) await once(out, 'drain');
      });
      await Promise.race([begun, done]);
      done.then(
        () => out.end(),
        (error: Error) => out.destroy(error),
      );
      return reply
        .type(format === 'jsonl' ? 'application/x-ndjson; charset=utf-8' : 'text/csv; charset=utf-8')
        .header(
          'content-disposition',
          `attachment; filename="${exports.fileName(kind as ExportKind, format as ExportFormat)}"`,
        )
        .send(out);
    } catch (error) {
      if (!(error instanceof DomainError) || error.code !== 'invalid_parameter') throw error;
      const errors = formErrors(error, 'export', Object.keys(EXPORT_LABELS), { labels: EXPORT_LABELS });
      const count = errors.items.length;
      return sendPage(reply, request, error.status, 'imports', {
        ...(await overview(accountId)),
        exportValues: { kind, format, ...given },
        errors: {
          ...errors,
          summary: `The export has ${count} ${count === 1 ? 'error' : 'errors'}: nothing was downloaded.`,
        },
      });
    }
  });
};

/** A service's message as the start of a sentence. */
function capitalised(message: string): string {
  return message.charAt(0).toUpperCase() + message.slice(1);
}

export default importsPages;
