/*-------------------------------------------------------------------------
 *
 * modify.c
 *		  Writes to a foreign table: INSERT and COPY, each row to its tenant's
 *		  shard, and row-by-row UPDATE and DELETE, as modifyplan.c planned them
 *
 * A row goes to the shard that answers for its tenant when the statement
 * starts (the directory is checked for changes once per statement, as for
 * reads): shard_id while the tenant is ACTIVE or MIGRATING, the target once
 * it is DONE.  A row of a tenant the directory does not know, of no tenant
 * (NULL), or of a tenant outside the user mapping's "tenants" is refused
 * before anything is written.
 *
 * Each shard gets one prepared statement for the statement, run once per
 * row inside the shard's write transaction, which connection.c begins at
 * the first write and commits or rolls back with the PostgreSQL
 * transaction.  An INSERT lists the columns it sets and those PostgreSQL
 * has a default for; a column left out gets the shard's own default, and
 * an INTEGER PRIMARY KEY left out (or NULL) the rowid SQLite assigns, which
 * RETURNING reads back with SQLite's own RETURNING.  Values are stored in
 * the forms store.c chooses, fitted to each shard column's affinity, so
 * that they read back unchanged.
 *
 * A COPY whose rows need not come back (no RETURNING, no row trigger, no
 * check option) buffers each shard's rows and inserts them batch_size at a
 * time, each batch in the order of the shard's primary key (copybatch.c).
 *
 * An UPDATE or DELETE runs inside the shards when it can, as one statement
 * per shard (modifyplan.c plans it, directmodify.c runs it).  Otherwise
 * it runs row by row: the scan reads each shard to its end before it hands
 * a row over, with the number of the shard and the row's rowid as its
 * ctid, PostgreSQL evaluates what SQLite cannot, and each row is changed on
 * the shard it was read from (not routed by the directory: the statement
 * changes the rows a statement run inside the shards would, a row of no
 * tenant included) by its rowid and tenant.  A shard whose table is
 * WITHOUT ROWID is read with its primary key instead, whose
 * values the scan keeps exactly as SQLite returned them (the ctid numbers
 * them), and each row is changed by those values, compared with the key's
 * collations, and its tenant.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "compat.h"
#include "exec/modify.h"

/*
 * sqlite_shard_fdw.auto_register: off keeps this session from registering
 * tenants, whatever the tables' option auto_register says.
 */
bool		shard_auto_register = true;

static char *row_sql(Relation rel, ShardTableOptions *topts,
					 CmdType operation, List *target_attrs, List *ret_attrs,
					 List *keys, List *collations);
static int64 junk_rowid(ShardModifyState *ms, TupleTableSlot *planSlot);
static bool write_row(ShardModifyState *ms, TupleTableSlot *slot,
					  TupleTableSlot *planSlot);
static void append_column_list(StringInfo sql, Relation rel, List *attnums);
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
 * shard_write_failure
 *		The message of a failed INSERT, UPDATE or DELETE of a table on a
 *		shard (or, with prepare, of its preparation), to be filled in with
 *		the SQLite table and the shard: written out whole for each, for
 *		translation.
 */
const char *
shard_write_failure(CmdType operation, bool prepare)
{
	switch (operation)
	{
		case CMD_INSERT:
			return prepare ?
				gettext_noop("could not prepare the insert into table \"%s\" on shard \"%s\"") :
				gettext_noop("could not insert into table \"%s\" on shard \"%s\"");
		case CMD_UPDATE:
			return prepare ?
				gettext_noop("could not prepare to update table \"%s\" on shard \"%s\"") :
				gettext_noop("could not update table \"%s\" on shard \"%s\"");
		default:
			return prepare ?
				gettext_noop("could not prepare to delete from table \"%s\" on shard \"%s\"") :
				gettext_noop("could not delete from table \"%s\" on shard \"%s\"");
	}
}

/*
 * junk_rowid
 *		The identity of the row a scan read, from the plan row's ctid: the
 *		shard it came from and its rowid or key there, packed as
 *		shard_row_identity reads them.
 */
static int64
junk_rowid(ShardModifyState *ms, TupleTableSlot *planSlot)
{
	bool		isnull;
	Datum		d = ExecGetJunkAttribute(planSlot, ms->ctid_junk, &isnull);
	ItemPointer tid;

	if (isnull)
		elog(ERROR, "rowid of a row of foreign table \"%s\" is NULL",
			 RelationGetRelationName(ms->rel));
	tid = (ItemPointer) DatumGetPointer(d);
	if (ItemPointerGetBlockNumberNoCheck(tid) == InvalidBlockNumber)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 ms->operation == CMD_UPDATE ?
				 errmsg("cannot update table \"%s\" row by row",
						ms->topts->table) :
				 errmsg("cannot delete from table \"%s\" row by row",
						ms->topts->table),
				 errdetail("A row is found again by the shard it was read from and its rowid, and a rowid is negative or too large to be numbered with its shard."),
				 errhint("Change such rows with a statement that runs inside the shards.")));
	return ((int64) ItemPointerGetBlockNumberNoCheck(tid) << 16) |
		ItemPointerGetOffsetNumberNoCheck(tid);
}

