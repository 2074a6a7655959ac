-- test/bench_pgbench_update.sql: the routed single-row UPDATE by primary key,
-- for pgbench -M prepared.  A random existing (tenant, order) pair from
-- public.bench_keys (built by test/bench.sh, the same rows for every engine),
-- then the measured UPDATE, in autocommit: test/bench_run.py reports the
-- latency of the last command only (pgbench -r).
\set i random(1, :nkeys)
\set a random(99, 49999)
SELECT tenant_id AS t, order_id AS o FROM public.bench_keys WHERE i = :i \gset
UPDATE orders SET amount_cents = :a WHERE tenant_id = :t AND order_id = :o;
