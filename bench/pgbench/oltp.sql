-- pgceiling's oltp workload as a pgbench custom script: the same statements, one round
-- trip each (BEGIN and SET LOCAL pipelined into one, as pgceiling sends them in one
-- query), in one transaction (workload/oltp.go; a test checks the two stay identical).
-- Run against a schema made by `pgceiling init`, e.g.:
--   pgbench -n -M prepared -c 50 -R RATE -T N -f bench/pgbench/oltp.sql DSN
--
-- Zipf: pgbench's random_zipfian needs a parameter > 1 (it rejects 1.0), so this uses
-- 1.001, the nearest it allows to pgceiling's default --zipf 1.0. Edit `wallets` to
-- match the wallets table, `window` (seconds) to match --fraud-window, `limit` to match
-- --fraud-limit (the velocity rule's threshold: the check counts at most that many
-- payments; pgceiling's --fraud-limit 0, the unbounded count, has no script here), and
-- the SET LOCAL to `off` for the synchronous_commit=off run. pgceiling back-fills the
-- window before each probe (schema.Backfill); pgbench does not, so its first minutes
-- read a window that is still filling.
\set wallets 10000
\set window 3600
\set limit 20
\set wallet random_zipfian(1, :wallets, 1.001)
\set merchant random(1, 1000000)
\set amount random(1, 100000)
\set reference random(1, 1000000000000)
\set risk random(0, 99)
\startpipeline
BEGIN;
SET LOCAL synchronous_commit TO on;
\endpipeline
SELECT balance, status FROM pgceiling.wallets WHERE account_id = :wallet::bigint;
SELECT count(*) AS recent FROM (SELECT 1 FROM pgceiling.transactions WHERE wallet_id = :wallet::bigint AND created_at > now() - :window::interval ORDER BY created_at DESC LIMIT :limit::bigint) AS w \gset
INSERT INTO pgceiling.transactions (id, wallet_id, counterparty_id, amount, currency, kind, status, reference, description, metadata, created_at, updated_at) VALUES (nextval('pgceiling.transactions_id_seq'), :wallet::bigint, :merchant::bigint, :amount::bigint / 100.0, 'EUR', 'payment', 'posted', 'PAY-' || to_hex(:reference::bigint), 'card payment', jsonb_build_object('channel', 'card', 'merchant', :merchant::bigint, 'recent', :recent::bigint, 'risk', :risk::int), now(), now()) RETURNING id \gset
INSERT INTO pgceiling.audit_log (tx_id, wallet_id, action, actor, details, created_at) VALUES (:id::bigint, :wallet::bigint, 'payment', 'api', 'card payment posted', now());
COMMIT;