/*
 * row_sql
 *		UPDATE table SET col = ?, ... WHERE rowid = ?, or DELETE FROM table
 *		WHERE rowid = ?, with RETURNING as asked; with keys, the row is named
 *		by those primary key columns (k1 = ? AND k2 = ?) instead, each
 *		compared with the collation the key declares for it (collations,
 *		NULL for none): the column's own may be one under which two keys
 *		of the table are equal, and the statement would change both.
 */
static char *
row_sql(Relation rel, ShardTableOptions *topts, CmdType operation,
		List *target_attrs, List *ret_attrs, List *keys, List *collations)
{
	StringInfoData sql;
	Form_pg_attribute tenant_att;
	ListCell   *lc;
	int			param = list_length(target_attrs) + 1;

	initStringInfo(&sql);
	if (operation == CMD_UPDATE)
	{
		appendStringInfoString(&sql, "UPDATE ");
		shard_quote_identifier(&sql, topts->table);
		appendStringInfoString(&sql, " SET ");
		foreach(lc, target_attrs)
		{
			if (foreach_current_index(lc) > 0)
				appendStringInfoString(&sql, ", ");
			shard_quote_identifier(&sql,
								   shard_column_name(RelationGetRelid(rel),
													 lfirst_int(lc)));
			appendStringInfo(&sql, " = ?%d", foreach_current_index(lc) + 1);
		}
	}
	else
	{
		appendStringInfoString(&sql, "DELETE FROM ");
		shard_quote_identifier(&sql, topts->table);
	}
	/*
	 * The tenant too, as scans compute it: a rowid (or key) names one row
	 * of the shard, which must still be the tenant's the scan read.  A row
	 * of no tenant is changed as inside the shards: bound NULL for a NULL,
	 * and a value that is no tenant's id (a real in a text column) by the
	 * text the scan read it as.
	 */
	appendStringInfoString(&sql, " WHERE ");
	if (keys == NIL)
		appendStringInfo(&sql, "rowid = ?%d AND ", param++);
	foreach(lc, keys)
	{
		const char *coll = collations == NIL ? NULL :
			list_nth(collations, foreach_current_index(lc));

		shard_quote_identifier(&sql, (const char *) lfirst(lc));
		appendStringInfo(&sql, " = ?%d", param++);
		if (coll != NULL)
		{
			appendStringInfoString(&sql, " COLLATE ");
			shard_quote_identifier(&sql, coll);
		}
		appendStringInfoString(&sql, " AND ");
	}
	tenant_att = TupleDescAttr(RelationGetDescr(rel), topts->tenant_attnum - 1);
	if (shard_file_tenant_column_kind(RelationGetRelid(rel),
									  topts->tenant_attnum) >= 0)
		shard_tenant_file_row_condition(&sql, param);
	else
		shard_tenant_row_condition(&sql, topts->tenant_column,
								   tenant_att->atttypid, tenant_att->atttypmod,
								   param);
	if (ret_attrs != NIL)
	{
		appendStringInfoString(&sql, " RETURNING ");
		append_column_list(&sql, rel, ret_attrs);
	}
	return sql.data;
}

/*
 * shardExecForeignUpdate
 *		Update one row the scan read.  PostgreSQL moves a row between
 *		partitions only out of a table of its own: an UPDATE whose new row
 *		no longer fits a foreign partition is refused, as PostgreSQL's
 *		documentation says, rather than left where the partition's rows
 *		may not be (the statement's other changes roll back with it).
 */
TupleTableSlot *
shardExecForeignUpdate(EState *estate, ResultRelInfo *rinfo,
					   TupleTableSlot *slot, TupleTableSlot *planSlot)
{
	Relation	rel = rinfo->ri_RelationDesc;

	if (rel->rd_rel->relispartition &&
		!ExecPartitionCheck(rinfo, slot, estate, false))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot move a row of foreign partition \"%s\" to another partition",
						RelationGetRelationName(rel)),
				 errdetail("PostgreSQL moves rows between partitions only out of its own tables."),
				 errhint("Delete the row and insert it again.")));
	return write_row((ShardModifyState *) rinfo->ri_FdwState, slot,
					 planSlot) ? slot : NULL;
}

/*
 * shardExecForeignDelete
 *		Delete one row the scan read.
 */
