/*-------------------------------------------------------------------------
 *
 * modify.c
 *		  INSERT and COPY into a foreign table: each row to its tenant's shard
 *
 * A row goes to the shard that answers for its tenant when the statement
 * starts (the directory is checked for changes once per statement, as for
 * reads): shard_id while the tenant is ACTIVE or MIGRATING, the target once
 * it is DONE.  A row of a tenant the directory does not know, of no tenant
 * (NULL), or of a tenant outside the user mapping's "tenants" is refused
 * before anything is written.
 *
 * Each shard gets one prepared INSERT for the statement, run once per row
 * inside the shard's write transaction, which connection.c begins at the
 * first write and commits or rolls back with the PostgreSQL transaction.
 * The statement lists the columns the INSERT sets and those PostgreSQL has
 * a default for; a column left out gets the shard's own default, and an
 * INTEGER PRIMARY KEY left out (or NULL) the rowid SQLite assigns, which
 * RETURNING reads back with SQLite's own RETURNING.  Values are stored in
 * the forms store.c chooses, so that they read back unchanged.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/sysattr.h"
#include "miscadmin.h"
#include "access/table.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "compat.h"

/* Positions in a ModifyTable's fdw_private for an INSERT. */
enum FdwModifyPrivateIndex
{
	FdwModifyPrivateTargetAttrs,	/* IntList: columns the INSERT sets */
	FdwModifyPrivateReturningAttrs, /* IntList: columns RETURNING reads */
	FdwModifyPrivateOnConflictNothing,	/* Integer: ON CONFLICT DO NOTHING */
	FdwModifyPrivateCount
};

/* The statement of one shard, prepared at its first row. */
typedef struct ModifyTarget
{
	char	   *shard_id;
	ShardConn  *conn;
	sqlite3_stmt *stmt;
} ModifyTarget;

/* Execution state of an INSERT or COPY into one foreign table. */
typedef struct ShardModifyState
{
	Relation	rel;
	ShardTableOptions *topts;
	ShardServerOptions *opts;
	ShardDirectory *dir;
	char	   *sql;			/* the INSERT, the same for every shard */
	List	   *target_attrs;	/* attnums of the values bound, in order */
	ShardStoreConv *stores;		/* one per target attr */
	ShardValue *values;
	List	   *returning_attrs;	/* attnums RETURNING reads, in order */
	ShardColumnConv *returning;	/* one per returning attr */
	bool		on_conflict_nothing;
	Oid			tenant_type;
	List	   *allowed;		/* the user mapping's tenants, or NIL */
	List	   *targets;		/* ModifyTarget per shard written */
	int			batch_size;
	TupleTableSlot **inserted;	/* a batch's rows that were inserted */
	int			ninserted_max;
	MemoryContext row_cxt;		/* reset per row */

	/* for the error context */
	const char *shard_id;
	const char *tenant;
	int			col;			/* returning column being read, or -1 */
} ShardModifyState;

static void modify_error_callback(void *arg);
static void modify_memory_callback(void *arg);

/*
 * tenant_allowed
 *		Is tenant one of the user mapping's?
 */
static bool
tenant_allowed(List *allowed, const char *tenant)
{
	ListCell   *lc;

	foreach(lc, allowed)
		if (strcmp((const char *) lfirst(lc), tenant) == 0)
			return true;
	return false;
}

/*
 * shardIsForeignRelUpdatable
 *		Rows can be inserted; UPDATE and DELETE are not supported yet.
 */
int
shardIsForeignRelUpdatable(Relation rel)
{
	return (1 << CMD_INSERT);
}

/*
 * insert_sql
 *		INSERT INTO table (columns) VALUES (?, ...), with ON CONFLICT DO
 *		NOTHING and RETURNING as asked.
 */
