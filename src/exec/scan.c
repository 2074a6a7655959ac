/*-------------------------------------------------------------------------
 *
 * scan.c
 *		  Executor side of a foreign table scan: its lifecycle and routing
 *
 * When a scan first runs, it asks the directory (checked for changes at
 * that moment) which shards to read: the owners of the tenants its tenant
 * condition names, or every shard.  Each shard then runs the SQL that
 * planning built (shardsql.c), with the values bound, inside one read
 * transaction; rows come back in batches copied out of SQLite (shardio.c)
 * and are read, merged and converted to the foreign table's types in
 * scanread.c.  EXPLAIN of a scan is in scanexplain.c.
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
 * A direct UPDATE or DELETE (directmodify.c) is such a scan whose
 * statement changes the rows instead of returning them; the scan below a
 * row-by-row one hands each row over with its identity (rowidentity.c).
 * That scan, and any other scan of a table its statement writes, reads
 * each shard to its end before it returns the shard's rows
 * (check_statement_writes).
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "compat.h"
#include "scan.h"

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
 * shard_scan_stop_reading
 *		Stop the fan-out's workers (joining them) and finalize every shard
 *		statement; with release, also give the handles back.  After an
 *		error the handles' counts are reset at transaction end instead.
 */
void
shard_scan_stop_reading(ShardScanState *s, bool release)
{
	ListCell   *lc;

	/* A batch being converted belongs to the pool: give it back first. */
	if (s->fanout && s->batch && s->batch != s->own_batch)
		fanout_release_batch(s->fanout, s->batch);
	/* so do a merge's */
	shard_scan_merge_end(s, release);

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
	shard_progress_end(s);
}

/*
 * scan_memory_callback
 *		Release threads and SQLite statements of a scan whose state goes
 *		away without EndForeignScan, as after an error.
 */
static void
scan_memory_callback(void *arg)
{
	shard_scan_stop_reading((ShardScanState *) arg, false);
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
 * shard_scan_eval_limit
 *		Fix the scan's OFFSET and LIMIT, and so the bound each shard gets.
 */
void
shard_scan_eval_limit(ForeignScanState *node)
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
				shard_append_column_sql(&ret, RelationGetRelid(rel),
										att->attnum);
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
 * all_targets
 *		A target for each of shards, whose ids are distinct.  A fan-out over
 *		a fleet of one file per tenant keeps a hundred thousand of them
 *		until the scan ends, so they are one array, and their ids and paths
 *		one buffer, rather than three allocations each.
 */
static List *
all_targets(List *shards)
{
	ShardTarget *targets;
	List	   *result = NIL;
	Size		bytes = 0;
	char	   *text;
	ListCell   *lc;

	if (shards == NIL)
		return NIL;
	foreach(lc, shards)
	{
		ShardInfo  *info = lfirst(lc);

		bytes += strlen(info->shard_id) + strlen(info->path) + 2;
	}
	targets = palloc_extended(sizeof(ShardTarget) * list_length(shards),
							  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	text = palloc_extended(bytes, MCXT_ALLOC_HUGE);
	foreach(lc, shards)
	{
		ShardInfo  *info = lfirst(lc);
		ShardTarget *t = &targets[foreach_current_index(lc)];
		size_t		len;

		len = strlen(info->shard_id) + 1;
		t->info.shard_id = memcpy(text, info->shard_id, len);
		text += len;
		len = strlen(info->path) + 1;
		t->info.path = memcpy(text, info->path, len);
		text += len;
		result = lappend(result, t);
	}
	return result;
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
	/* went with the reset (shardsql.c) */
	s->plan_cxt = NULL;
	s->sql_texts = NULL;

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
		/* shards of distinct ids: no need to look for each among the rest */
		s->targets = all_targets(shard_directory_shards(s->dir));
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
	shard_scan_eval_limit(node);
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
		if (!(shard_scan_use_fanout(s) ? shard_scan_next_batch_parallel(node) :
			  shard_scan_next_batch_serial(node)))
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
		shard_scan_next_ordered_row(node, slot);
	else
		shard_scan_next_row(node, slot);

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
		shard_scan_end_row_sort(s);
		tuplestore_rescan(s->mat_store);
		s->batch = NULL;
		s->cur = NULL;
		return;
	}
	shard_scan_stop_reading(s, true);
	if (s->merge)
		shard_merge_reset(s->merge);
	shard_scan_end_row_sort(s);
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
	shard_scan_stop_reading(s, true);
	if (s->merge)
		shard_merge_end(s->merge);
	shard_scan_end_row_sort(s);
	/* the UPDATE or DELETE above ended first: it read the keys */
	shard_row_keys_end(s->row_keys);
}
