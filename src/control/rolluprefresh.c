/*-------------------------------------------------------------------------
 *
 * rolluprefresh.c
 *		  Refreshing a rollup: the groups of the tenants whose rows changed,
 *		  of one tenant, or of all; and which tenants have changes waiting
 *
 * A refresh notes the time (as_of), reads every shard's change log
 * (rollupcapture.c), and replaces the groups of each changed tenant with
 * the rollup's query run again for those tenants through the foreign table
 * ("... WHERE tenant = ANY(...)"), which the wrapper routes to their
 * shards and pushes down whole, grouped by the tenant.  Every change
 * committed before as_of is in a log read after it, so when the refresh
 * commits the rollup equals the aggregate computed from scratch as of
 * as_of, at least: what committed during the refresh may be in it too,
 * and is logged above the new marks for the next one.
 *
 * Everything a refresh writes in PostgreSQL, the groups, the marks and the
 * times, commits in one transaction, so readers see each tenant's groups
 * before or after, never half replaced, and a refresh that fails takes
 * nothing: its changes are taken again by the next.  The logs in the
 * shards are only read, never cleared, so no commit has to span
 * PostgreSQL and the shards.  Refreshes of one rollup take turns (an
 * advisory lock on it, held to the commit).
 *
 * A refresh reads the shards' logs with its own handles and the rows
 * through the foreign table, so it needs every statement's own snapshot:
 * under REPEATABLE READ the foreign table could be read from a snapshot
 * older than the logs, and it is refused there.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "control/rollup.h"

PG_FUNCTION_INFO_V1(shard_rollup_refresh);
PG_FUNCTION_INFO_V1(shard_rollup_refresh_tenant);
PG_FUNCTION_INFO_V1(shard_rollup_pending);

/* Changed tenants whose groups are replaced by one pair of statements. */
#define ROLLUP_BATCH_TENANTS 1000

/* The work_mem (kB) a full refresh compares the groups in, at least. */
#define ROLLUP_COMPARE_WORK_MEM (64 * 1024)

/*
 * ids_array
 *		A text[] of tenant ids (UTF-8, as the directory keys them), from
 *		position first, at most n of them.
 */
static Datum
ids_array(List *ids, int first, int n)
{
	Datum	   *datums = palloc(sizeof(Datum) * Max(n, 1));
	int			i;

	for (i = 0; i < n && first + i < list_length(ids); i++)
		datums[i] = shard_tenant_id_datum(list_nth(ids, first + i));
	return PointerGetDatum(construct_array(datums, i, TEXTOID, -1, false,
										   TYPALIGN_INT));
}

/*
 * begin_refresh
 *		What every refresh checks first: a snapshot per statement, the
 *		privilege to write the shards (the capture), a role not limited to
 *		some tenants; then it waits for the rollup's other refreshes.
 */
static void
begin_refresh(Rollup *r)
{
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot refresh rollup \"%s\" in a REPEATABLE READ or SERIALIZABLE transaction",
						get_rel_name(r->relid)),
				 errdetail("A refresh reads the shards' change logs and then their rows, each with a snapshot of its own.")));
	shard_require_file_privilege(true, gettext_noop("permission denied to refresh a rollup"),
								 gettext_noop("A refresh installs the rollup's change capture in shards that lack it: only roles with privileges of the \"%s\" role may refresh one."));
	rollup_require_unscoped(r);
	(void) DirectFunctionCall2(pg_advisory_xact_lock_int4,
							   Int32GetDatum(ROLLUP_LOCK_CLASS),
							   Int32GetDatum((int32) r->relid));
}

/*
 * tenants_sql
 *		"<tenant_key> = ANY ($1::text[]::<type>[])" for the rollup, with
 *		prefix before the column.
 */
static char *
tenants_sql(Rollup *r, const char *prefix)
{
	return psprintf("%s%s = ANY ($1::pg_catalog.text[]::%s[])", prefix,
					quote_identifier(r->tenant_key),
					format_type_be_qualified(r->tenant_type));
}

/*
 * table_columns
 *		The number of the rollup table's columns (its query's, in order).
 */
