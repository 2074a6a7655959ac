/*-------------------------------------------------------------------------
 *
 * scan.c
 *		  Executor side of a foreign table scan: routing, shard reads, and
 *		  UPDATE and DELETE run inside the shards
 *
 * When a scan first runs, it asks the directory (checked for changes at
 * that moment) which shards to read: the owners of the tenants its tenant
 * condition names, or every shard.  Each shard then runs the SQL that
 * planning built, with the values bound, inside one read transaction;
 * rows come back in batches copied out of SQLite (shardio.c) and are
 * converted to the foreign table's types here.
 *
 * Run-time tenant filters keep the answer exact however the plan was made:
 * a routed statement reads only the rows of the tenants it names, a user
 * mapping with a "tenants" option sees only those tenants, and rows of a
 * tenant that is being moved are read only from the shard that owns the
 * tenant at that moment (a copy on the target before cutover, or
 * leftovers on the source after it, are skipped).  They are conditions of
 * each shard's query, exact however the shard declares the tenant column
 * (tenant.c), so a row the statement may not see never leaves SQLite.
 *
 * A scan of rows that also sorts and limits (order.c) asks each shard for
 * its first OFFSET + LIMIT rows in the query's order and sorts what comes
 * back with a bounded sort; one shard whose order is exact (no time key,
 * conditions all in SQLite, columns declared as the order needs) instead
 * runs OFFSET and LIMIT itself and its rows pass through as they come.
 *
 * A direct UPDATE or DELETE (planned by modify.c) is such a scan whose
 * statement changes the rows instead of returning them: the same shards,
 * conditions and tenant filters, one SQLite statement per shard inside its
 * write transaction, RETURNING read back from SQLite's own.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "foreign/foreign.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/scansup.h"
#include "portability/instr_time.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/tuplesort.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "fanout.h"
#include "merge.h"

/* Rows fetched from SQLite at a time. */
#define SCAN_BATCH_ROWS 512

/* Batches per fan-out worker: the bound on a fan-out's buffered rows. */
#define FANOUT_BATCHES_PER_WORKER 3

/*
 * Groups a shard may have before its thread aggregation gives up and lets
 * SQLite group instead: bounds a worker's memory.
 */
#define THREAD_AGG_MAX_GROUPS 50000

/* How long the backend waits for a worker before checking for cancel. */
#define FANOUT_WAIT_MS 10

/*
 * A sorted scan whose shards each return at most QUICK_MAX_ROWS rows (the
 * latest ten orders) reads them one after another in the backend for as
 * long as each takes under sqlite_shard_fdw.quick_shard_ms (0.25 ms, a
 * hidden setting for tests): a shard that answers from its index in tens
 * of microseconds costs less read here than handed to a worker thread and
 * back.  The first slower shard sends the rest to the threads.
 */
#define QUICK_MAX_ROWS 1000

/*
 * A quick read of this many shards or more shares them with worker
 * threads when, by the time of the first, the rest would keep the backend
 * busy for QUICK_SPLIT_MS or longer (a thread started and joined, and the
 * core it wakes, cost a good part of that): the backend reads the next
 * ones, a worker the last ones, each without waiting for the other
 * (start_quick_split).
 */
#define QUICK_SPLIT_MIN 4
#define QUICK_SPLIT_MS	0.3

/*
 * The most shards a split quick read queues for the workers at once (each
 * holds an open handle, a read transaction and batches meanwhile); the
 * backend reads the others.
 */
#define QUICK_SPLIT_MAX 16

/* Shard names EXPLAIN lists before it only counts the rest. */
#define EXPLAIN_MAX_SHARD_NAMES 3

/*
 * A shard whose table is WITHOUT ROWID, as the scan below a row-by-row
 * UPDATE or DELETE read it: the rows it returned are found again by the
 * primary key columns named here.
 */
typedef struct ShardKeyedShard
{
	char	   *shard_id;
	List	   *keys;			/* SQLite names of the key's columns */
	List	   *collations;		/* the key's collation of each, or NULL */
} ShardKeyedShard;

/* The key of one row read from a keyed shard, as SQLite stored it. */
typedef struct ShardRowKey
{
	ShardKeyedShard *shard;
	ShardValue *values;			/* one per key column */
} ShardRowKey;

/*
 * The identity of the rows a scan below a row-by-row UPDATE or DELETE
 * returned.  A row is changed on the shard it was read from, whatever the
 * directory says of its tenant (leftovers of a tenant the directory places
 * elsewhere, or does not know, are changed where they are, as a statement
 * that runs inside the shards changes them), so its ctid carries the
 * number of that shard in its low shard_bits bits, above them its rowid,
 * or for a keyed shard the number of its key (from 1).  The keys are kept
 * exactly as SQLite returned them, never converted to PostgreSQL types and
 * back, so that an UPDATE binds the very values the shard holds whatever
 * the column's affinity; only those of rows that pass the scan's own
 * recheck are kept.
 */
struct ShardRowKeys
{
	MemoryContext cxt;
	List	   *shards;			/* ShardKeyedShard */
	ShardRowKey *rows;
	int64		nrows;
	int64		maxrows;
	ShardInfo  *read;			/* the shards rows came from, by number */
	int			nread;
	int			shard_bits;		/* 0 until the first row */
};

/* One shard a scan reads. */
typedef struct ShardTarget
{
	ShardInfo	info;
	List	   *excluded;		/* tenants (char *) whose rows here are stale */
	List	   *tenants;		/* when restricted: the tenants it is read
								 * for, those of the statement it owns */
	bool		tenant_is_text; /* filters compare the column itself */
	bool		tenant_noindex; /* read the table NOT INDEXED (a large
								 * tenant of a shard without statistics) */

	/* While the shard is read. */
	ShardConn  *conn;
	sqlite3_stmt *stmt;
	int			nkeys;			/* leading key columns of the query: its
								 * rowid, or its primary key (keyed); 0
								 * when it reads no key */
	ShardKeyedShard *keyed;		/* a WITHOUT ROWID table's key, or NULL */
	bool		no_rowid;		/* the table has no rowid */
	bool		degraded;		/* conditions evaluated by PostgreSQL */
	bool		unbounded;		/* returns all its groups: it does not
								 * declare columns as the bound needs */
	bool		no_sql_groups;	/* thread aggregation may not fall back to
								 * SQLite's GROUP BY (UTF-16 text extrema) */
	FanoutJob	job;			/* what the reader runs */
	char	   *sql;			/* its statement, built once per resolution
								 * (a rescan with the same values reuses it) */
	char	   *fallback_sql;	/* thread aggregation's GROUP BY fallback */
	ShardValue *binds;			/* the values bound, planned and run-time */
	int			nbinds;
	ShardReader *reader;		/* serial reading */
	bool		done;			/* the statement returned all its rows */
	instr_time	started;

	/* For EXPLAIN ANALYZE. */
	bool		read;			/* opened by this run of the scan */
	int64		rows;			/* rows the backend took from it */
	double		elapsed_ms;		/* a direct modification's time; a read's:
								 * what filling the batches the backend
								 * took cost (ShardBatch.fill_ms) */
	int			reader_began;	/* a reader began its statement */
} ShardTarget;

typedef struct ShardScanState
{
	/* What planning decided. */
	ShardServerOptions *opts;
	ShardTableOptions *topts;
	char	   *table_name;		/* foreign table, for messages */
	char	   *select_sql;
	List	   *where_sqls;		/* pushed conditions (String) */
	List	   *safe_where_sqls;	/* those on no text column */
	List	   *retrieved_attrs;
	int			nretrieved;
	char	  **colnames;		/* SQLite names of the retrieved columns */
	char	  **coltables;		/* of a join, each one's SQLite table */
	ShardJoinScan *join;		/* a join the shards run (joinscan.c), or
								 * NULL */
	ShardColumnConv *convs;
	int			tenant_pos;		/* tenant column among retrieved, 0-based */
	Oid			tenant_type;
	int			tenant_kind;	/* how ssfdw_tenant reads it */
	List	   *param_exprs;	/* ExprStates of the values to bind */
	List	   *param_types;
	List	   *param_kinds;
	int			nparams;
	ExprState  *prune_state;
	Oid			prune_type;
	ShardPruneKind prune_kind;
	bool		prune_needs_run;	/* depends on values known only at run time */
	List	   *allowed;		/* user mapping tenants (UTF-8 ids), or NIL */
	char	   *modify_sql;		/* a direct UPDATE or DELETE, or NULL */
	List	   *modify_set_attnums;	/* columns of its new values, which are
									 * the last values bound */
	ShardStoreConv *modify_set_convs;
	bool		materialize;	/* each shard read whole before its rows */
	bool		read_all_first; /* ... and every shard before the first
								 * row, kept for rescans: the statement
								 * writes the table (check_statement_writes) */
	bool		written;		/* the statement writes the table */
	uint64		writes_at_start;	/* shard_writes_begun then */
	ShardRowKeys *row_keys;		/* the scan of a row-by-row UPDATE or
								 * DELETE: the keys of its keyed rows */
	bool		tenant_only;	/* the pushed conditions read only the
								 * tenant column */
	bool		counts_only;	/* an aggregate scan of counts alone, which
								 * the tenant's index covers */
	List	   *mat_batches;	/* ShardBatch: the rows still to return
								 * (read_all_first: all, mat_next on) */
	List	   *mat_targets;	/* ShardTarget: whose each batch is */
	int			mat_next;		/* read_all_first: the next batch */
	bool		mat_complete;	/* read_all_first: every shard's rows are
								 * in mat_batches */
	List	   *modify_returning;	/* attnums its RETURNING reads */
	char	   *modify_returning_sql;	/* " RETURNING cols", or "" */
	ShardColumnConv *modify_convs;	/* and their converters */
	ShardTarget *modify_cur;	/* the shard whose statement runs */
	CmdType		modify_op;		/* CMD_UPDATE or CMD_DELETE */
	int64		modified;		/* rows it changed */

	/* Where it reads, decided when the scan starts. */
	MemoryContext resolve_cxt;
	bool		resolved;
	bool		params_ready;	/* param_values computed for this run */
	List	   *targets;
	bool		restricted;		/* routed, or a user mapping's tenants */
	int			next_target;
	int			end_target;		/* the backend reads targets up to here;
								 * those after went to the fan-out; -1:
								 * all of them (target_end) */
	ShardValue *param_values;
	ShardDirectory *dir;

	/* Reading: one shard at a time, or several through a fan-out. */
	bool		with_rowid;		/* false once a shard had no rowid */
	ShardTarget *serial;		/* the shard read serially now */
	ShardBatch *own_batch;		/* the serial reader's batch */
	Fanout	   *fanout;
	int			inflight;		/* shards submitted to the fan-out */
	bool		quick;			/* read shards in the backend while each
								 * is quick (quick_shard_ms) */
	int			quick_reads;	/* shards read so, for EXPLAIN ANALYZE */

	/* The batch being converted, and the shard it came from. */
	ShardTarget *cur;
	ShardBatch *batch;
	int			batch_row;

	int			batch_cols;		/* columns of a shard row */
	unsigned char *prep;		/* SHARDIO_PREP_ of rowid and each fetched
								 * column, or NULL */
	Relation	rel;			/* the foreign table */
	char	   *raw_sql;		/* thread aggregation's input query, or NULL */
	ThreadAggSpec *agg_spec;	/* and how it computes the shard columns */
	List	   *needs;			/* what the query assumes of shard columns */
	List	   *needs_but_extrema;	/* the same, without text min/max */
	List	   *recheck_quals;	/* the pushed conditions, for degraded shards */
	ExprState  *recheck;		/* ... compiled when first needed */

	/* Aggregate scans: partial rows merged by group. */
	ShardScanMode mode;
	char	   *group_sql;
	ShardMerge *merge;
	int			guard_col;
	bool		merged;			/* every shard's rows are in the merge */

	/* A scan that also does ORDER BY and LIMIT (FdwScanPrivateOrder). */
	List	   *order;			/* the plan's list, or NIL */
	char	   *order_sql;		/* ORDER BY terms for each shard */
	List	   *limit_exprs;	/* OFFSET and LIMIT (NULL when absent) */
	List	   *limit_states;	/* OFFSET, LIMIT: ExprStates or NULL */
	bool		limit_ready;	/* evaluated */
	bool		limit_zero;		/* LIMIT 0: nothing to read */
	int64		shard_bound;	/* OFFSET + LIMIT for each shard; -1: none */
	int64		limit_offset;	/* OFFSET, 0 when absent */
	int64		limit_count;	/* LIMIT, -1 when absent */

	/* A row scan that sorts and limits (order.c). */
	bool		row_order;		/* the scan's rows are ordered or limited */
	bool		row_direct;		/* one shard runs ORDER BY, OFFSET and
								 * LIMIT; its rows pass through */
	List	   *window;			/* FdwScanOrderWindow, or NIL */
	int			nsort;			/* sort keys */
	AttrNumber *sort_attnos;
	Oid		   *sort_ops;
	Oid		   *sort_colls;
	bool	   *sort_nulls;
	Tuplesortstate *sort;		/* the rows of every shard, once read */
	TupleTableSlot *sortslot;
	bool		sorted;			/* every shard's rows are in the sort */
	bool		order_started;	/* the first row was read */
	bool		pending_first;	/* ... and is still in the slot */
	int64		skipped;		/* rows skipped for OFFSET */
	int64		returned;		/* rows returned for LIMIT */

	MemoryContext row_cxt;		/* converted rows, reset every
								 * ROW_MEMORY_LIMIT bytes */
	int			cur_col;		/* column being converted, for errors */
	sqlite3_int64 cur_rowid;
} ShardScanState;

