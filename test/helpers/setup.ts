import { setHashCostForTests } from '../../src/users/password.js';

// Runs in every test file's context before the file (vitest `setupFiles`).

/**
 * The scrypt cost of the tests' password hashes: N = 2^10, the least a stored hash may ask for.
 * At the production 2^15 each of the suite's hundreds of hashes takes ~75 ms of a core. One test
 * checks the production cost (test/users/service.test.ts); the processes the tests start (servers,
 * the CLI) always use it.
 */
export const TEST_HASH_LOG2N = 10;

setHashCostForTests(TEST_HASH_LOG2N);