static int
table_columns(Rollup *r)
{
	Relation	rel = table_open(r->relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	int			ncols = 0;
	int			i;

	for (i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped)
			ncols++;
	table_close(rel, AccessShareLock);
	return ncols;
}

/*
 * replace_tenants
 *		Replace the groups of the tenants ids (SPI connected) with their
 *		groups computed anew; returns the groups they have now.
 *
 *		One statement per batch of tenants: it computes their groups,
 *		compares them with the table's (a GROUP BY of the old and the new
 *		rows together on every column, NULLs equal, as a full refresh
 *		compares), and deletes and inserts only the groups that differ.
 *		A tenant with one changed order has one or two of its groups
 *		written, not all of them deleted and inserted again: less to
 *		write, and no dead rows left for the groups that did not change.
 *		The statement's parts see the table as it was; the transaction
 *		commits every tenant's groups at once, so a reader sees each
 *		tenant's groups as they were or as they are, never half replaced.
 */
static int64
replace_tenants(Rollup *r, List *ids)
{
	StringInfoData cols;
	StringInfoData sql;
	int			ncols = table_columns(r);
	Oid			types[1] = {TEXTARRAYOID};
	int64		groups = 0;
	SPIPlanPtr	plan;
	int			first;
	int			i;

	if (ids == NIL)
		return 0;
	initStringInfo(&cols);
	for (i = 1; i <= ncols; i++)
		appendStringInfo(&cols, "%sc%d", i > 1 ? ", " : "", i);
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "WITH n AS MATERIALIZED (SELECT * FROM (%s) s WHERE %s), "
					 "c AS MATERIALIZED (SELECT %s, sum(d) AS d, max(t) AS t FROM "
					 "(SELECT o.*, 1, o.ctid FROM %s o WHERE %s "
					 "UNION ALL SELECT n.*, -1, NULL::pg_catalog.tid FROM n) "
					 "AS u(%s, d, t) GROUP BY %s HAVING sum(d) <> 0), "
					 "d AS (DELETE FROM %s o WHERE o.ctid = ANY (ARRAY(SELECT t FROM c WHERE d > 0))), "
					 "i AS (INSERT INTO %s SELECT %s FROM c WHERE d < 0) "
					 "SELECT count(*) FROM n",
					 r->fill_query, tenants_sql(r, "s."), cols.data, r->relname,
					 tenants_sql(r, "o."), cols.data, cols.data, r->relname,
					 r->relname, cols.data);

	/*
	 * A generic plan: the tenants are a parameter, whose shards the wrapper
	 * chooses when the statement runs.  Planned with the tenants as
	 * constants, the wrapper would estimate the rows of each of their
	 * shards, which costs about what reading their groups does.
	 */
	plan = SPI_prepare_cursor(sql.data, 1, types, CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare_cursor failed: %s",
			 SPI_result_code_string(SPI_result));
	for (first = 0; first < list_length(ids); first += ROLLUP_BATCH_TENANTS)
	{
		Datum		values[1];
		bool		isnull;
		int			rc;

		values[0] = ids_array(ids, first, ROLLUP_BATCH_TENANTS);
		rc = SPI_execute_plan(plan, values, NULL, false, 0);
		if (rc < 0)
			elog(ERROR, "SPI_execute_plan failed: %s",
				 SPI_result_code_string(rc));
		groups += DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											  SPI_tuptable->tupdesc, 1,
											  &isnull));
	}
	return groups;
}

/*
 * record_tenants
 *		Note that the tenants ids were refreshed as of as_of.
 */
static void
record_tenants(Rollup *r, List *ids, TimestampTz as_of)
{
	Oid			types[3] = {OIDOID, TEXTARRAYOID, TIMESTAMPTZOID};
	Datum		values[3];

	if (ids == NIL)
		return;
	values[0] = ObjectIdGetDatum(r->relid);
	values[1] = ids_array(ids, 0, list_length(ids));
	values[2] = TimestampTzGetDatum(as_of);
	rollup_spi_run("INSERT INTO ssfdw_rollup.tenants "
				   "SELECT $1, t, $3 FROM unnest($2) AS t "
				   "ON CONFLICT (rollup, tenant_id) DO UPDATE SET refreshed_at = excluded.refreshed_at",
				   3, types, values);
}