TupleTableSlot *
shardExecForeignDelete(EState *estate, ResultRelInfo *rinfo,
					   TupleTableSlot *slot, TupleTableSlot *planSlot)
{
	return write_row((ShardModifyState *) rinfo->ri_FdwState, slot,
					 planSlot) ? slot : NULL;
}

/*
 * append_column_list
 *		"col1", "col2", ... by their SQLite names.
 */
static void
append_column_list(StringInfo sql, Relation rel, List *attnums)
{
	ListCell   *lc;

	foreach(lc, attnums)
	{
		if (foreach_current_index(lc) > 0)
			appendStringInfoString(sql, ", ");
		shard_append_column_sql(sql, RelationGetRelid(rel), lfirst_int(lc));
	}
}

/*
 * insert_sql
 *		INSERT INTO table (columns) VALUES (?, ...), with ON CONFLICT DO
 *		NOTHING and RETURNING as asked.
 */
static char *
insert_sql(Relation rel, ShardTableOptions *topts, List *target_attrs,
		   bool on_conflict_nothing, List *ret_attrs)
{
	StringInfoData sql;
	List	   *stored = NIL;
	List	   *params = NIL;
	ListCell   *lc;

	/*
	 * A tenant file stores no tenant column (the file is the tenant): its
	 * value, bound all the same, routes the row and is not written.
	 */
	foreach(lc, target_attrs)
	{
		if (shard_file_tenant_column_kind(RelationGetRelid(rel),
										  lfirst_int(lc)) >= 0)
			continue;
		stored = lappend_int(stored, lfirst_int(lc));
		params = lappend_int(params, foreach_current_index(lc) + 1);
	}
	initStringInfo(&sql);
	appendStringInfoString(&sql, "INSERT INTO ");
	shard_quote_identifier(&sql, topts->table);
	if (stored == NIL)
		appendStringInfoString(&sql, " DEFAULT VALUES");
	else
	{
		appendStringInfoString(&sql, " (");
		append_column_list(&sql, rel, stored);
		appendStringInfoString(&sql, ") VALUES (");
		foreach(lc, params)
			appendStringInfo(&sql, "%s?%d",
							 foreach_current_index(lc) > 0 ? ", " : "",
							 lfirst_int(lc));
		appendStringInfoChar(&sql, ')');
	}
	if (on_conflict_nothing)
		appendStringInfoString(&sql, " ON CONFLICT DO NOTHING");
	if (ret_attrs != NIL)
	{
		appendStringInfoString(&sql, " RETURNING ");
		append_column_list(&sql, rel, ret_attrs);
	}
	return sql.data;
}

/*
 * begin_modify
 *		Set up an INSERT (or COPY) of rows into a foreign table.
 */
