/*-------------------------------------------------------------------------
 *
 * timeindex.c
 *		  Which index a routed read of a time range finds its rows by
 *
 * A BI tool asks for one tenant over a time range: "tenant_id = 'big' AND
 * created_at >= '2025-06-01' AND created_at < '2025-06-02'".  A shard with
 * an index on the tenant column and another on the time column can find
 * the rows through either, and SQLite, which knows neither how big that
 * tenant is nor how narrow the range, takes the tenant's: for a large
 * tenant it then reads every row of the tenant to keep one day's.  The
 * wrapper knows more:
 *
 * - the tenant's rows: the planner's estimate from ANALYZE's statistics of
 *   the tenant column (its most common values); without them (the
 *   directory knows only the average tenant of a shard) they are counted
 *   in the tenant's index, as far as the comparison needs: at most twice
 *   the range's rows, index entries only;
 * - the table's rows on the shard: sqlite_stat1, else its largest rowid;
 * - the range, once its values are bound, against the time span the
 *   shard holds: the least and greatest stored values of the column,
 *   which its index gives in two seeks.
 *
 * The rows of the range (the table's rows times the share of the span the
 * range covers) are what the time index reads, each then checked for its
 * tenant; the tenant's rows are what the tenant index reads.  Where the
 * range's rows are fewer than half the tenant's, the tenant filter is
 * written in the form no index serves (shard_tenant_condition with
 * SHARD_TENANT_NO_INDEX, the column behind a unary "+"), and SQLite, left
 * one index to use, reads the range.  Elsewhere (a small tenant, a wide
 * range, nothing known) the filter keeps its usual form and SQLite its
 * choice.
 *
 * The choice is per shard, when its statement is built: a shard without an
 * index led by the time column (a file made at an older migration) keeps
 * the tenant's index, and so does one with an index on the tenant column
 * then the time column, which serves both conditions at once, or one
 * without an index led by the tenant column, where SQLite has only the time
 * index to choose.  The condition the scan is routed by, which an index on
 * the tenant column would serve too, is left out of such a shard's
 * statement (shardsql.c): the tenant filter keeps the same rows.  The "+"
 * changes no row the filter keeps, so no choice can fail a query or
 * change its answer; a wrong one only costs time.  A shard's indexes are
 * read once per schema of its file (its schema cookie), not per query: a
 * dashboard asks again and again, and SQLite's index pragmas cost more
 * than a small read they steer.
 *
 * The tenant's latest rows ("tenant_id = $1 ORDER BY created_at DESC LIMIT
 * 10") are the same choice: the tenant's index reads all the tenant's rows
 * and sorts them; the time index reads rows in the order asked, newest
 * first, until LIMIT of them are the tenant's: about LIMIT times the
 * table's rows over the tenant's, when the tenant's rows are spread over
 * time as the others' are.  The time key's window of other stored forms
 * (shardsql.c, append_window_sql) reads the index entries of some 15 hours
 * (ascending, two days) past the last of them besides, counted at a
 * quarter of a row each: the canonical test skips them before their table
 * rows are read.  The time index wins where the tenant's rows n exceed
 * TIME_ORDER_ADVANTAGE times what it reads, (LIMIT x rows) / n + window,
 * the root of that quadratic being what the tenant's rows are counted up
 * to when ANALYZE has no estimate.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <math.h>

#include "utils/memutils.h"
#include "utils/timestamp.h"

/*
 * A range's rows must be this many times fewer than the tenant's for the
 * time index: both read an index entry and a table row per row, and the
 * estimates are rough.
 */
#define TIME_INDEX_ADVANTAGE 2.0

/*
 * What a window entry of a time key's other stored forms (see the header)
 * costs against a row read, and how far past the last of the first rows
 * the window reaches, in seconds.
 */
#define TIME_WINDOW_ENTRY_COST 0.25
#define TIME_WINDOW_DESC_SECS	(15 * 3600.0 + 60.0)
#define TIME_WINDOW_ASC_SECS	(2 * 86400.0)

/*
 * For a tenant's first rows by time, the tenant's index also sorts what it
 * reads, and reads its rows scattered over the table where the time index
 * reads them about in the order they were written: no advantage is asked
 * of the time index (measured: 2,000 rows of a tenant of 32,000 in a shard
 * of 270,000, 27 ms through the tenant's index, 6 ms through the time
 * index).  A tenant whose rows are not spread over time as the others'
 * (none lately) makes the time index read more than estimated.
 */
#define TIME_ORDER_ADVANTAGE 1.0

