import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { dropRunDatabases, dropStaleSchemas } from './helpers/postgres.js';

/**
 * Runs once per pass. The PostgreSQL pass first proves that TEST_DATABASE_URL answers (a pass
 * that cannot connect fails loudly instead of skipping), and drops what a killed run left; after
 * the pass it drops this run's worker databases (test/helpers/postgres.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  project.provide('loyaltyTestRun', process.pid);
  if (project.config.env?.LOYALTY_TEST_ENGINE !== 'postgres') return async () => {};
  const url = process.env.TEST_DATABASE_URL as string;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    await client.query('select 1');
  } catch (error) {
    throw new Error(
      `PostgreSQL pass: cannot connect to TEST_DATABASE_URL (${redact(url)}): ${(error as Error).message}`,
    );
  } finally {
    await client.end().catch(() => {});
  }
  await dropRunDatabases(url, -1);
  await dropStaleSchemas(url);
  return async () => {
    await dropRunDatabases(url, process.pid);
    await dropStaleSchemas(url);
  };
}

function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):([^@]*)@/, '//$1:***@');
}
