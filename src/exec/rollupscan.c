/*-------------------------------------------------------------------------
 *
 * rollupscan.c
 *		  Which tenants a query answered from a rollup reads live: the
 *		  decision, taken once per execution, and the plan node that takes
 *		  it and shows it in EXPLAIN
 *
 * A query answered from a rollup (plan/rollupanswer.c) reads the groups of
 * most tenants from the rollup table and the rows of the others, those
 * whose rows changed since their groups were computed, live through the
 * foreign table.  Both halves must agree on one set of tenants, decided
 * when the statement runs, not when it was planned: a cached plan runs
 * long after.  The set is the value of one common table expression,
 * computed once per execution by the "Rollup Live Tenants" scan of this
 * file, which both halves read.
 *
 * The guarantee.  The rollup table and the rollup's marks of the shards'
 * change logs are read with the statement's snapshot, and commit together
 * in a refresh; the logs are read after that snapshot.  A tenant without a
 * change above the marks has not changed since its groups were computed
 * up to the moment its shard's log is read, so its groups are its rows as
 * of then.  A tenant with one is read live, after the log was read.  So
 * every write committed before the statement started is in the answer,
 * and each tenant is counted once, from the rollup or from its rows.  A
 * shard whose files are in the state recorded with the rollup's mark is
 * not opened: its log holds nothing above the mark (rollupcapture.c says
 * why that state can be trusted).  In stale mode within its bound no log
 * is read at all: the changes missed are at most as old as the refresh.  The
 * marks themselves are read with a new snapshot (the capture's reader
 * reads them so); should a refresh commit between the statement's
 * snapshot and that read, the rollup table the statement sees is older
 * than the marks, and every tenant is read live.  Every tenant is read
 * live too when the transaction has written the shards (its own writes,
 * not yet committed, are in no log the capture's reader can see), and in
 * REPEATABLE READ and SERIALIZABLE transactions, whose shard snapshots
 * may be older than the rollup.
 *
 * The catalog of rollups is readable by its owner only (it names every
 * tenant); the decision reads it as that owner, for a caller that may
 * read the rollup table.  A role whose user mapping limits it to some
 * tenants has its list of live tenants cut to those: the rollup table's
 * policy and the foreign table would show it no other, and EXPLAIN should
 * not count them either.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/restrictinfo.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "control/rollup.h"
#include "plan/rollupanswer.h"

PG_FUNCTION_INFO_V1(shard_rollup_answer_live);

/* The marker function's name: its calls become a Rollup Live Tenants scan. */
#define ROLLUP_LIVE_FUNC "rollup_answer_live"

/*
 * shard_writes_begun as the last transaction ended: a transaction in which
 * it has grown since has begun writing some shard.
 */
static uint64 writes_at_xact_start = 0;

/* The Rollup Live Tenants scan's state. */
typedef struct RollupLiveState
{
	CustomScanState css;
	Oid			rollup;
	int64		bound_us;		/* stale mode's bound, or -1: live mode */
	bool		done;			/* its one row returned */
	bool		analyze;		/* EXPLAIN ANALYZE, or a plain execution */
	RollupLiveDecision *decision;
} RollupLiveState;

static Plan *live_plan_path(PlannerInfo *root, RelOptInfo *rel,
							CustomPath *best_path, List *tlist,
							List *clauses, List *custom_plans);
static Node *live_create_state(CustomScan *cscan);
static void live_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *live_exec(CustomScanState *node);
static void live_end(CustomScanState *node);
static void live_rescan(CustomScanState *node);
static void live_explain(CustomScanState *node, List *ancestors,
						 ExplainState *es);

static const CustomPathMethods live_path_methods = {
	.CustomName = "Rollup Live Tenants",
	.PlanCustomPath = live_plan_path,
};

static const CustomScanMethods live_scan_methods = {
	.CustomName = "Rollup Live Tenants",
	.CreateCustomScanState = live_create_state,
};

static const CustomExecMethods live_exec_methods = {
	.CustomName = "Rollup Live Tenants",
	.BeginCustomScan = live_begin,
	.ExecCustomScan = live_exec,
	.EndCustomScan = live_end,
	.ReScanCustomScan = live_rescan,
	.ExplainCustomScan = live_explain,
};

/*
 * xact_end_callback
 *		Note shard_writes_begun as a transaction ends, so that the next can
 *		tell whether it wrote any shard.
 */
static void
xact_end_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			writes_at_xact_start = shard_writes_begun;
			break;
		default:
			break;
	}
}

/*
 * rollup_live_init
 *		Register the scan and the transaction callback (at load).
 */