static ShardModifyState *
begin_modify(EState *estate, ResultRelInfo *rinfo, CmdType operation,
			 List *target_attrs, List *returning_attrs,
			 bool on_conflict_nothing)
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
	ms->operation = operation;
	ms->sql = operation == CMD_INSERT ?
		insert_sql(rel, ms->topts, target_attrs, on_conflict_nothing,
				   returning_attrs) :
		row_sql(rel, ms->topts, operation, target_attrs, returning_attrs,
				NIL, NIL);
	ms->col = -1;
	ms->last_identity = -1;

	ms->stores = palloc0(sizeof(ShardStoreConv) * (list_length(target_attrs) + 1));
	/* and the rowid and tenant of an UPDATE or DELETE */
	ms->values = palloc0(sizeof(ShardValue) * (list_length(target_attrs) + 2));
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

	if (ms->topts->reference)
	{
		/* no tenant: every row to every copy, by a role of every tenant */
		shard_reference_check_writer(rel, ms->opts->serverid,
									 modify_user_compat(rinfo, estate));
		ms->ref_slot = ExecInitExtraTupleSlot(estate, tupdesc,
											  &TTSOpsVirtual);
	}
	else
	{
		ms->tenant_type = TupleDescAttr(tupdesc, ms->topts->tenant_attnum - 1)->atttypid;
		shard_tenant_id_init(&ms->tenant_id, ms->tenant_type);
		ms->allowed = shard_tenant_ids_text(shard_user_tenants(ms->opts->serverid,
															   modify_user_compat(rinfo, estate)));
	}
	ms->dir = shard_directory_get(ms->opts);
	ms->batch_size = ms->topts->batch_size;
	ms->row_cxt = AllocSetContextCreate(estate->es_query_cxt,
										"sqlite_shard_fdw written row",
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
 *		Start an INSERT, or a row-by-row UPDATE or DELETE, planned by
 *		shardPlanForeignModify.
 */
void
shardBeginForeignModify(ModifyTableState *mtstate, ResultRelInfo *rinfo,
						List *fdw_private, int subplan_index, int eflags)
{
	ShardModifyState *ms;
	CmdType		operation;

	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;

	operation = intVal(list_nth(fdw_private, FdwModifyPrivateOperation));
	ms = begin_modify(mtstate->ps.state, rinfo, operation,
					  list_nth(fdw_private, FdwModifyPrivateTargetAttrs),
					  list_nth(fdw_private, FdwModifyPrivateReturningAttrs),
					  intVal(list_nth(fdw_private,
									  FdwModifyPrivateOnConflictNothing)));
	if (operation != CMD_INSERT)
	{
		List	   *tlist = outerPlanState(mtstate)->plan->targetlist;

		ms->ctid_junk = ExecFindJunkAttributeInTlist(tlist, "ctid");
		ms->tenant_junk =
			ExecFindJunkAttributeInTlist(tlist,
										 shard_tenant_junk_name(ms->topts->tenant_attnum));
		if (ms->ctid_junk == InvalidAttrNumber ||
			ms->tenant_junk == InvalidAttrNumber)
			elog(ERROR, "row identity of foreign table \"%s\" is missing",
				 RelationGetRelationName(rinfo->ri_RelationDesc));
		ms->check_tenant = (operation == CMD_UPDATE && rinfo->ri_TrigDesc &&
							rinfo->ri_TrigDesc->trig_update_before_row);
		/* where the scan keeps the keys of rows without a rowid */
		ms->row_keys = shard_scan_row_keys(outerPlanState(mtstate),
										   rinfo->ri_RangeTableIndex);
	}
	rinfo->ri_FdwState = ms;
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
	ShardModifyState *ms;
	int			i;

	for (i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (!att->attisdropped)
			target_attrs = lappend_int(target_attrs, att->attnum);
	}
	/*
	 * A partition routed to by an INSERT ... RETURNING, or a table whose
	 * AFTER ROW triggers or check options read the row, gets it back whole.
	 */
	if (rinfo->ri_returningList != NIL || rinfo->ri_WithCheckOptions != NIL ||
		(rinfo->ri_TrigDesc && rinfo->ri_TrigDesc->trig_insert_after_row))
		returning_attrs = list_copy(target_attrs);
	ms = begin_modify(mtstate->ps.state, rinfo, CMD_INSERT, target_attrs,
					  returning_attrs,
					  mtstate->ps.plan != NULL &&
					  ((ModifyTable *) mtstate->ps.plan)->onConflictAction ==
					  ONCONFLICT_NOTHING);

	/*
	 * A COPY (no plan: an INSERT routed to a partition has one) whose rows
	 * need not come back hands them to the shards in batches; not with a
	 * BEFORE ROW trigger, which may read the rows inserted before its own,
	 * as PostgreSQL's COPY inserts such a table's rows one by one.
	 */
	ms->buffer_rows = (mtstate->ps.plan == NULL && returning_attrs == NIL &&
					   !ms->topts->reference && ms->batch_size > 1 &&
					   !(rinfo->ri_TrigDesc &&
						 rinfo->ri_TrigDesc->trig_insert_before_row));
	ms->copy_batch = Min(ms->batch_size, COPY_BATCH_MAX);
	rinfo->ri_FdwState = ms;
}

/*
 * row_tenant
 *		The tenant of a row written (its tenant column at tenant_att of
 *		slot), into ms->tenant.  Refuses a row of one the user mapping does
 *		not allow, and a row to insert of no tenant (NULL).  A row an UPDATE
 *		or DELETE read (read) may be of no tenant: a statement that runs
 *		inside the shards changes such a row where it is, and so does a
 *		row-by-row one; its tenant is NULL then.
 */
static char *
row_tenant(ShardModifyState *ms, TupleTableSlot *slot, AttrNumber tenant_att,
		   bool read)
{
	AttrNumber	attnum = ms->topts->tenant_attnum;
	bool		isnull;
	Datum		value = slot_getattr(slot, tenant_att, &isnull);
	char	   *tenant;

	/* a tenant-scoped scan reads its tenants' rows only */
	if (isnull && read && ms->allowed != NIL)
		elog(ERROR, "row of no tenant read for a tenant-scoped role");
	if (isnull && read)
	{
		ms->tenant = NULL;
		return NULL;
	}
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("null value in column \"%s\" of relation \"%s\" violates not-null constraint",
						NameStr(TupleDescAttr(RelationGetDescr(ms->rel),
											  attnum - 1)->attname),
						RelationGetRelationName(ms->rel)),
				 errdetail("Every row of a sharded table belongs to a tenant.")));

	/* the output function looked up once: this runs for every row */
	tenant = shard_tenant_id_of(&ms->tenant_id, value);
	ms->tenant = tenant;
	if (ms->allowed != NIL && !tenant_allowed(ms->allowed, tenant))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to write rows of tenant \"%s\" into foreign table \"%s\"",
						tenant, RelationGetRelationName(ms->rel)),
				 errdetail("The user mapping limits the role to its own tenants.")));
	return tenant;
}

