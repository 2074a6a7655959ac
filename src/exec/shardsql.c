/*-------------------------------------------------------------------------
 *
 * shardsql.c
 *		  The SQL statement each shard of a foreign scan runs
 *
 * Planning builds one statement for the scan; when a shard is about to be
 * read, this file decides how that shard is read (what its declarations
 * allow to push down, which time index it may use) and builds its
 * statement: the run-time tenant filters as conditions of the query
 * (tenant.c), the order and bound of a sorted and limited scan, the ties
 * a shard returns with, and the grouping of an aggregate scan.  A shard
 * that rejects the statement is reported here by what it lacks.
 *
 * A fan-out over a fleet of one file per tenant plans a hundred thousand
 * files alike, and keeps each file's plan until the scan ends (a rescan
 * reuses it).  So what planning a file builds and drops (its SQL text as
 * it grows, the conditions it joins) lives in a context reset per file,
 * and the statements' texts are kept once each, keyed by the whole text:
 * files planned alike share one copy, a file whose schema differs (a
 * column read as NULL, another key) has the text it was planned with.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "common/hashfn.h"
#include "utils/memutils.h"

#include "scan.h"

/*
 * add_tenant_condition
 *		Add "the row's tenant is [not] one of ids" to a shard's conditions,
 *		its value bound after the planned parameters and those before it;
 *		in the form no tenant index serves where the shard reads a time
 *		range's index instead (time_index).
 */
static List *
add_tenant_condition(ShardScanState *s, ShardTarget *t, List *conds,
					 List *ids, bool negate, List **extra)
{
	StringInfoData sql;
	ShardValue *bind = palloc(sizeof(ShardValue));
	List	   *out = NIL;
	ListCell   *lc;

	initStringInfo(&sql);
	*bind = shard_tenant_condition(&sql, s->topts->tenant_column,
								   &t->tenant_rule, ids, negate,
								   s->nparams + list_length(*extra) + 1,
								   t->time_index != NULL && !negate ?
								   SHARD_TENANT_NO_INDEX : 0);
	*extra = lappend(*extra, bind);

	/*
	 * The pushed condition the scan is routed by keeps every row the
	 * filter of the tenants this shard is read for keeps (those tenants are
	 * among its values), and an index on the tenant column serves it: left
	 * out where the filter is written so that no such index serves it, and
	 * where both compare the same text (a text tenant in a TEXT column),
	 * so that SQLite does not test each row's tenant twice more.
	 */
	foreach(lc, conds)
	{
		if (!negate && (t->time_index != NULL || t->tenant_is_text) &&
			list_member(s->tenant_sqls, lfirst(lc)))
			continue;
		out = lappend(out, lfirst(lc));
	}
	return lappend(out, makeString(sql.data));
}

/*
 * row_shard_sorts
 *		Does a shard of an ordered row scan run its ORDER BY and limit (t:
 *		unless its declarations or rechecked conditions forbid; NULL: as
 *		EXPLAIN shows it)?
 */
static bool
row_shard_sorts(ShardScanState *s, ShardTarget *t)
{
	return t == NULL || (!t->unbounded && !t->degraded);
}

/*
 * append_row_order_sql
 *		The ORDER BY and LIMIT of a shard of an ordered row scan: OFFSET and
 *		LIMIT themselves when its rows pass through, else OFFSET + LIMIT
 *		rows for the scan's sort or merge (a merge with ties: every row in
 *		order, read only as far as it needs); nothing for a shard whose
 *		order or limit cannot be trusted.
 */
static void
append_row_order_sql(StringInfo sql, ShardScanState *s, ShardTarget *t)
{
	if (!row_shard_sorts(s, t))
		return;
	if (s->order_sql[0] != '\0')
		appendStringInfo(sql, " ORDER BY %s", s->order_sql);
	if (s->row_direct && (s->limit_count >= 0 || s->limit_offset > 0))
	{
		appendStringInfo(sql, " LIMIT " INT64_FORMAT, s->limit_count);
		if (s->limit_offset > 0)
			appendStringInfo(sql, " OFFSET " INT64_FORMAT, s->limit_offset);
	}
	else if (s->stream && s->ties != NIL && (t == NULL || !t->merge_sorted))
		;						/* read as far as the merge needs */
	else if (!s->row_direct && s->shard_bound >= 0)
		appendStringInfo(sql, " LIMIT " INT64_FORMAT, s->shard_bound);
}

/*
 * ties_key
 *		The first key of a scan whose shards return ties, as its shard
 *		query compares it: the column, with COLLATE BINARY for text.
 */
static char *
ties_key(ShardScanState *s)
{
	return psprintf("%s%s", strVal(linitial(s->ties)),
					strVal(lsecond(s->ties)));
}

/*
 * append_ties_arms_sql
 *		After "WITH ssfdw_top AS (a shard's first rows)": those rows but the
 *		ones tied with the last of them on the first key, and, when they
 *		fill the bound, every row so tied (an index range, NULL or not):
 *		SQLite's LIMIT has no WITH TIES, and a tie cut off at one shard's
 *		bound may rank within the whole order's limit by the keys after the
 *		first.  The first key of the last row is, with NULLS FIRST, the
 *		last non-NULL value if any, with NULLS LAST NULL if any, else the
 *		extreme value in the order's direction.  Each is a scalar subquery
 *		over the few first rows, computed once; a second table of them
 *		would cost SQLite more.
 */