/* Bytes converted rows may hold before the row context is reset. */
#define ROW_MEMORY_LIMIT	(256 * 1024)

static bool use_fanout(ShardScanState *s);
static bool next_batch_parallel(ForeignScanState *node);
static int	target_end(ShardScanState *s);
static void start_quick_split(ForeignScanState *node, double first_ms);

/*
 * scan_error_callback
 *		Name the shard, table, column and row of a value that failed to
 *		convert.
 */
static void
scan_error_callback(void *arg)
{
	ShardScanState *s = (ShardScanState *) arg;

	if (s->cur == NULL || s->cur_col < 0)
		return;
	if (s->cur->nkeys > 0 && s->cur->keyed == NULL)
		errcontext("column \"%s\" of table \"%s\" on shard \"%s\", rowid %lld",
				   s->colnames[s->cur_col], s->topts->table,
				   s->cur->info.shard_id, (long long) s->cur_rowid);
	else
		errcontext("column \"%s\" of table \"%s\" on shard \"%s\"",
				   s->colnames[s->cur_col],
				   s->coltables ? s->coltables[s->cur_col] : s->topts->table,
				   s->cur->info.shard_id);
}

/*
 * stop_reading
 *		Stop the fan-out's workers (joining them) and finalize every shard
 *		statement; with release, also give the handles back.  After an
 *		error the handles' counts are reset at transaction end instead.
 */
static void
stop_reading(ShardScanState *s, bool release)
{
	ListCell   *lc;

	/* A batch being converted belongs to the pool: give it back first. */
	if (s->fanout && s->batch && s->batch != s->own_batch)
		fanout_release_batch(s->fanout, s->batch);
	else if (s->materialize && s->batch && !s->read_all_first)
		shardio_batch_free(s->batch);
	while (s->mat_batches != NIL)
	{
		shardio_batch_free(linitial(s->mat_batches));
		s->mat_batches = list_delete_first(s->mat_batches);
	}
	s->mat_targets = NIL;
	s->mat_next = 0;
	s->mat_complete = false;
	if (s->fanout)
		fanout_destroy(s->fanout);
	s->fanout = NULL;
	s->inflight = 0;
	s->batch = NULL;
	s->cur = NULL;
	s->serial = NULL;
	foreach(lc, s->targets)
	{
		ShardTarget *t = lfirst(lc);

		shard_reader_free(t->reader);
		t->reader = NULL;
		if (t->stmt && t->conn && release)
			shard_conn_unprepare(t->conn, t->stmt);
		else if (t->stmt)
		{
			sqlite3_finalize(t->stmt);
			if (t->conn)
				shard_conn_forget_stmt(t->conn);
		}
		t->stmt = NULL;
		if (t->conn && release)
			shard_conn_release(t->conn);
		t->conn = NULL;
	}
	shardio_batch_free(s->own_batch);
	s->own_batch = NULL;
}

/*
 * scan_memory_callback
 *		Release threads and SQLite statements of a scan whose state goes
 *		away without EndForeignScan, as after an error.
 */
static void
scan_memory_callback(void *arg)
{
	stop_reading((ShardScanState *) arg, false);
}

/*
 * contains_exec_param
 *		Does an expression use a value that exists only once the plan runs
 *		(an executor parameter, set by an outer plan or an initplan)?
 */
static bool
contains_exec_param(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXEC)
		return true;
	return expression_tree_walker(node, contains_exec_param, context);
}

/*
 * init_thread_agg
 *		Set up aggregation by the reading threads from the plan's lists:
 *		the raw query and the operations that make the shard columns.  The
 *		spec is plain C, read by worker threads.
 */
static void
init_thread_agg(ShardScanState *s, ShardScanPrivate *priv)
{
	List	   *ops = priv->thread_agg;
	List	   *guards = priv->thread_guards;
	ThreadAggSpec *spec = palloc0(sizeof(ThreadAggSpec));
	int			i;

	s->raw_sql = priv->raw_sql;
	spec->ncols = list_length(ops) / 3;
	spec->cols = palloc0(sizeof(ThreadAggColumn) * (spec->ncols + 1));
	for (i = 0; i < spec->ncols; i++)
	{
		spec->cols[i].op = list_nth_int(ops, 3 * i);
		spec->cols[i].raw = list_nth_int(ops, 3 * i + 1);
		spec->cols[i].arg = list_nth_int(ops, 3 * i + 2);
	}
	spec->nguards = list_length(guards) / 5;
	spec->guards = palloc0(sizeof(ThreadAggGuard) * (spec->nguards + 1));
	for (i = 0; i < spec->nguards; i++)
	{
		spec->guards[i].raw = list_nth_int(guards, 5 * i);
		spec->guards[i].ok = list_nth_int(guards, 5 * i + 1);
		spec->guards[i].lo = list_nth_int(guards, 5 * i + 2);
		spec->guards[i].hi = list_nth_int(guards, 5 * i + 3);
		spec->guards[i].keycheck = list_nth_int(guards, 5 * i + 4);
	}
	spec->max_groups = THREAD_AGG_MAX_GROUPS;
	s->agg_spec = spec;
}

/*
 * init_order
 *		Set up a scan that sorts and limits its groups (upper.c's final
 *		path): the merge sorts, each shard returns its first groups.
 */
static void
init_order(ForeignScanState *node, List *order, List *limit_exprs)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	List	   *sorts = list_nth(order, FdwScanOrderThreadSorts);

	s->order = order;
	s->order_sql = strVal(list_nth(order, FdwScanOrderSql));
	s->limit_exprs = limit_exprs;
	s->limit_states = ExecInitExprList(limit_exprs, (PlanState *) node);
	s->limit_count = -1;
	if (s->mode == SCAN_ROWS)
	{
		List	   *keys = list_nth(order, FdwScanOrderMergeKeys);
		int			i;

		/* The scan's own sort, by the scan tuple's columns. */
		s->row_order = true;
		s->window = list_nth(order, FdwScanOrderWindow);
		s->nsort = list_length(linitial(keys));
		s->sort_attnos = palloc(sizeof(AttrNumber) * (s->nsort + 1));
		s->sort_ops = palloc(sizeof(Oid) * (s->nsort + 1));
		s->sort_colls = palloc(sizeof(Oid) * (s->nsort + 1));
		s->sort_nulls = palloc(sizeof(bool) * (s->nsort + 1));
		for (i = 0; i < s->nsort; i++)
		{
			s->sort_attnos[i] = list_nth_int(linitial(keys), i);
			s->sort_ops[i] = list_nth_oid(lsecond(keys), i);
			s->sort_colls[i] = list_nth_oid(lthird(keys), i);
			s->sort_nulls[i] = list_nth_int(lfourth(keys), i);
		}
		return;
	}
	shard_merge_set_order(s->merge, list_nth(order, FdwScanOrderMergeKeys),
						  intVal(list_nth(order, FdwScanOrderKeyCheckCol)));
	if (s->agg_spec)
	{
		ThreadAggSpec *spec = s->agg_spec;
		int			i;

		spec->nsorts = list_length(sorts) / 4;
		spec->sorts = palloc0(sizeof(ThreadAggSort) * (spec->nsorts + 1));
		for (i = 0; i < spec->nsorts; i++)
		{
			spec->sorts[i].col = list_nth_int(sorts, 4 * i);
			spec->sorts[i].lo = list_nth_int(sorts, 4 * i + 1);
			spec->sorts[i].desc = list_nth_int(sorts, 4 * i + 2);
			spec->sorts[i].nulls_first = list_nth_int(sorts, 4 * i + 3);
		}
	}
}

/*
 * limit_value
 *		Evaluate an OFFSET or LIMIT value: def when absent or NULL, an error
 *		when negative (as PostgreSQL's Limit node raises it).
 */
static int64
limit_value(ExprState *state, ExprContext *econtext, int64 def, bool is_count)
{
	Datum		d;
	bool		isnull;
	int64		v;

	if (state == NULL)
		return def;
	d = ExecEvalExprSwitchContext(state, econtext, &isnull);
	if (isnull)
		return def;
	v = DatumGetInt64(d);
	if (v < 0 && is_count)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_ROW_COUNT_IN_LIMIT_CLAUSE),
				 errmsg("LIMIT must not be negative")));
	if (v < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_ROW_COUNT_IN_RESULT_OFFSET_CLAUSE),
				 errmsg("OFFSET must not be negative")));
	return v;
}

/*
 * limit_is_known
 *		Can EXPLAIN without ANALYZE evaluate OFFSET and LIMIT: constants, or
 *		immutable expressions of parameters whose values it has?
 */
static bool
limit_is_known(ForeignScanState *node)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	bool		have_params = (node->ss.ps.state->es_param_list_info != NULL);
	ListCell   *lc;

	foreach(lc, s->limit_exprs)
	{
		Node	   *expr = lfirst(lc);

		if (expr != NULL && !IsA(expr, Const) &&
			(!have_params || contain_mutable_functions(expr)))
			return false;
	}
	return true;
}

/*
 * eval_limit
 *		Fix the scan's OFFSET and LIMIT, and so the bound each shard gets.
 */
static void
eval_limit(ForeignScanState *node)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	int64		offset;
	int64		count;

	if (s->order == NIL || s->limit_ready)
		return;
	if (s->limit_states == NIL)
	{
		/* ordered, not limited */
		s->limit_ready = true;
		return;
	}
	offset = limit_value(linitial(s->limit_states), econtext, 0, false);
	count = limit_value(lsecond(s->limit_states), econtext, -1, true);
	if (s->merge)
		shard_merge_set_limit(s->merge, offset, count);
	s->limit_offset = offset;
	s->limit_count = count;
	s->shard_bound = (count >= 0 && offset <= PG_INT64_MAX - count) ?
		offset + count : -1;
	s->limit_zero = (count == 0);
	s->limit_ready = true;
}

/*
 * check_statement_writes
 *		Make a scan of a SQLite table that its own statement writes (through
 *		any foreign table of the same server that names the same table)
 *		read before anything is written, so that it sees the table as it
 *		was when the statement started, as PostgreSQL's scans do, and never
 *		the rows being written (INSERT ... SELECT from the same table, an
 *		UPDATE whose subquery reads the table it changes).
 *
 * The scan an UPDATE or DELETE reads the rows it changes one by one from
 * reads each shard whole before it returns that shard's rows: the rows it
 * changes are those it already read, on that shard only; it keeps the keys
 * of rows of WITHOUT ROWID tables for the changes to find them by.  Any
 * other scan of rows of a written table (and that one, below a join) reads
 * every shard whole before its first row, since the rows written may go to
 * any shard, and keeps them for a rescan with the same values.  (An aggregate scan reads every shard
 * before its first row anyway.)  A scan that would read such a table again
 * after the statement wrote is refused (start_shard).
 */
static void
check_statement_writes(ShardScanState *s, EState *estate, Index scanrelid)
{
	PlannedStmt *pstmt = estate->es_plannedstmt;
	bool		own = false;
	bool		other = false;
	ListCell   *lc;

	foreach(lc, pstmt->resultRelations)
	{
		Index		ri = lfirst_int(lc);
		RangeTblEntry *rte = exec_rt_fetch(ri, estate);
		Relation	written;

		if (rte->relkind != RELKIND_FOREIGN_TABLE ||
			GetForeignServerIdByRelId(rte->relid) != s->topts->serverid)
			continue;
		written = ExecGetRangeTableRelation(estate, ri);
		/* SQLite's table names ignore ASCII case; a join reads several */
		if (s->join ?
			!shard_join_reads_table(s->join,
									shard_table_options(written)->table) :
			pg_strcasecmp(shard_table_options(written)->table,
						  s->topts->table) != 0)
			continue;
		if (ri == scanrelid)
			own = true;
		else
			other = true;
	}
	if (!own && !other)
		return;
	s->written = true;
	s->writes_at_start = shard_writes_begun;
	if (s->mode != SCAN_ROWS)
		return;
	if (own)
	{
		s->row_keys = MemoryContextAllocZero(estate->es_query_cxt,
											 sizeof(ShardRowKeys));
		s->row_keys->cxt = AllocSetContextCreate(estate->es_query_cxt,
												 "sqlite_shard_fdw row keys",
												 ALLOCSET_DEFAULT_SIZES);
	}
	/*
	 * Below a join (no longer the ModifyTable's own subplan, which planning
	 * marked to materialize), the scan may be read again: it keeps every
	 * row, to return them again as they were.
	 */
	s->read_all_first = other || !s->materialize;
	s->materialize = true;
}

/*
 * init_prep
 *		Choose what the reading threads do to each fetched column for the
 *		backend (shardio.c, prepare_value): read dates and times, and in a
 *		UTF-8 database check text, which spares the backend that work on
 *		every row.
 */
static void
init_prep(ShardScanState *s)
{
	bool		utf8 = (GetDatabaseEncoding() == PG_UTF8);
	int			i;

	s->prep = palloc0(s->nretrieved + 1);
	s->prep[0] = SHARDIO_PREP_NONE;		/* the rowid */
	for (i = 0; i < s->nretrieved; i++)
	{
		switch (s->convs[i].basetype)
		{
			case DATEOID:
			case TIMESTAMPOID:
			case TIMESTAMPTZOID:
				s->prep[i + 1] = SHARDIO_PREP_TIME;
				break;
			default:
				s->prep[i + 1] = utf8 ? SHARDIO_PREP_UTF8 : SHARDIO_PREP_NONE;
				break;
		}
	}
}