/*
 * record_marks
 *		Keep what the refresh took of each shard's log, and the state of
 *		the shard's files that goes with it (writing only the rows that
 *		changed, of the shards opened: the others were taken as the
 *		catalog has them), forget shards gone from the directory, and note
 *		the refresh's as_of.
 */
static void
record_marks(Rollup *r, List *logs, TimestampTz as_of, bool full)
{
	Oid			types[5] = {OIDOID, TEXTARRAYOID, TEXTARRAYOID, INT8ARRAYOID,
	TEXTARRAYOID};
	Datum		values[5];
	Datum	   *ids = palloc(sizeof(Datum) * Max(list_length(logs), 1));
	Datum	   *taken = palloc(sizeof(Datum) * Max(list_length(logs), 1));
	Datum	   *epochs = palloc(sizeof(Datum) * Max(list_length(logs), 1));
	Datum	   *marks = palloc(sizeof(Datum) * Max(list_length(logs), 1));
	Datum	   *states = palloc(sizeof(Datum) * Max(list_length(logs), 1));
	bool	   *nostate = palloc(sizeof(bool) * Max(list_length(logs), 1));
	int			dims[1];
	int			lbs[1] = {1};
	int			nids = 0;
	int			ntaken = 0;
	ListCell   *lc;

	foreach(lc, logs)
	{
		RollupShardLog *log = lfirst(lc);

		ids[nids++] = CStringGetTextDatum(log->shard_id);
		if (log->epoch == NULL)
			continue;			/* skipped: its changes wait */
		if (!log->opened)
			continue;			/* files unchanged: its row is as it was */
		taken[ntaken] = CStringGetTextDatum(log->shard_id);
		epochs[ntaken] = CStringGetTextDatum(log->epoch);
		nostate[ntaken] = log->file_state == NULL;
		states[ntaken] = log->file_state ?
			CStringGetTextDatum(log->file_state) : (Datum) 0;
		marks[ntaken++] = Int64GetDatum(log->mark);
	}
	values[0] = ObjectIdGetDatum(r->relid);
	values[1] = PointerGetDatum(construct_array(taken, ntaken, TEXTOID, -1,
												false, TYPALIGN_INT));
	values[2] = PointerGetDatum(construct_array(epochs, ntaken, TEXTOID, -1,
												false, TYPALIGN_INT));
	values[3] = PointerGetDatum(construct_array(marks, ntaken, INT8OID, 8,
												FLOAT8PASSBYVAL,
												TYPALIGN_DOUBLE));
	dims[0] = ntaken;
	values[4] = PointerGetDatum(construct_md_array(states, nostate, 1, dims,
												   lbs, TEXTOID, -1, false,
												   TYPALIGN_INT));
	rollup_spi_run("INSERT INTO ssfdw_rollup.shards "
				   "SELECT $1, s, e, m, f FROM unnest($2, $3, $4, $5) AS t(s, e, m, f) "
				   "ON CONFLICT (rollup, shard_id) DO UPDATE "
				   "SET epoch = excluded.epoch, mark = excluded.mark, file_state = excluded.file_state "
				   "WHERE (shards.epoch, shards.mark, shards.file_state) IS DISTINCT FROM "
				   "(excluded.epoch, excluded.mark, excluded.file_state)",
				   5, types, values);
	values[1] = PointerGetDatum(construct_array(ids, nids, TEXTOID, -1, false,
												TYPALIGN_INT));
	rollup_spi_run("DELETE FROM ssfdw_rollup.shards WHERE rollup = $1 AND shard_id <> ALL ($2)",
				   2, types, values);

	types[1] = TIMESTAMPTZOID;
	values[1] = TimestampTzGetDatum(as_of);
	rollup_spi_run(full ?
				   "UPDATE ssfdw_rollup.rollups SET refreshed_at = $2, full_refreshed_at = $2 WHERE rollup = $1" :
				   "UPDATE ssfdw_rollup.rollups SET refreshed_at = $2 WHERE rollup = $1",
				   2, types, values);
}