/*
 * check_tenant_kept
 *		Refuse an UPDATE whose new row (slot) is of another tenant than the
 *		row read, which ms->tenant holds: a BEFORE ROW trigger changed it.
 */
static void
check_tenant_kept(ShardModifyState *ms, TupleTableSlot *slot)
{
	bool		isnull;
	Datum		value = slot_getattr(slot, ms->topts->tenant_attnum, &isnull);

	if (isnull ? ms->tenant != NULL :
		ms->tenant == NULL ||
		strcmp(shard_tenant_id_of(&ms->tenant_id, value), ms->tenant) != 0)
		shard_report_tenant_change(ms->rel);
}

/*
 * route_row
 *		The shard a row an INSERT writes goes to: its tenant's, per the
 *		directory.  Refuses a row row_tenant refuses, or of a tenant the
 *		directory does not know (auto_register registers it instead).
 */
static ShardInfo *
route_row(ShardModifyState *ms, TupleTableSlot *slot, AttrNumber tenant_att)
{
	char	   *tenant = row_tenant(ms, slot, tenant_att, false);
	ShardLocation *loc;

	loc = shard_directory_locate(ms->dir, tenant);
	/*
	 * Registering places a tenant for rows to come: an INSERT's (or
	 * COPY's).  A row an UPDATE or DELETE read lives on a shard already,
	 * and its rowid or key names a row of that shard only.
	 */
	if (loc == NULL && ms->topts->auto_register && shard_auto_register &&
		ms->operation == CMD_INSERT)
	{
		/* placed inside this transaction; ms->dir now reads through it */
		shard_tenant_auto_register(ms->opts, tenant);
		loc = shard_directory_locate(ms->dir, tenant);
	}
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
 *		The prepared INSERT (or UPDATE or DELETE of a row) of a shard,
 *		inside the shard's write transaction.  keys are the primary key
 *		columns an UPDATE or DELETE finds the shard's rows by (compared
 *		with collations), or NIL.
 */
static ModifyTarget *
target_for(ShardModifyState *ms, ShardInfo *shard, List *keys,
		   List *collations)
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
	t->keys = keys;
	ms->targets = lappend(ms->targets, t);
	shard_conn_check_no_reader(t->conn, ms->topts->table);

	/* values are fitted to how this shard declares each column */
	t->affinity = palloc0(list_length(ms->target_attrs) + 1);
	t->colnames = palloc0(sizeof(char *) * (list_length(ms->target_attrs) + 1));
	foreach(lc, ms->target_attrs)
	{
		int			i = foreach_current_index(lc);

		t->colnames[i] = shard_column_name(RelationGetRelid(ms->rel),
										   lfirst_int(lc));
		t->affinity[i] = shard_conn_column_affinity(t->conn, ms->topts->table,
													t->colnames[i]);
	}
	if (ms->buffer_rows)
		shard_copy_init_buffer(ms, t);
	MemoryContextSwitchTo(oldcxt);

	rc = shard_conn_prepare(t->conn,
							keys == NIL ? ms->sql :
							row_sql(ms->rel, ms->topts, ms->operation,
									ms->target_attrs, ms->returning_attrs,
									keys, collations),
							&t->stmt, errbuf);
	if (rc != SQLITE_OK)
	{
		TupleDesc	tupdesc = RelationGetDescr(ms->rel);
		char	  **colnames = palloc(sizeof(char *) * (tupdesc->natts + 1));
		int			ncols = 0;
		int			i;

		t->stmt = NULL;
		for (i = 0; i < tupdesc->natts; i++)
			if (!TupleDescAttr(tupdesc, i)->attisdropped &&
				shard_file_tenant_column_kind(RelationGetRelid(ms->rel),
											  i + 1) < 0)
				colnames[ncols++] = shard_column_name(RelationGetRelid(ms->rel),
													  i + 1);
		shard_conn_check_table(t->conn, RelationGetRelationName(ms->rel),
							   ms->topts->table, colnames, ncols);
		shard_sqlite_error(ERROR, rc, shard->shard_id, errbuf,
						   shard_write_failure(ms->operation, true),
						   ms->topts->table, shard->shard_id);
	}
	return t;
}

/*
 * write_row
 *		Insert one row into its shard, or update or delete the row the scan
 *		read (on the shard it was read from, by its rowid or key there and
 *		its tenant); with RETURNING, read
 *		what the shard stored back into the slot.  Returns false when no
 *		row changed (ON CONFLICT DO NOTHING skipped it, or it was gone).
 */