/*
 * join_lead_relation
 *		The table whose options and tenant filters lead a join's scan: its
 *		first tenant table, whose shards it reads, or, when it joins
 *		reference tables only, its first table.
 */
static Relation
join_lead_relation(EState *estate, Bitmapset *relids, Index *rtindex)
{
	Relation	first = NULL;
	int			rti = -1;

	while ((rti = bms_next_member(relids, rti)) >= 0)
	{
		Relation	rel = ExecGetRangeTableRelation(estate, rti);

		if (first == NULL)
		{
			first = rel;
			*rtindex = rti;
		}
		if (!shard_table_is_reference(RelationGetRelid(rel)))
		{
			*rtindex = rti;
			return rel;
		}
	}
	return first;
}

/*
 * shardBeginForeignScan
 *		Set up a scan; the shards are chosen when it first runs.
 */
void
shardBeginForeignScan(ForeignScanState *node, int eflags)
{
	ForeignScan *fsplan = (ForeignScan *) node->ss.ps.plan;
	EState	   *estate = node->ss.ps.state;
	Index		rtindex = fsplan->scan.scanrelid;
	Relation	rel = node->ss.ss_currentRelation;
	TupleDesc	tupdesc;
	ShardScanPrivate priv;
	ShardScanState *s;
	MemoryContextCallback *cb;
	List	   *exprs = fsplan->fdw_exprs;
	List	   *limit_exprs = NIL;
	ListCell   *lc;
	Oid			userid;
	int			i;

	if (rel == NULL)
		rel = join_lead_relation(estate, fsplan->fs_relids, &rtindex);
	tupdesc = RelationGetDescr(rel);
	s = palloc0(sizeof(ShardScanState));
	node->fdw_state = s;

	s->topts = shard_table_options(rel);
	s->opts = shard_server_options(s->topts->serverid);
	s->table_name = RelationGetRelationName(rel);
	shard_scan_private_read(fsplan->fdw_private, &priv);
	s->select_sql = priv.select_sql;
	s->where_sqls = priv.where_sqls;
	s->retrieved_attrs = priv.retrieved_attrs;
	s->param_kinds = priv.param_kinds;
	s->prune_kind = priv.prune_kind;
	s->mode = priv.mode;
	s->group_sql = priv.group_sql;
	s->guard_col = priv.guard_col;
	s->with_rowid = (s->mode == SCAN_ROWS && priv.join == NIL);
	if (priv.join != NIL)
		s->join = shard_join_scan_create(priv.join);
	s->needs = priv.needs;
	foreach(lc, s->needs)
		if (strVal(lfirst(lc))[0] != SHARD_NEEDS_TEXT_EXTREMA)
			s->needs_but_extrema = lappend(s->needs_but_extrema, lfirst(lc));
	s->rel = rel;
	if (s->mode != SCAN_ROWS && shard_thread_aggregation &&
		priv.raw_sql[0] != '\0')
		init_thread_agg(s, &priv);
	s->safe_where_sqls = priv.safe_where_sqls;
	s->materialize = priv.materialize;

	s->tenant_only = priv.tenant_only;
	s->counts_only = (s->mode != SCAN_ROWS);
	foreach(lc, priv.agg_ops)
		if (lfirst_int(lc) != AGGOP_COUNT_STAR && lfirst_int(lc) != AGGOP_KEY)
			s->counts_only = false;
	if (priv.group_sql[0] != '\0')
		s->counts_only = false;
	if (priv.modify_sql[0] != '\0')
	{
		s->modify_sql = priv.modify_sql;
		s->modify_returning = priv.modify_returning;
		s->modify_set_attnums = priv.modify_set_attnums;
		s->modify_set_convs = palloc0(sizeof(ShardStoreConv) *
									  (list_length(s->modify_set_attnums) + 1));
		i = 0;
		foreach(lc, s->modify_set_attnums)
			shard_store_init(&s->modify_set_convs[i++],
							 TupleDescAttr(tupdesc, lfirst_int(lc) - 1)->atttypid);
		s->with_rowid = false;
		s->modify_op = strncmp(s->modify_sql, "UPDATE", 6) == 0 ?
			CMD_UPDATE : CMD_DELETE;
		s->modify_convs = palloc0(sizeof(ShardColumnConv) *
								  (list_length(s->modify_returning) + 1));
		i = 0;
		{
			StringInfoData ret;

			initStringInfo(&ret);
			foreach(lc, s->modify_returning)
			{
				Form_pg_attribute att = TupleDescAttr(tupdesc,
													  lfirst_int(lc) - 1);

				shard_conv_init(&s->modify_convs[i++], att->atttypid,
								att->atttypmod);
				appendStringInfoString(&ret, i == 1 ? " RETURNING " : ", ");
				shard_quote_identifier(&ret,
									   shard_column_name(RelationGetRelid(rel),
														 att->attnum));
			}
			s->modify_returning_sql = ret.data;
		}
	}
	s->recheck_quals = fsplan->fdw_recheck_quals;
	s->cur_col = -1;
	if (s->modify_sql == NULL)
		check_statement_writes(s, estate, fsplan->scan.scanrelid);

	/* The last expression is the tenant value when the scan prunes. */
	if (s->prune_kind != PRUNE_NONE)
	{
		Expr	   *prune = llast(exprs);

		s->prune_type = exprType((Node *) prune);
		s->prune_state = ExecInitExpr(prune, (PlanState *) node);
		s->prune_needs_run = contains_exec_param((Node *) prune, NULL);
		exprs = list_truncate(list_copy(exprs), list_length(exprs) - 1);
	}
	/* Before it, OFFSET and LIMIT when the scan limits. */
	if (priv.nlimit_exprs > 0)
	{
		int			n = list_length(exprs) - priv.nlimit_exprs;

		limit_exprs = list_copy_tail(exprs, n);
		exprs = list_truncate(list_copy(exprs), n);
	}
	s->nparams = list_length(exprs);
	foreach(lc, exprs)
		s->param_types = lappend_oid(s->param_types,
									 exprType((Node *) lfirst(lc)));
	s->param_exprs = ExecInitExprList(exprs, (PlanState *) node);

	s->nretrieved = list_length(s->retrieved_attrs);
	s->colnames = palloc0(sizeof(char *) * (s->nretrieved + 1));
	s->convs = palloc0(sizeof(ShardColumnConv) * (s->nretrieved + 1));
	s->tenant_pos = -1;
	i = 0;
	if (s->join)
	{
		/* a join's columns are those of fdw_scan_tlist */
		List	   *join = priv.join;

		s->coltables = palloc0(sizeof(char *) * (s->nretrieved + 1));
		foreach(lc, s->retrieved_attrs)
		{
			Expr	   *expr = list_nth_node(TargetEntry, fsplan->fdw_scan_tlist,
											 lfirst_int(lc) - 1)->expr;

			s->colnames[i] = strVal(list_nth(list_nth(join, FdwScanJoinOutColumns), i));
			s->coltables[i] = strVal(list_nth(list_nth(join, FdwScanJoinOutTables), i));
			shard_conv_init(&s->convs[i], exprType((Node *) expr),
							exprTypmod((Node *) expr));
			i++;
		}
	}
	else
		foreach(lc, s->retrieved_attrs)
		{
			AttrNumber	attnum = lfirst_int(lc);
			Form_pg_attribute att = TupleDescAttr(tupdesc, attnum - 1);

			s->colnames[i] = shard_column_name(RelationGetRelid(rel), attnum);
			shard_conv_init(&s->convs[i], att->atttypid, att->atttypmod);
			if (attnum == s->topts->tenant_attnum)
				s->tenant_pos = i;
			i++;
		}
	if (s->mode == SCAN_ROWS)
		init_prep(s);
	/* A reference table's rows belong to no tenant: every role sees them. */
	if (!s->topts->reference)
	{
		s->tenant_type = TupleDescAttr(tupdesc, s->topts->tenant_attnum - 1)->atttypid;
		s->tenant_kind = shard_tenant_kind(s->tenant_type);
		userid = scan_user_compat(fsplan, estate, rtindex);
		s->allowed = shard_tenant_ids_text(shard_user_tenants(s->opts->serverid,
															  userid));
	}

	s->resolve_cxt = AllocSetContextCreate(estate->es_query_cxt,
										   "sqlite_shard_fdw scan",
										   ALLOCSET_SMALL_SIZES);
	s->row_cxt = AllocSetContextCreate(estate->es_query_cxt,
									   "sqlite_shard_fdw rows",
									   ALLOCSET_DEFAULT_SIZES);
	cb = MemoryContextAllocZero(s->resolve_cxt, sizeof(MemoryContextCallback));
	cb->func = scan_memory_callback;
	cb->arg = s;
	MemoryContextRegisterResetCallback(s->resolve_cxt, cb);

	s->batch_cols = s->nretrieved + 1;
	if (s->mode != SCAN_ROWS)
	{
		ListCell   *lc2;
		List	   *distinct = priv.distinct;

		/* The widest shard row: every partial, the distinct value, guard. */
		s->batch_cols = 1;
		foreach(lc, priv.agg_cols)
			foreach(lc2, (List *) lfirst(lc))
				s->batch_cols = Max(s->batch_cols, lfirst_int(lc2) + 1);
		if (distinct != NIL)
			s->batch_cols = Max(s->batch_cols, linitial_int(distinct) + 1);
		s->batch_cols = Max(s->batch_cols, s->guard_col + 1);
		/* and the key checks of a scan that limits: every column */
		s->batch_cols = Max(s->batch_cols,
							list_length(priv.thread_agg) / 3);
	}
	if (s->mode != SCAN_ROWS)
		s->merge = shard_merge_create((PlanState *) node,
									  priv.agg_ops, priv.agg_cols,
									  priv.agg_types, priv.key_eqops,
									  priv.key_colls, priv.distinct,
									  priv.key_truncs,
									  s->guard_col, s->topts->table);
	s->shard_bound = -1;
	if (priv.order != NIL)
		init_order(node, priv.order, limit_exprs);
}

/*
 * array_elements
 *		The elements of an array Datum; returns their number.
 */
static int
array_elements(Datum value, Oid *elemtype, Datum **elems, bool **nulls)
{
	ArrayType  *arr = DatumGetArrayTypeP(value);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			n;

	*elemtype = ARR_ELEMTYPE(arr);
	get_typlenbyvalalign(*elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, *elemtype, typlen, typbyval, typalign,
					  elems, nulls, &n);
	return n;
}

/*
 * prune_tenants
 *		The tenants named by the scan's tenant condition (NULLs name none).
 */
static List *
prune_tenants(ShardScanState *s, ExprContext *econtext)
{
	List	   *result = NIL;
	Datum		value;
	bool		isnull;

	value = ExecEvalExpr(s->prune_state, econtext, &isnull);
	if (isnull)
		return NIL;
	if (s->prune_kind == PRUNE_EQ)
		return list_make1(shard_tenant_id(s->prune_type, value));
	else
	{
		Oid			elemtype;
		Datum	   *elems;
		bool	   *nulls;
		int			n = array_elements(value, &elemtype, &elems, &nulls);
		int			i;

		for (i = 0; i < n; i++)
			if (!nulls[i])
				result = lappend(result, shard_tenant_id(elemtype, elems[i]));
	}
	return result;
}

/*
 * string_member
 *		Is s in a list of C strings?
 */
static bool
string_member(List *list, const char *s)
{
	ListCell   *lc;

	foreach(lc, list)
		if (strcmp((char *) lfirst(lc), s) == 0)
			return true;
	return false;
}

/*
 * target_cmp
 *		Order shards by id, so fan-outs read them in a stable order.
 */
static int
target_cmp(const ListCell *a, const ListCell *b)
{
	ShardTarget *ta = lfirst(a);
	ShardTarget *tb = lfirst(b);

	return strcmp(ta->info.shard_id, tb->info.shard_id);
}

/*
 * add_target
 *		Add a shard to the scan unless it is there already.
 */
static List *
add_target(List *targets, ShardInfo *info, const char *tenant)
{
	ListCell   *lc;
	ShardTarget *t = NULL;

	foreach(lc, targets)
		if (strcmp(((ShardTarget *) lfirst(lc))->info.shard_id,
				   info->shard_id) == 0)
			t = lfirst(lc);
	if (t == NULL)
	{
		t = palloc0(sizeof(ShardTarget));
		t->info.shard_id = pstrdup(info->shard_id);
		t->info.path = pstrdup(info->path);
		targets = lappend(targets, t);
	}
	if (tenant != NULL)
		t->tenants = lappend(t->tenants, (char *) tenant);
	return targets;
}

/*
 * bind_array_as_json
 *		An array parameter as JSON text, for "IN (SELECT CAST(value AS ...)
 *		FROM json_each(?))": text as strings; integers, dates and times as the
 *		numbers a single value of their type is bound as.
 */