/* A table of fewer rows is read fast by either index. */
#define TIME_ORDER_MIN_ROWS 2000

/* The indexes of a table that lead with a column, or with two. */
#define INDEX_SQL \
	"SELECT l.name, i.seqno, i.name FROM pragma_index_list(?1) l, " \
	"pragma_index_info(l.name) i WHERE NOT l.partial AND i.seqno < 2 " \
	"ORDER BY l.name, i.seqno"

/*
 * step_stmt
 *		Prepare sql on the shard (a kept statement if there is one), bind
 *		text to ?1 when not NULL, and return it after its first step in
 *		*stmt; false when it cannot be prepared.  The caller gives it back
 *		with shard_conn_unprepare.
 */
static bool
step_stmt(ShardConn *conn, const char *sql, const char *text,
		  sqlite3_stmt **stmt, int *rc)
{
	char		errbuf[SHARDIO_ERRLEN];

	if (shard_conn_prepare(conn, sql, stmt, errbuf) != SQLITE_OK)
		return false;
	if (text != NULL)
		sqlite3_bind_text(*stmt, 1, text, -1, SQLITE_STATIC);
	*rc = sqlite3_step(*stmt);
	return true;
}

/*
 * read_table_indexes
 *		The first two columns of each index of the table that covers every
 *		row (not partial): a List of Lists of one or two names, the index's
 *		name first.
 */
static List *
read_table_indexes(ShardConn *conn, const char *table)
{
	sqlite3_stmt *stmt;
	List	   *indexes = NIL;
	List	   *cur = NIL;
	int			rc;

	if (!step_stmt(conn, INDEX_SQL, table, &stmt, &rc))
		return NIL;
	for (; rc == SQLITE_ROW; rc = sqlite3_step(stmt))
	{
		const char *idx = (const char *) sqlite3_column_text(stmt, 0);
		const char *col = (const char *) sqlite3_column_text(stmt, 2);

		if (idx == NULL)
			continue;
		if (cur == NIL || strcmp(linitial(cur), idx) != 0)
		{
			if (cur != NIL)
				indexes = lappend(indexes, cur);
			cur = list_make1(pstrdup(idx));
		}
		/* an expression has no name: it ends what the index leads with */
		if (col != NULL && list_length(cur) == sqlite3_column_int(stmt, 1) + 1)
			cur = lappend(cur, pstrdup(col));
	}
	if (cur != NIL)
		indexes = lappend(indexes, cur);
	shard_conn_unprepare(conn, stmt);
	return indexes;
}

/*
 * What read_table_indexes found on a shard, kept while the shard's schema
 * is the same (its schema cookie): every routed read of a time range or a
 * tenant's latest rows asks it, and SQLite's index pragmas cost more than
 * the read they steer.
 */
typedef struct IndexesEntry
{
	char	   *key;			/* shard file and table */
	int			schema_version;
	List	   *indexes;		/* in indexes_cxt */
} IndexesEntry;

#define INDEXES_CACHE_SIZE	256

static List *indexes_cache = NIL;
static MemoryContext indexes_cxt = NULL;

/*
 * free_indexes_entry
 *		Give back what a cache entry of indexes_cache holds.
 */
static void
free_indexes_entry(IndexesEntry *e)
{
	ListCell   *lc;

	foreach(lc, e->indexes)
		list_free_deep(lfirst(lc));
	list_free(e->indexes);
	pfree(e->key);
	pfree(e);
}

/*
 * table_indexes
 *		read_table_indexes of the table, from the cache while the shard's
 *		schema cookie is the one they were read at.  The list belongs to
 *		the cache: callers only read it, and it lasts until the next call.
 */