static bool
write_row(ShardModifyState *ms, TupleTableSlot *slot,
		  TupleTableSlot *planSlot)
{
	ErrorContextCallback errcallback;
	MemoryContext oldcxt;
	ShardInfo  *shard;
	ModifyTarget *t;
	List	   *keys = NIL;
	List	   *collations = NIL;
	const ShardValue *key = NULL;
	ListCell   *lc;
	char		errbuf[SHARDIO_ERRLEN];
	bool		inserted;
	int			rc;
	int			i;
	int			nvalues = list_length(ms->target_attrs);

	MemoryContextReset(ms->row_cxt);
	oldcxt = MemoryContextSwitchTo(ms->row_cxt);

	errcallback.callback = shard_modify_error_callback;
	errcallback.arg = ms;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	ms->shard_id = NULL;
	ms->tenant = NULL;
	if (ms->operation == CMD_INSERT)
	{
		slot_getallattrs(slot);
		shard = ms->topts->reference ? ms->ref_shard :
			route_row(ms, slot, ms->topts->tenant_attnum);
	}
	else
	{
		/*
		 * The row the scan read, changed where it was read, whatever the
		 * directory says of its tenant (as a statement that runs inside
		 * the shards changes it): its rowid there, or the primary key the
		 * scan kept for it, and its tenant, which the user mapping must
		 * allow.
		 */
		int64		id;

		int64		identity = junk_rowid(ms, planSlot);

		/*
		 * A row a join read twice (UPDATE ... FROM a source with two
		 * matching rows) is changed and counted once, as PostgreSQL does
		 * for a row the statement changed already; read_rows_first's sort
		 * brought its readings together.
		 */
		if (identity == ms->last_identity)
		{
			error_context_stack = errcallback.previous;
			MemoryContextSwitchTo(oldcxt);
			return false;
		}
		ms->last_identity = identity;
		if (ms->operation == CMD_UPDATE)
			slot_getallattrs(slot);
		(void) row_tenant(ms, planSlot, ms->tenant_junk, true);
		if (ms->operation == CMD_UPDATE && ms->check_tenant)
			check_tenant_kept(ms, slot);
		shard = shard_row_identity(ms->row_keys, identity, &id);
		keys = shard_row_keys_of(ms->row_keys, shard->shard_id, &collations);
		if (keys != NIL)
			key = shard_row_key(ms->row_keys, shard->shard_id, id);
		else
		{
			ms->values[nvalues].type = SQLITE_INTEGER;
			ms->values[nvalues].u.i = id;
			ms->values[nvalues].len = 0;
			key = &ms->values[nvalues];
		}
		/* a row of no tenant binds NULL, which only "IS" matches */
		ms->values[nvalues + 1].type = ms->tenant ? SQLITE_TEXT : SQLITE_NULL;
		ms->values[nvalues + 1].u.p = ms->tenant;
		ms->values[nvalues + 1].len = ms->tenant ? strlen(ms->tenant) : 0;
	}
	ms->shard_id = shard->shard_id;
	t = target_for(ms, shard, keys, collations);

	i = 0;
	foreach(lc, ms->target_attrs)
	{
		AttrNumber	attnum = lfirst_int(lc);

		shard_store_value(&ms->stores[i], slot->tts_values[attnum - 1],
						  slot->tts_isnull[attnum - 1], &ms->values[i]);
		if (attnum == ms->topts->tenant_attnum)
			shard_tenant_store_id(&ms->values[i], ms->tenant);
		shard_store_fit(&ms->stores[i], slot->tts_values[attnum - 1],
						t->affinity[i], &ms->values[i], t->colnames[i],
						ms->topts->table, shard->shard_id);
		i++;
	}
	if (ms->buffer_rows)
	{
		/* a COPY's row: inserted with its shard's batch, which names it */
		error_context_stack = errcallback.previous;
		MemoryContextSwitchTo(oldcxt);
		shard_copy_buffer_row(ms, t);
		return true;
	}
	rc = shardio_bind(t->stmt, 1, ms->values, nvalues, errbuf);
	if (rc == SQLITE_OK && key != NULL)
	{
		/* the row's key, then its tenant */
		int			nkeys = keys == NIL ? 1 : list_length(keys);

		rc = shardio_bind(t->stmt, nvalues + 1, key, nkeys, errbuf);
		if (rc == SQLITE_OK)
			rc = shardio_bind(t->stmt, nvalues + nkeys + 1,
							  &ms->values[nvalues + 1], 1, errbuf);
	}
	if (rc != SQLITE_OK)
		shard_sqlite_error(ERROR, rc, shard->shard_id, errbuf,
						   shard_write_failure(ms->operation, false),
						   ms->topts->table, shard->shard_id);

	rc = sqlite3_step(t->stmt);
	if (rc == SQLITE_ROW)
	{
		/*
		 * RETURNING: the row as the shard stored it, in the row's context,
		 * which lives until the next row: the executor is done with it.
		 */
		shard_returning_to_slot(t->stmt, shard_conn_db(t->conn),
								ms->returning_attrs, ms->returning, slot,
								&ms->col);
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
		rc = shard_conn_write_failed(t->conn, rc);
		shard_write_error(rc, shard->shard_id, ms->topts->table, ms->tenant,
						  msg, shard_write_failure(ms->operation, false),
						  ms->topts->table, shard->shard_id);
	}
	sqlite3_reset(t->stmt);
	sqlite3_clear_bindings(t->stmt);

	error_context_stack = errcallback.previous;
	MemoryContextSwitchTo(oldcxt);
	return inserted;
}