static char *
insert_sql(Relation rel, ShardTableOptions *topts, List *target_attrs,
		   bool on_conflict_nothing, List *returning_attrs)
{
	StringInfoData sql;
	ListCell   *lc;
	int			i;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "INSERT INTO ");
	shard_quote_identifier(&sql, topts->table);
	if (target_attrs == NIL)
		appendStringInfoString(&sql, " DEFAULT VALUES");
	else
	{
		appendStringInfoString(&sql, " (");
		foreach(lc, target_attrs)
		{
			if (foreach_current_index(lc) > 0)
				appendStringInfoString(&sql, ", ");
			shard_quote_identifier(&sql,
								   shard_column_name(RelationGetRelid(rel),
													 lfirst_int(lc)));
		}
		appendStringInfoString(&sql, ") VALUES (");
		for (i = 1; i <= list_length(target_attrs); i++)
			appendStringInfo(&sql, "%s?%d", i > 1 ? ", " : "", i);
		appendStringInfoChar(&sql, ')');
	}
	if (on_conflict_nothing)
		appendStringInfoString(&sql, " ON CONFLICT DO NOTHING");
	if (returning_attrs != NIL)
	{
		appendStringInfoString(&sql, " RETURNING ");
		foreach(lc, returning_attrs)
		{
			if (foreach_current_index(lc) > 0)
				appendStringInfoString(&sql, ", ");
			shard_quote_identifier(&sql,
								   shard_column_name(RelationGetRelid(rel),
													 lfirst_int(lc)));
		}
	}
	return sql.data;
}

/*
 * shardPlanForeignModify
 *		Decide the columns an INSERT writes and returns.
 *
 * A column is written when the statement sets it or PostgreSQL has a
 * default for it; any other column is left to the shard, so that its
 * default (or SQLite's rowid) applies, as it would for the application's
 * own INSERT.
 */
List *
shardPlanForeignModify(PlannerInfo *root, ModifyTable *plan,
					   Index resultRelation, int subplan_index)
{
	RangeTblEntry *rte = planner_rt_fetch(resultRelation, root);
	Relation	rel;
	TupleDesc	tupdesc;
	Bitmapset  *inserted = inserted_cols_compat(root, rte);
	List	   *target_attrs = NIL;
	List	   *returning_attrs = NIL;
	bool		on_conflict_nothing = false;
	int			i;

	/* the executor refuses what IsForeignRelUpdatable does not offer */
	if (plan->operation != CMD_INSERT)
		return NIL;

	rel = table_open(rte->relid, NoLock);
	tupdesc = RelationGetDescr(rel);

	if (plan->onConflictAction == ONCONFLICT_NOTHING)
		on_conflict_nothing = true;
	else if (plan->onConflictAction != ONCONFLICT_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ON CONFLICT DO UPDATE is not supported on foreign table \"%s\"",
						RelationGetRelationName(rel)),
				 errhint("Use ON CONFLICT DO NOTHING, without a conflict target.")));

	for (i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (att->attisdropped || att->attgenerated)
			continue;
		if (att->atthasdef ||
			bms_is_member(att->attnum - FirstLowInvalidHeapAttributeNumber,
						  inserted))
			target_attrs = lappend_int(target_attrs, att->attnum);
	}

	if (plan->returningLists != NIL)
	{
		List	   *returning = list_nth(plan->returningLists, subplan_index);
		Bitmapset  *attrs = NULL;
		bool		whole;

		pull_varattnos((Node *) returning, resultRelation, &attrs);
		whole = bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, attrs);
		for (i = 0; i < tupdesc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(tupdesc, i);

			if (att->attisdropped)
				continue;
			if (whole ||
				bms_is_member(att->attnum - FirstLowInvalidHeapAttributeNumber,
							  attrs))
				returning_attrs = lappend_int(returning_attrs, att->attnum);
		}
	}
	table_close(rel, NoLock);

	return list_make3(target_attrs, returning_attrs,
					  makeInteger(on_conflict_nothing));
}

/*
 * begin_modify
 *		Set up an INSERT (or COPY) of rows into a foreign table.
 */
