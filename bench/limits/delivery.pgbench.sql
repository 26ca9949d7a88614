-- A webhook delivery's least bookkeeping on PostgreSQL, one delivery per transaction: the job
-- written (by the request, in its own transaction in the service), leased, the event and the
-- endpoint read, the job deleted and the attempt logged. Fewer statements and commits than the
-- service makes; what the contract's "0.85 with one endpoint" is measured against in
-- docs/decisions.md ("What one endpoint costs"). Run after `npm run bench` (its schema
-- loyalty_limits holds the events and endpoint 1 read here), as the bench runs its ceilings:
--   pgbench -n -M prepared -c 50 -j 1 -T 8 -f bench/limits/delivery.pgbench.sql \
--     'postgres://postgres@127.0.0.1:5432/test?options=-c%20search_path%3Dloyalty_limits'
\set e random(1, 4000)
BEGIN;
INSERT INTO jobs (queue, account_id, group_key, subject_id, payload, unique_key, run_at, created_at) VALUES ('webhook_delivery', 1, 'pgbench:' || :client_id, :e, '{"webhook_endpoint_id":1}', NULL, 0, 0);
UPDATE jobs SET lease_owner = 'pgbench:' || :client_id, run_at = 9000000000000, attempts = attempts + 1 WHERE id IN (SELECT id FROM jobs WHERE group_key = 'pgbench:' || :client_id AND run_at <= 1 ORDER BY run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING *;
SELECT * FROM events WHERE id = :e;
SELECT * FROM webhook_endpoints WHERE id = 1;
DELETE FROM jobs WHERE group_key = 'pgbench:' || :client_id AND lease_owner = 'pgbench:' || :client_id RETURNING id;
INSERT INTO webhook_attempts (account_id, webhook_endpoint_id, event_id, attempt, status_code, error, duration_ms, response_body, created_at) VALUES (1, 1, :e, 1, 200, NULL, 1, 'ok', 0);
COMMIT;