/*
 * add_ids
 *		Append the ids of more to ids.
 */
static List *
add_ids(List *ids, List *more)
{
	ListCell   *lc;

	foreach(lc, more)
		ids = lappend(ids, lfirst(lc));
	return ids;
}

/*
 * cmp_ids
 *		list_sort comparator of tenant ids, byte for byte.
 */
static int
cmp_ids(const ListCell *a, const ListCell *b)
{
	return strcmp(lfirst(a), lfirst(b));
}

/*
 * unique_ids
 *		ids sorted, each once.
 */
static List *
unique_ids(List *ids)
{
	List	   *result = NIL;
	ListCell   *lc;

	list_sort(ids, cmp_ids);
	foreach(lc, ids)
		if (result == NIL || strcmp(llast(result), lfirst(lc)) != 0)
			result = lappend(result, lfirst(lc));
	return result;
}

/*
 * shard_tenant_ids
 *		The ids of the tenants the directory has the shard answer for.
 */
static List *
shard_tenant_ids(Rollup *r, const char *shard_id)
{
	ShardDirectory *dir = shard_directory_get(r->opts);
	List	   *result = NIL;
	ListCell   *lc;

	if (r->opts->file_per_tenant)
		return list_make1(pstrdup(shard_directory_file_tenant(dir, shard_id)));
	foreach(lc, shard_directory_tenants(dir, shard_id))
		result = lappend(result, ((ShardLocation *) lfirst(lc))->tenant);
	return result;
}

/*
 * rewrite_differing
 *		Compute every group of the rollup anew, and write only the groups
 *		of the tenants whose groups came out other than the table has them
 *		(SPI connected): one statement, whose parts see the table as it
 *		was.  Each tenant's groups are compared as a set (a GROUP BY of
 *		the old and the new rows together on every column, NULLs equal);
 *		a tenant that differs has all its groups replaced.  A full refresh
 *		after little has changed so writes little, and leaves no dead
 *		rows.  The comparison runs with work_mem 64 MB at least, so that
 *		it hashes in memory rather than sorting.  Returns the ids of the
 *		tenants with groups; *groups gets the count of the groups.
 */
static List *
rewrite_differing(Rollup *r, int64 *groups)
{
	Relation	rel = table_open(r->relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData cols;
	StringInfoData sql;
	const char *tk = quote_identifier(r->tenant_key);
	char	   *tenant_col = NULL;
	List	   *ids = NIL;
	int			ncols = 0;
	int			nest;
	int			i;
	uint64		row;

	/* the table's columns under names of our own, and the side's last */
	initStringInfo(&cols);
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		ncols++;
		appendStringInfo(&cols, "c%d, ", ncols);
		if (strcmp(NameStr(att->attname), r->tenant_key) == 0)
			tenant_col = psprintf("c%d", ncols);
	}
	table_close(rel, AccessShareLock);
	if (tenant_col == NULL)
		elog(ERROR, "rollup \"%s\" has no column \"%s\"",
			 get_rel_name(r->relid), r->tenant_key);

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "WITH n AS MATERIALIZED (%s), "
					 "c AS MATERIALIZED (SELECT DISTINCT %s AS k FROM "
					 "(SELECT o.*, 1 FROM %s o UNION ALL SELECT n.*, -1 FROM n) "
					 "AS u(%ss) GROUP BY ",
					 r->fill_query, tenant_col, r->relname, cols.data);
	for (i = 1; i <= ncols; i++)
		appendStringInfo(&sql, "%sc%d", i > 1 ? ", " : "", i);
	appendStringInfo(&sql,
					 " HAVING sum(s) <> 0), "
					 "d AS (DELETE FROM %s o WHERE o.%s IN (SELECT k FROM c) "
					 "OR (o.%s IS NULL AND EXISTS (SELECT FROM c WHERE k IS NULL))), "
					 "i AS (INSERT INTO %s SELECT * FROM n WHERE n.%s IN (SELECT k FROM c) "
					 "OR (n.%s IS NULL AND EXISTS (SELECT FROM c WHERE k IS NULL))) "
					 "SELECT n.%s::pg_catalog.text, count(*) FROM n GROUP BY 1",
					 r->relname, tk, tk, r->relname, tk, tk, tk);
	/* the comparison hashes two copies of the rollup: in memory */
	nest = NewGUCNestLevel();
	if (work_mem < ROLLUP_COMPARE_WORK_MEM)
		(void) set_config_option("work_mem",
								 psprintf("%d", ROLLUP_COMPARE_WORK_MEM),
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
								 true, 0, false);
	rollup_spi_run(sql.data, 0, NULL, NULL);
	AtEOXact_GUC(true, nest);

	*groups = 0;
	for (row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tup = SPI_tuptable->vals[row];
		char	   *v = SPI_getvalue(tup, SPI_tuptable->tupdesc, 1);
		bool		isnull;

		*groups += DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2,
											   &isnull));
		if (v != NULL)
			ids = lappend(ids, shard_tenant_id_text(v));
	}
	return ids;
}

