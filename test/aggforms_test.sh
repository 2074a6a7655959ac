#!/usr/bin/env bash
#
# test/aggforms_test.sh
#	Random data against the aggregate forms pushed into the shards
#	(sql/aggforms.sql has the fixed cases): variances and standard
#	deviations of smallint, integer and bigint over groups of every size
#	and magnitude, so that numeric division and square root meet scales
#	of every kind; FILTER and CASE shares; case-blind LIKE over names
#	with letters outside ASCII.  Each answer of the foreign table, grouped
#	on the reading threads and by SQLite, is compared as text with a
#	native table of the same rows.  The seed is printed; AGGFORMS_SEED
#	repeats a run.
#
# Run by test/run_suites.sh inside a throw-away cluster.  Prints one line
# per check, then "N passed, M failed"; exits non-zero if anything failed.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source test/fixtures/common.sh

seed=${AGGFORMS_SEED:-$RANDOM}
echo "seed $seed"

d=$(fx_dir aggforms_random)
fx_directory "$d"
python3 - "$d" "$seed" <<'PY'
import random
import sys

d, seed = sys.argv[1], int(sys.argv[2])
rnd = random.Random(seed)
names = ['Élan', 'élan', 'ÄRGER', 'ärger', 'Kelvin', 'KELVIN',
         '\u212aelvin', 'plain', 'Plain', 'PLAIN', 'a_b', 'a%b', 'İstanbul',
         'ıi', 'straße', 'STRASSE', '']
shards = {'r1': [], 'r2': [], 'r3': []}
tenants = {'t%d' % k: 'r%d' % (1 + k % 3) for k in range(12)}
rows = []
for g in range(400):
    size = rnd.choice([1, 1, 2, 3, 5, 8, 13, 40])
    scale = 10 ** rnd.randint(0, 18)
    for _ in range(size):
        t = rnd.choice(sorted(tenants))

        def val(lo, hi, null=0.1):
            if rnd.random() < null:
                return None
            v = rnd.randint(-scale, scale)
            if rnd.random() < 0.05:
                v = rnd.choice([lo, hi, lo + 1, hi - 1])
            return max(lo, min(hi, v))
        rows.append((t, g, val(-32768, 32767), val(-2**31, 2**31 - 1),
                     val(-2**63, 2**63 - 1), rnd.choice(names + [None]),
                     rnd.choice(['open', 'paid', 'void', None])))


def lit(v):
    if v is None:
        return 'NULL'
    if isinstance(v, int):
        return str(v)
    return "'" + v.replace("'", "''") + "'"


schema = ('CREATE TABLE r(id INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, '
          'g INTEGER, s INTEGER, i INTEGER, b INTEGER, name TEXT, '
          'status TEXT);\n')
out = {k: [schema] for k in shards}
native = []
for n, r in enumerate(rows):
    vals = ', '.join(lit(v) for v in (n,) + r)
    out[tenants[r[0]]].append('INSERT INTO r VALUES (%s);\n' % vals)
    native.append('(%s)' % vals)
for k, sql in out.items():
    with open('%s/%s.sql' % (d, k), 'w') as f:
        f.write(''.join(sql))
with open('%s/tenants.txt' % d, 'w') as f:
    for t, s in sorted(tenants.items()):
        f.write('%s %s\n' % (t, s))
with open('%s/rows.sql' % d, 'w') as f:
    f.write('INSERT INTO r_native VALUES\n%s;\n' % ',\n'.join(native))
PY
for s in r1 r2 r3; do
	fx_sqlite "$d/shards/$s.db" <"$d/$s.sql"
	fx_add_shard "$d" $s shards/$s.db
done
while read -r t s; do
	fx_add_tenant "$d" "$t" "$s"
done <"$d/tenants.txt"
fx_done "$d"

psql -X -q -v ON_ERROR_STOP=1 -d postgres <<SQL
SET client_min_messages = warning;
DROP SERVER IF EXISTS rnd_srv CASCADE;
DROP TABLE IF EXISTS r_native;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
CREATE SERVER rnd_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db');
CREATE FOREIGN TABLE r (id int, tenant_id text, g int, s smallint, i int,
  b bigint, name text, status text) SERVER rnd_srv;