static void
append_ties_arms_sql(StringInfo sql, ShardScanState *s, const char *select,
					 const char *where)
{
	char	   *key = ties_key(s);
	const char *agg = intVal(lthird(s->ties)) ? "min" : "max";
	char	   *full;
	char	   *last;

	full = psprintf("(SELECT count(*) >= " INT64_FORMAT " FROM ssfdw_top)",
					s->shard_bound);
	if (intVal(lfourth(s->ties)))
		last = psprintf("(SELECT %s(%s) FROM ssfdw_top)", agg, key);
	else
		last = psprintf("(SELECT CASE WHEN count(%s) < count(*) THEN NULL ELSE %s(%s) END FROM ssfdw_top)",
						key, agg, key);
	appendStringInfo(sql,
					 " SELECT * FROM ssfdw_top WHERE NOT %s OR %s IS NOT %s"
					 " UNION ALL %s WHERE %s%s%s AND %s IS %s",
					 full, key, last,
					 select, where, where[0] ? " AND " : "", full, key, last);
}

/*
 * shard_scan_append_ties_sql
 *		The query of a shard of a scan sorted by a prefix of the query's
 *		order (order.c): its first OFFSET + LIMIT rows by the prefix, and
 *		every row tied with the last of them on the first key.  The scan
 *		sorts what comes back.
 */
void
shard_scan_append_ties_sql(StringInfo sql, ShardScanState *s,
						   const char *select, const char *where)
{
	appendStringInfo(sql, "WITH ssfdw_top AS (%s%s%s ORDER BY %s LIMIT " INT64_FORMAT ")",
					 select, where[0] ? " WHERE " : "", where, s->order_sql,
					 s->shard_bound);
	append_ties_arms_sql(sql, s, select, where);
}

/*
 * window_may_hold_numbers
 *		May the time key of a shard's windowed query hold numbers there?
 *		Not when the shard declares the column of one table TEXT, which
 *		turns every number stored into text.
 */
static bool
window_may_hold_numbers(ShardScanState *s, ShardTarget *t)
{
	const char *end;
	char	   *name;
	char		aff;

	if (s->join != NULL)
		return true;
	name = shard_unquote_identifier(strVal(linitial(s->window)), &end);
	if (name == NULL || *end != '\0')
		return true;
	aff = shard_conn_column_affinity(t->conn, s->topts->table, name);
	return !(aff == 'T' || aff == 'U');
}

/*
 * window_bound_sql
 *		The scalar subquery over the first rows "top" (the first count rows
 *		of a time key's canonical values or NULL, in the order asked) that
 *		bounds the window of other forms that may rank among them (see
 *		append_window_sql): descending, the text from 15 hours and a minute
 *		before the last of them, truncated to the minute; ascending, the end
 *		of the day after it.  none where the window is every row: they are
 *		fewer than count, or hold a NULL.  With last_only, top is the one
 *		row of append_window_last_sql, not the rows.
 */
static char *
window_bound_sql(ShardScanState *s, const char *top, int64 count,
				 const char *none, bool last_only)
{
	const char *col = strVal(list_nth(s->window, 4));
	bool		desc = intVal(lthird(s->window));
	bool		is_date = intVal(lfourth(s->window));
	char	   *bound;

	if (last_only)
	{
		/* the last row's key is NULL where they are fewer, or end in NULLs */
		if (desc)
			bound = is_date ? "date(ssfdw_last, '-1 day')" :
				"strftime('%Y-%m-%d %H:%M', ssfdw_last, '-15 hours', '-1 minute')";
		else
			bound = "date(ssfdw_last, '+2 days')";
		if (none == NULL)
			return psprintf("(SELECT CASE WHEN %s IS NULL THEN -1 ELSE 0 END FROM %s)",
							bound, top);
		return psprintf("(SELECT coalesce(%s, %s) FROM %s)", bound, none, top);
	}
	if (desc)
		bound = psprintf(is_date ? "date(min(%s), '-1 day')" :
						 "strftime('%%Y-%%m-%%d %%H:%%M', min(%s), '-15 hours', '-1 minute')",
						 col);
	else
		bound = psprintf("date(max(%s), '+2 days')", col);
	if (none == NULL)
		return psprintf("(SELECT CASE WHEN count(*) < " INT64_FORMAT " OR count(%s) < count(*) OR %s IS NULL THEN -1 ELSE 0 END FROM %s)",
						count, col, bound, top);
	return psprintf("(SELECT CASE WHEN count(*) < " INT64_FORMAT " OR count(%s) < count(*) THEN %s ELSE coalesce(%s, %s) END FROM %s)",
					count, col, none, bound, none, top);
}

/*
 * append_window_arms
 *		The arms of the window of other forms of the first count rows
 *		"top", beyond prev (a window's bound, or NULL), each one index
 *		range whose entries the canonical test skips before their table
 *		rows are read, and before the scan's conditions, whose exact check
 *		of the time costs more (a row the test skips is not of the window:
 *		whether it matches is the canonical rows' query's to check).  The
 *		first arm reads the window from its bound, written before the
 *		scan's conditions so that SQLite searches the index from there (of
 *		two bounds of a column it takes the first); it reads nothing where
 *		the window is every row (a NULL bound).
 *		The second, where it is, reads the conditions' own range, in the
 *		order they come (the tenant's index, say), limited to no row where
 *		it is not (a LIMIT SQLite checks before it reads).  With
 *		last_only, top is the one row of append_window_last_sql.
 */
static void
append_window_arms(StringInfo arms, ShardScanState *s, const char *select,
				   const char *where, const char *top, int64 count,
				   const char *prev, bool last_only)
{
	const char *col = strVal(linitial(s->window));
	const char *canon = strVal(lsecond(s->window));
	bool		desc = intVal(lthird(s->window));
	const char *and = where[0] ? " AND " : "";
	char	   *beyond = prev == NULL ? "" :
		psprintf("%s %s %s AND ", col, desc ? "<" : ">=", prev);

	appendStringInfo(arms, " UNION ALL %s WHERE %s %s %s AND %sNOT %s%s%s",
					 select, col, desc ? ">=" : "<",
					 window_bound_sql(s, top, count, "NULL", last_only),
					 beyond, canon, and, where);
	appendStringInfo(arms,
					 " UNION ALL SELECT * FROM (%s WHERE %sNOT %s%s%s AND %s %s LIMIT %s)",
					 select, beyond, canon, and, where, col,
					 desc ? ">= ''" : "< x''",
					 window_bound_sql(s, top, count, NULL, last_only));
}