void
rollup_live_init(void)
{
	RegisterCustomScanMethods(&live_scan_methods);
	RegisterXactCallback(xact_end_callback, NULL);
}

/*
 * catalog_owner
 *		The owner of the rollup catalog, or InvalidOid when there is none.
 */
static Oid
catalog_owner(void)
{
	Oid			nsp = get_namespace_oid("ssfdw_rollup", true);
	Oid			relid;
	HeapTuple	tup;
	Oid			owner;

	if (!OidIsValid(nsp))
		return InvalidOid;
	relid = get_relname_relid("rollups", nsp);
	if (!OidIsValid(relid))
		return InvalidOid;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * list_has_id
 *		Is id (UTF-8) in ids?
 */
static bool
list_has_id(List *ids, const char *id)
{
	ListCell   *lc;

	foreach(lc, ids)
		if (strcmp(lfirst(lc), id) == 0)
			return true;
	return false;
}

/*
 * add_id
 *		Append id to ids unless there already, or outside scope (a list of
 *		ids, NIL for no limit).
 */
static List *
add_id(List *ids, const char *id, List *scope)
{
	if (scope != NIL && !list_has_id(scope, id))
		return ids;
	if (list_has_id(ids, id))
		return ids;
	return lappend(ids, pstrdup(id));
}

/*
 * rollup_version
 *		The version of the rollup's catalog row (its xmin) and its last
 *		refresh, with the statement's snapshot (read_only) or a new one.
 */
static char *
rollup_version(Oid rollup, bool read_only, TimestampTz *refreshed_at,
			   bool *has_refreshed)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(rollup)};
	bool		isnull;

	if (SPI_execute_with_args("SELECT xmin::pg_catalog.text, refreshed_at "
							  "FROM ssfdw_rollup.rollups WHERE rollup = $1",
							  1, types, values, NULL,
							  read_only && ActiveSnapshotSet(), 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the rollup catalog");
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a rollup", get_rel_name(rollup))));
	if (refreshed_at != NULL)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0],
									  SPI_tuptable->tupdesc, 2, &isnull);

		*has_refreshed = !isnull;
		*refreshed_at = isnull ? 0 : DatumGetTimestampTz(d);
	}
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/*
 * every_tenant
 *		Every tenant the directory knows, and any other the rollup table
 *		holds groups of (SPI connected, as the catalog's owner).
 */
static List *
every_tenant(Rollup *r, List *scope)
{
	List	   *ids = NIL;
	ListCell   *lc;
	uint64		i;

	foreach(lc, shard_directory_tenants(shard_directory_get(r->opts), NULL))
		ids = add_id(ids, ((ShardLocation *) lfirst(lc))->tenant, scope);
	rollup_spi_run(psprintf("SELECT DISTINCT %s::pg_catalog.text FROM %s",
							quote_identifier(r->tenant_key), r->relname),
				   0, NULL, NULL);
	for (i = 0; i < SPI_processed; i++)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[i],
									 SPI_tuptable->tupdesc, 1);

		if (v != NULL)
			ids = add_id(ids, shard_tenant_id_text(v), scope);
	}
	return ids;
}

/*
 * pending_tenants
 *		The tenants with changes above the rollup's marks, every tenant of a
 *		shard whose log is not the rollup's (capture missing, another
 *		epoch) or that was skipped, cut to scope.
 */
static List *
pending_tenants(Rollup *r, List *logs, List *scope)
{
	ShardDirectory *dir = shard_directory_get(r->opts);
	List	   *ids = NIL;
	ListCell   *lc;

	foreach(lc, logs)
	{
		RollupShardLog *log = lfirst(lc);
		ListCell   *lt;

		foreach(lt, log->tenants)
			ids = add_id(ids, lfirst(lt), scope);
		if (log->reset || log->epoch == NULL)
			foreach(lt, shard_directory_tenants(dir, log->shard_id))
				ids = add_id(ids, ((ShardLocation *) lfirst(lt))->tenant,
							 scope);
	}
	return ids;
}

/*
 * ids_datum
 *		ids (UTF-8) as a text[] in the server encoding.
 */
static Datum
ids_datum(List *ids)
{
	Datum	   *datums = palloc(sizeof(Datum) * Max(list_length(ids), 1));
	ListCell   *lc;
	int			i = 0;

	foreach(lc, ids)
		datums[i++] = shard_tenant_id_datum(lfirst(lc));
	return PointerGetDatum(construct_array(datums, i, TEXTOID, -1, false,
										   TYPALIGN_INT));
}