static void
bind_array_as_json(Datum value, ShardValue *out)
{
	Oid			elemtype;
	Datum	   *elems;
	bool	   *nulls;
	int			n = array_elements(value, &elemtype, &elems, &nulls);
	int			i;
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '[');
	for (i = 0; i < n; i++)
	{
		if (i > 0)
			appendStringInfoChar(&buf, ',');
		if (nulls[i])
			appendStringInfoString(&buf, "null");
		else if (elemtype == TEXTOID || elemtype == VARCHAROID)
			escape_json(&buf, TextDatumGetCString(elems[i]));
		else
		{
			ShardValue	v;

			if (!shard_datum_to_value(elems[i], elemtype, &v) ||
				v.type != SQLITE_INTEGER)
				elog(ERROR, "cannot bind an array of type %u to a shard query",
					 elemtype);
			appendStringInfo(&buf, INT64_FORMAT, (int64) v.u.i);
		}
	}
	appendStringInfoChar(&buf, ']');
	out->type = SQLITE_TEXT;
	out->u.p = buf.data;
	out->len = buf.len;
}

/*
 * eval_params
 *		Compute the values bound to the shard query.
 */
static void
eval_params(ShardScanState *s, ExprContext *econtext)
{
	ListCell   *lc_expr,
			   *lc_type,
			   *lc_kind;
	int			i = 0;
	int64		grid[3] = {0, 1, 0};

	s->param_values = palloc0(sizeof(ShardValue) * (s->nparams + 1));
	forthree(lc_expr, s->param_exprs, lc_type, s->param_types,
			 lc_kind, s->param_kinds)
	{
		ShardValue *v = &s->param_values[i++];
		bool		isnull;
		Datum		value;

		value = ExecEvalExpr((ExprState *) lfirst(lc_expr), econtext, &isnull);
		if (isnull)
			v->type = SQLITE_NULL;
		else if (lfirst_int(lc_kind) == SHARD_PARAM_JSON_ARRAY)
			bind_array_as_json(value, v);
		else if (shard_time_bind(lfirst_int(lc_kind), value, v, grid))
			;					/* dates and times: timepush.c */
		else if (lfirst_int(lc_kind) == SHARD_PARAM_STORE)
		{
			ShardStoreConv conv;

			shard_store_init(&conv, lfirst_oid(lc_type));
			shard_store_value(&conv, value, false, v);
		}
		else if (!shard_datum_to_value(value, lfirst_oid(lc_type), v))
			elog(ERROR, "cannot bind a value of type %u to a shard query",
				 lfirst_oid(lc_type));
	}
}

/*
 * resolve_targets
 *		Choose the shards to read, by the directory as it is now, and work
 *		out which tenants' rows each must skip.  The values to bind are
 *		computed separately, on the first fetch, so that a plain EXPLAIN
 *		can show the shards without running any subquery.
 */
static void
resolve_targets(ForeignScanState *node)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	MemoryContext oldcxt;
	List	   *tenants = NIL;
	bool		all_shards;
	ListCell   *lc;

	MemoryContextReset(s->resolve_cxt);
	{
		MemoryContextCallback *cb;

		/* Resetting dropped the callback; the new one covers new state. */
		cb = MemoryContextAllocZero(s->resolve_cxt,
									sizeof(MemoryContextCallback));
		cb->func = scan_memory_callback;
		cb->arg = s;
		MemoryContextRegisterResetCallback(s->resolve_cxt, cb);
	}
	oldcxt = MemoryContextSwitchTo(s->resolve_cxt);

	s->dir = shard_directory_get(s->opts);
	s->targets = NIL;
	s->next_target = 0;
	s->end_target = -1;

	s->restricted = (s->prune_kind != PRUNE_NONE || s->allowed != NIL);
	all_shards = !s->restricted;
	if (s->prune_kind != PRUNE_NONE)
	{
		tenants = prune_tenants(s, econtext);
		if (s->allowed != NIL)
		{
			List	   *visible = NIL;

			foreach(lc, tenants)
				if (string_member(s->allowed, lfirst(lc)))
					visible = lappend(visible, lfirst(lc));
			tenants = visible;
		}
	}
	else if (s->allowed != NIL)
		tenants = s->allowed;

	if (s->topts->reference)
		s->targets = add_target(s->targets,
								shard_reference_shard(s->dir, s->topts,
													  s->table_name),
								NULL);
	else if (all_shards)
	{
		foreach(lc, shard_directory_shards(s->dir))
			s->targets = add_target(s->targets, (ShardInfo *) lfirst(lc),
									NULL);
	}
	else
	{
		foreach(lc, tenants)
		{
			ShardLocation *loc = shard_directory_locate(s->dir, lfirst(lc));

			/* An unknown tenant has no rows anywhere: read nothing. */
			if (loc != NULL)
				s->targets = add_target(s->targets,
										shard_directory_shard(s->dir, loc->owner),
										lfirst(lc));
		}
	}
	list_sort(s->targets, target_cmp);

	/* Rows of a tenant in a move count only on the shard that owns it. */
	if (!s->topts->reference && shard_directory_moving(s->dir) != NIL)
	{
		foreach(lc, s->targets)
		{
			ShardTarget *t = lfirst(lc);

			t->excluded = shard_directory_stale_tenants(s->dir,
														t->info.shard_id);
		}
	}

	MemoryContextSwitchTo(oldcxt);
	s->resolved = true;
	s->params_ready = false;

	/* One shard can sort and limit for the scan, unless plan_shard finds
	 * that it cannot be trusted to (or a time key needs the scan's sort). */
	s->row_direct = (s->row_order && list_length(s->targets) == 1 &&
					 s->window == NIL);
}

/*
 * add_tenant_condition
 *		Add "the row's tenant is [not] one of ids" to a shard's conditions,
 *		its value bound after the planned parameters and those before it.
 */
static List *
add_tenant_condition(ShardScanState *s, ShardTarget *t, List *conds,
					 List *ids, bool negate, List **extra)
{
	StringInfoData sql;
	ShardValue *bind = palloc(sizeof(ShardValue));

	initStringInfo(&sql);
	*bind = shard_tenant_condition(&sql, s->topts->tenant_column,
								   s->tenant_kind, t->tenant_is_text, ids,
								   negate,
								   s->nparams + list_length(*extra) + 1);
	*extra = lappend(*extra, bind);
	return lappend(list_copy(conds), makeString(sql.data));
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
 *		rows for the scan's sort; nothing for a shard whose order or limit
 *		cannot be trusted.
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
	else if (!s->row_direct && s->shard_bound >= 0)
		appendStringInfo(sql, " LIMIT " INT64_FORMAT, s->shard_bound);
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
 *		them by the values read.
 */
static void
append_window_sql(StringInfo sql, ShardScanState *s, const char *select,
				  const char *where, bool numbers)
{
	const char *col = strVal(linitial(s->window));
	const char *canon = strVal(lsecond(s->window));
	bool		desc = intVal(lthird(s->window));
	bool		is_date = intVal(lfourth(s->window));
	/* the column among the first rows' columns (a join's: its alias) */
	const char *top = strVal(list_nth(s->window, 4));
	const char *and = where[0] ? " AND " : "";
	/* where a descending time key's window starts (see above) */
	const char *lo = is_date ? "date(min(%s), '-1 day')" :
		"strftime('%%Y-%%m-%%d %%H:%%M', min(%s), '-15 hours', '-1 minute')";

	appendStringInfo(sql,
					 "WITH ssfdw_top AS (%s WHERE %s%s(%s IS NULL OR %s) ORDER BY %s LIMIT " INT64_FORMAT ")"
					 " SELECT * FROM ssfdw_top",
					 select, where, and, col, canon, s->order_sql, s->shard_bound);

	/*
	 * Each arm one index range whose rows the canonical test skips before
	 * their table rows are read: SQLite reads an OR of two ranges by
	 * rowid, every row in them.
	 */
	if (desc)
	{
		if (numbers)
			appendStringInfo(sql, " UNION ALL %s WHERE %s%s%s < ''",
							 select, where, and, col);
		appendStringInfo(sql,
						 " UNION ALL %s WHERE %s%s%s >= (SELECT CASE WHEN count(*) < " INT64_FORMAT " OR count(%s) < count(*) THEN '' ELSE coalesce(",
						 select, where, and, col, s->shard_bound, top);
		appendStringInfo(sql, lo, top);
		appendStringInfo(sql, ", '') END FROM ssfdw_top) AND NOT %s", canon);
	}
	else
	{
		appendStringInfo(sql, " UNION ALL %s WHERE %s%s%s >= x''",
						 select, where, and, col);
		appendStringInfo(sql,
						 " UNION ALL %s WHERE %s%s%s < (SELECT CASE WHEN count(*) < " INT64_FORMAT " OR count(%s) < count(*) THEN x'' ELSE coalesce(date(max(%s), '+2 days'), x'') END FROM ssfdw_top) AND NOT %s",
						 select, where, and, col, s->shard_bound, top, top, canon);
	}
}

/*
 * append_group_sql
 *		The GROUP BY of an aggregate scan's shard query, and the ORDER BY
 *		and LIMIT that bound each shard's groups when the scan limits (t:
 *		unless that shard cannot be bounded; NULL: as EXPLAIN shows it).
 */
static void
append_group_sql(StringInfo sql, ShardScanState *s, ShardTarget *t)
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
	initStringInfo(&where);
	shard_join_conditions(&where, conds);

	initStringInfo(&sql);
	if (s->modify_sql)
	{
		appendStringInfoString(&sql, s->modify_sql);
		if (where.len > 0)
			appendStringInfo(&sql, " WHERE %s", where.data);
		appendStringInfoString(&sql, s->modify_returning_sql);
		return sql.data;
	}
	if (s->window != NIL && s->shard_bound >= 0 && row_shard_sorts(s, t))
	{
		StringInfoData select;

		initStringInfo(&select);
		if (t->nkeys > 0)
		{
			appendStringInfoString(&select, "SELECT ");
			append_key_columns(&select, t);
			appendStringInfoString(&select, s->select_sql + strlen("SELECT "));
		}
		else
			appendStringInfoString(&select, s->select_sql);
		/* a join's FROM, its tenant values bound once for every arm */
		if (s->join)
			shard_join_append_from(&select, s->join, t->conn, s->tenant_kind,
								   s->restricted ? t->tenants : NIL,
								   t->excluded, s->nparams, extra);
		append_window_sql(&sql, s, select.data, where.data,
						  window_may_hold_numbers(s, t));
		return sql.data;
	}
	if (raw)
		appendStringInfoString(&sql, s->raw_sql);
	else if (t->nkeys > 0)
	{
		/* "SELECT cols ..." becomes "SELECT rowid, cols ...". */
		appendStringInfoString(&sql, "SELECT ");
		append_key_columns(&sql, t);
		appendStringInfoString(&sql, s->select_sql + strlen("SELECT "));
	}
	else
		appendStringInfoString(&sql, s->select_sql);
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
		append_group_sql(&sql, s, t);
	return sql.data;
}

/*
 * diagnose_prepare_failure
 *		Explain why a shard rejected the query: a missing table or column is
 *		reported by name; anything else as SQLite put it.  Returns only when
 *		the table lacks a rowid, so the caller can retry without it.
 */
static void
diagnose_prepare_failure(ShardScanState *s, ShardTarget *t, int rc,
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

		if (!att->attisdropped)
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

/*
 * report_read_error
 *		Raise the error a shard's read ended with.
 */
static void
report_read_error(ShardScanState *s, ShardTarget *t, int rc,
				  const char *errbuf)
{
	if (rc == SQLITE_FULL && t->no_sql_groups)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cannot aggregate table \"%s\" inside shard \"%s\"",
						s->topts->table, t->info.shard_id),
				 errdetail("The shard has more than %d groups, too many to group outside SQLite, which orders the text of this UTF-16 database otherwise than PostgreSQL does.",
						   THREAD_AGG_MAX_GROUPS),
				 errhint("Set \"sqlite_shard_fdw.aggregate_pushdown\" to off to aggregate in PostgreSQL.")));
	shard_sqlite_error(ERROR, rc, t->info.shard_id, errbuf,
					   "could not read table \"%s\" on shard \"%s\"",
					   s->topts->table, t->info.shard_id);
}

/*
 * shard_warn_skipped
 *		Say that a missing shard is left out under on_missing_shard = skip:
 *		of a query's result, or (analyzed named) of a table's statistics.
 */
void
shard_warn_skipped(const ShardInfo *shard, const char *analyzed)
{
	ereport(WARNING,
			(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
			 errmsg("skipping shard \"%s\": file \"%s\" does not exist",
					shard->shard_id, shard->path),
			 analyzed == NULL ?
			 errdetail("The server option \"on_missing_shard\" is \"skip\", so the result lacks this shard's rows.") :
			 errdetail("The server option \"on_missing_shard\" is \"skip\", so the statistics of \"%s\" lack this shard's rows.",
					   analyzed)));
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
								  s->tenant_kind, true, t->tenants, false, 1);
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
 * report_no_row_key
 *		Refuse a row-by-row UPDATE or DELETE of a shard's table that has
 *		neither a rowid nor a primary key to find a row again by (a view,
 *		whose rowid SQLite reads as NULL, or a WITHOUT ROWID table of no
 *		key).
 */
static void
report_no_row_key(ShardScanState *s, ShardTarget *t)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot change rows of table \"%s\" on shard \"%s\" one by one",
					s->topts->table, t->info.shard_id),
			 errdetail("The table has neither a rowid nor a primary key to find a row again by."),
			 errhint("Change its rows with a statement that runs inside the shards.")));
}

/*
 * row_key_shard
 *		A shard whose table has no rowid, read for a row-by-row UPDATE or
 *		DELETE: its rows are found again by the table's primary key, which
 *		the scan reads ahead of the columns.  A table with neither (a view)
 *		cannot be changed row by row.  Remembered per scan and shard, for
 *		the rows' keys to refer to.
 */
