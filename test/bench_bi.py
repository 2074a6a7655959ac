#
# test/bench_bi.py
#	The "bi" part of `make bench` (BENCH_PARTS=bi): the SQL that BI tools
#	send, written as each tool renders it, over the bench fleet's orders and
#	customers, against the native tables with the same rows and indexes.
#
#	Each shape is a template: {s} is the engine's schema (native or ext),
#	where the tool qualifies its tables; {big} the largest tenant.  The
#	sources of the renderings:
#	  Metabase	src/metabase/driver/postgres.clj and the SQL query processor:
#				every column qualified, "schema"."table"."column"; day
#				buckets CAST(x AS date), parts CAST(extract(unit from x) AS
#				integer), the Sunday week DATE_TRUNC('week', (x + INTERVAL
#				'1 day')) + INTERVAL '-1 day', relative filters against
#				DATE_TRUNC(unit, (NOW() + INTERVAL '-n unit')), binning
#				FLOOR((x / w)) * w, "contains" LOWER(x) LIKE '%v%', a
#				share SUM(CASE WHEN p THEN 1 ELSE 0.0 END) / COUNT(*), joins
#				LEFT JOIN on the foreign key, LIMIT 2000 on rows
#	  Superset	db_engine_specs/postgres.py: grains DATE_TRUNC(unit, x) and
#				DATE_TRUNC('hour', x) + INTERVAL 'n minutes' *
#				FLOOR(EXTRACT(MINUTE FROM x) / n); time ranges TO_TIMESTAMP(
#				'...', 'YYYY-MM-DD HH24:MI:SS.US'); the series limit, a join
#				with the subquery of the top groups (AS series_limit); the
#				chart's row limit, LIMIT 10000
#	  Grafana	the PostgreSQL data source's macros: $__timeFilter(x) is x
#				BETWEEN 'from' AND 'to' (RFC 3339), $__timeGroupAlias(x,'1h')
#				floor(extract(epoch from x)/3600)*3600 AS "time",
#				$__unixEpochFilter(x) x >= from AND x <= to in epoch seconds;
#				a variable's values SELECT DISTINCT, a multi-value variable
#				an IN list
#	  SQL		what analysts write next to these tools: window shares,
#				semi-joins, the fleet's latest rows with tie-breakers.
#
#	The fleet's times are fixed (2024-01-01 to 2025-12-31), so "now" is the
#	literal NOW (a timestamptz, as NOW() is) inside the range, where the tool
#	would send NOW(); Grafana's and Superset's ranges are literals anyway,
#	computed from the same instant.
#
#	For every shape: EXPLAIN (VERBOSE) through the extension (appended to
#	the plans file), read for what the shards do (see push_state); then the
#	native table and the extension, a warm-up whose result is kept, then
#	BENCH_RUNS runs taking turns (run_pair), medians; the
#	results compared, a difference being an error.  Target: within 1.0x of
#	native aimed, none above 1.5x.
#

import json
import time

# "now" for the relative filters: an instant inside the fleet's range
NOW = "TIMESTAMPTZ '2025-12-31 12:00:00+00'"

# Superset's time range: December 2025 up to the day of NOW
SS_RANGE = ("created_at >= TO_TIMESTAMP('2025-12-01 00:00:00.000000', "
            "'YYYY-MM-DD HH24:MI:SS.US') AND created_at < TO_TIMESTAMP("
            "'2025-12-31 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')")
SS_WEEK = ("created_at >= TO_TIMESTAMP('2025-12-24 00:00:00.000000', "
           "'YYYY-MM-DD HH24:MI:SS.US') AND created_at < TO_TIMESTAMP("
           "'2025-12-31 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')")
SS_YEAR = ("created_at >= TO_TIMESTAMP('2025-01-01 00:00:00.000000', "
           "'YYYY-MM-DD HH24:MI:SS.US') AND created_at < TO_TIMESTAMP("
           "'2025-12-31 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')")

