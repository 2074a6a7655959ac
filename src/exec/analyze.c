/*-------------------------------------------------------------------------
 *
 * analyze.c
 *		  ANALYZE support for sqlite_shard_fdw foreign tables
 *
 * A foreign table spans every shard of its server, so its sample is drawn
 * from all of them in one pass: the shards are read one after another as if
 * they were one long table, and Vitter's reservoir algorithm (the one
 * analyze.c and postgres_fdw use) keeps a uniform sample of targrows rows
 * of the whole, without knowing the row count in advance.  Only the rows
 * the reservoir keeps are converted to tuples; the others are counted and
 * dropped while still in SQLite's form, so the cost of the pass is mostly
 * SQLite's own.
 *
 * The sample obeys the same rules as a fan-out scan, so the statistics
 * describe the rows queries see:
 *
 * - A tenant in a move counts only from the shard that owns it; its copy
 *   on the other shard (rows copied ahead of cutover, or left behind until
 *   cleanup) is filtered out inside SQLite, as scans filter it (tenant.c).
 * - A role whose user mapping restricts it to some tenants samples only
 *   those tenants' rows.  ANALYZE reads as the table owner, so this is the
 *   owner's mapping: a restricted owner cannot pull other tenants' values
 *   into pg_statistic by running ANALYZE.
 * - With on_missing_shard = 'skip', a shard whose file is missing is left
 *   out with a WARNING, as scans do.
 * - A shard that lacks the table, or a column, is an error naming it, or
 *   with missing_table 'empty' has no rows and with missing_column 'null'
 *   reads the column as NULL, as scans read it.
 * - On a server of layout 'file_per_tenant' no file stores the tenant
 *   column: it is ssfdw_file_tenant(kind), the file's tenant, as in every
 *   scan's SQL (tenantfile.c).  A restricted role samples its tenants'
 *   files, found without listing the others (nothing of another tenant's
 *   file, not even a WARNING about its name, reaches it), and needs no
 *   tenant filter inside them.
 *
 * Value statistics (most common values, histograms, distinct counts) are
 * not private to the rows a role may read: the planner passes them to the
 * function of any operator the role defines (a RESTRICT estimator such as
 * eqsel compares each most common value with the query's constant), and
 * pg_stats shows them to every role that may read the column.  Where a
 * user mapping limits roles to some tenants, the analyze_values option is
 * off by default (see shard_analyze_values) and ANALYZE records only the
 * row count: the pass counts the rows it may see, keeps none of them, and
 * removes the value statistics an earlier ANALYZE left, which PostgreSQL
 * itself would keep.  The row count is one number for the whole table, so
 * it says nothing of any one tenant.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>
#include <sys/stat.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/heap.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/sampling.h"

#include "sqlite_shard_fdw.h"
#include "compat.h"

/* Rows fetched from SQLite per batch. */
#define ANALYZE_BATCH_ROWS 256

/* State of one sampling pass over every shard of a table. */
typedef struct ShardAnalyzeState
{
	/* the sample, as do_analyze_rel wants it */
	HeapTuple  *rows;			/* array of targrows tuples */
	int			targrows;
	int			numrows;		/* tuples in rows[] so far */
	double		samplerows;		/* rows seen on every shard so far */
	double		rowstoskip;		/* rows to skip before the next pick */
	ReservoirStateData rstate;
	bool		keep_values;	/* false: count the rows, keep none */

	/* converting a kept row */
	TupleDesc	tupdesc;
	int			ncols;			/* columns selected from SQLite */
	AttrNumber *attnums;		/* their attribute numbers */
	char	  **colnames;		/* their SQLite names */
	char	  **colsql;			/* how a shard's SQL reads each */
	bool	   *stored;			/* false: the file's tenant, not stored */
	ShardColumnConv *convs;		/* their converters */
	Datum	   *values;
	bool	   *nulls;
	MemoryContext anl_cxt;		/* where the sample lives */
	MemoryContext row_cxt;		/* reset after each converted row */

	/* which tenants' rows count (see shard_query) */
	AttrNumber	tenant_attnum;
	int			tenant_col;		/* its position among the selected columns */
	const char *tenant_column;	/* its SQLite name */
	int			tenant_kind;	/* how ssfdw_tenant reads it */
	List	   *allowed;		/* user mapping tenants, or NIL for all */
	List	   *excluded;		/* tenants whose rows here are stale */

	/* drift: what a shard lacking the table or a column reads */
	bool		missing_table_empty;
	bool		missing_column_null;

	/* for the error context */
	const char *relname;
	const char *table;			/* SQLite table name */
	const char *shard_id;		/* shard being read, or NULL */
	int			col;			/* column being converted, or -1 */
} ShardAnalyzeState;