static ShardKeyedShard *
row_key_shard(ShardScanState *s, ShardTarget *t)
{
	ShardRowKeys *rk = s->row_keys;
	ShardKeyedShard *keyed;
	MemoryContext oldcxt;
	List	   *keys;
	List	   *collations;
	ListCell   *lc;

	foreach(lc, rk->shards)
	{
		keyed = lfirst(lc);
		if (strcmp(keyed->shard_id, t->info.shard_id) == 0)
			return keyed;
	}
	oldcxt = MemoryContextSwitchTo(rk->cxt);
	keys = shard_conn_primary_key(t->conn, s->topts->table, &collations);
	if (keys == NIL)
		report_no_row_key(s, t);
	keyed = palloc(sizeof(ShardKeyedShard));
	keyed->shard_id = pstrdup(t->info.shard_id);
	keyed->keys = keys;
	keyed->collations = collations;
	rk->shards = lappend(rk->shards, keyed);
	MemoryContextSwitchTo(oldcxt);
	return keyed;
}

/*
 * remember_row_key
 *		Keep the key of a row read from a keyed shard (its first values,
 *		exactly as SQLite returned them) and return its number, for a
 *		row-by-row UPDATE or DELETE to find the row again by.
 */
static int64
remember_row_key(ShardScanState *s, ShardTarget *t, const ShardValue *row)
{
	ShardRowKeys *rk = s->row_keys;
	MemoryContext oldcxt = MemoryContextSwitchTo(rk->cxt);
	ShardRowKey *key;
	int			i;

	if (rk->nrows == rk->maxrows)
	{
		rk->maxrows = Max(rk->maxrows * 2, 1024);
		rk->rows = rk->rows == NULL ?
			MemoryContextAllocHuge(rk->cxt, sizeof(ShardRowKey) * rk->maxrows) :
			repalloc_huge(rk->rows, sizeof(ShardRowKey) * rk->maxrows);
	}
	key = &rk->rows[rk->nrows++];
	key->shard = t->keyed;
	key->values = palloc(sizeof(ShardValue) * t->nkeys);
	for (i = 0; i < t->nkeys; i++)
	{
		key->values[i] = row[i];
		if (row[i].type == SQLITE_TEXT || row[i].type == SQLITE_BLOB)
		{
			char	   *copy = palloc(row[i].len + 1);

			memcpy(copy, row[i].u.p, row[i].len);
			copy[row[i].len] = '\0';
			key->values[i].u.p = copy;
		}
	}
	MemoryContextSwitchTo(oldcxt);
	return rk->nrows;
}

/*
 * row_shard_number
 *		The number of shard t among the shards a row-by-row UPDATE or
 *		DELETE read rows from, numbering it at its first row.  The number
 *		takes the low bits of each ctid, as many as the directory's shards
 *		need when the first row is read.
 */
static int
row_shard_number(ShardScanState *s, ShardTarget *t)
{
	ShardRowKeys *rk = s->row_keys;
	MemoryContext oldcxt;
	int			i;

	for (i = 0; i < rk->nread; i++)
		if (strcmp(rk->read[i].shard_id, t->info.shard_id) == 0)
			return i;
	if (rk->shard_bits == 0)
	{
		int			nshards = list_length(shard_directory_shards(s->dir));

		rk->shard_bits = 1;
		while ((1 << rk->shard_bits) < nshards && rk->shard_bits < 16)
			rk->shard_bits++;
		rk->read = MemoryContextAllocZero(rk->cxt, sizeof(ShardInfo) <<
										  rk->shard_bits);
	}
	if (rk->nread >= (1 << rk->shard_bits))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot change rows of table \"%s\" one by one on more than %d shards",
						s->topts->table, 1 << rk->shard_bits),
				 errdetail("Shards were added to the directory while the statement ran.")));
	oldcxt = MemoryContextSwitchTo(rk->cxt);
	rk->read[rk->nread].shard_id = pstrdup(t->info.shard_id);
	rk->read[rk->nread].path = pstrdup(t->info.path);
	MemoryContextSwitchTo(oldcxt);
	return rk->nread++;
}

/*
 * set_row_identity
 *		Put the identity of the row just read from shard t into tid: the
 *		shard's number and the row's rowid (or its key's number), or an
 *		invalid ctid when the rowid does not fit beside the number.
 */
static void
set_row_identity(ShardScanState *s, ShardTarget *t, const ShardValue *row,
				 ItemPointer tid)
{
	int			shard;
	int			bits;
	int64		id;

	/* a view reads "rowid" as NULL: nothing to find its rows again by */
	if (t->keyed == NULL && t->nkeys > 0 && row[0].type != SQLITE_INTEGER)
		report_no_row_key(s, t);
	shard = row_shard_number(s, t);
	bits = s->row_keys->shard_bits;
	id = t->keyed != NULL ? remember_row_key(s, t, row) : s->cur_rowid;
	if (t->keyed == NULL && t->nkeys == 0)
		ItemPointerSetInvalid(tid);
	else if (id < 0 || id >= ((INT64CONST(1) << 48) - 0x10000) >> bits)
		ItemPointerSetInvalid(tid);
	else
		shard_rowid_to_tid((id << bits) | shard, tid);
}

/* What find_row_keys seeks: the scan of a result relation. */
typedef struct RowKeysSearch
{
	Index		rtindex;
	ShardRowKeys *found;
} RowKeysSearch;

/*
 * find_row_keys
 *		planstate_tree_walker's callback for shard_scan_row_keys: stops at
 *		our scan of the relation sought.
 */
static bool
find_row_keys(PlanState *ps, void *context)
{
	RowKeysSearch *search = (RowKeysSearch *) context;

	if (IsA(ps, ForeignScanState) &&
		((Scan *) ps->plan)->scanrelid == search->rtindex &&
		((ForeignScanState *) ps)->fdwroutine->IterateForeignScan ==
		shardIterateForeignScan &&
		((ForeignScanState *) ps)->fdw_state != NULL)
	{
		search->found =
			((ShardScanState *) ((ForeignScanState *) ps)->fdw_state)->row_keys;
		return true;
	}
	return planstate_tree_walker(ps, find_row_keys, context);
}

/*
 * shard_scan_row_keys
 *		The row keys of the scan of result relation rtindex, somewhere in
 *		the plan below a row-by-row UPDATE or DELETE, or NULL.
 */
ShardRowKeys *
shard_scan_row_keys(PlanState *below, Index rtindex)
{
	RowKeysSearch search;

	search.rtindex = rtindex;
	search.found = NULL;
	if (below != NULL)
		(void) find_row_keys(below, &search);
	return search.found;
}

/*
 * shard_row_keys_of
 *		The primary key columns by which the rows read from a shard are
 *		found again, or NIL when they are found by their rowid; *collations
 *		gets the collation the key compares each with (or NULL).
 */
List *
shard_row_keys_of(ShardRowKeys *keys, const char *shard_id,
				  List **collations)
{
	ListCell   *lc;

	*collations = NIL;
	if (keys == NULL)
		return NIL;
	foreach(lc, keys->shards)
	{
		ShardKeyedShard *keyed = lfirst(lc);

		if (strcmp(keyed->shard_id, shard_id) == 0)
		{
			*collations = keyed->collations;
			return keyed->keys;
		}
	}
	return NIL;
}

/*
 * shard_row_identity
 *		The shard a row of a row-by-row UPDATE or DELETE was read from, and
 *		in *id its rowid there or the number of its key, from the value of
 *		its ctid (set_row_identity).
 */
ShardInfo *
shard_row_identity(ShardRowKeys *keys, int64 tid_value, int64 *id)
{
	int			shard;

	if (keys == NULL || keys->shard_bits == 0)
		elog(ERROR, "no rows were read for a row-by-row change");
	shard = (int) (tid_value & ((1 << keys->shard_bits) - 1));
	if (shard >= keys->nread)
		elog(ERROR, "shard %d of a row-by-row change is not known", shard);
	*id = tid_value >> keys->shard_bits;
	return &keys->read[shard];
}

/*
 * shard_row_key
 *		The key values of a row read from a keyed shard, by its number.
 */
const ShardValue *
shard_row_key(ShardRowKeys *keys, const char *shard_id, int64 n)
{
	if (keys == NULL || n < 1 || n > keys->nrows ||
		strcmp(keys->rows[n - 1].shard->shard_id, shard_id) != 0)
		elog(ERROR, "row key %lld of shard \"%s\" is not known",
			 (long long) n, shard_id);
	return keys->rows[n - 1].values;
}

/*
 * plan_shard
 *		Decide how one shard is read (what its declarations allow to push)
 *		and build its statement and values, in the scan's resolution
 *		context: once per resolution, since a rescan with the same values
 *		reads the shard the same way.
 */
static void
plan_shard(ShardScanState *s, ShardTarget *t)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(s->resolve_cxt);
	List	   *extra;
	ListCell   *lc;
	int			i;

	/*
	 * Pushed-down SQL is exact only where the shard declares columns as
	 * planning assumed (text compared in TEXT columns, sums over numeric
	 * ones).  A shard that declares a compared column otherwise is read
	 * whole and PostgreSQL evaluates the conditions; an aggregation, planned
	 * from the first shard's schema, cannot be redone that way.
	 */
	{
		char	   *bad = shard_conn_affinity_mismatch(t->conn, s->topts->table,
													   s->needs);

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
			bad = shard_conn_affinity_mismatch(t->conn, s->topts->table,
											   s->needs_but_extrema);
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
						shard_conn_affinity_mismatch(t->conn, s->topts->table,
													 list_nth(s->order,
															  FdwScanOrderBoundNeeds)) != NULL);
		if (!row_shard_sorts(s, t))
			s->row_direct = false;
	}

	t->tenant_is_text = !s->topts->reference &&
		shard_tenant_column_is_text(t->conn, s->topts->table,
									s->topts->tenant_column, s->tenant_kind);
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
	/* The row's key, first: its rowid, or its primary key (row_key_shard) */
	t->keyed = NULL;
	t->nkeys = 0;
	if (s->with_rowid && !t->no_rowid)
		t->nkeys = 1;
	else if (s->row_keys != NULL)
	{
		t->keyed = row_key_shard(s, t);
		t->nkeys = list_length(t->keyed->keys);
	}
	t->sql = build_shard_sql(s, t, s->agg_spec != NULL, &extra);

	/* Planned values, then the tenant lists. */
	t->nbinds = s->nparams + list_length(extra);
	t->binds = palloc0(sizeof(ShardValue) * (t->nbinds + 1));
	if (s->nparams > 0)
		memcpy(t->binds, s->param_values, sizeof(ShardValue) * s->nparams);
	i = s->nparams;
	foreach(lc, extra)
		t->binds[i++] = *(ShardValue *) lfirst(lc);

	t->fallback_sql = NULL;
	if (s->agg_spec && !t->no_sql_groups)
		t->fallback_sql = build_shard_sql(s, t, false, &extra);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * start_shard
 *		Open a shard and prepare and bind its statement.  Returns false when
 *		the shard is missing and the server skips missing shards.
 */
static bool
start_shard(ForeignScanState *node, ShardTarget *t)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	MemoryContext oldcxt;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	/*
	 * A table the statement writes is read before the statement writes:
	 * read later (another scan of it, a rescan with other values), it would
	 * show the rows written since.
	 */
	if (s->written && t == linitial(s->targets) &&
		shard_writes_begun != s->writes_at_start)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read table \"%s\" after its statement began to change it",
						s->topts->table),
				 errdetail("A statement reads the table it writes before it writes; read later (a second scan of it, a subquery that refers to the row being changed, a lateral reference), it would show the rows written."),
				 errhint("Read the rows once, into a temporary table or a WITH ... AS MATERIALIZED query, and change the table from there.")));

	t->conn = shard_conn_get(s->opts, &t->info, s->opts->skip_missing);
	if (t->conn == NULL)
	{
		shard_warn_skipped(&t->info, NULL);
		return false;
	}

	oldcxt = MemoryContextSwitchTo(s->resolve_cxt);
	s->cur = t;					/* for messages */

	/*
	 * The values to bind, computed when the first shard is read: a scan
	 * that reads none (no shard, a missing one skipped, LIMIT 0) computes
	 * nothing that could fail.
	 */
	if (!s->params_ready)
	{
		eval_params(s, node->ss.ps.ps_ExprContext);
		s->params_ready = true;
	}

	if (t->sql == NULL)
		plan_shard(s, t);
	for (;;)
	{
		rc = shard_conn_prepare(t->conn, t->sql, &t->stmt, errbuf);
		if (rc == SQLITE_OK)
			break;
		diagnose_prepare_failure(s, t, rc, errbuf, s->rel);
		/* a WITHOUT ROWID table: retry by its primary key, or without */
		t->no_rowid = true;
		if (s->row_keys == NULL)
			s->with_rowid = false;
		plan_shard(s, t);
	}

	/* A degraded shard's query uses some planned parameters: up to its last. */
	if (t->degraded)
		rc = shardio_bind(t->stmt, 1, t->binds,
						  Min(t->nbinds, sqlite3_bind_parameter_count(t->stmt)),
						  errbuf);
	else
		rc = shardio_bind(t->stmt, 1, t->binds, t->nbinds, errbuf);
	if (rc != SQLITE_OK)
		shard_sqlite_error(ERROR, rc, t->info.shard_id, errbuf,
						   "could not bind the values of the query of table \"%s\" on shard \"%s\"",
						   s->topts->table, t->info.shard_id);

	memset(&t->job, 0, sizeof(t->job));
	t->reader_began = 0;
	t->elapsed_ms = 0;
	t->job.stmt = t->stmt;
	t->job.started = &t->reader_began;
	if (s->prep && t->nkeys <= 1)
	{
		t->job.prep = s->prep + 1 - t->nkeys;
		t->job.nprep = s->nretrieved + t->nkeys;
	}
	else if (s->prep)
	{
		/* key columns are kept as they are, like the rowid */
		unsigned char *prep = palloc(t->nkeys + s->nretrieved);

		memset(prep, SHARDIO_PREP_NONE, t->nkeys);
		memcpy(prep + t->nkeys, s->prep + 1, s->nretrieved);
		t->job.prep = prep;
		t->job.nprep = s->nretrieved + t->nkeys;
	}
	if (s->agg_spec)
	{
		t->job.agg = s->agg_spec;
		t->job.agg_bound = t->unbounded ? -1 : s->shard_bound;
		t->job.fallback_sql = t->fallback_sql;
		t->job.binds = t->binds;
		t->job.nbinds = t->nbinds;
	}
	MemoryContextSwitchTo(oldcxt);

	t->done = false;
	t->read = true;
	t->rows = 0;
	INSTR_TIME_SET_CURRENT(t->started);
	return true;
}

