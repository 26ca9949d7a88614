// A migration asks the same question as the repositories (some have nothing to do on SQLite).
export { isPostgres } from '../dialect.js';