static ShardModifyState *
begin_modify(EState *estate, ResultRelInfo *rinfo, List *target_attrs,
			 List *returning_attrs, bool on_conflict_nothing)
{
	ShardModifyState *ms = palloc0(sizeof(ShardModifyState));
	Relation	rel = rinfo->ri_RelationDesc;
	TupleDesc	tupdesc = RelationGetDescr(rel);
	ListCell   *lc;
	int			i;

	ms->rel = rel;
	ms->topts = shard_table_options(rel);
	ms->opts = shard_server_options(ms->topts->serverid);
	ms->target_attrs = target_attrs;
	ms->returning_attrs = returning_attrs;
	ms->on_conflict_nothing = on_conflict_nothing;
	ms->sql = insert_sql(rel, ms->topts, target_attrs, on_conflict_nothing,
						 returning_attrs);
	ms->col = -1;

	ms->stores = palloc0(sizeof(ShardStoreConv) * (list_length(target_attrs) + 1));
	ms->values = palloc0(sizeof(ShardValue) * (list_length(target_attrs) + 1));
	i = 0;
	foreach(lc, target_attrs)
		shard_store_init(&ms->stores[i++],
						 TupleDescAttr(tupdesc, lfirst_int(lc) - 1)->atttypid);
	ms->returning = palloc0(sizeof(ShardColumnConv) * (list_length(returning_attrs) + 1));
	i = 0;
	foreach(lc, returning_attrs)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, lfirst_int(lc) - 1);

		shard_conv_init(&ms->returning[i++], att->atttypid, att->atttypmod);
	}

	ms->tenant_type = TupleDescAttr(tupdesc, ms->topts->tenant_attnum - 1)->atttypid;
	ms->allowed = shard_tenant_ids_text(shard_user_tenants(ms->opts->serverid,
														   modify_user_compat(rinfo, estate)));
	ms->dir = shard_directory_get(ms->opts);
	ms->batch_size = ms->topts->batch_size;
	ms->row_cxt = AllocSetContextCreate(estate->es_query_cxt,
										"sqlite_shard_fdw insert row",
										ALLOCSET_SMALL_SIZES);
	{
		MemoryContextCallback *cb = palloc0(sizeof(MemoryContextCallback));

		cb->func = modify_memory_callback;
		cb->arg = ms;
		/* the query's context, which is deleted but never reset */
		MemoryContextRegisterResetCallback(estate->es_query_cxt, cb);
	}
	return ms;
}

/*
 * shardBeginForeignModify
 *		Start an INSERT planned by shardPlanForeignModify.
 */
void
shardBeginForeignModify(ModifyTableState *mtstate, ResultRelInfo *rinfo,
						List *fdw_private, int subplan_index, int eflags)
{
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	rinfo->ri_FdwState =
		begin_modify(mtstate->ps.state, rinfo,
					 list_nth(fdw_private, FdwModifyPrivateTargetAttrs),
					 list_nth(fdw_private, FdwModifyPrivateReturningAttrs),
					 intVal(list_nth(fdw_private,
									 FdwModifyPrivateOnConflictNothing)));
}

/*
 * shardBeginForeignInsert
 *		Start a COPY into the table (or a row routed to it as a partition):
 *		every column is written.
 */
void
shardBeginForeignInsert(ModifyTableState *mtstate, ResultRelInfo *rinfo)
{
	TupleDesc	tupdesc = RelationGetDescr(rinfo->ri_RelationDesc);
	List	   *target_attrs = NIL;
	List	   *returning_attrs = NIL;
	int			i;

	for (i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (!att->attisdropped && !att->attgenerated)
			target_attrs = lappend_int(target_attrs, att->attnum);
	}
	/* A partition routed to by an INSERT ... RETURNING reads every column. */
	if (rinfo->ri_returningList != NIL)
		returning_attrs = list_copy(target_attrs);
	rinfo->ri_FdwState =
		begin_modify(mtstate->ps.state, rinfo, target_attrs, returning_attrs,
					 mtstate->ps.plan != NULL &&
					 ((ModifyTable *) mtstate->ps.plan)->onConflictAction ==
					 ONCONFLICT_NOTHING);
}

/*
 * route_row
 *		The shard a row goes to: its tenant's, per the directory.  Refuses
 *		a row of no tenant, of a tenant the directory does not know, or of
 *		one the user mapping does not allow.
 */