/*
 * finish_shard
 *		A shard returned all its rows: close its statement, give its handle
 *		back and, for a direct modification (run in the backend, without a
 *		reader), note its time.  A read's time is that of its batches.
 */
static void
finish_shard(ShardTarget *t)
{
	instr_time	now;

	if (t->job.stmt == NULL)
	{
		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, t->started);
		t->elapsed_ms = INSTR_TIME_GET_MILLISEC(now);
	}
	shard_reader_free(t->reader);
	t->reader = NULL;
	if (t->stmt)
		shard_conn_unprepare(t->conn, t->stmt);
	t->stmt = NULL;
	if (t->conn)
		shard_conn_release(t->conn);
	t->conn = NULL;
}

/*
 * read_shard_whole
 *		Read all a shard's rows into batches of the scan's materialized
 *		rows, and close its statement.
 */
static void
read_shard_whole(ShardScanState *s, ShardTarget *t)
{
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	t->reader = shard_reader_start(&t->job);
	if (t->reader == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	do
	{
		ShardBatch *b = shardio_batch_create(Max(s->batch_cols,
												 s->nretrieved + t->nkeys),
											 SCAN_BATCH_ROWS);
		MemoryContext oldcxt;

		if (b == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		oldcxt = MemoryContextSwitchTo(s->resolve_cxt);
		s->mat_batches = lappend(s->mat_batches, b);
		s->mat_targets = lappend(s->mat_targets, t);
		MemoryContextSwitchTo(oldcxt);
		rc = shard_reader_next(t->reader, b, errbuf);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			report_read_error(s, t, rc, errbuf);
		if (s->read_all_first)
			t->elapsed_ms += b->fill_ms;	/* once, however often read */
	} while (rc == SQLITE_ROW);
	t->done = true;
	finish_shard(t);
}

/*
 * next_batch_materialized
 *		The next batch of a scan that reads each shard to the end before it
 *		returns any of its rows: the scan below a row-by-row UPDATE or
 *		DELETE, whose writes to the shard must not meet a read of it still
 *		under way, holds one shard's rows at a time; any other scan of a
 *		table the statement writes reads every shard before its first row
 *		and keeps the rows for a rescan (check_statement_writes).
 */
static bool
next_batch_materialized(ForeignScanState *node)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;

	for (;;)
	{
		ShardTarget *t;

		if (s->read_all_first && s->mat_next < list_length(s->mat_batches))
		{
			s->batch = list_nth(s->mat_batches, s->mat_next);
			s->cur = list_nth(s->mat_targets, s->mat_next++);
			s->batch_row = 0;
			return true;
		}
		if (!s->read_all_first && s->mat_batches != NIL)
		{
			s->batch = linitial(s->mat_batches);
			s->mat_batches = list_delete_first(s->mat_batches);
			s->cur = linitial(s->mat_targets);
			s->mat_targets = list_delete_first(s->mat_targets);
			s->cur->elapsed_ms += s->batch->fill_ms;
			s->batch_row = 0;
			return true;
		}
		if (s->next_target >= list_length(s->targets))
			return false;
		do
		{
			t = list_nth(s->targets, s->next_target++);
			if (start_shard(node, t))
			{
				s->cur = t;
				read_shard_whole(s, t);
			}
		} while (s->read_all_first &&
				 s->next_target < list_length(s->targets));
		s->mat_complete = s->read_all_first;
	}
}

/*
 * next_batch_serial
 *		Fill the scan's own batch from the shard being read, moving to the
 *		next shard when one ends.  Returns false when every shard is done.
 */
static bool
next_batch_serial(ForeignScanState *node)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	if (s->materialize)
		return next_batch_materialized(node);

	for (;;)
	{
		ShardTarget *t = s->serial;

		if (t == NULL)
		{
			if (s->next_target >= target_end(s))
			{
				int			task;

				if (s->fanout == NULL)
					return false;
				/* a split quick read: what the worker has not started */
				task = fanout_take_queued(s->fanout);
				if (task < 0)
					return next_batch_parallel(node);
				s->inflight--;
				t = list_nth(s->targets, task);
			}
			else
			{
				t = list_nth(s->targets, s->next_target++);
				if (!start_shard(node, t))
					continue;
			}
			s->serial = t;
			if (s->quick)
				s->quick_reads++;
		}
		if (t->done)
		{
			finish_shard(t);
			s->serial = NULL;
			/* a slow shard: the threads read the rest */
			if (s->quick && t->elapsed_ms >= shard_quick_shard_ms)
			{
				s->quick = false;
				if (s->fanout)
					fanout_limit_threads(s->fanout, shard_fanout_parallelism);
				if (use_fanout(s))
					return next_batch_parallel(node);
			}
			if (s->quick && s->end_target < 0)
				start_quick_split(node, t->elapsed_ms);
			continue;
		}

		if (s->own_batch == NULL)
		{
			s->own_batch = shardio_batch_create(s->batch_cols, SCAN_BATCH_ROWS);
			if (s->own_batch == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("out of memory")));
		}
		s->cur = t;
		if (t->reader == NULL)
		{
			t->reader = shard_reader_start(&t->job);
			if (t->reader == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("out of memory")));
		}
		rc = shard_reader_next(t->reader, s->own_batch, errbuf);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			report_read_error(s, t, rc, errbuf);
		t->done = (rc == SQLITE_DONE);
		t->elapsed_ms += s->own_batch->fill_ms;
		s->batch = s->own_batch;
		s->batch_row = 0;
		return true;
	}
}

/*
 * target_end
 *		Where the targets the backend itself reads or hands out one by one
 *		end: after them, a split quick read's share of the threads.
 */
static int
target_end(ShardScanState *s)
{
	return s->end_target >= 0 ? s->end_target : list_length(s->targets);
}

/*
 * submit_shard
 *		Hand a started shard to the scan's fan-out.
 */
static void
submit_shard(ShardScanState *s, ShardTarget *t, int task)
{
	if (fanout_submit(s->fanout, &t->job, task) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start a fan-out worker thread"),
				 errdetail("The thread was to read table \"%s\" on shard \"%s\".",
						   s->topts->table, t->info.shard_id)));
	s->inflight++;
}

/*
 * start_quick_split
 *		After the first shard of a quick read of QUICK_SPLIT_MIN shards or
 *		more, which took first_ms: when the rest would take the backend
 *		QUICK_SPLIT_MS or longer at that pace, queue the last of them (all
 *		but a parallelism'th, QUICK_SPLIT_MAX at most) for one worker thread
 *		fewer than fanout_parallelism, so that the backend, reading the next
 *		ones, and
 *		the workers keep every core on shards that each take tens of
 *		microseconds, with no hand-over to wait for.  The backend then
 *		takes back those no worker has started (fanout_take_queued) and
 *		reads the rest of the workers' rows from the fan-out.  Decided
 *		once: the other shards stay the backend's, unless one of them is
 *		slow (next_batch_serial hands the rest to the threads then).
 */
static void
start_quick_split(ForeignScanState *node, double first_ms)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	int			ntargets = list_length(s->targets);
	int			nleft = ntargets - s->next_target;
	int			nback = Min(nleft - nleft / Max(shard_fanout_parallelism, 1),
							QUICK_SPLIT_MAX);
	int			task;

	s->end_target = ntargets;
	if (ntargets < QUICK_SPLIT_MIN || shard_fanout_parallelism < 2 ||
		s->materialize || s->fanout != NULL ||
		first_ms * nleft < QUICK_SPLIT_MS)
		return;
	s->fanout = fanout_create(shard_fanout_parallelism, s->batch_cols,
							  SCAN_BATCH_ROWS, 2 * nback + 1);
	if (s->fanout == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	fanout_limit_threads(s->fanout, shard_fanout_parallelism - 1);
	for (task = ntargets - 1; task >= ntargets - nback; task--)
	{
		ShardTarget *t = list_nth(s->targets, task);

		s->end_target = task;
		if (start_shard(node, t))
			submit_shard(s, t, task);
	}
}

/*
 * next_fanout_event
 *		The fan-out's next event, however long it takes: Ctrl-C and
 *		statement_timeout are checked while nothing arrives.
 */
static void
next_fanout_event(ShardScanState *s, FanoutEvent *ev)
{
	for (;;)
	{
		/* named after what the workers wait for (waits.c) */
		pgstat_report_wait_start(fanout_lock_waits(s->fanout) > 0 ?
								 shard_wait_event_lock() :
								 shard_wait_event_fanout());
		fanout_next(s->fanout, FANOUT_WAIT_MS, ev);
		pgstat_report_wait_end();
		if (ev->kind != FANOUT_TIMEOUT)
			return;
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * next_batch_parallel
 *		Keep up to sqlite_shard_fdw.fanout_parallelism shards running on
 *		worker threads and take the next batch any of them produced.
 *		Returns false when every shard is done.
 */
static bool
next_batch_parallel(ForeignScanState *node)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	int			ntargets = list_length(s->targets);

	if (s->fanout == NULL)
	{
		int			nworkers = Min(shard_fanout_parallelism, ntargets);

		s->fanout = fanout_create(nworkers, s->batch_cols, SCAN_BATCH_ROWS,
								  nworkers * FANOUT_BATCHES_PER_WORKER);
		if (s->fanout == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
	}

	for (;;)
	{
		FanoutEvent ev;
		ShardTarget *t;

		while (s->inflight < shard_fanout_parallelism &&
			   s->next_target < target_end(s))
		{
			int			task = s->next_target++;

			t = list_nth(s->targets, task);
			if (start_shard(node, t))
				submit_shard(s, t, task);
		}

		next_fanout_event(s, &ev);
		switch (ev.kind)
		{
			case FANOUT_TIMEOUT:
				break;
			case FANOUT_IDLE:
				if (s->next_target >= target_end(s))
					return false;
				break;
			case FANOUT_BATCH:
				t = list_nth(s->targets, ev.task);
				t->elapsed_ms += ev.batch->fill_ms;
				s->cur = t;
				s->batch = ev.batch;
				s->batch_row = 0;
				return true;
			case FANOUT_DONE:
				t = list_nth(s->targets, ev.task);
				t->done = true;
				t->elapsed_ms += ev.tail_ms;
				finish_shard(t);
				s->inflight--;
				break;
			case FANOUT_FAILED:
				t = list_nth(s->targets, ev.task);
				s->cur = NULL;
				report_read_error(s, t, ev.rc, ev.errmsg);
				break;
			case FANOUT_NOMEM:
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("out of memory"),
						 errdetail("A thread reading table \"%s\" for a fan-out ran out of memory.",
								   s->topts->table)));
				break;
		}
	}
}

/*
 * use_fanout
 *		Read shards in parallel when there is more than one to read,
 *		parallelism is allowed, and the scan neither keeps its rows
 *		(materialize) nor reads quick shards in the backend.
 */
static bool
use_fanout(ShardScanState *s)
{
	return shard_fanout_parallelism > 1 && list_length(s->targets) > 1 &&
		!s->materialize && !s->quick;
}

/*
 * next_row
 *		Convert the next row any shard returns into slot, reading batches
 *		as they are used up; false (slot cleared) after the last.
 */