/*
 * append_window_last_sql
 *		For a merged shard's query, the table "name" of one row that bounds
 *		the window of its first count rows (the canonical values or NULL,
 *		in the order asked): the key of the last of them, ssfdw_last, NULL
 *		where they are fewer or a NULL is among them, which with NULLS LAST
 *		is the last (the window is then every row).  With NULLS FIRST, a
 *		NULL among them comes before every time, and the last one's time
 *		bounds the window as it would without.  All that window_bound_sql
 *		needs, read from the index's entries by one search, where a table
 *		of the rows and their aggregates cost SQLite as much again.
 */
static void
append_window_last_sql(StringInfo sql, ShardScanState *s, const char *name,
					   const char *canon_where, int64 count)
{
	const char *col = strVal(linitial(s->window));
	const char *canon = strVal(lsecond(s->window));

	appendStringInfo(sql, "%s AS (SELECT ", name);
	if (count <= 0)
	{
		appendStringInfoString(sql, "NULL AS ssfdw_last)");
		return;
	}
	appendStringInfo(sql, "(SELECT %s FROM ", col);
	shard_quote_identifier(sql, s->topts->table);
	appendStringInfo(sql, " WHERE %s%s(%s IS NULL OR %s) ORDER BY %s LIMIT 1 OFFSET " INT64_FORMAT ") AS ssfdw_last)",
					 canon_where, canon_where[0] ? " AND " : "", col, canon,
					 s->order_sql, count - 1);
}

/*
 * append_window_sql
 *		The query of a shard of a scan whose first key is a date or time
 *		(order.c): its first OFFSET + LIMIT rows among the values stored in
 *		the canonical form, whose text order is their time order, and every
 *		row of another form that may rank among them: numbers (stored
 *		before all text; numbers false: the shard declares the column TEXT,
 *		which holds none), and text whose offset (up to 14:59) or form may
 *		move it past the last of those: descending, text from 15 hours
 *		before it, truncated to the minute (a 'T', a shorter or longer form
 *		of the same minute sorts after that); ascending, text up to the
 *		end of the day after it (a date, the day before); all such rows
 *		when the first rows did not fill the limit.  The scan's sort ranks
 *		them by the values read (the window's arms: append_window_arms).
 *
 * The canonical rows are read under canon_where: the conditions (where)
 * with a range on the time key written as its range of text alone, which
 * holds every canonical value the range can keep.  Where the shard may
 * hold numbers, the range of every stored form is an OR, which SQLite
 * reads through an index on the tenant and the time only as the tenant's
 * every entry, in order; one range it reads from its end.
 *
 * A merged scan's shard (stream, scanmerge.c) returns the rows of the
 * other forms first, marked 1 in a last column, for the merge to sort;
 * then its rows in the canonical form (or NULL), marked 0, in their text's
 * order: read as the merge takes them, up to OFFSET + LIMIT of them unless
 * with ties (the merge stops where PostgreSQL's Limit above stops asking).
 * The first rows, which only bound the window there, are then one row of
 * the last one's key (append_window_last_sql), which an index on the
 * column finds in its entries.
 *
 * The merge seldom takes more than its first batch of a shard's rows
 * (first, about the shard's share of the limit), and a window as wide as
 * OFFSET + LIMIT rows costs every shard that many index entries, twice.
 * So a merged shard's query comes in two segments, where it can (a
 * rowid, and first fewer than half the limit): the window of the first
 * "first" rows and those rows, then the window of the rest of OFFSET +
 * LIMIT rows, beyond the first (disjoint from the first), and the rest of
 * the rows, in the order of the first key and then the rowid, the order
 * of an index on the column, so that the second segment's rows follow the
 * first's exactly.  SQLite runs the second segment only when the merge
 * reads that far; the merge then takes its other forms into the rows it
 * sorts: each ranks after every row the shard returned before it, and so
 * after every row the merge has returned.
 */