/*
 * rollup_refresh_full
 *		Compute every group of the rollup anew (SPI connected, the rollup's
 *		refresh lock taken or its table just created), taking every
 *		shard's log up to now.
 */
void
rollup_refresh_full(Rollup *r, int64 *tenants, int64 *groups,
					TimestampTz *as_of)
{
	List	   *logs;
	List	   *ids;
	ListCell   *lc;
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(r->relid)};

	*as_of = GetCurrentTimestamp();
	logs = rollup_capture_read(r, true);

	/* every tenant with groups, and every other the directory knows */
	ids = rewrite_differing(r, groups);
	foreach(lc, shard_directory_tenants(shard_directory_get(r->opts), NULL))
		ids = lappend(ids, ((ShardLocation *) lfirst(lc))->tenant);
	ids = unique_ids(ids);
	rollup_spi_run("DELETE FROM ssfdw_rollup.tenants WHERE rollup = $1", 1, types,
				   values);
	record_tenants(r, ids, *as_of);
	record_marks(r, logs, *as_of, true);
	*tenants = list_length(ids);
}

/*
 * refresh_changed
 *		Replace the groups of the tenants with changes in the logs (SPI
 *		connected, the refresh lock taken).
 */
static void
refresh_changed(Rollup *r, int64 *tenants, int64 *groups, TimestampTz *as_of)
{
	List	   *logs;
	List	   *ids = NIL;
	ListCell   *lc;

	*as_of = GetCurrentTimestamp();
	logs = rollup_capture_read(r, true);
	foreach(lc, logs)
	{
		RollupShardLog *log = lfirst(lc);

		ids = add_ids(ids, log->tenants);
		if (log->reset)
			ids = add_ids(ids, shard_tenant_ids(r, log->shard_id));
	}
	ids = unique_ids(ids);
	*groups = replace_tenants(r, ids);
	record_tenants(r, ids, *as_of);
	record_marks(r, logs, *as_of, false);
	*tenants = list_length(ids);
}

/*
 * refresh_result
 *		The record (tenants, groups, as_of) a refresh returns.
 */
static Datum
refresh_result(FunctionCallInfo fcinfo, int64 tenants, int64 groups,
			   TimestampTz as_of)
{
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = Int64GetDatum(tenants);
	values[1] = Int64GetDatum(groups);
	values[2] = TimestampTzGetDatum(as_of);
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values,
											 nulls));
}

/*
 * shard_rollup_refresh
 *		rollup_refresh(rollup [, full]): replace the groups of the tenants
 *		whose rows changed since the last refresh, or with full every
 *		group.  Returns the tenants refreshed, the groups they now have,
 *		and the time as of which the rollup holds every committed write.
 */
Datum
shard_rollup_refresh(PG_FUNCTION_ARGS)
{
	Rollup	   *r = rollup_load(PG_GETARG_OID(0));
	bool		full = PG_GETARG_BOOL(1);
	int64		tenants,
				groups;
	TimestampTz as_of;

	begin_refresh(r);
	SPI_connect();
	if (full)
		rollup_refresh_full(r, &tenants, &groups, &as_of);
	else
		refresh_changed(r, &tenants, &groups, &as_of);
	SPI_finish();
	return refresh_result(fcinfo, tenants, groups, as_of);
}