static int	shard_acquire_sample_rows(Relation relation, int elevel,
									  HeapTuple *rows, int targrows,
									  double *totalrows,
									  double *totaldeadrows);
static BlockNumber estimate_pages(List *shards);
static double shard_file_pages(ShardInfo *shard);
static List *copy_shard_list(List *shards);
static List *analyzed_shards(ShardServerOptions *opts, ShardDirectory *dir,
							 ShardTableOptions *topts, Relation relation);
static bool shard_owns_allowed(ShardDirectory *dir, ShardInfo *shard,
							   List *allowed);
static char *shard_query(ShardAnalyzeState *astate, ShardConn *conn,
						 ShardValue *binds, int *nbinds, bool *empty);
static void sample_shard(ShardAnalyzeState *astate, ShardServerOptions *opts,
						 ShardInfo *shard);
static void sample_row(ShardAnalyzeState *astate, const ShardValue *row);
static HeapTuple convert_row(ShardAnalyzeState *astate, const ShardValue *row);
static void forget_value_statistics(Relation relation);
static void analyze_error_callback(void *arg);

/*
 * shardAnalyzeForeignTable
 *		Tell ANALYZE how to sample a foreign table, and how big it is.
 *
 * totalpages must be given before the sample is drawn, and it is what
 * ANALYZE of an inheritance tree uses to share the sample among its
 * children, so it should be cheap and proportional to the data.  It is
 * estimated from the size of the shard files, which costs a stat() per
 * shard and opens nothing.  That is an upper bound when a shard holds
 * several tables; the row count, which the planner relies on, is exact,
 * since the sampling pass sees every row.
 */
bool
shardAnalyzeForeignTable(Relation relation, AcquireSampleRowsFunc *func,
						 BlockNumber *totalpages)
{
	ShardTableOptions *topts = shard_table_options(relation);
	ShardServerOptions *opts = shard_server_options(topts->serverid);
	ShardDirectory *dir = shard_directory_get(opts);

	*func = shard_acquire_sample_rows;
	*totalpages = estimate_pages(analyzed_shards(opts, dir, topts, relation));
	return true;
}

/*
 * analyzed_shards
 *		The shards ANALYZE reads: every shard of the directory, or the one
 *		a reference table is read from.  On a fleet of one file per tenant,
 *		a table whose owner is restricted to some tenants (whose tenants
 *		ANALYZE samples) reads only their files, found by name, not in a listing of
 *		every file; a tenant without a file has no rows.
 */
static List *
analyzed_shards(ShardServerOptions *opts, ShardDirectory *dir,
				ShardTableOptions *topts, Relation relation)
{
	List	   *allowed;
	List	   *files = NIL;
	ListCell   *lc;

	if (topts->reference)
		return list_make1(shard_reference_shard(dir, topts,
												RelationGetRelationName(relation)));
	if (!opts->file_per_tenant)
		return shard_directory_shards(dir);
	/* the owner's: ANALYZE asks for the pages before it becomes the owner */
	allowed = shard_tenant_ids_text(shard_user_tenants(topts->serverid,
													   relation->rd_rel->relowner));
	if (allowed == NIL)
		return shard_directory_shards(dir);
	foreach(lc, allowed)
	{
		ShardLocation *loc = shard_directory_locate(dir, lfirst(lc));
		ShardInfo  *info = loc ? shard_directory_shard(dir, loc->owner) : NULL;

		if (info != NULL)
			files = lappend(files, info);
	}
	return files;
}