static bool
next_row(ForeignScanState *node, TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();

		if (s->batch && s->batch_row < s->batch->nrows)
		{
			ShardValue *row = &s->batch->values[(size_t) s->batch_row *
												s->batch->ncols];
			int			off = s->cur->nkeys;
			ListCell   *lc;
			MemoryContext oldcxt;
			int			i = 0;

			s->batch_row++;
			s->cur->rows++;

			/*
			 * The previous row is dead now; resetting for every row costs
			 * more than the few bytes each leaves, so reset once they add
			 * up.
			 */
			if (MemoryContextMemAllocated(s->row_cxt, false) > ROW_MEMORY_LIMIT)
				MemoryContextReset(s->row_cxt);
			oldcxt = MemoryContextSwitchTo(s->row_cxt);
			ExecClearTuple(slot);
			memset(slot->tts_isnull, true,
				   sizeof(bool) * slot->tts_tupleDescriptor->natts);
			s->cur_rowid = (off && s->cur->keyed == NULL) ? row[0].u.i : 0;
			foreach(lc, s->retrieved_attrs)
			{
				AttrNumber	attnum = lfirst_int(lc);

				s->cur_col = i;
				slot->tts_values[attnum - 1] =
					shard_value_to_datum(&s->convs[i], &row[off + i],
										 &slot->tts_isnull[attnum - 1]);
				i++;
			}
			s->cur_col = -1;
			MemoryContextSwitchTo(oldcxt);

			ExecStoreVirtualTuple(slot);
			ItemPointerSetInvalid(&slot->tts_tid);
			if (s->cur->degraded && s->recheck_quals != NIL)
			{
				ExprContext *econtext = node->ss.ps.ps_ExprContext;

				if (s->recheck == NULL)
				{
					MemoryContext qcxt = MemoryContextSwitchTo(node->ss.ps.state->es_query_cxt);

					s->recheck = ExecInitQual(s->recheck_quals, (PlanState *) node);
					MemoryContextSwitchTo(qcxt);
				}
				/* skipped rows leave nothing behind in per-tuple memory */
				ResetExprContext(econtext);
				econtext->ecxt_scantuple = slot;
				if (!ExecQual(s->recheck, econtext))
					continue;
			}

			/*
			 * The row's identity for a row-by-row UPDATE or DELETE: the
			 * shard it came from, its rowid or key there.  A key is kept
			 * only for a row the recheck passed.
			 */
			if (s->row_keys != NULL)
				set_row_identity(s, s->cur, row, &slot->tts_tid);
			else if (off)
				shard_rowid_to_tid(s->cur_rowid, &slot->tts_tid);
			return true;
		}

		/* The batch is used up: hand it back and get the next. */
		if (s->batch && s->fanout && s->batch != s->own_batch)
			fanout_release_batch(s->fanout, s->batch);
		else if (s->batch && s->materialize && !s->read_all_first)
			shardio_batch_free(s->batch);
		s->batch = NULL;

		if (!(use_fanout(s) ? next_batch_parallel(node) :
			  next_batch_serial(node)))
		{
			ExecClearTuple(slot);
			return false;
		}
	}

}

/*
 * sort_rows
 *		Put every row the shards return into the scan's sort, bounded by
 *		OFFSET + LIMIT.
 */
static void
sort_rows(ForeignScanState *node, TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	MemoryContext oldcxt;

	oldcxt = MemoryContextSwitchTo(node->ss.ps.state->es_query_cxt);
	if (s->sortslot == NULL)
		s->sortslot = MakeSingleTupleTableSlot(slot->tts_tupleDescriptor,
											   &TTSOpsMinimalTuple);
	s->sort = tuplesort_begin_heap_compat(slot->tts_tupleDescriptor, s->nsort,
										  s->sort_attnos, s->sort_ops,
										  s->sort_colls, s->sort_nulls,
										  work_mem);
	if (s->shard_bound >= 0)
		tuplesort_set_bound(s->sort, s->shard_bound);
	MemoryContextSwitchTo(oldcxt);
	if (s->pending_first)
		tuplesort_puttupleslot(s->sort, slot);
	s->pending_first = false;
	while (next_row(node, slot))
		tuplesort_puttupleslot(s->sort, slot);
	tuplesort_performsort(s->sort);
	s->sorted = true;
}

/*
 * next_ordered_row
 *		The next row of a scan that sorts and limits the shards' rows
 *		itself: from its sort, or as they come when only limited; OFFSET
 *		skipped, nothing after LIMIT (no shard is read further).
 */
static bool
next_ordered_row(ForeignScanState *node, TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;

	/*
	 * Whether one shard's rows may pass through is known once its query is
	 * planned (plan_shard), which reading its first row does.
	 */
	if (!s->order_started)
	{
		bool		have;

		/* few rows of each shard, all sorted here: maybe read them here */
		s->quick = (s->nsort > 0 && s->shard_bound >= 0 &&
					s->shard_bound <= QUICK_MAX_ROWS &&
					shard_fanout_parallelism > 1 &&
					list_length(s->targets) > 1);
		s->quick_reads = 0;
		have = next_row(node, slot);

		s->order_started = true;
		if (s->row_direct || !have)
			return have;
		s->pending_first = true;
	}
	if (s->row_direct)
		return next_row(node, slot);

	for (;;)
	{
		if (s->limit_count >= 0 && s->returned >= s->limit_count)
		{
			ExecClearTuple(slot);
			return false;
		}
		if (s->nsort > 0)
		{
			if (!s->sorted)
				sort_rows(node, slot);
			if (!tuplesort_gettupleslot(s->sort, true, false, s->sortslot,
										NULL))
			{
				ExecClearTuple(slot);
				return false;
			}
			ExecCopySlot(slot, s->sortslot);
		}
		else if (s->pending_first)
			s->pending_first = false;
		else if (!next_row(node, slot))
			return false;
		if (s->skipped < s->limit_offset)
		{
			s->skipped++;
			continue;
		}
		s->returned++;
		return true;
	}
}

/*
 * end_row_sort
 *		Drop an ordered row scan's sort and counts, to start over.
 */
static void
end_row_sort(ShardScanState *s)
{
	if (s->sort)
		tuplesort_end(s->sort);
	s->sort = NULL;
	s->sorted = false;
	s->order_started = false;
	s->quick = false;
	s->pending_first = false;
	s->skipped = 0;
	s->returned = 0;
}

/*
 * shardIterateForeignScan
 *		Return the next row, moving from shard to shard.
 */
TupleTableSlot *
shardIterateForeignScan(ForeignScanState *node)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	ErrorContextCallback errcallback;

	if (!s->resolved)
		resolve_targets(node);
	eval_limit(node);
	if (s->limit_zero)
		return ExecClearTuple(slot);

	errcallback.callback = scan_error_callback;
	errcallback.arg = s;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	/* An aggregate scan merges every shard's groups, then returns them. */
	while (s->mode != SCAN_ROWS && !s->merged)
	{
		if (s->batch)
		{
			shard_merge_add_batch(s->merge, s->batch, s->cur->info.shard_id,
								  s->shard_bound >= 0 && !s->cur->unbounded);
			s->cur->rows += s->batch->nrows;
			if (s->fanout && s->batch != s->own_batch)
				fanout_release_batch(s->fanout, s->batch);
			s->batch = NULL;
		}
		CHECK_FOR_INTERRUPTS();
		if (!(use_fanout(s) ? next_batch_parallel(node) :
			  next_batch_serial(node)))
			s->merged = true;
	}
	if (s->mode != SCAN_ROWS)
	{
		if (!shard_merge_next(s->merge, slot))
			ExecClearTuple(slot);
		error_context_stack = errcallback.previous;
		return slot;
	}

	if (s->row_order)
		next_ordered_row(node, slot);
	else
		next_row(node, slot);

	error_context_stack = errcallback.previous;
	return slot;
}

/*
 * shardReScanForeignScan
 *		Start over; with new parameter values the shards are chosen again.
 */
void
shardReScanForeignScan(ForeignScanState *node)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	ListCell   *lc;

	/*
	 * A scan of a table the statement writes returns the rows it read the
	 * first time again, as the table was before the statement wrote it.
	 */
	if (s->read_all_first && s->mat_complete && s->resolved &&
		node->ss.ps.chgParam == NULL)
	{
		end_row_sort(s);
		s->mat_next = 0;
		s->batch = NULL;
		s->cur = NULL;
		return;
	}
	stop_reading(s, true);
	if (s->merge)
		shard_merge_reset(s->merge);
	end_row_sort(s);
	s->merged = false;
	if (node->ss.ps.chgParam != NULL || !s->resolved)
		s->resolved = false;
	else
	{
		s->next_target = 0;
		s->end_target = -1;
		foreach(lc, s->targets)
			((ShardTarget *) lfirst(lc))->read = false;
	}
}

/*
 * shardEndForeignScan
 *		Stop the workers and release the shards being read.
 */
void
shardEndForeignScan(ForeignScanState *node)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;

	if (s == NULL)
		return;
	stop_reading(s, true);
	if (s->merge)
		shard_merge_end(s->merge);
	end_row_sort(s);
}

/*
 * shard_names
 *		"N of M (a, b, c, and K more)" for EXPLAIN.
 *
 * "and 1 more" would take as much room as the name it stands for, so a
 * list one name longer than EXPLAIN_MAX_SHARD_NAMES is written out whole.
 */
static char *
shard_names(ShardScanState *s)
{
	StringInfoData buf;
	ListCell   *lc;
	int			n = 0;
	int			total = list_length(shard_directory_shards(s->dir));

	initStringInfo(&buf);
	appendStringInfo(&buf, "%d of %d", list_length(s->targets), total);
	foreach(lc, s->targets)
	{
		ShardTarget *t = lfirst(lc);

		if (n == EXPLAIN_MAX_SHARD_NAMES &&
			list_length(s->targets) - n >= 2)
		{
			appendStringInfo(&buf, ", and %d more",
							 list_length(s->targets) - n);
			break;
		}
		appendStringInfoString(&buf, n == 0 ? " (" : ", ");
		appendStringInfoString(&buf, t->info.shard_id);
		n++;
	}
	if (n > 0)
		appendStringInfoChar(&buf, ')');
	return buf.data;
}

/*
 * explain_shard_times
 *		EXPLAIN ANALYZE: the rows the backend took from each shard, the
 *		shards never started, and the slowest shard, which sets a fan-out's
 *		latency.
 *
 * A scan that stopped early (a LIMIT above it) lists every shard it
 * opened: those cut short are marked "stopped", and those whose statement
 * never began (opened, or not even that, when the scan ended) are named
 * under "Shards Not Started".  A shard's time is what producing the rows
 * the backend took cost it (the time its reader spent filling those
 * batches, SQLite's work and lock waits included): not its wall time,
 * which counts the waits for the backend to take its rows, time the node
 * itself does not count while the plan above it works, and not the rows a
 * worker read ahead that were never used.  The fan-out is stopped first,
 * so that no worker is left running.
 */
static void
explain_shard_times(ShardScanState *s, ExplainState *es)
{
	StringInfoData rows;
	StringInfoData idle;
	ShardTarget *slowest = NULL;
	double		slowest_ms = 0;
	ListCell   *lc;

	if (s->fanout)
		stop_reading(s, true);
	initStringInfo(&rows);
	initStringInfo(&idle);
	foreach(lc, s->targets)
	{
		ShardTarget *t = lfirst(lc);
		double		ms = t->elapsed_ms;

		if (!t->read || (s->modify_sql == NULL && !t->reader_began))
		{
			appendStringInfo(&idle, "%s%s", idle.len > 0 ? ", " : "",
							 t->info.shard_id);
			continue;
		}
		appendStringInfo(&rows, "%s%s=" INT64_FORMAT "%s",
						 rows.len > 0 ? ", " : "", t->info.shard_id, t->rows,
						 t->done || s->modify_sql != NULL ? "" : " (stopped)");
		if (slowest == NULL || ms > slowest_ms)
		{
			slowest = t;
			slowest_ms = ms;
		}
	}
	if (rows.len > 0)
		ExplainPropertyText("Shard Rows", rows.data, es);
	if (idle.len > 0)
		ExplainPropertyText("Shards Not Started", idle.data, es);
	if (es->timing && slowest != NULL)
	{
		char	   *text = psprintf("%s (%.3f ms)", slowest->info.shard_id,
									slowest_ms);

		ExplainPropertyText("Slowest Shard", text, es);
	}
}

/*
 * explain_flagged_shards
 *		EXPLAIN ANALYZE: name, under label, the shards read that returned
 *		all their groups or rows, not declaring their columns as the bound
 *		needs (noindex false), or that read their tenants' rows without the
 *		tenant's index (noindex true, large_tenant_without_stats).
 */
static void
explain_flagged_shards(ShardScanState *s, ExplainState *es, const char *label,
					   bool noindex)
{
	StringInfoData names;
	ListCell   *lc;

	initStringInfo(&names);
	foreach(lc, s->targets)
	{
		ShardTarget *t = lfirst(lc);

		if (t->read && (noindex ? t->tenant_noindex : t->unbounded))
			appendStringInfo(&names, "%s%s", names.len > 0 ? ", " : "",
							 t->info.shard_id);
	}
	if (names.len > 0)
		ExplainPropertyText(label, names.data, es);
}

/*
 * shardExplainForeignScan
 *		Show which shards the scan reads and, with VERBOSE, the SQLite
 *		query.  A plain EXPLAIN routes without opening a shard.
 */