# Grafana's dashboard ranges, "last 7 days" and "last 30 days" before NOW,
# and the same 7 days in epoch seconds
GF_7D = "BETWEEN '2025-12-24T12:00:00Z' AND '2025-12-31T12:00:00Z'"
GF_30D = "BETWEEN '2025-12-01T12:00:00Z' AND '2025-12-31T12:00:00Z'"
GF_7D_EPOCH = (1766577600, 1767182400)

# Metabase's column and table names
MO = '"{s}"."orders"'
MC = '"{s}"."orders"."created_at"'
MB_WEEK = "DATE_TRUNC('week', (" + MC + " + INTERVAL '1 day')) + INTERVAL '-1 day'"
MB_JOIN = (MO + ' LEFT JOIN "{s}"."customers" AS "Customers" ON ' + MO +
           '."customer_id" = "Customers"."customer_id"')
MB_JOIN_TENANT = (MO + ' LEFT JOIN "{s}"."customers" AS "Customers" ON ' + MO +
                  '."tenant_id" = "Customers"."tenant_id" AND ' + MO +
                  '."customer_id" = "Customers"."customer_id"')

# Superset's grains of n minutes
def ss_minutes(n):
    return ("DATE_TRUNC('hour', created_at) + INTERVAL '%d minutes' * "
            "FLOOR(EXTRACT(MINUTE FROM created_at) / %d)" % (n, n))