static ShardInfo *
route_row(ShardModifyState *ms, TupleTableSlot *slot)
{
	AttrNumber	attnum = ms->topts->tenant_attnum;
	bool		isnull;
	Datum		value = slot_getattr(slot, attnum, &isnull);
	char	   *tenant;
	ShardLocation *loc;

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("null value in column \"%s\" of relation \"%s\" violates not-null constraint",
						NameStr(TupleDescAttr(RelationGetDescr(ms->rel),
											  attnum - 1)->attname),
						RelationGetRelationName(ms->rel)),
				 errdetail("Every row of a sharded table belongs to a tenant.")));

	tenant = shard_tenant_id(ms->tenant_type, value);
	ms->tenant = tenant;
	if (ms->allowed != NIL && !tenant_allowed(ms->allowed, tenant))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to write rows of tenant \"%s\" into foreign table \"%s\"",
						tenant, RelationGetRelationName(ms->rel)),
				 errdetail("The user mapping limits the role to its own tenants.")));

	loc = shard_directory_locate(ms->dir, tenant);
	if (loc == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
				 errmsg("tenant \"%s\" is not in the directory of server \"%s\"",
						tenant, ms->opts->servername),
				 errdetail("A row is written to the shard the directory places its tenant on."),
				 errhint("Register the tenant with tenant_add('%s', '%s').",
						 ms->opts->servername, tenant)));
	return shard_directory_shard(ms->dir, loc->owner);
}

/*
 * target_for
 *		The prepared INSERT of a shard, inside the shard's write
 *		transaction.
 */
static ModifyTarget *
target_for(ShardModifyState *ms, ShardInfo *shard)
{
	ListCell   *lc;
	ModifyTarget *t;
	MemoryContext oldcxt;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	foreach(lc, ms->targets)
	{
		t = lfirst(lc);
		if (strcmp(t->shard_id, shard->shard_id) == 0)
			return t;
	}

	oldcxt = MemoryContextSwitchTo(GetMemoryChunkContext(ms));
	t = palloc0(sizeof(ModifyTarget));
	t->shard_id = pstrdup(shard->shard_id);
	t->conn = shard_conn_get_for_write(ms->opts, shard);
	ms->targets = lappend(ms->targets, t);
	MemoryContextSwitchTo(oldcxt);

	rc = shard_conn_prepare(t->conn, ms->sql, &t->stmt, errbuf);
	if (rc != SQLITE_OK)
	{
		TupleDesc	tupdesc = RelationGetDescr(ms->rel);
		char	  **colnames = palloc(sizeof(char *) * (tupdesc->natts + 1));
		int			ncols = 0;
		int			i;

		t->stmt = NULL;
		for (i = 0; i < tupdesc->natts; i++)
			if (!TupleDescAttr(tupdesc, i)->attisdropped)
				colnames[ncols++] = shard_column_name(RelationGetRelid(ms->rel),
													  i + 1);
		shard_conn_check_table(t->conn, RelationGetRelationName(ms->rel),
							   ms->topts->table, colnames, ncols);
		shard_report_sqlite_error(ERROR, rc, shard->shard_id,
								  psprintf("prepare the insert into table \"%s\"",
										   ms->topts->table),
								  errbuf);
	}
	return t;
}

/*
 * insert_row
 *		Write one row to its shard; with RETURNING, read what the shard
 *		stored back into the slot.  Returns false when ON CONFLICT DO
 *		NOTHING skipped the row.
 */
