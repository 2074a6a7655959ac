-- test/bench_pgbench_point.sql: the routed point lookup, for pgbench -M prepared.
-- A random existing (tenant, order) pair from public.bench_keys (built by
-- test/bench.sh, the same rows for every engine), then the measured lookup:
-- test/bench_run.py reports the latency of the last command only (pgbench -r).
\set i random(1, :nkeys)
SELECT tenant_id AS t, order_id AS o FROM public.bench_keys WHERE i = :i \gset
SELECT * FROM orders WHERE tenant_id = :t AND order_id = :o;