/*
 * shard_returning_to_slot
 *		Put the row an INSERT, UPDATE or DELETE ... RETURNING statement is
 *		on into slot: its columns are attnums, converted by convs.  *col
 *		names the column being converted, for error context callbacks.
 */
void
shard_returning_to_slot(sqlite3_stmt *stmt, sqlite3 *db, List *attnums,
						ShardColumnConv *convs, TupleTableSlot *slot,
						int *col)
{
	sqlite3_mutex *mutex = sqlite3_db_mutex(db);
	ListCell   *lc;
	int			i = 0;

	ExecClearTuple(slot);
	memset(slot->tts_isnull, true,
		   sizeof(bool) * slot->tts_tupleDescriptor->natts);
	foreach(lc, attnums)
	{
		AttrNumber	attnum = lfirst_int(lc);
		ShardValue	v;
		bool		ok;

		/* copied under the handle's mutex, as shardio_column asks */
		sqlite3_mutex_enter(mutex);
		ok = shardio_column(stmt, i, &v);
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
		*col = i;
		slot->tts_values[attnum - 1] =
			shard_value_to_datum(&convs[i], &v, &slot->tts_isnull[attnum - 1]);
		i++;
	}
	*col = -1;
	ExecStoreVirtualTuple(slot);
}

/*
 * insert_reference_row
 *		Insert one row into every copy of a reference table: the others
 *		first, each from a copy of the row (RETURNING overwrites what it
 *		reads), then the copy reads come from, whose stored row RETURNING
 *		reads.  Each copy must take the row as that one does (ON CONFLICT
 *		DO NOTHING may skip it), or copies would come to differ.
 */
static bool
insert_reference_row(ShardModifyState *ms, TupleTableSlot *slot,
					 TupleTableSlot *planSlot)
{
	ShardInfo  *lead = shard_reference_shard(ms->dir, ms->topts,
											 RelationGetRelationName(ms->rel));
	ShardInfo  *first = NULL;
	bool		first_inserted = false;
	bool		inserted;
	ListCell   *lc;

	foreach(lc, shard_directory_shards(ms->dir))
	{
		ShardInfo  *shard = lfirst(lc);

		if (strcmp(shard->shard_id, lead->shard_id) == 0)
			continue;
		ExecCopySlot(ms->ref_slot, slot);
		ms->ref_shard = shard;
		inserted = write_row(ms, ms->ref_slot, planSlot);
		if (first == NULL)
		{
			first = shard;
			first_inserted = inserted;
		}
		else if (inserted != first_inserted)
			shard_reference_report_differ(RelationGetRelationName(ms->rel),
										  shard->shard_id, inserted,
										  first->shard_id, first_inserted);
	}
	ms->ref_shard = lead;
	inserted = write_row(ms, slot, planSlot);
	if (first != NULL && inserted != first_inserted)
		shard_reference_report_differ(RelationGetRelationName(ms->rel),
									  first->shard_id, first_inserted,
									  lead->shard_id, inserted);
	return inserted;
}

/*
 * insert_row
 *		Insert one row: into its tenant's shard, or every reference copy.
 */
static bool
insert_row(ShardModifyState *ms, TupleTableSlot *slot,
		   TupleTableSlot *planSlot)
{
	if (ms->topts->reference)
		return insert_reference_row(ms, slot, planSlot);
	return write_row(ms, slot, planSlot);
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

	return insert_row(ms, slot, planSlot) ? slot : NULL;
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
		if (insert_row(ms, slots[i], planSlots[i]))
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
	ShardModifyState *ms = (ShardModifyState *) rinfo->ri_FdwState;

	if (ms != NULL && ms->buffer_rows)
		shard_copy_flush(ms);
	end_modify(ms);
}

