-- test/bench_pgbench_insert.sql: the routed single-row INSERT, for pgbench -M prepared.
-- A random tenant (from public.bench_keys, built by test/bench.sh) and a new
-- order id from a sequence that starts above every existing one (the same
-- ids for every engine), then the measured INSERT, in autocommit:
-- test/bench_run.py reports the latency of the last command only (pgbench -r).
\set i random(1, :nkeys)
\set a random(99, 49999)
SELECT tenant_id AS t, nextval('public.bench_insert_ids') AS o FROM public.bench_keys WHERE i = :i \gset
INSERT INTO orders (tenant_id, order_id, status, amount_cents, created_at) VALUES (:t, :o, 'new', :a, '2025-06-01 12:00:00');
