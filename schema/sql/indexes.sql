-- Built after the prefill, which is much faster than maintaining them row by row.
-- Init first builds the transactions indexes on each loaded partition, with the DDL of
-- partitionIndexes (schema/init.go), and then runs this file: keep the two in step.
ALTER TABLE pgceiling.transactions ADD CONSTRAINT transactions_pkey PRIMARY KEY (id, created_at);
CREATE INDEX transactions_wallet_created_idx ON pgceiling.transactions (wallet_id, created_at);
CREATE INDEX transactions_created_idx ON pgceiling.transactions (created_at);
CREATE INDEX transactions_counterparty_idx ON pgceiling.transactions (counterparty_id);
CREATE INDEX transactions_reference_idx ON pgceiling.transactions (reference);
CREATE INDEX audit_log_wallet_created_idx ON pgceiling.audit_log (wallet_id, created_at);
