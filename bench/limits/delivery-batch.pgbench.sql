-- The same as delivery.pgbench.sql for five deliveries at once, every statement made for the five
-- (one multi-row insert, one claim, one read of the events, one delete, one multi-row log): the
-- cheapest a delivery's bookkeeping could be made by batching. pgbench's transactions/s × 5 is
-- deliveries/s. Run as delivery.pgbench.sql says.
\set e random(1, 4000)
BEGIN;
INSERT INTO jobs (queue, account_id, group_key, subject_id, payload, unique_key, run_at, created_at) VALUES ('webhook_delivery', 1, 'pgbench:' || :client_id, :e, '{"webhook_endpoint_id":1}', NULL, 0, 0), ('webhook_delivery', 1, 'pgbench:' || :client_id, :e + 1, '{"webhook_endpoint_id":1}', NULL, 0, 0), ('webhook_delivery', 1, 'pgbench:' || :client_id, :e + 2, '{"webhook_endpoint_id":1}', NULL, 0, 0), ('webhook_delivery', 1, 'pgbench:' || :client_id, :e + 3, '{"webhook_endpoint_id":1}', NULL, 0, 0), ('webhook_delivery', 1, 'pgbench:' || :client_id, :e + 4, '{"webhook_endpoint_id":1}', NULL, 0, 0);
UPDATE jobs SET lease_owner = 'pgbench:' || :client_id, run_at = 9000000000000, attempts = attempts + 1 WHERE id IN (SELECT id FROM jobs WHERE group_key = 'pgbench:' || :client_id AND run_at <= 1 ORDER BY run_at, id LIMIT 5 FOR UPDATE SKIP LOCKED) RETURNING *;
SELECT * FROM events WHERE id IN (:e, :e + 1, :e + 2, :e + 3, :e + 4);
SELECT * FROM webhook_endpoints WHERE id = 1;
DELETE FROM jobs WHERE group_key = 'pgbench:' || :client_id AND lease_owner = 'pgbench:' || :client_id RETURNING id;
INSERT INTO webhook_attempts (account_id, webhook_endpoint_id, event_id, attempt, status_code, error, duration_ms, response_body, created_at) VALUES (1, 1, :e, 1, 200, NULL, 1, 'ok', 0), (1, 1, :e + 1, 1, 200, NULL, 1, 'ok', 0), (1, 1, :e + 2, 1, 200, NULL, 1, 'ok', 0), (1, 1, :e + 3, 1, 200, NULL, 1, 'ok', 0), (1, 1, :e + 4, 1, 200, NULL, 1, 'ok', 0);
COMMIT;