static void
append_window_sql(StringInfo sql, ShardScanState *s, const char *select,
				  const char *where, const char *canon_where, bool numbers,
				  bool stream, bool has_rowid)
{
	const char *col = strVal(linitial(s->window));
	const char *canon = strVal(lsecond(s->window));
	bool		desc = intVal(lthird(s->window));
	const char *and = where[0] ? " AND " : "";
	int64		first_rows = stream ? shard_scan_merge_batch_rows(s) : 0;
	bool		segments = stream && has_rowid &&
		first_rows * 2 <= s->shard_bound;
	int64		count;
	char	   *order;
	StringInfoData arms;

	count = segments ? first_rows : s->shard_bound;
	if (stream)
	{
		appendStringInfoString(sql, "WITH ");
		append_window_last_sql(sql, s, "ssfdw_top", canon_where, count);
		if (segments)
		{
			appendStringInfoString(sql, ", ");
			append_window_last_sql(sql, s, "ssfdw_top2", canon_where,
								   s->shard_bound);
		}
	}
	else
		appendStringInfo(sql,
						 "WITH ssfdw_top AS (%s WHERE %s%s(%s IS NULL OR %s) ORDER BY %s LIMIT " INT64_FORMAT ")",
						 select, canon_where, and, col, canon, s->order_sql,
						 s->shard_bound);

	/*
	 * With ties (a prefix of the order, order.c): those of the canonical
	 * values or NULL, whose text equals the last's; a tie stored in another
	 * form is among the rows that follow.
	 */
	if (stream)
		;
	else if (s->ties != NIL)
		append_ties_arms_sql(sql, s, select, where);
	else
		appendStringInfoString(sql, " SELECT * FROM ssfdw_top");

	/* The window: numbers, or blobs, and the text of other forms near. */
	initStringInfo(&arms);
	if (desc && numbers)
		appendStringInfo(&arms, " UNION ALL %s WHERE %s%s%s < ''",
						 select, where, and, col);
	if (!desc)
		appendStringInfo(&arms, " UNION ALL %s WHERE %s%s%s >= x''",
						 select, where, and, col);
	append_window_arms(&arms, s, select, where, "ssfdw_top", count, NULL,
					   stream);
	if (!stream)
	{
		appendStringInfoString(sql, arms.data);
		return;
	}
	appendStringInfo(sql, " SELECT *, 1 FROM (%s)",
					 arms.data + strlen(" UNION ALL "));
	order = segments ? psprintf("%s, rowid%s", s->order_sql,
								desc ? " DESC" : "") : s->order_sql;
	appendStringInfo(sql,
					 " UNION ALL SELECT *, 0 FROM (%s WHERE %s%s(%s IS NULL OR %s) ORDER BY %s",
					 select, canon_where, and, col, canon, order);
	/* a subquery's ORDER BY holds where it has a LIMIT */
	appendStringInfo(sql, " LIMIT " INT64_FORMAT ")",
					 segments ? first_rows :
					 s->ties == NIL ? s->shard_bound : -1);
	if (!segments)
		return;

	/* The second segment: the window beyond the first's, the rows after. */
	resetStringInfo(&arms);
	append_window_arms(&arms, s, select, where, "ssfdw_top2", s->shard_bound,
					   window_bound_sql(s, "ssfdw_top", count,
										desc ? "''" : "x''", true),
					   true);
	appendStringInfo(sql, " UNION ALL SELECT *, 1 FROM (%s)",
					 arms.data + strlen(" UNION ALL "));
	appendStringInfo(sql,
					 " UNION ALL SELECT *, 0 FROM (%s WHERE %s%s(%s IS NULL OR %s) ORDER BY %s LIMIT " INT64_FORMAT " OFFSET " INT64_FORMAT ")",
					 select, canon_where, and, col, canon, order,
					 s->ties == NIL ? s->shard_bound - first_rows : -1,
					 first_rows);
}

/*
 * shard_scan_append_group_sql
 *		The GROUP BY of an aggregate scan's shard query, and the ORDER BY
 *		and LIMIT that bound each shard's groups when the scan limits (t:
 *		unless that shard cannot be bounded; NULL: as EXPLAIN shows it).
 */
void
shard_scan_append_group_sql(StringInfo sql, ShardScanState *s, ShardTarget *t)
{
	if (s->row_order)
	{
		append_row_order_sql(sql, s, t);
		return;
	}
	appendStringInfoString(sql, s->group_sql);
	if (s->shard_bound >= 0 && (t == NULL || !t->unbounded))
		appendStringInfo(sql, "%s%s LIMIT " INT64_FORMAT,
						 s->order_sql[0] ? " ORDER BY " : "",
						 s->order_sql, s->shard_bound);
}

/*
 * append_key_columns
 *		"rowid, ", or a keyed shard's "k1", "k2", : the leading columns by
 *		which a row-by-row UPDATE or DELETE finds a row again.
 */
static void
append_key_columns(StringInfo sql, ShardTarget *t)
{
	ListCell   *lc;

	if (t->keyed == NULL)
	{
		appendStringInfoString(sql, "rowid, ");
		return;
	}
	foreach(lc, t->keyed->keys)
	{
		shard_quote_identifier(sql, (const char *) lfirst(lc));
		appendStringInfoString(sql, ", ");
	}
}

/*
 * shard_conditions
 *		The conditions of one shard's statement, for shard_join_conditions:
 *		the planned ones and the run-time tenant filters.  *extra receives
 *		the tenant ids to bind after the planned parameters.
 */
static List *
shard_conditions(ShardScanState *s, ShardTarget *t, List **extra)
{
	List	   *conds = t->degraded ? s->safe_where_sqls : s->where_sqls;

	/*
	 * The tenant filters join the conditions that cannot fail, so they run
	 * before any condition that reads another column: on every shard, also
	 * one whose other conditions PostgreSQL evaluates.  A join's are each
	 * table's (joinscan.c).
	 */
	*extra = NIL;
	if (s->restricted && s->join == NULL)
		conds = add_tenant_condition(s, t, conds, t->tenants, false, extra);
	if (t->excluded != NIL && s->join == NULL)
		conds = add_tenant_condition(s, t, conds, t->excluded, true, extra);
	if (s->join == NULL)
		conds = shard_time_ranges_for_shard(conds, t->conn, s->topts->table);
	return conds;
}

/*
 * shard_scan_build_where_sql
 *		The WHERE clause of one shard's statement: the planned conditions
 *		and the run-time tenant filters.  *extra receives the tenant ids to
 *		bind after the planned parameters.
 */
void
shard_scan_build_where_sql(StringInfo where, ShardScanState *s, ShardTarget *t,
						   List **extra)
{
	shard_join_conditions(where, shard_conditions(s, t, extra));
}

/*
 * file_select_sql
 *		A shard's copy of a planned query that ends "FROM table": where the
 *		shard's table lacks columns read as NULL (missing_column = null),
 *		the table becomes a subquery of the same name that has them as
 *		NULL, so that every reference to them (in the select list, a
 *		condition, an aggregate, GROUP BY or ORDER BY) is evaluated on NULL,
 *		as PostgreSQL evaluates it on a NULL value.  A query of another
 *		form is kept, and its shard reports the missing column.
 */
