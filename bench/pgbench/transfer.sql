-- pgceiling's transfer workload as a pgbench custom script: the same statements, one
-- round trip each (BEGIN and SET LOCAL pipelined into one, as pgceiling sends them in one
-- query), in one transaction (workload/transfer.go; a test checks the two stay
-- identical). Run against a schema made by `pgceiling init`, e.g.:
--   pgbench -n -M prepared -c 50 -R RATE -T N -f bench/pgbench/transfer.sql DSN
--
-- Zipf: pgbench's random_zipfian needs a parameter > 1 (it rejects 1.0), so this uses
-- 1.001, the nearest it allows to pgceiling's default --zipf 1.0. Edit `wallets` to
-- match the wallets table, and the SET LOCAL to `off` for the synchronous_commit=off run.
--
-- The two wallets must differ. pgceiling redraws until they do; pgbench has no loop, so
-- this redraws once and, in the rare case of a second equal draw (about 3 in 10,000 at
-- Zipf 1.0), takes the next wallet. Locks are taken lower id first, so concurrent
-- transfers never deadlock.
\set wallets 10000
\set from random_zipfian(1, :wallets, 1.001)
\set to random_zipfian(1, :wallets, 1.001)
\if :from = :to
\set to random_zipfian(1, :wallets, 1.001)
\endif
\if :from = :to
\set to :from % :wallets + 1
\endif
\set first least(:from, :to)
\set second greatest(:from, :to)
\set amount random(1, 10000)
\set reference random(1, 1000000000000)
\startpipeline
BEGIN;
SET LOCAL synchronous_commit TO on;
\endpipeline
SELECT balance FROM pgceiling.wallets WHERE account_id = :first::bigint FOR UPDATE;
SELECT balance FROM pgceiling.wallets WHERE account_id = :second::bigint FOR UPDATE;
UPDATE pgceiling.wallets SET balance = balance - :amount::bigint / 100.0, updated_at = now() WHERE account_id = :from::bigint;
UPDATE pgceiling.wallets SET balance = balance + :amount::bigint / 100.0, updated_at = now() WHERE account_id = :to::bigint;
INSERT INTO pgceiling.transactions (id, wallet_id, counterparty_id, amount, currency, kind, status, reference, description, metadata, created_at, updated_at) VALUES (nextval('pgceiling.transactions_id_seq'), :from::bigint, :to::bigint, :amount::bigint / 100.0, 'EUR', 'transfer', 'posted', 'TRF-' || to_hex(:reference::bigint), 'wallet transfer', jsonb_build_object('channel', 'app', 'from', :from::bigint, 'to', :to::bigint), now(), now()) RETURNING id \gset
INSERT INTO pgceiling.audit_log (tx_id, wallet_id, action, actor, details, created_at) VALUES (:id::bigint, :from::bigint, 'transfer', 'api', 'wallet transfer posted', now());
COMMIT;