void
shardExplainForeignScan(ForeignScanState *node, ExplainState *es)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;

	/*
	 * The shards of a tenant value known before the query runs: a constant
	 * or a stable expression, which the planner's estimates compute too.
	 * A subquery's or a parameter's value is not computed for EXPLAIN.
	 */
	if (!s->resolved && !s->prune_needs_run)
		resolve_targets(node);

	if (s->join)
		ExplainPropertyText("Relations", shard_join_relations(s->join), es);
	if (s->topts->reference)
		ExplainPropertyText("Distribution", "reference, one shard's copy",
							es);
	if (s->resolved)
		ExplainPropertyText("Shards", shard_names(s), es);
	else
		ExplainPropertyText("Shards", "chosen at run time", es);
	ExplainPropertyText("Pushdown",
						s->row_order ?
						(s->limit_exprs == NIL ? "rows, sorted" :
						 s->nsort > 0 ? "rows, sorted and limited" :
						 "rows, limited") :
						s->order != NIL ? "whole groups per shard, sorted and limited" :
						s->mode == SCAN_AGG_FULL ? "whole groups per shard" :
						s->mode == SCAN_AGG_PARTIAL ? "partial aggregates, merged" :
						"rows", es);
	if (s->agg_spec)
		ExplainPropertyText("Grouped By", "reading threads", es);
	if (s->order != NIL)
	{
		const char *text = strVal(list_nth(s->order, FdwScanOrderText));
		const char *per = s->row_order ? "Rows Per Shard" : "Groups Per Shard";

		/* Without ANALYZE, parameters and functions are not evaluated. */
		if (es->analyze || limit_is_known(node))
			eval_limit(node);
		if (text[0] != '\0')
			ExplainPropertyText(s->row_order ? "Shard Order" : "Merge Order",
								text, es);
		if (s->window != NIL)
			ExplainPropertyText("Time Key",
								psprintf("%s: canonical text in SQLite's order, other stored forms near the limit rechecked",
										 strVal(linitial(s->window))), es);
		if (s->shard_bound >= 0)
			ExplainPropertyInteger(per, NULL, s->shard_bound, es);
		else if (!s->limit_ready)
			ExplainPropertyText(per, "chosen at run time", es);
		if (es->analyze && s->shard_bound >= 0)
			explain_flagged_shards(s, es, "Unbounded Shards", false);
		if (es->analyze && s->quick_reads > 0)
			ExplainPropertyInteger("Shards Read In Backend", NULL,
								   s->quick_reads, es);
	}

	if (es->verbose)
	{
		StringInfoData sql;

		initStringInfo(&sql);
		appendStringInfoString(&sql, s->agg_spec ? s->raw_sql : s->select_sql);
		if (s->join)
		{
			List	   *extra = NIL;

			shard_join_append_from(&sql, s->join, NULL, s->tenant_kind, NIL,
								   NIL, s->nparams, &extra);
		}
		if (s->where_sqls != NIL)
		{
			appendStringInfoString(&sql, " WHERE ");
			shard_join_conditions(&sql, s->where_sqls);
		}
		if (s->agg_spec == NULL)
			append_group_sql(&sql, s, NULL);
		ExplainPropertyText("SQLite query", sql.data, es);
	}

	if (es->analyze && s->resolved)
		explain_shard_times(s, es);
	if (es->analyze && s->resolved)
		explain_flagged_shards(s, es, "Tenant Index Skipped", true);
}

/*
 * shardBeginDirectModify
 *		Set up an UPDATE or DELETE that runs inside the shards: a scan of
 *		the same shards with the same conditions, whose statement changes
 *		rows instead of returning them.
 */
void
shardBeginDirectModify(ForeignScanState *node, int eflags)
{
	shardBeginForeignScan(node, eflags);
}

/*
 * start_modify
 *		Prepare and bind the UPDATE or DELETE of one shard, inside its write
 *		transaction.
 */
static void
start_modify(ForeignScanState *node, ShardTarget *t)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	MemoryContext oldcxt;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	t->conn = shard_conn_get_for_write(s->opts, &t->info);
	shard_conn_check_no_reader(t->conn, s->topts->table);
	oldcxt = MemoryContextSwitchTo(s->resolve_cxt);
	s->cur = t;
	if (!s->params_ready)
	{
		eval_params(s, node->ss.ps.ps_ExprContext);
		s->params_ready = true;
	}
	t->read = true;
	t->rows = 0;
	INSTR_TIME_SET_CURRENT(t->started);

	/*
	 * A shard whose declarations would make a pushed condition inexact
	 * cannot be modified by the statement: reads fall back to PostgreSQL
	 * for such a shard, a modification has nothing to fall back to.
	 */
	plan_shard(s, t);
	if (t->degraded)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 s->modify_op == CMD_UPDATE ?
				 errmsg("cannot update table \"%s\" on shard \"%s\"",
						s->topts->table, t->info.shard_id) :
				 errmsg("cannot delete from table \"%s\" on shard \"%s\"",
						s->topts->table, t->info.shard_id),
				 errdetail("The shard declares a compared column with another type than the statement's conditions assume, so SQLite would not pick the rows PostgreSQL would."),
				 errhint("Declare the column alike in every shard.")));

	/* new values fitted to how this shard declares their columns */
	{
		int			first = s->nparams - list_length(s->modify_set_attnums);
		ListCell   *lc;

		foreach(lc, s->modify_set_attnums)
		{
			int			k = foreach_current_index(lc);
			ShardValue *v = &t->binds[first + k];
			char	   *col = shard_column_name(RelationGetRelid(s->rel),
												lfirst_int(lc));
			Datum		value = (Datum) 0;

			if (v->type == SQLITE_TEXT &&
				s->modify_set_convs[k].basetype == NUMERICOID)
				value = DirectFunctionCall3(numeric_in,
											CStringGetDatum(v->u.p),
											ObjectIdGetDatum(InvalidOid),
											Int32GetDatum(-1));
			shard_store_fit(&s->modify_set_convs[k], value,
							shard_conn_column_affinity(t->conn,
													   s->topts->table, col),
							v, col, s->topts->table, t->info.shard_id);
		}
	}

	rc = shard_conn_prepare(t->conn, t->sql, &t->stmt, errbuf);
	if (rc != SQLITE_OK)
	{
		t->stmt = NULL;
		diagnose_prepare_failure(s, t, rc, errbuf, s->rel);
	}
	rc = shardio_bind(t->stmt, 1, t->binds, t->nbinds, errbuf);
	if (rc != SQLITE_OK)
		shard_sqlite_error(ERROR, rc, t->info.shard_id, errbuf,
						   shard_write_failure(s->modify_op, false),
						   s->topts->table, t->info.shard_id);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * returning_row
 *		Put the row SQLite's RETURNING gave into the scan slot, where the
 *		RETURNING list reads it.
 */
static TupleTableSlot *
returning_row(ForeignScanState *node, ShardTarget *t)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	ResultRelInfo *rinfo = node->resultRelInfo;

	shard_returning_to_slot(t->stmt, shard_conn_db(t->conn),
							s->modify_returning, s->modify_convs, slot,
							&s->cur_col);
	if (rinfo && rinfo->ri_projectReturning)
		rinfo->ri_projectReturning->pi_exprContext->ecxt_scantuple = slot;
	return slot;
}

/*
 * count_modified
 *		Add the rows the statement changed on a shard to the counts.
 */
static void
count_modified(ForeignScanState *node, ShardTarget *t, int64 changes)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;

	t->rows = changes;
	s->modified += changes;
	node->ss.ps.state->es_processed += changes;
	if (node->ss.ps.instrument)
		node->ss.ps.instrument->tuplecount += changes;
}

/*
 * modify_parallel
 *		Run a statement without RETURNING on every shard at once, on the
 *		fan-out's worker threads, as reads run.  The backend takes each
 *		shard's write lock and prepares and binds its statement first, in
 *		shard order, so the workers only step the statements; a failure is
 *		raised once every shard has stopped, for the first failed shard in
 *		that order.
 */
static void
modify_parallel(ForeignScanState *node)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	int			ntargets = list_length(s->targets);
	int			nworkers = Min(shard_fanout_parallelism, ntargets);
	int			pending = 0;
	int			failed = -1;
	int			failed_rc = SQLITE_OK;
	char		failed_msg[SHARDIO_ERRLEN];
	ListCell   *lc;

	foreach(lc, s->targets)
	{
		ShardTarget *t = lfirst(lc);

		start_modify(node, t);
		memset(&t->job, 0, sizeof(t->job));
		t->job.stmt = t->stmt;
	}
	s->cur = NULL;
	s->next_target = ntargets;

	s->fanout = fanout_create(nworkers, 0, SCAN_BATCH_ROWS, nworkers);
	if (s->fanout == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	foreach(lc, s->targets)
	{
		ShardTarget *t = lfirst(lc);

		if (fanout_submit(s->fanout, &t->job, foreach_current_index(lc)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					 errmsg("could not start a fan-out worker thread"),
					 errdetail("The thread was to change table \"%s\" on shard \"%s\".",
							   s->topts->table, t->info.shard_id)));
		pending++;
	}

	while (pending > 0)
	{
		FanoutEvent ev;
		ShardTarget *t;

		next_fanout_event(s, &ev);
		switch (ev.kind)
		{
			case FANOUT_TIMEOUT:
				break;
			case FANOUT_IDLE:
				pending = 0;
				break;
			case FANOUT_BATCH:
				/* a statement without RETURNING returns no rows */
				fanout_release_batch(s->fanout, ev.batch);
				break;
			case FANOUT_DONE:
				t = list_nth(s->targets, ev.task);
				count_modified(node, t, sqlite3_changes(shard_conn_db(t->conn)));
				/* its time: from its start to its end, seen here */
				t->job.stmt = NULL;
				finish_shard(t);
				pending--;
				break;
			case FANOUT_FAILED:
				t = list_nth(s->targets, ev.task);
				sqlite3_reset(t->stmt);
				ev.rc = shard_conn_write_failed(t->conn, ev.rc);
				if (failed < 0 || ev.task < failed)
				{
					failed = ev.task;
					failed_rc = ev.rc;
					strlcpy(failed_msg, ev.errmsg, sizeof(failed_msg));
				}
				/* its statement and handle go back, as a finished shard's */
				t->job.stmt = NULL;
				finish_shard(t);
				pending--;
				break;
			case FANOUT_NOMEM:
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("out of memory"),
						 errdetail("A thread running the statement on table \"%s\" ran out of memory.",
								   s->topts->table)));
				break;
		}
	}
	fanout_destroy(s->fanout);
	s->fanout = NULL;
	if (failed >= 0)
	{
		const char *shard_id =
			((ShardTarget *) list_nth(s->targets, failed))->info.shard_id;

		shard_write_error(failed_rc, shard_id, NULL, NULL, failed_msg,
						  shard_write_failure(s->modify_op, false),
						  s->topts->table, shard_id);
	}
}

/*
 * shardIterateDirectModify
 *		Run the statement on every shard of the scan and count the rows
 *		changed: in parallel without RETURNING (modify_parallel), else one
 *		shard after another, handing each changed row over as it comes.
 */
TupleTableSlot *
shardIterateDirectModify(ForeignScanState *node)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	EState	   *estate = node->ss.ps.state;
	bool		returning = (s->modify_returning != NIL);

	if (!s->resolved)
	{
		resolve_targets(node);
		s->modify_cur = NULL;
		if (!returning && use_fanout(s))
			modify_parallel(node);
	}
	for (;;)
	{
		ShardTarget *t = s->modify_cur;
		int			rc;

		if (t == NULL)
		{
			if (s->next_target >= list_length(s->targets))
				break;
			t = list_nth(s->targets, s->next_target++);
			start_modify(node, t);
			s->modify_cur = t;
		}

		rc = sqlite3_step(t->stmt);
		if (rc == SQLITE_ROW && returning)
		{
			MemoryContext oldcxt;
			TupleTableSlot *slot;

			t->rows++;
			s->modified++;
			estate->es_processed++;
			if (node->ss.ps.instrument)
				node->ss.ps.instrument->tuplecount++;
			oldcxt = MemoryContextSwitchTo(node->ss.ps.ps_ExprContext->ecxt_per_tuple_memory);
			slot = returning_row(node, t);
			MemoryContextSwitchTo(oldcxt);
			return slot;
		}
		if (rc != SQLITE_DONE)
		{
			sqlite3    *db = shard_conn_db(t->conn);
			char	   *msg = pstrdup(sqlite3_errmsg(db));
			int			xrc = sqlite3_extended_errcode(db);

			sqlite3_reset(t->stmt);
			xrc = shard_conn_write_failed(t->conn, xrc);
			shard_write_error(xrc, t->info.shard_id, NULL, NULL, msg,
							  shard_write_failure(s->modify_op, false),
							  s->topts->table, t->info.shard_id);
		}
		if (!returning)
			count_modified(node, t, sqlite3_changes(shard_conn_db(t->conn)));
		finish_shard(t);
		s->modify_cur = NULL;
	}
	return ExecClearTuple(node->ss.ss_ScanTupleSlot);
}

/*
 * shardEndDirectModify
 *		Give the shards back; their writes stay in the write transactions.
 */
void
shardEndDirectModify(ForeignScanState *node)
{
	shardEndForeignScan(node);
}

/*
 * shardExplainDirectModify
 *		Show that the statement runs inside the shards, which shards, and
 *		with VERBOSE the SQLite statement.
 */
void
shardExplainDirectModify(ForeignScanState *node, ExplainState *es)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;

	if (!s->resolved && !s->prune_needs_run && !es->analyze)
		resolve_targets(node);
	ExplainPropertyText("Direct Modify",
						s->resolved && s->modify_returning == NIL &&
						use_fanout(s) ?
						"one statement per shard, in parallel" :
						"one statement per shard", es);
	if (s->topts->reference)
		ExplainPropertyText("Distribution", "reference, one shard's copy",
							es);
	if (s->resolved)
		ExplainPropertyText("Shards", shard_names(s), es);
	else
		ExplainPropertyText("Shards", "chosen at run time", es);
	if (es->verbose)
	{
		StringInfoData sql;

		initStringInfo(&sql);
		appendStringInfoString(&sql, s->modify_sql);
		if (s->where_sqls != NIL)
		{
			appendStringInfoString(&sql, " WHERE ");
			shard_join_conditions(&sql, s->where_sqls);
		}
		appendStringInfoString(&sql, s->modify_returning_sql);
		ExplainPropertyText("SQLite statement", sql.data, es);
	}
	if (es->analyze && s->resolved)
		explain_shard_times(s, es);
}