static const char *
file_select_sql(ShardScanState *s, ShardTarget *t, const char *planned)
{
	StringInfoData from;
	StringInfoData sql;
	size_t		len = strlen(planned);
	ListCell   *lc;

	if (t->missing_cols == NIL)
		return planned;
	initStringInfo(&from);
	appendStringInfoString(&from, " FROM ");
	shard_quote_identifier(&from, s->topts->table);
	if (len < (size_t) from.len ||
		strcmp(planned + len - from.len, from.data) != 0)
		return planned;

	initStringInfo(&sql);
	appendBinaryStringInfo(&sql, planned, len - from.len);
	appendStringInfoString(&sql, " FROM (SELECT ");
	if (t->nkeys > 0 && t->keyed == NULL)
		appendStringInfoString(&sql, "rowid AS rowid, ");
	appendStringInfoChar(&sql, '*');
	foreach(lc, t->missing_cols)
	{
		appendStringInfoString(&sql, ", NULL AS ");
		shard_quote_identifier(&sql, (const char *) lfirst(lc));
	}
	appendStringInfo(&sql, "%s) AS ", from.data);
	shard_quote_identifier(&sql, s->topts->table);
	return sql.data;
}

/*
 * build_shard_sql
 *		The statement for one shard: the planned query plus the run-time
 *		tenant filters; with raw, thread aggregation's input query in place
 *		of the GROUP BY query.  *extra receives the tenant ids to bind after
 *		the planned parameters.
 */
static char *
build_shard_sql(ShardScanState *s, ShardTarget *t, bool raw, List **extra)
{
	StringInfoData sql;
	StringInfoData where;
	List	   *conds;
	/* read in order by a merge, not whole into its sort */
	bool		stream = s->stream && !t->merge_sorted;
	const char *select_sql = file_select_sql(s, t, s->select_sql);

	conds = shard_conditions(s, t, extra);
	initStringInfo(&where);
	shard_join_conditions(&where, conds);
	if (t->time_index != NULL)
		t->time_where = where.data;

	initStringInfo(&sql);
	if (s->modify_sql)
	{
		appendStringInfoString(&sql, s->modify_sql);
		if (where.len > 0)
			appendStringInfo(&sql, " WHERE %s", where.data);
		appendStringInfoString(&sql, s->modify_returning_sql);
		return sql.data;
	}
	/* a merged scan's ties come as the merge takes the shard's rows */
	if ((s->window != NIL || (s->ties != NIL && !stream)) &&
		s->shard_bound >= 0 && row_shard_sorts(s, t))
	{
		StringInfoData select;

		initStringInfo(&select);
		if (t->nkeys > 0)
		{
			appendStringInfoString(&select, "SELECT ");
			append_key_columns(&select, t);
			appendStringInfoString(&select, select_sql + strlen("SELECT "));
		}
		else
			appendStringInfoString(&select, select_sql);
		/* a join's FROM, its tenant values bound once for every arm */
		if (s->join)
			shard_join_append_from(&select, s->join, t->conn, s->tenant_kind,
								   s->restricted ? t->tenants : NIL,
								   t->excluded, s->nparams, extra);
		if (s->window != NIL)
		{
			StringInfoData canon_where;

			/* the canonical rows' range: of text only (see there) */
			initStringInfo(&canon_where);
			if (s->join == NULL)
				shard_join_conditions(&canon_where,
									  shard_time_ranges_text_only(conds,
																  strVal(linitial(s->window))));
			else
				appendStringInfoString(&canon_where, where.data);
			append_window_sql(&sql, s, select.data, where.data,
							  canon_where.data,
							  window_may_hold_numbers(s, t), stream,
							  !t->no_rowid && t->missing_cols == NIL);
		}
		else
			shard_scan_append_ties_sql(&sql, s, select.data, where.data);
		return sql.data;
	}
	if (raw)
		appendStringInfoString(&sql, file_select_sql(s, t, s->raw_sql));
	else if (t->nkeys > 0)
	{
		/* "SELECT cols ..." becomes "SELECT rowid, cols ...". */
		appendStringInfoString(&sql, "SELECT ");
		append_key_columns(&sql, t);
		appendStringInfoString(&sql, select_sql + strlen("SELECT "));
	}
	else
		appendStringInfoString(&sql, select_sql);
	/* a join's ends in "FROM ": its tables, filtered for this shard */
	if (s->join)
		shard_join_append_from(&sql, s->join, t->conn, s->tenant_kind,
							   s->restricted ? t->tenants : NIL, t->excluded,
							   s->nparams, extra);
	/* both end "FROM table": read the whole table, not an index */
	if (t->tenant_noindex)
		appendStringInfoString(&sql, " NOT INDEXED");
	if (where.len > 0)
		appendStringInfo(&sql, " WHERE %s", where.data);
	if (!raw)
		shard_scan_append_group_sql(&sql, s, t);
	return sql.data;
}

/*
 * shard_scan_schema_drift
 *		A shard rejected a read's query: does it lack the table, read as
 *		empty under missing_table = 'empty' (SHARD_DRIFT_NO_TABLE), or
 *		columns of the foreign table, read as NULL under missing_column =
 *		'null' (SHARD_DRIFT_COLUMNS: t->missing_cols names them, and the
 *		shard's query is to be built again)?  Not for a join, a
 *		modification or a read of a table the statement writes, which
 *		report what the shard lacks (shard_scan_prepare_failed).
 */