# key, tool, what, sql; compare: "ordered" (the rows in order), "set" (the
# rows in any order: an ORDER BY with ties, or none), "count" (the number of
# rows: a LIMIT without ORDER BY may return any of them), or a list of
# column numbers compared in order (an ORDER BY on them, ties beyond).
BI_SHAPES = [
    # ---------------------------------------------------------- Metabase
    {"key": "mb_month", "tool": "Metabase", "what": "count by month",
     "sql": "SELECT DATE_TRUNC('month', " + MC + ") AS \"created_at\", COUNT(*) AS \"count\" "
            "FROM " + MO + " GROUP BY DATE_TRUNC('month', " + MC + ") "
            "ORDER BY DATE_TRUNC('month', " + MC + ") ASC",
     "compare": "ordered"},
    {"key": "mb_week", "tool": "Metabase", "what": "count, sum by week (Sunday)",
     "sql": "SELECT " + MB_WEEK + " AS \"created_at\", COUNT(*) AS \"count\", "
            "SUM(" + MO + ".\"amount_cents\") AS \"sum\" FROM " + MO +
            " GROUP BY " + MB_WEEK + " ORDER BY " + MB_WEEK + " ASC",
     "compare": "ordered"},
    {"key": "mb_day_30", "tool": "Metabase", "what": "count by day, previous 30 days",
     "sql": "SELECT CAST(" + MC + " AS date) AS \"created_at\", COUNT(*) AS \"count\" "
            "FROM " + MO + " WHERE (" + MC + " >= DATE_TRUNC('day', (" + NOW +
            " + INTERVAL '-30 day'))) AND (" + MC + " < DATE_TRUNC('day', " + NOW + ")) "
            "GROUP BY CAST(" + MC + " AS date) ORDER BY CAST(" + MC + " AS date) ASC",
     "compare": "ordered"},
    {"key": "mb_hour_of_day", "tool": "Metabase", "what": "count by hour of day",
     "sql": "SELECT CAST(extract(hour from " + MC + ") AS integer) AS \"created_at\", "
            "COUNT(*) AS \"count\" FROM " + MO + " GROUP BY CAST(extract(hour from " +
            MC + ") AS integer) ORDER BY CAST(extract(hour from " + MC + ") AS integer) ASC",
     "compare": "ordered"},
    {"key": "mb_dow_12m", "tool": "Metabase", "what": "sum by day of week, previous 12 months",
     "sql": "SELECT (CAST(extract(dow from " + MC + ") AS integer) + 1) AS \"created_at\", "
            "SUM(" + MO + ".\"amount_cents\") AS \"sum\" FROM " + MO + " WHERE (" + MC +
            " >= DATE_TRUNC('month', (" + NOW + " + INTERVAL '-12 month'))) AND (" + MC +
            " < DATE_TRUNC('month', " + NOW + ")) GROUP BY (CAST(extract(dow from " + MC +
            ") AS integer) + 1) ORDER BY (CAST(extract(dow from " + MC +
            ") AS integer) + 1) ASC",
     "compare": "ordered"},
    {"key": "mb_share", "tool": "Metabase", "what": "share cancelled by month",
     "sql": "SELECT DATE_TRUNC('month', " + MC + ") AS \"created_at\", "
            "SUM(CASE WHEN " + MO + ".\"status\" = 'cancelled' THEN 1 ELSE 0.0 END) / "
            "COUNT(*) AS \"share\" FROM " + MO + " GROUP BY DATE_TRUNC('month', " + MC +
            ") ORDER BY DATE_TRUNC('month', " + MC + ") ASC",
     "compare": "ordered"},
    {"key": "mb_stddev", "tool": "Metabase", "what": "stddev, variance, avg by status",
     "sql": "SELECT " + MO + ".\"status\" AS \"status\", STDDEV_POP(" + MO +
            ".\"amount_cents\") AS \"stddev\", VAR_POP(" + MO + ".\"amount_cents\") AS "
            "\"var\", AVG(" + MO + ".\"amount_cents\") AS \"avg\" FROM " + MO +
            " GROUP BY " + MO + ".\"status\" ORDER BY " + MO + ".\"status\" ASC",
     "compare": "ordered"},
    {"key": "mb_median_tenant", "tool": "Metabase", "what": "median, p90 by month, one tenant",
     "sql": "SELECT DATE_TRUNC('month', " + MC + ") AS \"created_at\", "
            "PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY " + MO + ".\"amount_cents\") AS "
            "\"median\", PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY " + MO +
            ".\"amount_cents\") AS \"p90\" FROM " + MO + " WHERE " + MO +
            ".\"tenant_id\" = {big} GROUP BY DATE_TRUNC('month', " + MC + ") "
            "ORDER BY DATE_TRUNC('month', " + MC + ") ASC",
     "compare": "ordered"},
    {"key": "mb_distinct_week", "tool": "Metabase",
     "what": "count(DISTINCT tenant_id) by week, previous 3 months",
     "sql": "SELECT " + MB_WEEK + " AS \"created_at\", COUNT(DISTINCT " + MO +
            ".\"tenant_id\") AS \"count\" FROM " + MO + " WHERE (" + MC +
            " >= DATE_TRUNC('month', (" + NOW + " + INTERVAL '-3 month'))) AND (" + MC +
            " < DATE_TRUNC('month', " + NOW + ")) GROUP BY " + MB_WEEK + " ORDER BY " +
            MB_WEEK + " ASC",
     "compare": "ordered"},
    {"key": "mb_bin", "tool": "Metabase", "what": "count by amount bins of 5000",
     "sql": "SELECT FLOOR((" + MO + ".\"amount_cents\" / 5000.0)) * 5000.0 AS "
            "\"amount_cents\", COUNT(*) AS \"count\" FROM " + MO + " GROUP BY FLOOR((" +
            MO + ".\"amount_cents\" / 5000.0)) * 5000.0 ORDER BY FLOOR((" + MO +
            ".\"amount_cents\" / 5000.0)) * 5000.0 ASC",
     "compare": "ordered"},
    {"key": "mb_contains", "tool": "Metabase", "what": "customers, name contains, LIMIT 2000",
     "sql": "SELECT \"{s}\".\"customers\".\"customer_id\" AS \"customer_id\", "
            "\"{s}\".\"customers\".\"tenant_id\" AS \"tenant_id\", "
            "\"{s}\".\"customers\".\"name\" AS \"name\", \"{s}\".\"customers\".\"country\" "
            "AS \"country\", \"{s}\".\"customers\".\"plan\" AS \"plan\" FROM "
            "\"{s}\".\"customers\" WHERE LOWER(\"{s}\".\"customers\".\"name\") LIKE "
            "'%knuth%' LIMIT 2000",
     "compare": "count"},
    {"key": "mb_rows_7d", "tool": "Metabase", "what": "orders, previous 7 days, LIMIT 2000",
     "sql": "SELECT " + MO + ".\"tenant_id\" AS \"tenant_id\", " + MO + ".\"order_id\" AS "
            "\"order_id\", " + MO + ".\"status\" AS \"status\", " + MO + ".\"amount_cents\" "
            "AS \"amount_cents\", " + MC + " AS \"created_at\", " + MO + ".\"customer_id\" "
            "AS \"customer_id\" FROM " + MO + " WHERE (" + MC + " >= DATE_TRUNC('day', (" +
            NOW + " + INTERVAL '-7 day'))) AND (" + MC + " < DATE_TRUNC('day', " + NOW +
            ")) LIMIT 2000",
     "compare": "count"},
    {"key": "mb_tenant_day", "tool": "Metabase", "what": "one tenant, one day, rows",
     "sql": "SELECT " + MO + ".\"order_id\" AS \"order_id\", " + MO + ".\"status\" AS "
            "\"status\", " + MO + ".\"amount_cents\" AS \"amount_cents\", " + MC + " AS "
            "\"created_at\" FROM " + MO + " WHERE (" + MO + ".\"tenant_id\" = {big}) AND "
            "((" + MC + " >= timestamp '2025-06-15 00:00:00.000') AND (" + MC +
            " < timestamp '2025-06-16 00:00:00.000')) ORDER BY " + MC + " DESC LIMIT 2000",
     "compare": "set"},
    {"key": "mb_join_plan", "tool": "Metabase",
     "what": "orders x customers by plan (join on customer_id)",
     "sql": "SELECT \"Customers\".\"plan\" AS \"Customers__plan\", COUNT(*) AS \"count\", "
            "SUM(" + MO + ".\"amount_cents\") AS \"sum\" FROM " + MB_JOIN +
            " GROUP BY \"Customers\".\"plan\" ORDER BY \"Customers\".\"plan\" ASC",
     "compare": "ordered"},
    {"key": "mb_join_plan_tenant", "tool": "Metabase",
     "what": "orders x customers by plan (join on tenant, customer)",
     "sql": "SELECT \"Customers\".\"plan\" AS \"Customers__plan\", COUNT(*) AS \"count\", "
            "SUM(" + MO + ".\"amount_cents\") AS \"sum\" FROM " + MB_JOIN_TENANT +
            " GROUP BY \"Customers\".\"plan\" ORDER BY \"Customers\".\"plan\" ASC",
     "compare": "ordered"},
    {"key": "mb_top_customers", "tool": "Metabase", "what": "one tenant's top 10 customers",
     "sql": "SELECT \"Customers\".\"name\" AS \"Customers__name\", SUM(" + MO +
            ".\"amount_cents\") AS \"sum\" FROM " + MB_JOIN_TENANT + " WHERE " + MO +
            ".\"tenant_id\" = {big} GROUP BY \"Customers\".\"name\" ORDER BY \"sum\" DESC, "
            "\"Customers\".\"name\" ASC LIMIT 10",
     "compare": "ordered"},
    # ---------------------------------------------------------- Superset
    {"key": "ss_day", "tool": "Superset", "what": "day grain, December",
     "sql": "SELECT DATE_TRUNC('day', created_at) AS created_at, count(*) AS count \n"
            "FROM {s}.orders \nWHERE " + SS_RANGE + " GROUP BY DATE_TRUNC('day', "
            "created_at) ORDER BY count DESC \n LIMIT 10000",
     "compare": "set"},
    {"key": "ss_week", "tool": "Superset", "what": "week grain, sum, 2025",
     "sql": "SELECT DATE_TRUNC('week', created_at) AS created_at, sum(amount_cents) AS "
            "\"SUM(amount_cents)\" \nFROM {s}.orders \nWHERE " + SS_YEAR + " GROUP BY "
            "DATE_TRUNC('week', created_at) ORDER BY \"SUM(amount_cents)\" DESC \n LIMIT 10000",
     "compare": "set"},
    {"key": "ss_5min", "tool": "Superset", "what": "5 minute grain, 7 days",
     "sql": "SELECT " + ss_minutes(5) + " AS created_at, count(*) AS count \nFROM "
            "{s}.orders \nWHERE " + SS_WEEK + " GROUP BY " + ss_minutes(5) +
            " ORDER BY count DESC \n LIMIT 10000",
     "compare": "set"},
    {"key": "ss_10min", "tool": "Superset", "what": "10 minute grain, 7 days",
     "sql": "SELECT " + ss_minutes(10) + " AS created_at, count(*) AS count \nFROM "
            "{s}.orders \nWHERE " + SS_WEEK + " GROUP BY " + ss_minutes(10) +
            " ORDER BY count DESC \n LIMIT 10000",
     "compare": "set"},
    {"key": "ss_15min", "tool": "Superset", "what": "15 minute grain, sum, December",
     "sql": "SELECT " + ss_minutes(15) + " AS created_at, sum(amount_cents) AS "
            "\"SUM(amount_cents)\" \nFROM {s}.orders \nWHERE " + SS_RANGE + " GROUP BY " +
            ss_minutes(15) + " ORDER BY \"SUM(amount_cents)\" DESC \n LIMIT 10000",
     "compare": "set"},
    {"key": "ss_30min", "tool": "Superset", "what": "30 minute grain, 2025",
     "sql": "SELECT " + ss_minutes(30) + " AS created_at, count(*) AS count \nFROM "
            "{s}.orders \nWHERE " + SS_YEAR + " GROUP BY " + ss_minutes(30) +
            " ORDER BY count DESC \n LIMIT 10000",
     "compare": "count"},
    {"key": "ss_series_limit", "tool": "Superset",
     "what": "day x tenant, series limit: top 5 tenants",
     "sql": "SELECT DATE_TRUNC('day', created_at) AS created_at, tenant_id AS tenant_id, "
            "sum(amount_cents) AS \"SUM(amount_cents)\" \nFROM {s}.orders JOIN (SELECT "
            "tenant_id AS tenant_id__, sum(amount_cents) AS mme_inner__ \nFROM {s}.orders "
            "\nWHERE " + SS_RANGE + " GROUP BY tenant_id ORDER BY mme_inner__ DESC \n "
            "LIMIT 5) AS series_limit ON tenant_id = tenant_id__ \nWHERE " + SS_RANGE +
            " GROUP BY DATE_TRUNC('day', created_at), tenant_id ORDER BY "
            "\"SUM(amount_cents)\" DESC \n LIMIT 10000",
     "compare": "set"},
    {"key": "ss_pie", "tool": "Superset", "what": "pie: count by status",
     "sql": "SELECT status AS status, count(*) AS count \nFROM {s}.orders GROUP BY status "
            "ORDER BY count DESC \n LIMIT 100",
     "compare": "ordered"},
    {"key": "ss_table", "tool": "Superset", "what": "raw table, December, latest 1000",
     "sql": "SELECT created_at AS created_at, tenant_id AS tenant_id, status AS status, "
            "amount_cents AS amount_cents \nFROM {s}.orders \nWHERE " + SS_RANGE +
            " ORDER BY created_at DESC \n LIMIT 1000",
     "compare": [0]},
    # ---------------------------------------------------------- Grafana
    {"key": "gf_1h", "tool": "Grafana", "what": "$__timeGroupAlias 1h, last 7 days",
     "sql": "SELECT floor(extract(epoch from created_at)/3600)*3600 AS \"time\", count(*) "
            "AS \"orders\" FROM orders WHERE created_at " + GF_7D + " GROUP BY 1 ORDER BY 1",
     "compare": "ordered"},
    {"key": "gf_1d_metric", "tool": "Grafana",
     "what": "$__timeGroupAlias 1d, metric status, last 30 days",
     "sql": "SELECT floor(extract(epoch from created_at)/86400)*86400 AS \"time\", status "
            "AS metric, sum(amount_cents) AS \"value\" FROM orders WHERE created_at " +
            GF_30D + " GROUP BY 1, 2 ORDER BY 1, 2",
     "compare": "ordered"},
    {"key": "gf_5m_tenants", "tool": "Grafana",
     "what": "$__timeGroupAlias 5m, 3 tenants ($var IN), last 7 days",
     "sql": "SELECT floor(extract(epoch from created_at)/300)*300 AS \"time\", tenant_id AS "
            "metric, count(*) AS \"value\" FROM orders WHERE created_at " + GF_7D +
            " AND tenant_id IN ('tenant_0001','tenant_0002','tenant_0003') GROUP BY 1, 2 "
            "ORDER BY 1, 2",
     "compare": "ordered"},
    {"key": "gf_epoch", "tool": "Grafana",
     "what": "$__unixEpochFilter, $__unixEpochGroupAlias 1h on an epoch column",
     "sql": "SELECT floor((\"time\")/3600)*3600 AS \"time\", count(*) AS \"orders\" FROM "
            "(SELECT extract(epoch from created_at) AS \"time\", amount_cents FROM orders) t "
            "WHERE \"time\" >= %d AND \"time\" <= %d GROUP BY 1 ORDER BY 1" % GF_7D_EPOCH,
     "compare": "ordered"},
    {"key": "gf_table", "tool": "Grafana", "what": "table panel, one tenant, last 30 days",
     "sql": "SELECT created_at AS \"time\", order_id, status, amount_cents FROM orders "
            "WHERE created_at " + GF_30D + " AND tenant_id = {big} ORDER BY 1 DESC, 2",
     "compare": "ordered"},
    {"key": "gf_var_tenant", "tool": "Grafana", "what": "variable: SELECT DISTINCT tenant_id",
     "sql": "SELECT DISTINCT tenant_id FROM orders ORDER BY 1",
     "compare": "ordered"},
    {"key": "gf_var_plan", "tool": "Grafana", "what": "variable: SELECT DISTINCT plan",
     "sql": "SELECT DISTINCT plan FROM customers ORDER BY 1",
     "compare": "ordered"},
    # ---------------------------------------------------------- SQL
    {"key": "sql_window_share", "tool": "SQL", "what": "share of count, sum(count(*)) OVER ()",
     "sql": "SELECT status, count(*) AS orders, round(100.0 * count(*) / sum(count(*)) "
            "OVER (), 2) AS pct FROM orders GROUP BY status ORDER BY status",
     "compare": "ordered"},
    {"key": "sql_in_top5", "tool": "SQL", "what": "tenant_id IN (top 5 tenants), by month",
     "sql": "SELECT tenant_id, date_trunc('month', created_at) AS month, count(*) FROM "
            "orders WHERE tenant_id IN (SELECT tenant_id FROM orders GROUP BY tenant_id "
            "ORDER BY sum(amount_cents) DESC LIMIT 5) GROUP BY 1, 2 ORDER BY 1, 2",
     "compare": "ordered"},
    {"key": "sql_latest10", "tool": "SQL", "what": "fleet's latest 10, tie-breakers",
     "sql": "SELECT * FROM orders ORDER BY created_at DESC, tenant_id, order_id LIMIT 10",
     "compare": "ordered"},
    {"key": "sql_latest2000", "tool": "SQL", "what": "fleet's latest 2000, tie-breakers",
     "sql": "SELECT * FROM orders ORDER BY created_at DESC, tenant_id, order_id LIMIT 2000",
     "compare": "ordered"},
]