static bool
insert_row(ShardModifyState *ms, TupleTableSlot *slot)
{
	ErrorContextCallback errcallback;
	MemoryContext oldcxt;
	ShardInfo  *shard;
	ModifyTarget *t;
	ListCell   *lc;
	char		errbuf[SHARDIO_ERRLEN];
	bool		inserted;
	int			rc;
	int			i;

	MemoryContextReset(ms->row_cxt);
	oldcxt = MemoryContextSwitchTo(ms->row_cxt);

	errcallback.callback = modify_error_callback;
	errcallback.arg = ms;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	slot_getallattrs(slot);
	ms->shard_id = NULL;
	ms->tenant = NULL;
	shard = route_row(ms, slot);
	ms->shard_id = shard->shard_id;
	t = target_for(ms, shard);

	i = 0;
	foreach(lc, ms->target_attrs)
	{
		AttrNumber	attnum = lfirst_int(lc);

		shard_store_value(&ms->stores[i], slot->tts_values[attnum - 1],
						  slot->tts_isnull[attnum - 1], &ms->values[i]);
		i++;
	}
	rc = shardio_bind(t->stmt, 1, ms->values, list_length(ms->target_attrs),
					  errbuf);
	if (rc != SQLITE_OK)
		shard_report_sqlite_error(ERROR, rc, shard->shard_id,
								  psprintf("bind the values to insert into table \"%s\"",
										   ms->topts->table),
								  errbuf);

	rc = sqlite3_step(t->stmt);
	if (rc == SQLITE_ROW)
	{
		/* RETURNING: the row as the shard stored it */
		ExecClearTuple(slot);
		memset(slot->tts_isnull, true,
			   sizeof(bool) * slot->tts_tupleDescriptor->natts);
		i = 0;
		MemoryContextSwitchTo(oldcxt);
		foreach(lc, ms->returning_attrs)
		{
			AttrNumber	attnum = lfirst_int(lc);
			ShardValue	v;
			sqlite3_mutex *mutex = sqlite3_db_mutex(shard_conn_db(t->conn));
			bool		ok;

			/* copied under the handle's mutex, as shardio_column asks */
			sqlite3_mutex_enter(mutex);
			ok = shardio_column(t->stmt, i, &v);
			if (ok && (v.type == SQLITE_TEXT || v.type == SQLITE_BLOB))
			{
				/* every byte: a BLOB may hold zero bytes */
				char	   *copy = palloc(v.len + 1);

				memcpy(copy, v.u.p, v.len);
				copy[v.len] = '\0';
				v.u.p = copy;
			}
			sqlite3_mutex_leave(mutex);
			if (!ok)
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("out of memory")));
			ms->col = i;
			slot->tts_values[attnum - 1] =
				shard_value_to_datum(&ms->returning[i], &v,
									 &slot->tts_isnull[attnum - 1]);
			i++;
		}
		ms->col = -1;
		MemoryContextSwitchTo(ms->row_cxt);
		ExecStoreVirtualTuple(slot);
		inserted = true;
		rc = sqlite3_step(t->stmt);
	}
	else
		inserted = (rc == SQLITE_DONE &&
					sqlite3_changes(shard_conn_db(t->conn)) > 0);
	if (rc != SQLITE_DONE)
	{
		const char *msg = pstrdup(sqlite3_errmsg(shard_conn_db(t->conn)));

		rc = sqlite3_extended_errcode(shard_conn_db(t->conn));
		sqlite3_reset(t->stmt);
		shard_report_write_error(rc, shard->shard_id, ms->topts->table,
								 ms->tenant, msg,
								 psprintf("insert into table \"%s\"",
										  ms->topts->table));
	}
	sqlite3_reset(t->stmt);
	sqlite3_clear_bindings(t->stmt);

	error_context_stack = errcallback.previous;
	MemoryContextSwitchTo(oldcxt);
	return inserted;
}

/*
 * shardExecForeignInsert
 *		Insert one row.
 */
TupleTableSlot *
shardExecForeignInsert(EState *estate, ResultRelInfo *rinfo,
					   TupleTableSlot *slot, TupleTableSlot *planSlot)
{
	ShardModifyState *ms = (ShardModifyState *) rinfo->ri_FdwState;

	return insert_row(ms, slot) ? slot : NULL;
}

/*
 * shardExecForeignBatchInsert
 *		Insert a batch of rows; *numSlots becomes the number inserted.
 */
TupleTableSlot **
shardExecForeignBatchInsert(EState *estate, ResultRelInfo *rinfo,
							TupleTableSlot **slots, TupleTableSlot **planSlots,
							int *numSlots)
{
	ShardModifyState *ms = (ShardModifyState *) rinfo->ri_FdwState;
	int			n = 0;
	int			i;

	/* the executor owns slots[]: the rows inserted go to an array of ours */
	if (ms->inserted == NULL || ms->ninserted_max < *numSlots)
	{
		ms->inserted = MemoryContextAlloc(GetMemoryChunkContext(ms),
										  sizeof(TupleTableSlot *) * *numSlots);
		ms->ninserted_max = *numSlots;
	}
	for (i = 0; i < *numSlots; i++)
	{
		if (insert_row(ms, slots[i]))
			ms->inserted[n++] = slots[i];
	}
	*numSlots = n;
	return ms->inserted;
}