static List *
table_indexes(ShardConn *conn, const char *table)
{
	StringInfoData key;
	MemoryContext oldcxt;
	sqlite3_stmt *stmt;
	IndexesEntry *e = NULL;
	List	   *found;
	int			version = -1;
	int			rc;
	ListCell   *lc;

	if (step_stmt(conn, "PRAGMA schema_version", NULL, &stmt, &rc))
	{
		if (rc == SQLITE_ROW)
			version = sqlite3_column_int(stmt, 0);
		shard_conn_unprepare(conn, stmt);
	}
	if (version < 0)
		return read_table_indexes(conn, table);

	initStringInfo(&key);
	appendStringInfo(&key, "%s|%s",
					 sqlite3_db_filename(shard_conn_db(conn), "main"), table);
	foreach(lc, indexes_cache)
	{
		e = lfirst(lc);
		if (strcmp(e->key, key.data) == 0)
		{
			if (e->schema_version == version)
				return e->indexes;
			free_indexes_entry(e);
			indexes_cache = foreach_delete_current(indexes_cache, lc);
			break;
		}
	}

	found = read_table_indexes(conn, table);
	if (indexes_cxt == NULL)
		indexes_cxt = AllocSetContextCreate(TopMemoryContext,
											"sqlite_shard_fdw index lists",
											ALLOCSET_SMALL_SIZES);
	oldcxt = MemoryContextSwitchTo(indexes_cxt);
	if (list_length(indexes_cache) >= INDEXES_CACHE_SIZE)
	{
		free_indexes_entry(linitial(indexes_cache));
		indexes_cache = list_delete_first(indexes_cache);
	}
	e = palloc0(sizeof(IndexesEntry));
	e->key = pstrdup(key.data);
	e->schema_version = version;
	foreach(lc, found)
	{
		List	   *copy = NIL;
		ListCell   *lc2;

		foreach(lc2, (List *) lfirst(lc))
			copy = lappend(copy, pstrdup(lfirst(lc2)));
		e->indexes = lappend(e->indexes, copy);
	}
	indexes_cache = lappend(indexes_cache, e);
	MemoryContextSwitchTo(oldcxt);
	return e->indexes;
}

/*
 * index_leads
 *		Does an index (table_indexes) begin with col, or with col then
 *		second (not NULL)?  SQLite's names ignore ASCII case.
 */
static bool
index_leads(List *index, const char *col, const char *second)
{
	if (list_length(index) < 2 || pg_strcasecmp(lsecond(index), col) != 0)
		return false;
	return second == NULL ||
		(list_length(index) >= 3 && pg_strcasecmp(lthird(index), second) == 0);
}

/*
 * stat_number
 *		The first number of an sqlite_stat1 stat text (the table's rows),
 *		or -1.
 */
static double
stat_number(const char *stat)
{
	if (*stat < '0' || *stat > '9')
		return -1;
	return strtod(stat, NULL);
}

/*
 * table_rows
 *		The table's rows on the shard: the count sqlite_stat1 keeps, else
 *		its largest rowid, else a walk down its B-tree (estimate.c); -1
 *		when none is known.
 */
static double
table_rows(ShardConn *conn, const char *table)
{
	sqlite3_stmt *stmt;
	StringInfoData sql;
	double		rows = -1;
	int			rc;

	if (step_stmt(conn, "SELECT stat FROM sqlite_stat1 WHERE tbl = ?1 COLLATE NOCASE",
				  table, &stmt, &rc))
	{
		for (; rc == SQLITE_ROW; rc = sqlite3_step(stmt))
		{
			const char *stat = (const char *) sqlite3_column_text(stmt, 0);

			if (stat != NULL)
				rows = Max(rows, stat_number(stat));
		}
		shard_conn_unprepare(conn, stmt);
	}
	if (rows >= 0)
		return rows;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT max(rowid) FROM ");
	shard_quote_identifier(&sql, table);
	if (step_stmt(conn, sql.data, NULL, &stmt, &rc))
	{
		if (rc == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL)
			rows = sqlite3_column_double(stmt, 0);
		shard_conn_unprepare(conn, stmt);
	}
	if (rows < 0)
		rows = shard_btree_rows(shard_conn_db(conn), table);	/* WITHOUT ROWID */
	return rows;
}

/*
 * What counting a shard's tenants has shown, kept for REACH_CACHE_SECS
 * seconds (a dashboard asks again and again): they have at least "reached"
 * rows, fewer than "missed" (0: not known).
 */
typedef struct ReachEntry
{
	char	   *key;			/* shard file, table and tenants */
	double		reached;
	double		missed;
	TimestampTz at;
} ReachEntry;

#define REACH_CACHE_SECS	60
#define REACH_CACHE_SIZE	256

static List *reach_cache = NIL;

/*
 * reach_entry
 *		The cache entry of key, made (and the oldest dropped) when there is
 *		none or it is too old.
 */