/*
 * rollup_freshness
 *		The oldest refresh of the tenants of the rollup not in live, and
 *		how many tenants it holds (SPI connected, statement's snapshot).
 */
static void
rollup_freshness(Oid rollup, List *live, List *scope, RollupLiveDecision *d)
{
	Oid			types[3] = {OIDOID, TEXTARRAYOID, TEXTARRAYOID};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', scope == NIL ? 'n' : ' '};
	bool		isnull;
	Datum		v;

	values[0] = ObjectIdGetDatum(rollup);
	values[1] = ids_datum(live);
	values[2] = scope == NIL ? (Datum) 0 : ids_datum(scope);
	if (SPI_execute_with_args("SELECT count(*), min(refreshed_at) FILTER "
							  "(WHERE tenant_id <> ALL ($2)) "
							  "FROM ssfdw_rollup.tenants WHERE rollup = $1 "
							  "AND ($3 IS NULL OR tenant_id = ANY ($3))",
							  3, types, values, nulls, ActiveSnapshotSet(),
							  1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the rollup catalog");
	d->ntenants = (int) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
													SPI_tuptable->tupdesc,
													1, &isnull));
	v = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
					  &isnull);
	d->has_as_of = !isnull;
	d->as_of = isnull ? 0 : DatumGetTimestampTz(v);
}

/*
 * decide
 *		The body of rollup_live_decide, SPI connected, as the catalog's
 *		owner; scope is the caller's tenants (NIL: all), writes whether its
 *		transaction has written shards.
 */
static void
decide(Oid rollup, int64 bound_us, List *scope, bool writes,
	   RollupLiveDecision *d)
{
	Rollup	   *r;
	List	   *live = NIL;
	char	   *version;
	TimestampTz refreshed_at;
	bool		has_refreshed;

	version = rollup_version(rollup, true, &refreshed_at, &has_refreshed);
	r = rollup_load(rollup);
	d->relname = r->relname;

	if (writes)
		d->why_all = "the transaction has written shards";
	else if (IsolationUsesXactSnapshot())
		d->why_all = "REPEATABLE READ or SERIALIZABLE transaction";
	else if (bound_us >= 0 && has_refreshed &&
			 GetCurrentTimestamp() - refreshed_at <= bound_us)
	{
		/*
		 * Stale mode within its bound: whatever the logs hold, changes
		 * missed for at most this long; no log need be read.
		 */
		d->stale = true;
		d->staleness_us = Max(GetCurrentTimestamp() - refreshed_at, 0);
	}
	else
	{
		List	   *logs = rollup_capture_read(r, false);
		ListCell   *lc;

		foreach(lc, logs)
		{
			d->nshards++;
			if (((RollupShardLog *) lfirst(lc))->opened)
				d->nopened++;
		}
		/* a refresh that committed since the statement's snapshot */
		if (strcmp(version, rollup_version(rollup, false, NULL, NULL)) != 0)
			d->why_all = "the rollup was refreshed during the statement";
		else
			live = pending_tenants(r, logs, scope);
	}

	if (d->why_all != NULL)
	{
		d->all_live = true;
		live = every_tenant(r, scope);
	}
	d->nlive = list_length(live);
	d->ids = ids_datum(live);
	rollup_freshness(rollup, live, scope, d);
}

/*
 * rollup_live_decide
 *		Which tenants of rollup a query answered from it reads live, now:
 *		those with changes its groups lack (in stale mode, with bound_us
 *		>= 0, none if no change has waited longer than bound_us), or every
 *		tenant when the changes cannot be told (see the file's comment).
 *		The caller must be allowed to read the rollup table.
 */