TARGET_AIM = 1.0
TARGET_MAX = 1.5

# plan nodes that only pass on, order or cut what the scans return
PASSING = {"Limit", "Result", "Sort", "Incremental Sort", "Subquery Scan",
           "WindowAgg", "Unique", "Append", "Materialize", "Memoize", "Gather",
           "Gather Merge", "Hash"}
JOINS = {"Hash Join", "Nested Loop", "Merge Join"}


def plan_walk(node, out):
    """Every node of a JSON plan, depth first, into out."""
    out.append(node)
    for child in node.get("Plans", []):
        plan_walk(child, out)
    return out


def feeds_rows(node):
    """Whether node's input holds a table's rows as a Foreign Scan returns
    them, unbounded (not groups, nor rows sorted and limited in the
    shards), through nodes that only pass them on or join them."""
    for c in node.get("Plans", []):
        t = c["Node Type"]
        if t == "Foreign Scan":
            if c.get("Pushdown") == "rows":
                return True
        elif (t in PASSING or t in JOINS) and feeds_rows(c):
            return True
    return False


def push_state(plan):
    """How much of a query the shards do, from its plan through the
    extension (EXPLAIN (VERBOSE, FORMAT JSON)): "pushed" when PostgreSQL
    only passes on, orders or cuts what the Foreign Scans return; "not
    pushed" when the scans return the table's rows, unfiltered, and
    PostgreSQL does the query's work; "partly" in between.  With what
    PostgreSQL does: its aggregates over rows, joins, filters, sorts of
    rows."""
    nodes = plan_walk(plan, [])
    scans = [n for n in nodes if n["Node Type"] == "Foreign Scan"]
    if not scans:
        return "not pushed", "no Foreign Scan"
    local = []
    for n in nodes:
        t = n["Node Type"]
        under = plan_walk(n, [])[1:]
        if t == "Foreign Scan":
            if "Filter" in n:
                local.append("filter")
            continue
        if not any(c["Node Type"] == "Foreign Scan" for c in under):
            continue
        if "Filter" in n or "Join Filter" in n:
            local.append("filter")
        if t in JOINS:
            local.append("join")
        elif t in ("Aggregate", "Group", "Unique", "SetOp"):
            if feeds_rows(n):
                local.append("aggregate")
        elif t in ("Sort", "Incremental Sort", "WindowAgg"):
            if feeds_rows(n):
                local.append("sort" if t != "WindowAgg" else "window")
        elif t not in PASSING:
            local.append(t.lower())
    local = sorted(set(local))
    some = any(s.get("Pushdown") != "rows" or "Relations" in s or
               " WHERE " in s.get("SQLite query", "") for s in scans)
    if not local:
        return "pushed", ""
    return ("partly" if some else "not pushed"), ", ".join(local)