int
shard_scan_schema_drift(ShardScanState *s, ShardTarget *t, Relation rel)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	sqlite3    *db = shard_conn_db(t->conn);
	sqlite3_stmt *stmt;
	List	   *missing = NIL;
	bool		found;
	int			rc;
	int			i;

	if (s->join != NULL || s->modify_sql != NULL || s->written ||
		t->missing_cols != NIL ||
		(!s->topts->missing_column_null && !s->topts->missing_table_empty))
		return SHARD_DRIFT_NONE;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM main.sqlite_schema"
						   " WHERE type IN ('table', 'view')"
						   " AND name = ?1 COLLATE NOCASE",
						   -1, &stmt, NULL) != SQLITE_OK)
		return SHARD_DRIFT_NONE;
	sqlite3_bind_text(stmt, 1, s->topts->table, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(stmt);
	found = (rc == SQLITE_ROW);
	sqlite3_finalize(stmt);
	shard_check_lock_wait(rc, false, t->info.shard_id);
	if (!found)
		return s->topts->missing_table_empty ? SHARD_DRIFT_NO_TABLE :
			SHARD_DRIFT_NONE;
	if (!s->topts->missing_column_null)
		return SHARD_DRIFT_NONE;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_xinfo(?1, 'main')"
						   " WHERE name = ?2 COLLATE NOCASE",
						   -1, &stmt, NULL) != SQLITE_OK)
		return SHARD_DRIFT_NONE;
	for (i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);
		char	   *colname;

		if (att->attisdropped ||
			shard_file_tenant_column_kind(RelationGetRelid(rel),
										  att->attnum) >= 0)
			continue;
		colname = shard_column_name(RelationGetRelid(rel), att->attnum);
		sqlite3_reset(stmt);
		sqlite3_bind_text(stmt, 1, s->topts->table, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(stmt, 2, colname, -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(stmt);
		if (rc != SQLITE_ROW)
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(s->resolve_cxt);

			missing = lappend(missing, pstrdup(colname));
			MemoryContextSwitchTo(oldcxt);
		}
	}
	sqlite3_finalize(stmt);
	shard_check_lock_wait(rc == SQLITE_ROW ? SQLITE_DONE : rc, false,
						  t->info.shard_id);
	if (missing == NIL)
		return SHARD_DRIFT_NONE;
	t->missing_cols = missing;
	return SHARD_DRIFT_COLUMNS;
}

/*
 * shard_scan_prepare_failed
 *		Explain why a shard rejected the query: a missing table or column is
 *		reported by name; anything else as SQLite put it.  Returns only when
 *		the table lacks a rowid, so the caller can retry without it.
 */
void
shard_scan_prepare_failed(ShardScanState *s, ShardTarget *t, int rc,
						 const char *errbuf, Relation rel)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	char	  **colnames = palloc(sizeof(char *) * (tupdesc->natts + 1));
	int			ncols = 0;
	int			i;

	if (s->join)
	{
		shard_join_check_tables(s->join, t->conn);
		shard_sqlite_error(ERROR, rc, t->info.shard_id, errbuf,
						   "could not prepare the join of table \"%s\" on shard \"%s\"",
						   s->topts->table, t->info.shard_id);
	}
	for (i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (!att->attisdropped &&
			shard_file_tenant_column_kind(RelationGetRelid(rel),
										  att->attnum) < 0)
			colnames[ncols++] = shard_column_name(RelationGetRelid(rel),
												  att->attnum);
	}
	shard_conn_check_table(t->conn, s->table_name, s->topts->table,
						   colnames, ncols);

	if (t->nkeys > 0 && t->keyed == NULL && strstr(errbuf, "rowid") != NULL)
		return;
	shard_sqlite_error(ERROR, rc, t->info.shard_id, errbuf,
					   "could not prepare the query of table \"%s\" on shard \"%s\"",
					   s->topts->table, t->info.shard_id);
}

/* Shards and tables ("path|table") known to have SQLite statistics. */
static List *tables_with_stats = NIL;

/* Tables smaller than this many rows are never worth a probe. */
#define PROBE_MIN_ROWS 16000

/*
 * large_tenant_without_stats
 *		Would SQLite read the tenants of a routed scan through an index on
 *		the tenant column, row by row, where reading the whole shard costs
 *		less?  Without statistics (sqlite_stat1, see shard_analyze) SQLite
 *		takes an equality on an indexed column for a few rows, and fetches
 *		each row of a tenant that fills the shard from the table in index
 *		order: many times the cost of reading the table.  So where the
 *		table has no statistics, count the tenants' rows in the index, up to
 *		a sixteenth of the table's rows (about its largest rowid); reaching
 *		that, the scan reads the shard instead.  Any failure says no.
 */
static bool
large_tenant_without_stats(ShardScanState *s, ShardTarget *t)
{
	sqlite3    *db = shard_conn_db(t->conn);
	const char *table = s->topts->table;
	char	   *key = psprintf("%s|%s", t->info.path, table);
	sqlite3_stmt *stmt;
	StringInfoData sql;
	sqlite3_int64 rows = 0;
	sqlite3_int64 found = 0;
	ShardValue	bind;
	char		errbuf[SHARDIO_ERRLEN];
	ListCell   *lc;
	bool		has_stats = false;

	foreach(lc, tables_with_stats)
		if (strcmp(lfirst(lc), key) == 0)
			return false;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_stat1 WHERE tbl = ?1",
						   -1, &stmt, NULL) == SQLITE_OK)
	{
		sqlite3_bind_text(stmt, 1, table, -1, SQLITE_STATIC);
		has_stats = (sqlite3_step(stmt) == SQLITE_ROW);
		sqlite3_finalize(stmt);
	}
	if (has_stats)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		tables_with_stats = lappend(tables_with_stats, pstrdup(key));
		MemoryContextSwitchTo(oldcxt);
		return false;
	}

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT max(rowid) FROM ");
	shard_quote_identifier(&sql, table);
	if (sqlite3_prepare_v2(db, sql.data, -1, &stmt, NULL) != SQLITE_OK)
		return false;			/* WITHOUT ROWID */
	if (sqlite3_step(stmt) == SQLITE_ROW)
		rows = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	if (rows < PROBE_MIN_ROWS)
		return false;

	resetStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT count(*) FROM (SELECT 1 FROM ");
	shard_quote_identifier(&sql, table);
	appendStringInfoString(&sql, " WHERE ");
	bind = shard_tenant_condition(&sql, s->topts->tenant_column,
								  &t->tenant_rule, t->tenants, false, 1, 0);
	appendStringInfo(&sql, " LIMIT %lld)", (long long) (rows / 16));
	if (sqlite3_prepare_v2(db, sql.data, -1, &stmt, NULL) != SQLITE_OK)
		return false;
	if (shardio_bind(stmt, 1, &bind, 1, errbuf) == SQLITE_OK &&
		sqlite3_step(stmt) == SQLITE_ROW)
		found = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return found >= rows / 16;
}
/*
 * shard_scan_choose_time_index
 *		The time column whose index a routed read of a time range, or of
 *		the first rows in the order of a time key (a tenant's latest rows),
 *		should find this shard's rows by, rather than the tenant's index, or
 *		NULL (timeindex.c).  Not for another sorted read (its order picks
 *		an index) or a direct modification.  The tenants' estimated rows
 *		are shared among the shards in proportion to the tenants each is
 *		read for.
 */
