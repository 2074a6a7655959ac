/*-------------------------------------------------------------------------
 *
 * scan.c
 *		  Executor side of a foreign table scan: routing and shard reads
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
 * A direct UPDATE or DELETE (directmodify.c) is such a scan whose
 * statement changes the rows instead of returning them; the scan below a
 * row-by-row one hands each row over with its identity (rowidentity.c).
 * That scan, and any other scan of a table its statement writes, reads
 * each shard to its end before it returns the shard's rows, and keeps
 * them converted in a tuplestore, which spills to temporary files beyond
 * work_mem as PostgreSQL's own kept rows do.
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
#include "scan.h"

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


/* Bytes converted rows may hold before the row context is reset. */
#define ROW_MEMORY_LIMIT	(256 * 1024)

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

	/*
	 * The rows read whole.  After an error the resource owner closes the
	 * store's temporary files, and its memory goes with the query's.
	 */
	if (s->mat_store && release)
	{
		ExecClearTuple(s->mat_slot);
		tuplestore_end(s->mat_store);
	}
	s->mat_store = NULL;
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
		s->ties = list_nth(order, FdwScanOrderTies);
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
 * before its first row anyway.)  The rows are kept converted in a
 * tuplestore within work_mem (fill_store), the keys likewise
 * (rowidentity.c).  A scan that would read such a table again after the
 * statement wrote is refused (start_shard).
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
		s->row_keys = shard_row_keys_create(estate->es_query_cxt);
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
	s->tenant_rows = priv.tenant_rows;
	s->tenant_sqls = priv.tenant_sqls;
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
		s->modify_bigint_bounds = priv.modify_bigint_bounds;
		s->modify_set_processed = priv.modify_set_processed;
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
 * shard_scan_eval_params
 *		Compute the values bound to the shard query.
 */
void
shard_scan_eval_params(ShardScanState *s, ExprContext *econtext)
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
 * shard_scan_resolve
 *		Choose the shards to read, by the directory as it is now, and work
 *		out which tenants' rows each must skip.  The values to bind are
 *		computed separately, on the first fetch, so that a plain EXPLAIN
 *		can show the shards without running any subquery.
 */