/*
 * shard_file_bytes
 *		The size of a shard: its file and its write-ahead log, which may
 *		hold the newest pages; 0 when the file is missing.
 */
double
shard_file_bytes(const char *path)
{
	struct stat st;
	double		bytes = 0;
	char	   *wal;

	if (stat(path, &st) == 0)
		bytes += st.st_size;
	wal = psprintf("%s-wal", path);
	if (stat(wal, &st) == 0)
		bytes += st.st_size;
	pfree(wal);
	return bytes;
}

/*
 * shard_file_pages
 *		PostgreSQL pages' worth of a shard file (with its write-ahead log),
 *		at least 1: what ANALYZE counts as the shard's blocks.
 */
static double
shard_file_pages(ShardInfo *shard)
{
	return Max(ceil(shard_file_bytes(shard->path) / BLCKSZ), 1);
}

/*
 * estimate_pages
 *		PostgreSQL pages' worth of the shard files, at least 1.
 */
static BlockNumber
estimate_pages(List *shards)
{
	double		pages = 0;
	ListCell   *lc;

	foreach(lc, shards)
		pages += shard_file_pages((ShardInfo *) lfirst(lc));

	if (pages < 1)
		pages = 1;
	if (pages > (double) MaxBlockNumber)
		pages = (double) MaxBlockNumber;
	return (BlockNumber) pages;
}

/*
 * shard_acquire_sample_rows
 *		Draw a uniform sample of up to targrows rows from every shard of the
 *		table; *totalrows is the number of rows seen (exact, since every row
 *		is read), and SQLite has no dead rows to report.
 */