static ReachEntry *
reach_entry(const char *key)
{
	TimestampTz now = GetCurrentTimestamp();
	MemoryContext oldcxt;
	ReachEntry *e;
	ListCell   *lc;

	foreach(lc, reach_cache)
	{
		e = lfirst(lc);
		if (strcmp(e->key, key) != 0)
			continue;
		if (!TimestampDifferenceExceeds(e->at, now, REACH_CACHE_SECS * 1000))
			return e;
		e->reached = 0;
		e->missed = 0;
		e->at = now;
		return e;
	}
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	if (list_length(reach_cache) >= REACH_CACHE_SIZE)
	{
		e = linitial(reach_cache);
		pfree(e->key);
		pfree(e);
		reach_cache = list_delete_first(reach_cache);
	}
	e = palloc0(sizeof(ReachEntry));
	e->key = pstrdup(key);
	e->at = now;
	reach_cache = lappend(reach_cache, e);
	MemoryContextSwitchTo(oldcxt);
	return e;
}

/*
 * tenant_rows_reach
 *		Do the tenants have at least limit rows on the shard?  Counted in
 *		the tenant's index (the filter as the tenant rule writes it), up to
 *		limit: a read of at most limit index entries; what a count showed
 *		is kept for a minute.
 */
static bool
tenant_rows_reach(ShardConn *conn, const char *table,
				  const char *tenant_column, const ShardTenantRule *rule,
				  List *tenants, double limit)
{
	StringInfoData sql;
	StringInfoData key;
	ShardValue	bind;
	sqlite3_stmt *stmt;
	char		errbuf[SHARDIO_ERRLEN];
	bool		reached = false;
	ReachEntry *e;
	ListCell   *lc;

	initStringInfo(&key);
	appendStringInfo(&key, "%s|%s", sqlite3_db_filename(shard_conn_db(conn), "main"),
					 table);
	foreach(lc, tenants)
		appendStringInfo(&key, "|%s", (char *) lfirst(lc));
	e = reach_entry(key.data);
	if (e->reached >= limit)
		return true;
	if (e->missed > 0 && e->missed <= limit)
		return false;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT count(*) FROM (SELECT 1 FROM ");
	shard_quote_identifier(&sql, table);
	appendStringInfoString(&sql, " WHERE ");
	bind = shard_tenant_condition(&sql, tenant_column, rule, tenants, false,
								  1, 0);
	appendStringInfoString(&sql, " LIMIT ?2)");
	if (shard_conn_prepare(conn, sql.data, &stmt, errbuf) != SQLITE_OK)
		return false;
	if (shardio_bind(stmt, 1, &bind, 1, errbuf) == SQLITE_OK &&
		sqlite3_bind_int64(stmt, 2, (sqlite3_int64) limit) == SQLITE_OK &&
		sqlite3_step(stmt) == SQLITE_ROW)
		reached = sqlite3_column_int64(stmt, 0) >= (sqlite3_int64) limit;
	shard_conn_unprepare(conn, stmt);
	if (reached)
		e->reached = Max(e->reached, limit);
	else
		e->missed = e->missed > 0 ? Min(e->missed, limit) : limit;
	return reached;
}

/*
 * time_span
 *		The Unix seconds of the least and the greatest value stored in a
 *		time column, each found by one seek of its index: a number as it
 *		is (Unix seconds), text as SQLite's julianday reads it.  False when
 *		the column holds no value, or an extreme that is no time (a blob,
 *		text of another form).
 */
static bool
time_span(ShardConn *conn, const char *table, const char *column,
		  double *lo, double *hi)
{
	StringInfoData sql;
	StringInfoData col;
	StringInfoData tbl;
	sqlite3_stmt *stmt;
	bool		found = false;
	int			rc;

	initStringInfo(&col);
	shard_quote_identifier(&col, column);
	initStringInfo(&tbl);
	shard_quote_identifier(&tbl, table);
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT CASE typeof(lo) WHEN 'text' THEN (julianday(lo) - 2440587.5) * 86400.0 "
					 "WHEN 'integer' THEN lo WHEN 'real' THEN lo END, "
					 "CASE typeof(hi) WHEN 'text' THEN (julianday(hi) - 2440587.5) * 86400.0 "
					 "WHEN 'integer' THEN hi WHEN 'real' THEN hi END "
					 "FROM (SELECT (SELECT min(%s) FROM %s) AS lo, (SELECT max(%s) FROM %s) AS hi)",
					 col.data, tbl.data, col.data, tbl.data);
	if (!step_stmt(conn, sql.data, NULL, &stmt, &rc))
		return false;
	if (rc == SQLITE_ROW &&
		sqlite3_column_type(stmt, 0) != SQLITE_NULL &&
		sqlite3_column_type(stmt, 1) != SQLITE_NULL)
	{
		*lo = sqlite3_column_double(stmt, 0);
		*hi = sqlite3_column_double(stmt, 1);
		found = (*lo <= *hi);
	}
	shard_conn_unprepare(conn, stmt);
	return found;
}