const char *
shard_scan_choose_time_index(ShardScanState *s, ShardTarget *t)
{
	double		tenant_rows = s->tenant_rows;
	int			ntenants = 0;
	ListCell   *lc;

	if (!s->restricted || t->tenants == NIL || s->join != NULL ||
		s->topts->reference || !t->tenant_is_text || t->degraded ||
		t->tenant_noindex || s->modify_sql != NULL)
		return NULL;
	if (s->row_order ? (s->window == NIL || s->shard_bound <= 0 ||
						t->unbounded) :
		s->tenant_only)
		return NULL;
	if (tenant_rows >= 0)
	{
		foreach(lc, s->targets)
			ntenants += list_length(((ShardTarget *) lfirst(lc))->tenants);
		if (ntenants > 0)
			tenant_rows = tenant_rows * list_length(t->tenants) / ntenants;
	}
	if (s->row_order)
	{
		const char *end;
		char	   *column = shard_unquote_identifier(strVal(linitial(s->window)),
													  &end);

		if (column == NULL || *end != '\0')
			return NULL;
		return shard_time_index_choose_order(t->conn, s->topts->table,
											 s->topts->tenant_column,
											 &t->tenant_rule, t->tenants,
											 column,
											 intVal(lthird(s->window)),
											 intVal(lfourth(s->window)),
											 (double) s->shard_bound,
											 tenant_rows);
	}
	return shard_time_index_choose(t->conn, s->topts->table,
								   s->topts->tenant_column, &t->tenant_rule,
								   t->tenants, s->where_sqls, s->param_values,
								   s->nparams, tenant_rows);
}

/*
 * sql_text_hash
 *		Hash a kept statement text (the key is a pointer to it).
 */
static uint32
sql_text_hash(const void *key, Size keysize)
{
	const char *text = *(const char *const *) key;

	return hash_bytes((const unsigned char *) text, strlen(text));
}

/*
 * sql_text_match
 *		Compare two kept statement texts, as hash_search wants: 0 if equal.
 */
static int
sql_text_match(const void *key1, const void *key2, Size keysize)
{
	return strcmp(*(const char *const *) key1, *(const char *const *) key2);
}

/*
 * keep_sql_text
 *		The scan's one copy of a shard statement's text, in its resolution
 *		context (see the file header); NULL stays NULL.
 */
static char *
keep_sql_text(ShardScanState *s, const char *sql)
{
	char	  **entry;
	char	   *copy;
	bool		found;

	if (sql == NULL)
		return NULL;
	if (s->sql_texts == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(char *);
		ctl.entrysize = sizeof(char *);
		ctl.hash = sql_text_hash;
		ctl.match = sql_text_match;
		ctl.hcxt = s->resolve_cxt;
		s->sql_texts = hash_create("sqlite_shard_fdw shard statements", 16,
								   &ctl, HASH_ELEM | HASH_FUNCTION |
								   HASH_COMPARE | HASH_CONTEXT);
	}
	entry = hash_search(s->sql_texts, &sql, HASH_FIND, NULL);
	if (entry != NULL)
		return *entry;
	/* the key is the copy, never text of the per-file context */
	copy = MemoryContextStrdup(s->resolve_cxt, sql);
	entry = hash_search(s->sql_texts, &copy, HASH_ENTER, &found);
	return *entry;
}

/*
 * keep_value
 *		A value to bind, copied with its text or bytes into the scan's
 *		resolution context.
 */
static ShardValue
keep_value(ShardScanState *s, const ShardValue *v)
{
	ShardValue	kept = *v;

	if ((v->type == SQLITE_TEXT || v->type == SQLITE_BLOB) && v->u.p != NULL)
	{
		char	   *p = MemoryContextAlloc(s->resolve_cxt, v->len + 1);

		memcpy(p, v->u.p, v->len);
		p[v->len] = '\0';
		kept.u.p = p;
	}
	return kept;
}

/*
 * affinity_mismatch
 *		shard_conn_affinity_mismatch, its garbage (and answer) in the
 *		per-file context.
 */
static char *
affinity_mismatch(ShardScanState *s, ShardTarget *t, List *needs)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(s->plan_cxt);
	char	   *bad = shard_conn_affinity_mismatch(t->conn, s->topts->table,
												   needs);

	MemoryContextSwitchTo(oldcxt);
	return bad;
}

/*
 * shard_scan_plan_shard
 *		Decide how one shard is read (what its declarations allow to push)
 *		and build its statement and values, in the scan's resolution
 *		context: once per resolution, since a rescan with the same values
 *		reads the shard the same way.
 */
