-- test/bench_pgbench_report.sql: the routed tenant report, for pgbench -M prepared.
-- A random typical (median-size) tenant from public.bench_tenants, then the
-- measured report: test/bench_run.py reports the latency of the last command
-- only (pgbench -r).
\set i random(1, :ntenants)
SELECT tenant_id AS t FROM public.bench_tenants WHERE i = :i \gset
SELECT status, count(*), sum(amount_cents) FROM orders WHERE tenant_id = :t GROUP BY status;