static int
shard_acquire_sample_rows(Relation relation, int elevel,
						  HeapTuple *rows, int targrows,
						  double *totalrows, double *totaldeadrows)
{
	ShardAnalyzeState astate;
	ShardTableOptions *topts = shard_table_options(relation);
	ShardServerOptions *opts = shard_server_options(topts->serverid);
	ShardDirectory *dir;
	List	   *shards;
	StringInfoData query;
	ErrorContextCallback errcallback;
	ListCell   *lc;
	int			nshards = 0;
	int			i;
	List	   *to_read = NIL;
	double		pages_total = 0;
	double		pages_done = 0;

	memset(&astate, 0, sizeof(astate));
	astate.rows = rows;
	astate.targrows = targrows;
	astate.numrows = 0;
	astate.samplerows = 0;
	astate.rowstoskip = -1;
	reservoir_init_selection_state(&astate.rstate, targrows);
	astate.tupdesc = RelationGetDescr(relation);
	astate.anl_cxt = CurrentMemoryContext;
	astate.row_cxt = AllocSetContextCreate(CurrentMemoryContext,
										   "sqlite_shard_fdw analyze row",
										   ALLOCSET_SMALL_SIZES);
	astate.relname = RelationGetRelationName(relation);
	astate.table = topts->table;
	astate.col = -1;
	/* A reference table's values are no tenant's: they are always kept. */
	astate.keep_values = topts->reference ||
		shard_analyze_values(RelationGetRelid(relation));

	/*
	 * The query every shard runs: each live column by its SQLite name, in
	 * attribute order, or only the tenant column when no values are kept.
	 * Only the tenant filter differs between shards.  shard_table_options
	 * has made sure the tenant column is among them.
	 */
	astate.attnums = palloc(sizeof(AttrNumber) * astate.tupdesc->natts);
	astate.colnames = palloc(sizeof(char *) * astate.tupdesc->natts);
	astate.colsql = palloc(sizeof(char *) * astate.tupdesc->natts);
	astate.stored = palloc(sizeof(bool) * astate.tupdesc->natts);
	astate.missing_table_empty = topts->missing_table_empty;
	astate.missing_column_null = topts->missing_column_null;
	astate.convs = palloc0(sizeof(ShardColumnConv) * astate.tupdesc->natts);
	astate.values = palloc(sizeof(Datum) * astate.tupdesc->natts);
	astate.nulls = palloc(sizeof(bool) * astate.tupdesc->natts);
	astate.tenant_attnum = topts->tenant_attnum;
	astate.tenant_col = -1;

	for (i = 0; i < astate.tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(astate.tupdesc, i);
		int			c;

		if (att->attisdropped ||
			(!astate.keep_values && att->attnum != astate.tenant_attnum))
			continue;
		c = astate.ncols++;
		astate.attnums[c] = att->attnum;
		astate.colnames[c] = shard_column_name(RelationGetRelid(relation),
											   att->attnum);
		shard_conv_init(&astate.convs[c], att->atttypid, att->atttypmod);
		if (att->attnum == astate.tenant_attnum)
			astate.tenant_col = c;
		initStringInfo(&query);
		shard_append_column_sql(&query, RelationGetRelid(relation),
								att->attnum);
		astate.colsql[c] = query.data;
		astate.stored[c] = shard_file_tenant_column_kind(RelationGetRelid(relation),
														 att->attnum) < 0;
	}
	if (astate.tenant_col < 0 && !topts->reference)
		elog(ERROR, "tenant column of foreign table \"%s\" is not fetched",
			 astate.relname);

	/*
	 * ANALYZE runs as the table owner, so GetUserId() is the role whose
	 * user mapping decides which tenants the sample may contain.  The files
	 * of one tenant each need no filter: analyzed_shards chose them.
	 */
	if (!topts->reference && !opts->file_per_tenant)
	{
		astate.tenant_column = topts->tenant_column;
		astate.tenant_kind = shard_tenant_kind(TupleDescAttr(astate.tupdesc,
															 astate.tenant_attnum - 1)->atttypid);
		astate.allowed = shard_tenant_ids_text(shard_user_tenants(topts->serverid,
																  GetUserId()));
	}

	dir = shard_directory_get(opts);
	shards = copy_shard_list(analyzed_shards(opts, dir, topts, relation));

	errcallback.callback = analyze_error_callback;
	errcallback.arg = (void *) &astate;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	/*
	 * A restricted role reads only the shards that own its tenants.  The
	 * shards to read, counted in pages of their files, are the blocks that
	 * pg_stat_progress_analyze shows, each shard's counted as done once
	 * it has been read.
	 */
	foreach(lc, shards)
	{
		ShardInfo  *shard = (ShardInfo *) lfirst(lc);

		if (astate.allowed != NIL &&
			!shard_owns_allowed(dir, shard, astate.allowed))
			continue;
		to_read = lappend(to_read, shard);
		pages_total += shard_file_pages(shard);
	}
	pgstat_progress_update_param(PROGRESS_ANALYZE_BLOCKS_TOTAL,
								 (int64) pages_total);

	foreach(lc, to_read)
	{
		ShardInfo  *shard = (ShardInfo *) lfirst(lc);

		astate.excluded = topts->reference || opts->file_per_tenant ? NIL :
			shard_directory_stale_tenants(dir, shard->shard_id);
		astate.shard_id = shard->shard_id;
		sample_shard(&astate, opts, shard);
		astate.shard_id = NULL;
		nshards++;
		pages_done = Min(pages_done + shard_file_pages(shard), pages_total);
		pgstat_progress_update_param(PROGRESS_ANALYZE_BLOCKS_DONE,
									 (int64) pages_done);
	}

	error_context_stack = errcallback.previous;
	MemoryContextDelete(astate.row_cxt);

	*totalrows = astate.samplerows;
	*totaldeadrows = 0;

	if (astate.keep_values)
		ereport(elevel,
				(errmsg("\"%s\": %d shards contain %.0f rows; %d rows in sample",
						RelationGetRelationName(relation), nshards,
						astate.samplerows, astate.numrows)));
	else
	{
		forget_value_statistics(relation);
		ereport(elevel,
				(errmsg("\"%s\": %d shards contain %.0f rows; no values sampled",
						RelationGetRelationName(relation), nshards,
						astate.samplerows),
				 errdetail("Option \"analyze_values\" is off, so only the row count is recorded.")));
	}

	return astate.numrows;
}