def explain_json(b, sql):
    """The JSON plan of sql through the extension."""
    s = b.explain_session()
    try:
        text = "\n".join(s.rows("EXPLAIN (VERBOSE, FORMAT JSON) " + sql))
    finally:
        s.close()
    return json.loads(text)[0]["Plan"]


def compare(q, nat, ext):
    """None when the extension's result is the native table's, else what
    differs."""
    how = q["compare"]
    a, e = nat["rows"], ext["rows"]
    if how == "count":
        a, e = len(a), len(e)
    elif isinstance(how, list):
        a = [[r.split("|")[i] for i in how] for r in a]
        e = [[r.split("|")[i] for i in how] for r in e]
    if a == e:
        return None
    if how == "count":
        return "%d rows, native %d" % (e, a)
    first = next((i for i, (x, y) in enumerate(zip(a, e)) if x != y), min(len(a), len(e)))
    return ("%d rows, native %d; first difference at row %d: native %s, extension %s"
            % (len(e), len(a), first + 1, a[first] if first < len(a) else "-",
               e[first] if first < len(e) else "-"))


def run_pair(b, sql, ordered, errors):
    """As bench_run.run_fanout, each engine with its own text (the tools
    name the schema): a warm-up whose result is kept, then RUNS runs, the
    engines taking turns; medians."""
    def start(sch):
        s = b.Psql(sch)
        try:
            rows = b.normalise(s.rows(sql[sch]), ordered)
            s.timing_on()
        except b.BenchError:
            s.close()
            raise
        return {"s": s, "sql": sql[sch], "rows": rows}

    def step(st):
        return st["s"].time_one(st["sql"])

    def finish(st, times):
        st["s"].close()
        if times is None:
            return None
        return {"ms": b.statistics.median(times), "all": times, "rows": st["rows"]}

    return b.take_turns(["native", "ext"], errors, start, step, finish)