/*
 * shardExplainForeignModify
 *		Show the SQLite statement each shard runs: for a row-by-row UPDATE
 *		or DELETE, by rowid, and by primary key where the first shard's
 *		table is WITHOUT ROWID.
 */
void
shardExplainForeignModify(ModifyTableState *mtstate, ResultRelInfo *rinfo,
						  List *fdw_private, int subplan_index,
						  ExplainState *es)
{
	Relation	rel = rinfo->ri_RelationDesc;

	CmdType		operation = intVal(list_nth(fdw_private,
										  FdwModifyPrivateOperation));
	List	   *target_attrs = list_nth(fdw_private,
										FdwModifyPrivateTargetAttrs);
	List	   *ret_attrs = list_nth(fdw_private,
									 FdwModifyPrivateReturningAttrs);

	if (operation == CMD_INSERT &&
		shard_table_is_reference(RelationGetRelid(rel)))
		ExplainPropertyText("Distribution", "reference, every shard's copy",
							es);
	if (operation != CMD_INSERT)
		ExplainPropertyText("Row By Row",
							"rows read by the scan, changed by rowid or primary key",
							es);
	if (es->verbose)
		ExplainPropertyText("SQLite statement",
							operation == CMD_INSERT ?
							insert_sql(rel, shard_table_options(rel),
									   target_attrs,
									   intVal(list_nth(fdw_private,
													   FdwModifyPrivateOnConflictNothing)),
									   ret_attrs) :
							row_sql(rel, shard_table_options(rel), operation,
									target_attrs, ret_attrs, NIL, NIL),
							es);

	/*
	 * A WITHOUT ROWID shard finds the row by its primary key instead: the
	 * first shard's, where its table has no rowid (shards may differ, and
	 * each is checked when it is read).
	 */
	if (es->verbose && operation != CMD_INSERT)
	{
		ShardTableOptions *topts = shard_table_options(rel);
		List	   *collations;
		List	   *keys = shard_explain_row_key(shard_server_options(topts->serverid),
												 topts->table, &collations);

		if (keys != NIL)
			ExplainPropertyText("SQLite statement on WITHOUT ROWID shards",
								row_sql(rel, topts, operation, target_attrs,
										ret_attrs, keys, collations),
								es);
	}
}

/*
 * shard_modify_error_callback
 *		Name the shard, table and tenant of the row being written.
 */
void
shard_modify_error_callback(void *arg)
{
	ShardModifyState *ms = (ShardModifyState *) arg;

	if (ms->shard_id == NULL)
		return;
	if (ms->col < 0 && ms->topts->reference)
		errcontext("inserting into the copy of table \"%s\" on shard \"%s\"",
				   ms->topts->table, ms->shard_id);
	else if (ms->col >= 0 && ms->tenant == NULL)
		errcontext("column \"%s\" of table \"%s\" on shard \"%s\", returned for a row of no tenant",
				   shard_column_name(RelationGetRelid(ms->rel),
									 list_nth_int(ms->returning_attrs, ms->col)),
				   ms->topts->table, ms->shard_id);
	else if (ms->col >= 0)
		errcontext("column \"%s\" of table \"%s\" on shard \"%s\", returned for tenant \"%s\"",
				   shard_column_name(RelationGetRelid(ms->rel),
									 list_nth_int(ms->returning_attrs, ms->col)),
				   ms->topts->table, ms->shard_id, ms->tenant);
	else if (ms->tenant == NULL && ms->operation == CMD_UPDATE)
		errcontext("updating a row of no tenant of table \"%s\" on shard \"%s\"",
				   ms->topts->table, ms->shard_id);
	else if (ms->tenant == NULL)
		errcontext("deleting a row of no tenant from table \"%s\" on shard \"%s\"",
				   ms->topts->table, ms->shard_id);
	else if (ms->operation == CMD_INSERT && ms->copy_line > 0)
		errcontext("inserting into table \"%s\" on shard \"%s\", tenant \"%s\", the row of COPY %s, line " UINT64_FORMAT,
				   ms->topts->table, ms->shard_id, ms->tenant,
				   ms->copy->cur_relname, ms->copy_line);
	else if (ms->operation == CMD_INSERT)
		errcontext("inserting into table \"%s\" on shard \"%s\", tenant \"%s\"",
				   ms->topts->table, ms->shard_id, ms->tenant);
	else if (ms->operation == CMD_UPDATE)
		errcontext("updating table \"%s\" on shard \"%s\", tenant \"%s\"",
				   ms->topts->table, ms->shard_id, ms->tenant);
	else
		errcontext("deleting from table \"%s\" on shard \"%s\", tenant \"%s\"",
				   ms->topts->table, ms->shard_id, ms->tenant);
}