/*
 * forget_value_statistics
 *		Remove the table's value statistics, those of its columns and those
 *		of its extended statistics objects.
 *
 * With an empty sample, ANALYZE records the row count and leaves
 * pg_statistic as it was, so statistics taken while analyze_values was on
 * would stay visible.  The command counter is advanced so that the rest
 * of the same ANALYZE (its pass over an inheritance tree this table heads,
 * which writes the tree's statistics) sees the rows gone.
 */
static void
forget_value_statistics(Relation relation)
{
	List	   *statoids = RelationGetStatExtList(relation);
	ListCell   *lc;

	RemoveStatistics(RelationGetRelid(relation), 0);
	foreach(lc, statoids)
		RemoveStatisticsData_compat(lfirst_oid(lc));
	list_free(statoids);
	CommandCounterIncrement();
}

/*
 * copy_shard_list
 *		A private copy of the directory's shard list: the directory's own
 *		lives only until it next changes, and a sampling pass is long.
 */
static List *
copy_shard_list(List *shards)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, shards)
	{
		ShardInfo  *src = (ShardInfo *) lfirst(lc);
		ShardInfo  *dst = palloc(sizeof(ShardInfo));

		dst->shard_id = pstrdup(src->shard_id);
		dst->path = pstrdup(src->path);
		result = lappend(result, dst);
	}
	return result;
}

/*
 * shard_owns_allowed
 *		Does the shard own any of the tenants a restricted role may see?
 *		Tenants the directory does not know have no rows anywhere.
 */
static bool
shard_owns_allowed(ShardDirectory *dir, ShardInfo *shard, List *allowed)
{
	ListCell   *lc;

	foreach(lc, allowed)
	{
		ShardLocation *loc = shard_directory_locate(dir,
													(const char *) lfirst(lc));

		if (loc != NULL && strcmp(loc->owner, shard->shard_id) == 0)
			return true;
	}
	return false;
}

/*
 * column_present
 *		Does the shard's table have column col?  (The lookup
 *		shard_conn_check_table makes, without raising.)
 */
static bool
column_present(sqlite3 *db, const char *table, const char *col)
{
	sqlite3_stmt *stmt;
	bool		found;

	if (sqlite3_prepare_v2(db,
						   "SELECT 1 FROM pragma_table_xinfo(?1, 'main')"
						   " WHERE name = ?2 COLLATE NOCASE",
						   -1, &stmt, NULL) != SQLITE_OK)
		return true;			/* the query's own error names what fails */
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(stmt, 2, col, -1, SQLITE_TRANSIENT);
	found = (sqlite3_step(stmt) == SQLITE_ROW);
	sqlite3_finalize(stmt);
	return found;
}

/*
 * table_present
 *		Does the shard have table (or view) table?
 */
static bool
table_present(sqlite3 *db, const char *table)
{
	sqlite3_stmt *stmt;
	bool		found;

	if (sqlite3_prepare_v2(db,
						   "SELECT 1 FROM main.sqlite_schema"
						   " WHERE type IN ('table', 'view')"
						   " AND name = ?1 COLLATE NOCASE",
						   -1, &stmt, NULL) != SQLITE_OK)
		return true;			/* the query's own error names what fails */
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
	found = (sqlite3_step(stmt) == SQLITE_ROW);
	sqlite3_finalize(stmt);
	return found;
}

/*
 * shard_query
 *		The sampling query for one shard: each column the pass reads, as
 *		the shard has it (NULL for a column it lacks, with missing_column
 *		'null'; otherwise the lack is an error naming the shard), plus the
 *		allowed and stale tenant filters (binds[], *nbinds of them), as a
 *		scan has them.  *empty is set, and NULL returned, for a shard
 *		without the table when missing_table is 'empty'.
 */