/*
 * range_share
 *		The share of the span [lo, hi] that the range r covers.
 */
static double
range_share(const ShardTimeRange *r, double lo, double hi)
{
	double		from = Max(r->lo, lo);
	double		to = Min(r->hi, hi);

	if (to < from)
		return 0;
	if (hi <= lo)
		return 1;
	return Min(1.0, (to - from) / (hi - lo));
}

/*
 * shard_time_index_choose
 *		Should this shard read the rows of the routed tenants (tenant_rows
 *		of them by ANALYZE's statistics, -1 unknown) through an index on a
 *		time column that conds ranges over, whose values binds holds,
 *		rather than through the tenant's index?  The time column, or NULL
 *		(see the file header).  The caller has opened the shard's read
 *		transaction.
 */
const char *
shard_time_index_choose(ShardConn *conn, const char *table,
						const char *tenant_column, const ShardTenantRule *rule,
						List *tenants, List *conds, const ShardValue *binds,
						int nbinds, double tenant_rows)
{
	List	   *ranges;
	List	   *indexes;
	ListCell   *lc;
	const char *best = NULL;
	double		best_rows = 0;
	double		rows;
	bool		tenant_led = false;

	/* a filter no index serves has nothing to give way */
	if (!shard_tenant_indexed(rule))
		return NULL;
	ranges = shard_time_range_seconds(conds, binds, nbinds);
	if (ranges == NIL)
		return NULL;
	indexes = table_indexes(conn, table);
	foreach(lc, indexes)
		tenant_led |= index_leads(lfirst(lc), tenant_column, NULL);
	/* without an index on the tenant, SQLite takes the time index anyway */
	if (!tenant_led || (rows = table_rows(conn, table)) < 0)
		return NULL;

	foreach(lc, ranges)
	{
		ShardTimeRange *r = lfirst(lc);
		bool		time_led = false;
		bool		both_led = false;
		ListCell   *li;
		double		lo,
					hi,
					range_rows;

		if (isinf(r->lo) && isinf(r->hi))
			continue;
		foreach(li, indexes)
		{
			time_led |= index_leads(lfirst(li), r->column, NULL);
			both_led |= index_leads(lfirst(li), tenant_column, r->column);
		}
		/* no time index; or one index serves both conditions */
		if (!time_led || both_led)
			continue;
		if (!time_span(conn, table, r->column, &lo, &hi))
			continue;
		range_rows = rows * range_share(r, lo, hi);
		if (best == NULL || range_rows < best_rows)
		{
			best = r->column;
			best_rows = range_rows;
		}
	}
	if (best == NULL)
		return NULL;

	/*
	 * The tenants' rows against the range's: from ANALYZE's statistics,
	 * else counted in the tenant's index as far as they need to reach.
	 */
	if (tenant_rows >= 0)
		return best_rows * TIME_INDEX_ADVANTAGE < tenant_rows ? best : NULL;
	return tenant_rows_reach(conn, table, tenant_column, rule, tenants,
							 floor(best_rows * TIME_INDEX_ADVANTAGE) + 1) ?
		best : NULL;
}

/*
 * shard_time_index_choose_order
 *		Should this shard find the first bound rows of the routed tenants
 *		(tenant_rows of them by ANALYZE's statistics, -1 unknown) in the
 *		order of a time column (desc: newest first; is_date: a date) through
 *		the column's index, each checked for its tenant, rather than through
 *		the tenant's index, which reads all of the tenants' rows to sort
 *		them?  The time column, or NULL (see the file header).  The caller
 *		has opened the shard's read transaction.
 */