/*
 * shard_rollup_refresh_tenant
 *		rollup_refresh_tenant(rollup, tenant): replace one tenant's groups,
 *		whatever the logs say.  The logs are not taken: the tenant's
 *		changes there are taken again by the next refresh.
 */
Datum
shard_rollup_refresh_tenant(PG_FUNCTION_ARGS)
{
	Rollup	   *r = rollup_load(PG_GETARG_OID(0));
	char	   *given = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(given)};
	char	   *id;
	int64		groups;
	TimestampTz as_of;

	begin_refresh(r);
	SPI_connect();
	as_of = GetCurrentTimestamp();

	/* the tenant's id: its value of the tenant type, as text */
	rollup_spi_run(psprintf("SELECT $1::%s::pg_catalog.text",
				   format_type_be_qualified(r->tenant_type)),
				   1, types, values);
	id = shard_tenant_id_text(SPI_getvalue(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 1));
	/* its changes from now on are pending, its shard's mark moved on */
	rollup_capture_publish(r, id);
	groups = replace_tenants(r, list_make1(id));
	record_tenants(r, list_make1(id), as_of);
	SPI_finish();
	return refresh_result(fcinfo, 1, groups, as_of);
}

/* A tenant with changes the rollup has not taken. */
typedef struct PendingTenant
{
	char	   *id;
	bool		known;			/* at is the time of its last change */
	TimestampTz at;
} PendingTenant;

/*
 * cmp_pending
 *		list_sort comparator of PendingTenants, by id.
 */
static int
cmp_pending(const ListCell *a, const ListCell *b)
{
	return strcmp(((PendingTenant *) lfirst(a))->id,
				  ((PendingTenant *) lfirst(b))->id);
}

/*
 * shard_rollup_pending
 *		rollup_pending(rollup): the tenants whose changes in the shards'
 *		logs the rollup has not taken, with the time of the last one; every
 *		tenant of a shard whose log the rollup cannot read as its own
 *		(capture missing, another epoch), with no time.  Reads only: the
 *		capture is not installed.
 */
Datum
shard_rollup_pending(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Rollup	   *r = rollup_load(PG_GETARG_OID(0));
	List	   *logs;
	List	   *pending = NIL;
	ListCell   *lc;

	shard_require_file_privilege(false, gettext_noop("permission denied to read the changes of a rollup"),
								 gettext_noop("Only roles with privileges of the \"%s\" role may read the shards' change logs."));
	logs = rollup_capture_read(r, false);
	InitMaterializedSRF(fcinfo, 0);

	/* each tenant once: its latest change, or no time if any is unknown */
	foreach(lc, logs)
	{
		RollupShardLog *log = lfirst(lc);
		ListCell   *lt,
				   *la;

		if (log->reset)
			log->tenants = add_ids(log->tenants,
								   shard_tenant_ids(r, log->shard_id));
		forboth(lt, log->tenants, la, log->changed_at)
		{
			PendingTenant *p = palloc(sizeof(PendingTenant));

			p->id = lfirst(lt);
			p->known = !log->reset;
			p->at = *(TimestampTz *) lfirst(la);
			pending = lappend(pending, p);
		}
		/* a reset shard's tenants beyond its logged ones */
		for_each_from(lt, log->tenants, list_length(log->changed_at))
		{
			PendingTenant *p = palloc0(sizeof(PendingTenant));

			p->id = lfirst(lt);
			pending = lappend(pending, p);
		}
	}
	list_sort(pending, cmp_pending);
	foreach(lc, pending)
	{
		PendingTenant *p = lfirst(lc);
		PendingTenant *next = lnext(pending, lc) ? lfirst(lnext(pending, lc)) : NULL;
		Datum		values[2];
		bool		nulls[2] = {false, !p->known};

		if (next != NULL && strcmp(next->id, p->id) == 0)
		{
			/* fold into the next of the same id */
			next->known = next->known && p->known;
			next->at = Max(next->at, p->at);
			continue;
		}
		values[0] = shard_tenant_id_datum(p->id);
		values[1] = TimestampTzGetDatum(p->at);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values,
							 nulls);
	}
	return (Datum) 0;
}