RollupLiveDecision *
rollup_live_decide(Oid rollup, int64 bound_us)
{
	RollupLiveDecision *d = palloc0(sizeof(RollupLiveDecision));
	Oid			owner = catalog_owner();
	Oid			save_user;
	int			save_sec;
	List	   *scope;
	bool		writes = shard_writes_begun != writes_at_xact_start;
	MemoryContext caller = CurrentMemoryContext;

	if (get_rel_name(rollup) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", rollup)));
	if (pg_class_aclcheck(rollup, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", get_rel_name(rollup))));
	if (!OidIsValid(owner))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a rollup", get_rel_name(rollup))));

	/* the caller's tenants, before acting as the catalog's owner */
	{
		Oid			types[1] = {OIDOID};
		Datum		values[1] = {ObjectIdGetDatum(rollup)};
		Oid			server = InvalidOid;

		GetUserIdAndSecContext(&save_user, &save_sec);
		SetUserIdAndSecContext(owner, save_sec | SECURITY_LOCAL_USERID_CHANGE);
		SPI_connect();
		if (SPI_execute_with_args("SELECT server FROM ssfdw_rollup.rollups "
								  "WHERE rollup = $1", 1, types, values, NULL,
								  ActiveSnapshotSet(), 1) == SPI_OK_SELECT &&
			SPI_processed == 1)
		{
			bool		isnull;

			server = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
													SPI_tuptable->tupdesc,
													1, &isnull));
		}
		SPI_finish();
		SetUserIdAndSecContext(save_user, save_sec);
		if (!OidIsValid(server))
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("\"%s\" is not a rollup", get_rel_name(rollup))));
		scope = shard_user_tenants(server, save_user);
	}

	SetUserIdAndSecContext(owner, save_sec | SECURITY_LOCAL_USERID_CHANGE);
	PG_TRY();
	{
		SPI_connect();
		decide(rollup, bound_us, scope, writes, d);
		/* what the caller keeps, out of SPI's memory */
		{
			MemoryContext old = MemoryContextSwitchTo(caller);

			d->relname = pstrdup(d->relname);
			d->ids = PointerGetDatum(DatumGetArrayTypePCopy(d->ids));
			MemoryContextSwitchTo(old);
		}
		SPI_finish();
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_user, save_sec);
	}
	PG_END_TRY();
	return d;
}

/*
 * interval_us
 *		An interval as microseconds, a month as 30 days (as justify_days).
 */
static int64
interval_us(Interval *iv)
{
	return iv->time + (int64) iv->day * USECS_PER_DAY +
		(int64) iv->month * DAYS_PER_MONTH * USECS_PER_DAY;
}

/*
 * shard_rollup_answer_live
 *		rollup_answer_live(rollup [, max_staleness]): the tenants a query
 *		answered from the rollup would read live now (rollup_live_decide);
 *		with max_staleness, none while no change has waited longer.
 */
Datum
shard_rollup_answer_live(PG_FUNCTION_ARGS)
{
	RollupLiveDecision *d;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	d = rollup_live_decide(PG_GETARG_OID(0),
						   PG_ARGISNULL(1) ? -1 :
						   Max(interval_us(PG_GETARG_INTERVAL_P(1)), 0));
	PG_RETURN_DATUM(d->ids);
}

/*
 * rollup_live_is_marker
 *		Is funcid rollup_answer_live of this extension?
 */
bool
rollup_live_is_marker(Oid funcid)
{
	char	   *name = get_func_name(funcid);
	HeapTuple	tup;
	bool		result = false;

	if (name == NULL || strcmp(name, ROLLUP_LIVE_FUNC) != 0)
		return false;
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		src = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc,
										  &isnull);

		result = !isnull &&
			strcmp(TextDatumGetCString(src), "shard_rollup_answer_live") == 0;
		ReleaseSysCache(tup);
	}
	return result;
}

/*
 * rollup_live_add_path
 *		For "FROM rollup_answer_live(rollup, bound)" with constant
 *		arguments and no condition, the Rollup Live Tenants scan, which
 *		computes the same value and shows in EXPLAIN what it decided.
 */
void
rollup_live_add_path(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte)
{
	RangeTblFunction *rtf;
	FuncExpr   *fn;
	CustomPath *cp;

	if (rte->rtekind != RTE_FUNCTION || list_length(rte->functions) != 1 ||
		rte->funcordinality || rel->baserestrictinfo != NIL ||
		rel->lateral_relids != NULL)
		return;
	rtf = linitial(rte->functions);
	if (!IsA(rtf->funcexpr, FuncExpr))
		return;
	fn = (FuncExpr *) rtf->funcexpr;
	if (list_length(fn->args) != 2 ||
		!IsA(linitial(fn->args), Const) || !IsA(lsecond(fn->args), Const) ||
		((Const *) linitial(fn->args))->constisnull ||
		!rollup_live_is_marker(fn->funcid))
		return;

	cp = makeNode(CustomPath);
	cp->path.pathtype = T_CustomScan;
	cp->path.parent = rel;
	cp->path.pathtarget = rel->reltarget;
	cp->path.rows = 1;
	cp->path.startup_cost = 0;
	cp->path.total_cost = 1;
	cp->custom_private = copyObject(fn->args);
	cp->methods = &live_path_methods;
	rel->pathlist = NIL;
	rel->partial_pathlist = NIL;
	add_path(rel, &cp->path);
}

/*
 * live_plan_path
 *		The CustomScan of a Rollup Live Tenants path: no relation scanned,
 *		one row of the columns of tlist.
 */