const char *
shard_time_index_choose_order(ShardConn *conn, const char *table,
							  const char *tenant_column,
							  const ShardTenantRule *rule, List *tenants,
							  const char *column, bool desc, bool is_date,
							  double bound, double tenant_rows)
{
	List	   *indexes;
	ListCell   *lc;
	bool		tenant_led = false;
	bool		time_led = false;
	bool		both_led = false;
	double		rows;
	double		lo,
				hi;
	double		window;
	double		threshold;

	/* a filter no index serves has nothing to give way */
	if (!shard_tenant_indexed(rule) || bound <= 0)
		return NULL;
	indexes = table_indexes(conn, table);
	foreach(lc, indexes)
	{
		tenant_led |= index_leads(lfirst(lc), tenant_column, NULL);
		time_led |= index_leads(lfirst(lc), column, NULL);
		both_led |= index_leads(lfirst(lc), tenant_column, column);
	}

	/*
	 * Without an index on the tenant SQLite takes the time index anyway;
	 * one on the tenant then the time serves both; without one on the time
	 * there is no choice.
	 */
	if (!tenant_led || !time_led || both_led)
		return NULL;
	if ((rows = table_rows(conn, table)) < TIME_ORDER_MIN_ROWS ||
		!time_span(conn, table, column, &lo, &hi))
		return NULL;
	window = (desc && !is_date) ? TIME_WINDOW_DESC_SECS : TIME_WINDOW_ASC_SECS;
	window = TIME_WINDOW_ENTRY_COST * rows *
		(hi > lo ? Min(1.0, window / (hi - lo)) : 1.0);

	/*
	 * The time index wins for n tenant rows where ADV * (bound * rows / n +
	 * window) < n, that is beyond the positive root of n^2 - ADV * window *
	 * n - ADV * bound * rows.
	 */
	threshold = (TIME_ORDER_ADVANTAGE * window +
				 sqrt(TIME_ORDER_ADVANTAGE * TIME_ORDER_ADVANTAGE * window * window +
					  4.0 * TIME_ORDER_ADVANTAGE * bound * rows)) / 2.0;
	if (threshold >= rows)
		return NULL;
	if (tenant_rows >= 0)
		return tenant_rows > threshold ? column : NULL;
	return tenant_rows_reach(conn, table, tenant_column, rule, tenants,
							 floor(threshold) + 1) ? column : NULL;
}

/*
 * What shard_index_orders found, kept for REACH_CACHE_SECS seconds: each
 * merged scan with ties asks it of every shard.
 */
typedef struct OrderedEntry
{
	char	   *key;			/* shard file, table and column */
	bool		ordered;
	TimestampTz at;
} OrderedEntry;

static List *ordered_cache = NIL;

/*
 * shard_index_orders
 *		Can SQLite read the table's rows in the order of a column without
 *		sorting them: an index that leads with it (not partial), or the
 *		column is the table's only key, declared INTEGER (the rowid, or the
 *		order of a WITHOUT ROWID table)?  A merged scan with ties reads a
 *		shard's rows without LIMIT only then (scanmerge.c); elsewhere SQLite
 *		would sort every row before the first.
 */
bool
shard_index_orders(ShardConn *conn, const char *table, const char *column)
{
	TimestampTz now = GetCurrentTimestamp();
	StringInfoData key;
	MemoryContext oldcxt;
	OrderedEntry *e = NULL;
	sqlite3_stmt *stmt;
	char		errbuf[SHARDIO_ERRLEN];
	bool		ordered = false;
	ListCell   *lc;

	initStringInfo(&key);
	appendStringInfo(&key, "%s|%s|%s",
					 sqlite3_db_filename(shard_conn_db(conn), "main"),
					 table, column);
	foreach(lc, ordered_cache)
	{
		e = lfirst(lc);
		if (strcmp(e->key, key.data) == 0 &&
			!TimestampDifferenceExceeds(e->at, now, REACH_CACHE_SECS * 1000))
			return e->ordered;
	}

	foreach(lc, table_indexes(conn, table))
		ordered |= index_leads(lfirst(lc), column, NULL);
	if (!ordered &&
		shard_conn_prepare(conn,
						   "SELECT count(*) = 1 AND max(pk = 1 AND name = ?2 COLLATE NOCASE "
						   "AND upper(type) = 'INTEGER') FROM pragma_table_info(?1) "
						   "WHERE pk > 0", &stmt, errbuf) == SQLITE_OK)
	{
		sqlite3_bind_text(stmt, 1, table, -1, SQLITE_STATIC);
		sqlite3_bind_text(stmt, 2, column, -1, SQLITE_STATIC);
		if (sqlite3_step(stmt) == SQLITE_ROW)
			ordered = sqlite3_column_int(stmt, 0) != 0;
		shard_conn_unprepare(conn, stmt);
	}

	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	if (list_length(ordered_cache) >= REACH_CACHE_SIZE)
	{
		e = linitial(ordered_cache);
		pfree(e->key);
		pfree(e);
		ordered_cache = list_delete_first(ordered_cache);
	}
	e = palloc0(sizeof(OrderedEntry));
	e->key = pstrdup(key.data);
	e->ordered = ordered;
	e->at = now;
	ordered_cache = lappend(ordered_cache, e);
	MemoryContextSwitchTo(oldcxt);
	return ordered;
}