/*
 * shardGetForeignModifyBatchSize
 *		Rows per ExecForeignBatchInsert: the batch_size option, or one
 *		where each row must come back (RETURNING, row triggers, WITH CHECK
 *		OPTION).
 */
int
shardGetForeignModifyBatchSize(ResultRelInfo *rinfo)
{
	ShardModifyState *ms = (ShardModifyState *) rinfo->ri_FdwState;

	if (rinfo->ri_projectReturning != NULL ||
		rinfo->ri_WithCheckOptions != NIL ||
		(rinfo->ri_TrigDesc &&
		 (rinfo->ri_TrigDesc->trig_insert_before_row ||
		  rinfo->ri_TrigDesc->trig_insert_after_row)))
		return 1;
	if (ms != NULL)
		return ms->batch_size;
	return shard_table_options(rinfo->ri_RelationDesc)->batch_size;
}

/*
 * end_modify
 *		Give back every shard's statement and handle; the writes stay in
 *		the shards' transactions until PostgreSQL's ends.
 */
static void
end_modify(ShardModifyState *ms)
{
	ListCell   *lc;

	if (ms == NULL)
		return;
	foreach(lc, ms->targets)
	{
		ModifyTarget *t = lfirst(lc);

		if (t->stmt)
			shard_conn_unprepare(t->conn, t->stmt);
		t->stmt = NULL;
		shard_conn_release(t->conn);
	}
	ms->targets = NIL;
}

/*
 * modify_memory_callback
 *		Finalize the statements of an INSERT that ended in an error, which
 *		never reached EndForeignModify (the statement's memory goes).
 */
static void
modify_memory_callback(void *arg)
{
	ShardModifyState *ms = (ShardModifyState *) arg;
	ListCell   *lc;

	foreach(lc, ms->targets)
	{
		ModifyTarget *t = lfirst(lc);

		if (t->stmt)
		{
			sqlite3_finalize(t->stmt);
			shard_conn_forget_stmt(t->conn);
		}
		t->stmt = NULL;
	}
	ms->targets = NIL;
}

/*
 * shardEndForeignModify
 *		An INSERT is done.
 */
void
shardEndForeignModify(EState *estate, ResultRelInfo *rinfo)
{
	end_modify((ShardModifyState *) rinfo->ri_FdwState);
}

/*
 * shardEndForeignInsert
 *		A COPY is done.
 */
void
shardEndForeignInsert(EState *estate, ResultRelInfo *rinfo)
{
	end_modify((ShardModifyState *) rinfo->ri_FdwState);
}

/*
 * shardExplainForeignModify
 *		Show the SQLite statement each shard runs.
 */
void
shardExplainForeignModify(ModifyTableState *mtstate, ResultRelInfo *rinfo,
						  List *fdw_private, int subplan_index,
						  ExplainState *es)
{
	Relation	rel = rinfo->ri_RelationDesc;

	if (es->verbose)
		ExplainPropertyText("SQLite statement",
							insert_sql(rel, shard_table_options(rel),
									   list_nth(fdw_private, FdwModifyPrivateTargetAttrs),
									   intVal(list_nth(fdw_private,
													   FdwModifyPrivateOnConflictNothing)),
									   list_nth(fdw_private, FdwModifyPrivateReturningAttrs)),
							es);
}

/*
 * modify_error_callback
 *		Name the shard, table and tenant of the row being written.
 */
static void
modify_error_callback(void *arg)
{
	ShardModifyState *ms = (ShardModifyState *) arg;

	if (ms->shard_id == NULL)
		return;
	if (ms->col >= 0)
		errcontext("column \"%s\" of table \"%s\" on shard \"%s\", returned for tenant \"%s\"",
				   shard_column_name(RelationGetRelid(ms->rel),
									 list_nth_int(ms->returning_attrs, ms->col)),
				   ms->topts->table, ms->shard_id, ms->tenant);
	else
		errcontext("inserting into table \"%s\" on shard \"%s\", tenant \"%s\"",
				   ms->topts->table, ms->shard_id, ms->tenant);
}