static char *
shard_query(ShardAnalyzeState *astate, ShardConn *conn, ShardValue *binds,
			int *nbinds, bool *empty)
{
	StringInfoData sql;
	ShardTenantRule rule;
	sqlite3    *db = shard_conn_db(conn);
	char	  **checked = palloc(sizeof(char *) * Max(astate->ncols, 1));
	int			nchecked = 0;
	int			c;

	*nbinds = 0;
	*empty = false;
	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (c = 0; c < astate->ncols; c++)
	{
		bool		missing = false;

		if (astate->stored[c] && astate->missing_column_null &&
			!column_present(db, astate->table, astate->colnames[c]))
			missing = true;
		else if (astate->stored[c])
			checked[nchecked++] = astate->colnames[c];
		if (c > 0)
			appendStringInfoString(&sql, ", ");
		appendStringInfoString(&sql, missing ? "NULL" : astate->colsql[c]);
	}
	appendStringInfoString(&sql, " FROM ");
	shard_quote_identifier(&sql, astate->table);

	/* a missing table or column is named, shard and all */
	if (astate->missing_table_empty && !table_present(db, astate->table))
	{
		*empty = true;
		return NULL;
	}
	shard_conn_check_table(conn, astate->relname, astate->table,
						   checked, nchecked);

	if (astate->allowed == NIL && astate->excluded == NIL)
		return sql.data;

	shard_tenant_rule_lookup(&rule, db, astate->table,
							 astate->tenant_column, astate->tenant_kind);
	appendStringInfoString(&sql, " WHERE ");
	if (astate->allowed != NIL)
	{
		binds[*nbinds] = shard_tenant_condition(&sql, astate->tenant_column,
												&rule,
												astate->allowed, false,
												*nbinds + 1, 0);
		(*nbinds)++;
	}
	if (astate->excluded != NIL)
	{
		if (*nbinds > 0)
			appendStringInfoString(&sql, " AND ");
		binds[*nbinds] = shard_tenant_condition(&sql, astate->tenant_column,
												&rule,
												astate->excluded, true,
												*nbinds + 1, 0);
		(*nbinds)++;
	}
	return sql.data;
}

/*
 * sample_shard
 *		Run the sampling query on one shard and feed its rows to the
 *		reservoir.
 *
 * The statement, the batch (malloc'd by shardio) and the handle are given
 * back on the error path too, so an error in the middle of a shard (a
 * conversion error, a cancel) leaks nothing.
 */
static void
sample_shard(ShardAnalyzeState *astate, ShardServerOptions *opts,
			 ShardInfo *shard)
{
	ShardConn  *volatile conn;
	sqlite3_stmt *volatile stmt = NULL;
	ShardBatch *volatile batch = NULL;

	/* under tenant_path a file gone since it was found has no rows */
	conn = shard_conn_get(opts, shard,
						  opts->skip_missing || opts->tenant_path != NULL);
	if (conn == NULL)
	{
		if (opts->tenant_path == NULL)
			shard_warn_skipped(shard, astate->relname);
		return;
	}

	PG_TRY();
	{
		sqlite3    *db = shard_conn_db(conn);
		sqlite3_stmt *s;
		char		errbuf[SHARDIO_ERRLEN];
		ShardValue	binds[2];
		int			nbinds;
		bool		empty;
		char	   *query;
		int			rc;

		query = shard_query(astate, conn, binds, &nbinds, &empty);
		/* a shard without the table, read as empty, has no rows */
		if (!empty)
		{
			rc = shardio_prepare(db, query, 0, &s, errbuf);
			if (rc != SQLITE_OK)
				shard_sqlite_error(ERROR, rc, shard->shard_id, errbuf,
								   "could not read the table to analyze on shard \"%s\"",
								   shard->shard_id);
			stmt = s;

			rc = shardio_bind(stmt, 1, binds, nbinds, errbuf);
			if (rc != SQLITE_OK)
				shard_sqlite_error(ERROR, rc, shard->shard_id, errbuf,
								   "could not read the table to analyze on shard \"%s\"",
								   shard->shard_id);

			batch = shardio_batch_create(astate->ncols, ANALYZE_BATCH_ROWS);
			if (batch == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("out of memory")));

			for (;;)
			{
				int			r;

				rc = shardio_fetch(stmt, batch, errbuf);
				if (rc != SQLITE_ROW && rc != SQLITE_DONE)
					shard_sqlite_error(ERROR, rc, shard->shard_id, errbuf,
									   "could not read the table to analyze on shard \"%s\"",
									   shard->shard_id);
				for (r = 0; r < batch->nrows; r++)
				{
					const ShardValue *row = &batch->values[(size_t) r * batch->ncols];

					vacuum_delay_point();
					sample_row(astate, row);
				}
				if (rc == SQLITE_DONE)
					break;
			}
		}
	}
	PG_FINALLY();
	{
		shardio_batch_free(batch);
		sqlite3_finalize(stmt);
		shard_conn_release(conn);
	}
	PG_END_TRY();
}