CREATE TABLE r_native (id int, tenant_id text, g int, s smallint, i int,
  b bigint, name text, status text);
\i $d/rows.sql
SQL

passed=0
failed=0

# check NAME QUERY: QUERY (with {t} for the table) gives the native answer
# from the foreign table, aggregated on the reading threads and by SQLite,
# and the foreign plan pushes what NAME says (PUSHED: "agg", "narrowed").
check()
{
	local name=$1 query=$2 pushed=$3 mode diff plan
	plan=$(psql -X -q -A -t -d postgres -c "EXPLAIN (VERBOSE) ${query//\{t\}/r}")
	case $pushed in
	agg) grep -q "Pushdown: partial aggregates\|Pushdown: whole groups" <<<"$plan" || {
		echo "FAIL $name: not pushed"
		failed=$((failed + 1))
		return
	} ;;
	narrowed) grep -q "GLOB" <<<"$plan" || {
		echo "FAIL $name: not narrowed"
		failed=$((failed + 1))
		return
	} ;;
	esac
	for mode in on off; do
		diff=$(psql -X -q -A -t -v ON_ERROR_STOP=1 -d postgres <<SQL
SET sqlite_shard_fdw.thread_aggregation = $mode;
SELECT count(*) FROM (
  (SELECT row(q.*)::text FROM (${query//\{t\}/r}) q
   EXCEPT ALL SELECT row(q.*)::text FROM (${query//\{t\}/r_native}) q)
  UNION ALL
  (SELECT row(q.*)::text FROM (${query//\{t\}/r_native}) q
   EXCEPT ALL SELECT row(q.*)::text FROM (${query//\{t\}/r}) q)) x;
SQL
)
		if [ "$diff" != "0" ]; then
			echo "FAIL $name (thread_aggregation $mode): $diff rows differ"
			failed=$((failed + 1))
			return
		fi
	done
	echo "ok $name"
	passed=$((passed + 1))
}

for f in var_pop var_samp stddev_pop stddev_samp; do
	for c in s i b; do
		check "$f($c) by g" "SELECT g, $f($c) FROM {t} GROUP BY g" agg
		check "$f($c) by tenant" "SELECT tenant_id, $f($c) FROM {t} GROUP BY 1" agg
	done
	check "$f overall" "SELECT $f(s), $f(i), $f(b) FROM {t}" agg
done
check "FILTER by g" "SELECT g, count(*) FILTER (WHERE status = 'paid'), sum(b) FILTER (WHERE i > 0), avg(s) FILTER (WHERE name IN ('plain', 'a_b')), stddev(i) FILTER (WHERE status IS NOT NULL) FROM {t} GROUP BY g" agg
check "CASE shares by status" "SELECT status, sum(CASE WHEN i > 0 THEN 1 ELSE 0 END)::numeric / count(*), sum(CASE WHEN s < 0 THEN b END), max(CASE WHEN name = 'plain' THEN i ELSE 0 END) FROM {t} GROUP BY status" agg
check "numeric CASE share by g" "SELECT g, sum(CASE WHEN status = 'paid' THEN 1 ELSE 0.0 END) / count(*), sum(CASE WHEN i > 0 THEN 1 WHEN i < 0 THEN -2.00 END), sum(CASE WHEN s > 0 THEN 1 END) FILTER (WHERE b > 0) FROM {t} GROUP BY g" agg
check "window over groups" "SELECT status, count(*), sum(count(*)) OVER (), rank() OVER (ORDER BY sum(i) NULLS LAST, status) FROM {t} GROUP BY status" agg
for p in '%elvin%' 'k%' '%rger' '%lan' '%l_n' 'a\_b' 'a\%b' '%stanbul' '%i%' 'stra%' '%' ''; do
	check "lower(name) LIKE '$p'" "SELECT id, name FROM {t} WHERE lower(name) LIKE '$p'" narrowed
	check "name ILIKE '$p'" "SELECT id, name FROM {t} WHERE name ILIKE '$p'" narrowed
done

psql -X -q -d postgres -c 'DROP SERVER rnd_srv CASCADE' -c 'DROP TABLE r_native'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