def run_bi_reads(b, explain, errors, notes, targets):
    """The BI shapes: for each, its plan through the extension, then the
    native tables and the extension taking turns; the table of times,
    ratios and what was pushed, and how many shapes meet the targets.  b is
    bench_run, whose sessions, turns and table this uses."""
    big = b.largest_tenant()[0]
    load_start = b.loadavg()
    b.log()
    b.log("BI tools: %d shapes as Metabase, Superset and Grafana render them, "
          "\"now\" = %s, one tenant = %s (the largest); %d runs, engines taking turns"
          % (len(BI_SHAPES), NOW, big, b.RUNS))
    rows, ratios, slow, differ = [], [], [], []
    for q in BI_SHAPES:
        t0 = time.time()
        sql = {e: q["sql"].format(s=e, big=b.pg_quote(big)) for e in ("native", "ext")}
        with open(explain, "a") as f:
            f.write("--- BI shape %s (%s: %s)\n" % (q["key"], q["tool"], q["what"]))
        b.explain_one(explain, sql["ext"], errors)
        try:
            state, work = push_state(explain_json(b, sql["ext"]))
        except (b.BenchError, ValueError, KeyError, IndexError) as ex:
            state, work = "?", str(ex)[:60]
        res = run_pair(b, sql, q["compare"] != "set", errors)
        nat, ext = res.get("native"), res.get("ext")
        diff = compare(q, nat, ext) if nat and ext else None
        if diff:
            differ.append(q["key"])
            errors.append("BI shape %s: the extension's result differs from the native "
                          "table's: %s" % (q["key"], diff))
        natv = nat and nat["ms"]
        extv = ext and ext["ms"]
        r = b.ratio(extv, natv)
        ratios.append(r)
        if r is None or r > TARGET_MAX:
            slow.append(q["key"])
        targets.check(r, TARGET_MAX, "BI %s <= %.1fx native" % (q["key"], TARGET_MAX))
        rows.append([q["key"], q["tool"], q["what"], b.fmt_ms2(natv), b.fmt_ms2(extv),
                     b.fmt_ratio(r), state + (" (%s)" % work if work else ""),
                     "DIFFERS" if diff else ("same" if nat and ext else "-")])
        b.log("  %-20s native %s, ext %s, %s  (%.0f s)"
              % (q["key"], b.spread2(nat), b.spread2(ext), state, time.time() - t0))
    b.log()
    b.log(b.table(["BI shape", "tool", "what", "native PG", "extension", "ext/native",
                   "shards do", "result"], rows))
    n = len(BI_SHAPES)
    aim = sum(1 for r in ratios if r is not None and r <= TARGET_AIM)
    cap = sum(1 for r in ratios if r is not None and r <= TARGET_MAX)
    b.log()
    b.log("BI shapes: %d of %d within %.1fx native, %d of %d within %.1fx; above %.1fx: %s; "
          "results differing: %s (load average %s at the start, %s at the end)"
          % (aim, n, TARGET_AIM, cap, n, TARGET_MAX, TARGET_MAX,
             ", ".join(slow) if slow else "none", ", ".join(differ) if differ else "none",
             load_start, b.loadavg()))