void
shard_scan_plan_shard(ShardScanState *s, ShardTarget *t)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(s->resolve_cxt);
	List	   *extra;
	ListCell   *lc;
	int			i;
	char	   *sql;
	char	   *fallback_sql = NULL;
	char	   *time_where = t->time_where;

	/* what planning this file builds and drops (see the file header) */
	if (s->plan_cxt == NULL)
		s->plan_cxt = AllocSetContextCreate(s->resolve_cxt,
											"sqlite_shard_fdw shard plan",
											ALLOCSET_DEFAULT_SIZES);
	else
		MemoryContextReset(s->plan_cxt);

	/*
	 * Pushed-down SQL is exact only where the shard declares columns as
	 * planning assumed (text compared in TEXT columns, sums over numeric
	 * ones).  A shard that declares a compared column otherwise is read
	 * whole and PostgreSQL evaluates the conditions; an aggregation, planned
	 * from the first shard's schema, cannot be redone that way.
	 */
	{
		char	   *bad = affinity_mismatch(s, t, s->needs);

		if (s->join)
			shard_join_check_shard(s->join, t->conn, t->info.shard_id);

		/*
		 * Text extrema on a UTF-16 shard: the reading thread computes them
		 * right (it reads text as UTF-8), as long as it never hands the
		 * grouping to SQLite.
		 */
		t->no_sql_groups = false;
		if (bad && bad[0] == 'U' && s->agg_spec != NULL)
		{
			bad = affinity_mismatch(s, t, s->needs_but_extrema);
			t->no_sql_groups = (bad == NULL);
		}
		t->degraded = (bad != NULL);
		if (bad && s->mode != SCAN_ROWS)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
					 errmsg("cannot aggregate table \"%s\" inside shard \"%s\"",
							s->topts->table, t->info.shard_id),
					 bad[0] == 'U' ?
					 errdetail("The shard's database is UTF-16, where SQLite orders text in column \"%s\" otherwise than PostgreSQL does.",
							   bad + 1) :
					 errdetail("The shard declares column \"%s\" with another type than the first shard, so SQLite would not compute the aggregate as PostgreSQL does.",
							   bad + 1),
					 bad[0] == 'U' ?
					 errhint("Set \"sqlite_shard_fdw.aggregate_pushdown\" to off to aggregate in PostgreSQL.") :
					 errhint("Declare the column alike in every shard, or set \"sqlite_shard_fdw.aggregate_pushdown\" to off.")));

		/* A shard the bound cannot rely on returns all its groups. */
		t->unbounded = (s->order != NIL &&
						affinity_mismatch(s, t,
										  list_nth(s->order,
												   FdwScanOrderBoundNeeds)) != NULL);
		if (!row_shard_sorts(s, t))
			s->row_direct = false;

		/*
		 * A merge with ties reads a shard without LIMIT only where SQLite
		 * reads its rows in order; elsewhere it would sort every row before
		 * the first, and the shard returns its first rows and their ties,
		 * which the merge sorts.
		 */
		t->merge_sorted = false;
		if (s->stream && s->ties != NIL && row_shard_sorts(s, t))
		{
			const char *end;
			char	   *column = shard_unquote_identifier(strVal(linitial(s->window != NIL ?
																		 s->window :
																		 s->ties)),
														  &end);

			t->merge_sorted = (column == NULL || *end != '\0' ||
							   !shard_index_orders(t->conn, s->topts->table,
												   column));
		}
	}

	if (!s->topts->reference)
		shard_tenant_rule_lookup(&t->tenant_rule, shard_conn_db(t->conn),
								 s->topts->table, s->topts->tenant_column,
								 s->tenant_kind);
	t->tenant_is_text = !s->topts->reference &&
		t->tenant_rule.kind == SHARDIO_TENANT_TEXT &&
		t->tenant_rule.affinity == 'T';
	/*
	 * A routed read with no condition but the tenant's, whose rows SQLite would
	 * otherwise fetch through the tenant's index: no index when the tenant
	 * is large and the shard has no statistics.  (An ordered scan reads an
	 * index for its order; other conditions may pick their own index; a
	 * count(*) reads the tenant's index alone.)
	 */
	t->tenant_noindex = (s->restricted && t->tenants != NIL &&
						 t->tenant_is_text && s->tenant_only && !s->counts_only &&
						 !s->row_order && s->modify_sql == NULL &&
						 large_tenant_without_stats(s, t));
	t->time_index = shard_scan_choose_time_index(s, t);
	/* a table read through a subquery of NULLs has no index to name */
	if (t->missing_cols != NIL)
	{
		t->tenant_noindex = false;
		t->time_index = NULL;
	}
	/* The row's key, first: its rowid, or its primary key (shard_row_key_shard) */
	t->keyed = NULL;
	t->nkeys = 0;
	if (s->with_rowid && !t->no_rowid)
		t->nkeys = 1;
	else if (s->row_keys != NULL)
	{
		t->keyed = shard_row_key_shard(s, t);
		t->nkeys = list_length(t->keyed->keys);
	}

	/* The statements, built in the per-file context, then kept. */
	MemoryContextSwitchTo(s->plan_cxt);
	sql = build_shard_sql(s, t, s->agg_spec != NULL, &extra);
	MemoryContextSwitchTo(s->resolve_cxt);

	/*
	 * Planned values, then the tenant lists: the scan's own values where
	 * there are no others (a fan-out's files), unless a direct UPDATE
	 * fits them to each shard (directmodify.c).
	 */
	t->nbinds = s->nparams + list_length(extra);
	if (extra == NIL && s->modify_sql == NULL && s->param_values != NULL)
		t->binds = s->param_values;
	else
	{
		t->binds = palloc0(sizeof(ShardValue) * (t->nbinds + 1));
		if (s->nparams > 0)
			memcpy(t->binds, s->param_values,
				   sizeof(ShardValue) * s->nparams);
		i = s->nparams;
		foreach(lc, extra)
			t->binds[i++] = keep_value(s, (ShardValue *) lfirst(lc));
	}

	if (s->agg_spec && !t->no_sql_groups)
	{
		MemoryContextSwitchTo(s->plan_cxt);
		fallback_sql = build_shard_sql(s, t, false, &extra);
		MemoryContextSwitchTo(s->resolve_cxt);
	}
	t->sql = keep_sql_text(s, sql);
	t->fallback_sql = keep_sql_text(s, fallback_sql);
	if (t->time_where != time_where)
		t->time_where = pstrdup(t->time_where);
	MemoryContextReset(s->plan_cxt);
	MemoryContextSwitchTo(oldcxt);
}
