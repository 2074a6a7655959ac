/*-------------------------------------------------------------------------
 *
 * directmodify.c
 *		  UPDATE and DELETE run inside the shards: one SQLite statement per
 *		  shard, planned by modifyplan.c (shardPlanDirectModify)
 *
 * A direct UPDATE or DELETE is a scan (scan.c) whose statement changes the
 * rows instead of returning them: the same shards, conditions and tenant
 * filters, one statement per shard inside its write transaction, RETURNING
 * read back from SQLite's own.  Without RETURNING the shards' statements
 * run at once on the fan-out's worker threads, after the backend has taken
 * each shard's write lock and bound its values.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "scan.h"

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
	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
		shard_reference_direct_begin(node);
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
		shard_scan_eval_params(s, node->ss.ps.ps_ExprContext);
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
	shard_scan_plan_shard(s, t);
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

	/*
	 * A new bigint the shard computes is stored as SQLite converts it to
	 * the column's affinity: under REAL affinity a double, which holds an
	 * integer beyond 2^53 inexactly.  There the bound of the value is 53
	 * bits, and a value beyond it fails as an INSERT's would (store.c).
	 */
	{
		List	   *bounds = s->modify_bigint_bounds;
		int			i;

		for (i = 0; i < list_length(bounds); i += 2)
		{
			char	   *col = shard_column_name(RelationGetRelid(s->rel),
												list_nth_int(bounds, i));
			ShardValue *bound = &t->binds[list_nth_int(bounds, i + 1) - 1];

			bound->type = SQLITE_INTEGER;
			bound->u.i =
				shard_conn_column_affinity(t->conn, s->topts->table, col) == 'R' ?
				53 : 64;
		}
	}

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
		shard_scan_prepare_failed(s, t, rc, errbuf, s->rel);
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
	/* of a reference table's copies, one counts (refwrite.c) */
	if (!shard_reference_counts(s, t))
		return;
	s->modified += changes;
	/* a WITH's UPDATE does not count toward the statement's rows */
	if (s->modify_set_processed)
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

		shard_scan_next_event(s, &ev);
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
				shard_scan_finish_shard(t);
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
				shard_scan_finish_shard(t);
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
		shard_scan_resolve(node);
		s->modify_cur = NULL;
		if (!returning && shard_scan_use_fanout(s))
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
			/* of a reference table's copies, one returns (refwrite.c) */
			if (!shard_reference_counts(s, t))
				continue;
			s->modified++;
			if (s->modify_set_processed)
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
		shard_scan_finish_shard(t);
		s->modify_cur = NULL;
	}
	shard_reference_direct_end(s);
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
		shard_scan_resolve(node);
	ExplainPropertyText("Direct Modify",
						s->resolved && s->modify_returning == NIL &&
						shard_scan_use_fanout(s) ?
						"one statement per shard, in parallel" :
						"one statement per shard", es);
	if (s->topts->reference)
		ExplainPropertyText("Distribution", "reference, every shard's copy",
							es);
	if (s->resolved)
		ExplainPropertyText("Shards", shard_scan_shard_names(s), es);
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
		shard_scan_explain_times(s, es);
}