/*
 * sample_row
 *		Count one row and, unless only rows are counted (keep_values is
 *		false), decide whether the reservoir keeps it: the first
 *		targrows rows always, then each later row with falling probability,
 *		replacing a random earlier pick (Vitter's algorithm Z, as in
 *		postgres_fdw's analyze_row_processor).
 */
static void
sample_row(ShardAnalyzeState *astate, const ShardValue *row)
{
	int			pos;

	astate->samplerows += 1;
	if (!astate->keep_values)
		return;

	if (astate->numrows < astate->targrows)
		pos = astate->numrows++;
	else
	{
		if (astate->rowstoskip < 0)
			astate->rowstoskip = reservoir_get_next_S(&astate->rstate,
													  astate->samplerows,
													  astate->targrows);
		if (astate->rowstoskip <= 0)
		{
			pos = (int) (astate->targrows *
						 sampler_random_fract(&astate->rstate.randstate));
			Assert(pos >= 0 && pos < astate->targrows);
			heap_freetuple(astate->rows[pos]);
		}
		else
			pos = -1;
		astate->rowstoskip -= 1;
	}

	if (pos >= 0)
		astate->rows[pos] = convert_row(astate, row);
}

/*
 * convert_row
 *		Turn one kept SQLite row into a tuple in the ANALYZE context.
 *
 * Conversion garbage (detoasted copies, input-function scratch) goes into
 * the per-row context, which is reset once the tuple has been formed.
 */
static HeapTuple
convert_row(ShardAnalyzeState *astate, const ShardValue *row)
{
	MemoryContext oldcxt;
	HeapTuple	tuple;
	int			c;

	oldcxt = MemoryContextSwitchTo(astate->row_cxt);

	/* Dropped columns stay NULL. */
	memset(astate->nulls, true, sizeof(bool) * astate->tupdesc->natts);
	memset(astate->values, 0, sizeof(Datum) * astate->tupdesc->natts);

	for (c = 0; c < astate->ncols; c++)
	{
		int			idx = astate->attnums[c] - 1;

		astate->col = c;
		astate->values[idx] = shard_value_to_datum(&astate->convs[c], &row[c],
												   &astate->nulls[idx]);
	}
	astate->col = -1;

	MemoryContextSwitchTo(astate->anl_cxt);
	tuple = heap_form_tuple(astate->tupdesc, astate->values, astate->nulls);
	MemoryContextSwitchTo(oldcxt);

	MemoryContextReset(astate->row_cxt);
	return tuple;
}

/*
 * analyze_error_callback
 *		Name the shard, table and column an error happened on.
 */
static void
analyze_error_callback(void *arg)
{
	ShardAnalyzeState *astate = (ShardAnalyzeState *) arg;

	if (astate->shard_id == NULL)
		return;
	if (astate->col >= 0)
		errcontext("column \"%s\" of table \"%s\" on shard \"%s\", analyzing foreign table \"%s\"",
				   astate->colnames[astate->col], astate->table,
				   astate->shard_id, astate->relname);
	else
		errcontext("table \"%s\" on shard \"%s\", analyzing foreign table \"%s\"",
				   astate->table, astate->shard_id, astate->relname);
}