static Plan *
live_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			   List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cs = makeNode(CustomScan);

	cs->scan.plan.targetlist = tlist;
	cs->scan.plan.qual = extract_actual_clauses(clauses, false);
	cs->scan.scanrelid = 0;
	cs->custom_scan_tlist = tlist;
	cs->custom_private = best_path->custom_private;
	cs->methods = &live_scan_methods;
	return &cs->scan.plan;
}

/*
 * live_create_state
 *		The executor state of a Rollup Live Tenants scan.
 */
static Node *
live_create_state(CustomScan *cscan)
{
	RollupLiveState *s = palloc0(sizeof(RollupLiveState));
	Const	   *rollup = linitial(cscan->custom_private);
	Const	   *bound = lsecond(cscan->custom_private);

	NodeSetTag(s, T_CustomScanState);
	s->css.methods = &live_exec_methods;
	s->rollup = DatumGetObjectId(rollup->constvalue);
	s->bound_us = bound->constisnull ? -1 :
		Max(interval_us(DatumGetIntervalP(bound->constvalue)), 0);
	return (Node *) s;
}

/*
 * live_begin
 *		Start the scan; under a plain EXPLAIN, decide now so that EXPLAIN
 *		can say what a run would read live.
 */
static void
live_begin(CustomScanState *node, EState *estate, int eflags)
{
	RollupLiveState *s = (RollupLiveState *) node;

	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		s->decision = rollup_live_decide(s->rollup, s->bound_us);
}

/*
 * live_next
 *		The scan's one row: the ids of the tenants read live, decided now.
 */
static TupleTableSlot *
live_next(ScanState *node)
{
	RollupLiveState *s = (RollupLiveState *) node;
	TupleTableSlot *slot = node->ss_ScanTupleSlot;
	int			i;

	ExecClearTuple(slot);
	if (s->done)
		return slot;
	s->done = true;
	if (s->decision == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(node->ps.state->es_query_cxt);

		s->decision = rollup_live_decide(s->rollup, s->bound_us);
		MemoryContextSwitchTo(old);
	}
	for (i = 0; i < slot->tts_tupleDescriptor->natts; i++)
	{
		slot->tts_values[i] = s->decision->ids;
		slot->tts_isnull[i] = false;
	}
	return ExecStoreVirtualTuple(slot);
}

/*
 * live_recheck
 *		Nothing to recheck: the scan reads no relation.
 */
static bool
live_recheck(ScanState *node, TupleTableSlot *slot)
{
	return true;
}

/*
 * live_exec
 *		Return the scan's row, projected.
 */
static TupleTableSlot *
live_exec(CustomScanState *node)
{
	return ExecScan(&node->ss, live_next, live_recheck);
}

/*
 * live_end
 *		Nothing to release.
 */
static void
live_end(CustomScanState *node)
{
}

/*
 * live_rescan
 *		Return the same row again: one decision per execution.
 */
static void
live_rescan(CustomScanState *node)
{
	((RollupLiveState *) node)->done = false;
}

/*
 * us_text
 *		A number of microseconds as an interval's text.
 */
static char *
us_text(int64 us)
{
	Interval   *iv = palloc0(sizeof(Interval));

	iv->time = us;
	return DatumGetCString(DirectFunctionCall1(interval_out,
											   IntervalPGetDatum(iv)));
}

/*
 * live_explain
 *		The rollup, how many tenants are read live, and how fresh the
 *		groups of the others are.
 */
static void
live_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	RollupLiveState *s = (RollupLiveState *) node;
	RollupLiveDecision *d = s->decision;
	char	   *name = get_rel_name(s->rollup);

	ExplainPropertyText("Rollup", name ? name : "?", es);
	ExplainPropertyText("Rollup Mode", s->bound_us < 0 ? "live" :
						psprintf("stale (at most %s)", us_text(s->bound_us)),
						es);
	if (d == NULL)
		return;
	ExplainPropertyText("Tenants Read Live",
						psprintf("%d of %d%s%s%s", d->nlive, d->ntenants,
								 d->all_live ? " (every tenant: " : "",
								 d->all_live ? d->why_all : "",
								 d->all_live ? ")" : ""),
						es);
	if (d->has_as_of)
		ExplainPropertyText("Rollup Refreshed", timestamptz_to_str(d->as_of),
							es);
	if (d->stale)
		ExplainPropertyText("Rollup Staleness", us_text(d->staleness_us), es);
	/* which shards' files had changed since: a run's figure, as timings */
	if (es->analyze && d->nshards > 0)
		ExplainPropertyText("Change Logs Read",
							psprintf("%d of %d", d->nopened, d->nshards), es);
}