void
shard_scan_resolve(ForeignScanState *node)
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

	/* a reference table is read from one copy, and written in every one */
	if (s->topts->reference && s->modify_sql == NULL)
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

			/*
			 * An unknown tenant has no shard: read nothing, but say so
			 * when a shard holds rows of it.
			 */
			if (loc == NULL)
				shard_check_unknown_tenant(s->opts, s->dir, s->topts,
										   s->tenant_kind, lfirst(lc));
			else
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

	/* One shard can sort and limit for the scan, unless shard_scan_plan_shard finds
	 * that it cannot be trusted to (or a time key, or ties, need the scan's
	 * sort). */
	s->row_direct = (s->row_order && list_length(s->targets) == 1 &&
					 s->window == NIL && s->ties == NIL);
}

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
	 * The pushed condition the scan is routed by keeps the same rows as
	 * the filter of the tenants this shard is read for, and an index on
	 * the tenant column serves it: left out where the filter is written so
	 * that no such index serves it.
	 */
	foreach(lc, conds)
	{
		if (t->time_index != NULL && !negate &&
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
 * append_ties_sql
 *		The query of a shard of a scan sorted by a prefix of the query's
 *		order (order.c): its first OFFSET + LIMIT rows by the prefix, and
 *		every row tied with the last of them on the first key.  The scan
 *		sorts what comes back.
 */
static void
append_ties_sql(StringInfo sql, ShardScanState *s, const char *select,
				const char *where)
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
					 "WITH ssfdw_top AS (%s WHERE %s%s(%s IS NULL OR %s) ORDER BY %s LIMIT " INT64_FORMAT ")",
					 select, where, and, col, canon, s->order_sql, s->shard_bound);

	/*
	 * With ties (a prefix of the order, order.c): those of the canonical
	 * values or NULL, whose text equals the last's; a tie stored in another
	 * form is among the rows that follow.
	 */
	if (s->ties != NIL)
		append_ties_arms_sql(sql, s, select, where);
	else
		appendStringInfoString(sql, " SELECT * FROM ssfdw_top");

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
 * build_where_sql
 *		The WHERE clause of one shard's statement: the planned conditions
 *		and the run-time tenant filters.  *extra receives the tenant ids to
 *		bind after the planned parameters.
 */
static void
build_where_sql(StringInfo where, ShardScanState *s, ShardTarget *t,
				List **extra)
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
	shard_join_conditions(where, conds);
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

	initStringInfo(&where);
	build_where_sql(&where, s, t, extra);
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
	if ((s->window != NIL || s->ties != NIL) && s->shard_bound >= 0 &&
		row_shard_sorts(s, t))
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
		if (s->window != NIL)
			append_window_sql(&sql, s, select.data, where.data,
							  window_may_hold_numbers(s, t));
		else
			append_ties_sql(&sql, s, select.data, where.data);
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
 * choose_time_index
 *		The time column whose index a routed read of a time range should
 *		find this shard's rows by, rather than the tenant's index, or NULL
 *		(timeindex.c).  Not for a sorted read (its order picks an index) or
 *		a direct modification.  The tenants' estimated rows are shared among
 *		the shards in proportion to the tenants each is read for.
 */
static const char *
choose_time_index(ShardScanState *s, ShardTarget *t)
{
	double		tenant_rows = s->tenant_rows;
	int			ntenants = 0;
	ListCell   *lc;

	if (!s->restricted || t->tenants == NIL || s->join != NULL ||
		s->topts->reference || !t->tenant_is_text || t->degraded ||
		t->tenant_noindex ||
		s->row_order || s->modify_sql != NULL || s->tenant_only)
		return NULL;
	if (tenant_rows >= 0)
	{
		foreach(lc, s->targets)
			ntenants += list_length(((ShardTarget *) lfirst(lc))->tenants);
		if (ntenants > 0)
			tenant_rows = tenant_rows * list_length(t->tenants) / ntenants;
	}
	return shard_time_index_choose(t->conn, s->topts->table,
								   s->topts->tenant_column, &t->tenant_rule,
								   t->tenants, s->where_sqls, s->param_values,
								   s->nparams, tenant_rows);
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
	t->time_index = choose_time_index(s, t);
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

	/* a shard the statement will write is locked before it is read */
	t->conn = s->written ?
		shard_conn_get_locked(s->opts, &t->info, s->opts->skip_missing) :
		shard_conn_get(s->opts, &t->info, s->opts->skip_missing);
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
		shard_scan_eval_params(s, node->ss.ps.ps_ExprContext);
		s->params_ready = true;
	}

	if (t->sql == NULL)
		shard_scan_plan_shard(s, t);
	for (;;)
	{
		rc = shard_conn_prepare(t->conn, t->sql, &t->stmt, errbuf);
		if (rc == SQLITE_OK)
			break;
		shard_scan_prepare_failed(s, t, rc, errbuf, s->rel);
		/* a WITHOUT ROWID table: retry by its primary key, or without */
		t->no_rowid = true;
		if (s->row_keys == NULL)
			s->with_rowid = false;
		shard_scan_plan_shard(s, t);
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
 * shard_scan_finish_shard
 *		A shard returned all its rows: close its statement, give its handle
 *		back and, for a direct modification (run in the backend, without a
 *		reader), note its time.  A read's time is that of its batches.
 */
void
shard_scan_finish_shard(ShardTarget *t)
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
			shard_scan_finish_shard(t);
			s->serial = NULL;
			/* a slow shard: the threads read the rest */
			if (s->quick && t->elapsed_ms >= shard_quick_shard_ms)
			{
				s->quick = false;
				if (s->fanout)
					fanout_limit_threads(s->fanout, shard_fanout_parallelism);
				if (shard_scan_use_fanout(s))
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
 * shard_scan_next_event
 *		The fan-out's next event, however long it takes: Ctrl-C and
 *		statement_timeout are checked while nothing arrives.
 */
void
shard_scan_next_event(ShardScanState *s, FanoutEvent *ev)
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

		shard_scan_next_event(s, &ev);
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
				shard_scan_finish_shard(t);
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
 * shard_scan_use_fanout
 *		Read shards in parallel when there is more than one to read,
 *		parallelism is allowed, and the scan neither keeps its rows
 *		(materialize) nor reads quick shards in the backend.
 */
bool
shard_scan_use_fanout(ShardScanState *s)
{
	return shard_fanout_parallelism > 1 && list_length(s->targets) > 1 &&
		!s->materialize && !s->quick;
}

/*
 * convert_row
 *		Convert row, which shard s->cur returned, into slot, with its
 *		identity for a row-by-row UPDATE or DELETE in the slot's ctid.
 *		False when the conditions PostgreSQL rechecks for a degraded shard
 *		reject it.
 */
static bool
convert_row(ForeignScanState *node, const ShardValue *row,
			TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	int			off = s->cur->nkeys;
	ListCell   *lc;
	MemoryContext oldcxt;
	int			i = 0;

	/*
	 * The previous row is dead now; resetting for every row costs more
	 * than the few bytes each leaves, so reset once they add up.
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
			return false;
	}

	/*
	 * The row's identity for a row-by-row UPDATE or DELETE: the shard it
	 * came from, its rowid or key there.  A key is kept only for a row the
	 * recheck passed.
	 */
	if (s->row_keys != NULL)
		shard_row_set_identity(s, s->cur, row, &slot->tts_tid);
	else if (off)
		shard_rowid_to_tid(s->cur_rowid, &slot->tts_tid);
	return true;
}

/*
 * start_store
 *		Make the store of the rows a scan reads whole: the scan's row type
 *		and, last, the ctid of each row (as an int8, block and offset).  It
 *		holds up to work_mem in memory and the rest in temporary files, as
 *		PostgreSQL keeps rows for later; it is read forward only, and again
 *		from the start by a rescan (tuplestore_rescan).
 */
static void
start_store(ForeignScanState *node, TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	MemoryContext oldcxt;

	if (s->mat_store != NULL)
		return;
	oldcxt = MemoryContextSwitchTo(node->ss.ps.state->es_query_cxt);
	if (s->mat_slot == NULL)
	{
		TupleDesc	scandesc = slot->tts_tupleDescriptor;
		int			natts = scandesc->natts;
		TupleDesc	desc = CreateTemplateTupleDesc(natts + 1);
		int			i;

		for (i = 1; i <= natts; i++)
			TupleDescCopyEntry(desc, i, scandesc, i);
		TupleDescInitEntry(desc, natts + 1, "ctid", INT8OID, -1, 0);
		s->mat_slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
		s->mat_values = palloc(sizeof(Datum) * (natts + 1));
		s->mat_isnull = palloc0(sizeof(bool) * (natts + 1));
	}
	s->mat_store = tuplestore_begin_heap(false, false, work_mem);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * read_shard_whole
 *		Read all of shard t's rows, convert each once (slot serves for it)
 *		and put those the recheck passes into the scan's store with their
 *		ctids, then close the shard's statement: no read of the shard is
 *		under way when its rows are handed over.
 */
static void
read_shard_whole(ForeignScanState *node, ShardTarget *t, TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	int			ncols = Max(s->batch_cols, s->nretrieved + t->nkeys);
	int			natts = slot->tts_tupleDescriptor->natts;
	TupleDesc	desc = s->mat_slot->tts_tupleDescriptor;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	/* a keyed shard's rows lead with the columns of its key */
	if (s->own_batch != NULL && s->own_batch->maxcols < ncols)
	{
		shardio_batch_free(s->own_batch);
		s->own_batch = NULL;
	}
	if (s->own_batch == NULL)
		s->own_batch = shardio_batch_create(ncols, SCAN_BATCH_ROWS);
	t->reader = s->own_batch ? shard_reader_start(&t->job) : NULL;
	if (t->reader == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	s->cur = t;
	do
	{
		ShardBatch *b = s->own_batch;
		int			r;

		rc = shard_reader_next(t->reader, b, errbuf);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			report_read_error(s, t, rc, errbuf);
		t->elapsed_ms += b->fill_ms;
		for (r = 0; r < b->nrows; r++)
		{
			ItemPointer tid = &slot->tts_tid;

			CHECK_FOR_INTERRUPTS();
			t->rows++;
			if (!convert_row(node, &b->values[(size_t) r * b->ncols], slot))
				continue;
			memcpy(s->mat_values, slot->tts_values, sizeof(Datum) * natts);
			memcpy(s->mat_isnull, slot->tts_isnull, sizeof(bool) * natts);
			s->mat_values[natts] =
				Int64GetDatum(((int64) ItemPointerGetBlockNumberNoCheck(tid) << 16) |
							  ItemPointerGetOffsetNumberNoCheck(tid));
			tuplestore_putvalues(s->mat_store, desc, s->mat_values,
								 s->mat_isnull);
		}
	} while (rc == SQLITE_ROW);
	ExecClearTuple(slot);
	t->done = true;
	shard_scan_finish_shard(t);
}

/*
 * fill_store
 *		Read the next shard whole into the scan's store, in place of the
 *		rows of the one before, which were all returned: the scan below a
 *		row-by-row UPDATE or DELETE, whose writes to the shard must not
 *		meet a read of it still under way.  Any other scan of a table the
 *		statement writes (read_all_first) reads every shard before its first
 *		row and keeps the rows for a rescan (check_statement_writes).
 *		False when no shard is left.
 */
static bool
fill_store(ForeignScanState *node, TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;

	if (s->read_all_first && s->mat_complete)
		return false;
	start_store(node, slot);
	if (!s->read_all_first)
	{
		ExecClearTuple(s->mat_slot);
		tuplestore_clear(s->mat_store);
	}
	if (s->next_target >= list_length(s->targets))
	{
		s->mat_complete = s->read_all_first;
		return false;
	}
	do
	{
		ShardTarget *t = list_nth(s->targets, s->next_target++);

		if (start_shard(node, t))
			read_shard_whole(node, t, slot);
	} while (s->read_all_first &&
			 s->next_target < list_length(s->targets));
	s->mat_complete = s->read_all_first;
	return true;
}

/*
 * next_row_stored
 *		The next row of a scan that reads shards whole, from its store:
 *		the converted row and its ctid.  False (slot cleared) after the
 *		last.
 */
static bool
next_row_stored(ForeignScanState *node, TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	int			natts = slot->tts_tupleDescriptor->natts;

	for (;;)
	{
		MemoryContext oldcxt;
		bool		found = false;

		CHECK_FOR_INTERRUPTS();

		/*
		 * A row read back from a temporary file is allocated in the current
		 * context and freed by the next read: not the per-tuple context
		 * the executor calls the scan in, which is reset between rows.
		 */
		if (s->mat_store != NULL)
		{
			oldcxt = MemoryContextSwitchTo(node->ss.ps.state->es_query_cxt);
			found = tuplestore_gettupleslot(s->mat_store, true, false,
											s->mat_slot);
			MemoryContextSwitchTo(oldcxt);
		}
		if (found)
		{
			int64		tid;

			slot_getallattrs(s->mat_slot);
			ExecClearTuple(slot);
			memcpy(slot->tts_values, s->mat_slot->tts_values,
				   sizeof(Datum) * natts);
			memcpy(slot->tts_isnull, s->mat_slot->tts_isnull,
				   sizeof(bool) * natts);
			ExecStoreVirtualTuple(slot);
			tid = DatumGetInt64(s->mat_slot->tts_values[natts]);
			ItemPointerSet(&slot->tts_tid, (BlockNumber) (tid >> 16),
						   (OffsetNumber) (tid & 0xFFFF));
			return true;
		}
		if (!fill_store(node, slot))
		{
			ExecClearTuple(slot);
			return false;
		}
	}
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

	if (s->materialize)
		return next_row_stored(node, slot);

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();

		if (s->batch && s->batch_row < s->batch->nrows)
		{
			ShardValue *row = &s->batch->values[(size_t) s->batch_row *
												s->batch->ncols];

			s->batch_row++;
			s->cur->rows++;
			if (convert_row(node, row, slot))
				return true;
			continue;
		}

		/* The batch is used up: hand it back and get the next. */
		if (s->batch && s->fanout && s->batch != s->own_batch)
			fanout_release_batch(s->fanout, s->batch);
		s->batch = NULL;

		if (!(shard_scan_use_fanout(s) ? next_batch_parallel(node) :
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
 *		OFFSET + LIMIT unless the shards return ties.
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
	/* with ties, every row read is kept: PostgreSQL limits above */
	if (s->shard_bound >= 0 && s->ties == NIL)
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
 *		skipped, nothing after LIMIT (no shard is read further).  A scan
 *		whose shards return ties returns every row, sorted by the prefix,
 *		for PostgreSQL to finish the sort and apply OFFSET and LIMIT.
 */
static bool
next_ordered_row(ForeignScanState *node, TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;

	/*
	 * Whether one shard's rows may pass through is known once its query is
	 * planned (shard_scan_plan_shard), which reading its first row does.
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
		if (s->limit_count >= 0 && s->returned >= s->limit_count &&
			s->ties == NIL)
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
		if (s->skipped < s->limit_offset && s->ties == NIL)
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
		shard_scan_resolve(node);
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
		if (!(shard_scan_use_fanout(s) ? next_batch_parallel(node) :
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
		tuplestore_rescan(s->mat_store);
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
	/* the UPDATE or DELETE above ended first: it read the keys */
	shard_row_keys_end(s->row_keys);
}

/*
 * shard_scan_shard_names
 *		"N of M (a, b, c, and K more)" for EXPLAIN.
 *
 * "and 1 more" would take as much room as the name it stands for, so a
 * list one name longer than EXPLAIN_MAX_SHARD_NAMES is written out whole.
 */
char *
shard_scan_shard_names(ShardScanState *s)
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
 * shard_scan_explain_times
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
void
shard_scan_explain_times(ShardScanState *s, ExplainState *es)
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
 * run_time_value_walker
 *		Does an expression read a value computed while the query runs: a
 *		subquery's (an executor parameter, a SubPlan)?
 */
static bool
run_time_value_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind != PARAM_EXTERN)
		return true;
	if (IsA(node, SubPlan) || IsA(node, AlternativeSubPlan))
		return true;
	return expression_tree_walker(node, run_time_value_walker, context);
}

/*
 * params_known
 *		Can the values the scan binds be computed for a plain EXPLAIN
 *		without running anything that could fail or differ at run time:
 *		constants, and parameters of EXPLAIN EXECUTE?
 */
static bool
params_known(ForeignScanState *node)
{
	ForeignScan *fscan = (ForeignScan *) node->ss.ps.plan;
	bool		have_params = (node->ss.ps.state->es_param_list_info != NULL);
	ListCell   *lc;

	foreach(lc, fscan->fdw_exprs)
	{
		Node	   *expr = lfirst(lc);

		if (expr != NULL && !IsA(expr, Const) &&
			(!have_params || contain_mutable_functions(expr) ||
			 run_time_value_walker(expr, NULL)))
			return false;
	}
	return true;
}

/*
 * explain_time_index
 *		EXPLAIN VERBOSE: the first shard of a routed scan that reads a time
 *		index instead of the tenant's (choose_time_index), with its WHERE
 *		clause in time_where, and in *shards the names of every such shard;
 *		NULL when none does.  A plain
 *		EXPLAIN decides for each shard as its scan would, reading each
 *		briefly (as planning's estimates do), when the values to bind are
 *		known; with ANALYZE the shards read decided.
 */
static ShardTarget *
explain_time_index(ForeignScanState *node, ExplainState *es, char **shards)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	ShardTarget *first = NULL;
	StringInfoData names;
	ListCell   *lc;

	if (!s->resolved || !s->restricted || s->join != NULL ||
		s->topts->reference)
		return NULL;
	/* a shard is opened only where there is a time range to weigh */
	if (!es->analyze && !s->row_order && s->modify_sql == NULL &&
		!s->tenant_only &&
		shard_time_range_seconds(s->where_sqls, NULL, 0) != NIL)
	{
		if (!s->params_ready)
		{
			if (!params_known(node))
				return NULL;
			shard_scan_eval_params(s, node->ss.ps.ps_ExprContext);
			s->params_ready = true;
		}
		foreach(lc, s->targets)
		{
			ShardTarget *t = lfirst(lc);
			MemoryContext oldcxt;

			if (t->sql != NULL || t->tenants == NIL)
				continue;
			t->conn = shard_conn_get_brief(s->opts, &t->info, true);
			if (t->conn == NULL)
				continue;
			oldcxt = MemoryContextSwitchTo(s->resolve_cxt);
			shard_tenant_rule_lookup(&t->tenant_rule, shard_conn_db(t->conn),
									 s->topts->table, s->topts->tenant_column,
									 s->tenant_kind);
			t->tenant_is_text = t->tenant_rule.kind == SHARDIO_TENANT_TEXT &&
				t->tenant_rule.affinity == 'T';
			t->time_index = choose_time_index(s, t);
			if (t->time_index != NULL)
			{
				StringInfoData where;
				List	   *extra;

				initStringInfo(&where);
				build_where_sql(&where, s, t, &extra);
				t->time_where = where.data;
			}
			MemoryContextSwitchTo(oldcxt);
			shard_conn_release(t->conn);
			t->conn = NULL;
		}
	}

	initStringInfo(&names);
	foreach(lc, s->targets)
	{
		ShardTarget *t = lfirst(lc);

		if (t->time_index == NULL)
			continue;
		if (first == NULL)
			first = t;
		appendStringInfo(&names, "%s%s", names.len > 0 ? ", " : "",
						 t->info.shard_id);
	}
	*shards = names.data;
	return first;
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
		shard_scan_resolve(node);

	if (s->join)
		ExplainPropertyText("Relations", shard_join_relations(s->join), es);
	if (s->topts->reference)
		ExplainPropertyText("Distribution", "reference, one shard's copy",
							es);
	if (s->resolved)
		ExplainPropertyText("Shards", shard_scan_shard_names(s), es);
	else
		ExplainPropertyText("Shards", "chosen at run time", es);
	ExplainPropertyText("Pushdown",
						s->row_order ?
						(s->limit_exprs == NIL ? "rows, sorted" :
						 s->ties != NIL ? "rows, sorted by a prefix and limited with ties" :
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

	if (es->verbose && s->ties != NIL && s->shard_bound >= 0)
	{
		/* with ties: a shard's query, without a time key's other forms */
		StringInfoData sql;
		StringInfoData where;

		initStringInfo(&sql);
		initStringInfo(&where);
		shard_join_conditions(&where, s->where_sqls);
		append_ties_sql(&sql, s, s->select_sql, where.data);
		ExplainPropertyText("SQLite query", sql.data, es);
	}
	else if (es->verbose)
	{
		StringInfoData sql;
		ShardTarget *chosen;
		char	   *shards;

		initStringInfo(&sql);
		appendStringInfoString(&sql, s->agg_spec ? s->raw_sql : s->select_sql);
		if (s->join)
		{
			List	   *extra = NIL;

			shard_join_append_from(&sql, s->join, NULL, s->tenant_kind, NIL,
								   NIL, s->nparams, &extra);
		}
		/*
		 * A shard that reads a time index: its conditions as that shard runs
		 * them, its tenant filter among them.
		 */
		chosen = explain_time_index(node, es, &shards);
		if (chosen != NULL)
			appendStringInfo(&sql, " WHERE %s", chosen->time_where);
		else if (s->where_sqls != NIL)
		{
			appendStringInfoString(&sql, " WHERE ");
			shard_join_conditions(&sql, s->where_sqls);
		}
		if (s->agg_spec == NULL)
			append_group_sql(&sql, s, NULL);
		ExplainPropertyText("SQLite query", sql.data, es);
		if (chosen != NULL)
			ExplainPropertyText("Time Index",
								psprintf("%s (%s)", chosen->time_index, shards),
								es);
	}

	if (es->analyze && s->resolved)
		shard_scan_explain_times(s, es);
	if (es->analyze && s->resolved)
		explain_flagged_shards(s, es, "Tenant Index Skipped", true);
}