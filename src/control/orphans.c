/*-------------------------------------------------------------------------
 *
 * orphans.c
 *		  shard_orphans: rows a shard holds for tenants it does not own
 *
 * Every read keeps to the tenants a shard owns when the directory says
 * why another tenant's rows may be there (a move in progress or cut over
 * and not cleaned up: shard_map's target_shard_id).  Rows the directory
 * knows nothing of are invisible to routed reads but not to fan-outs,
 * which read every shard without a tenant filter: a tenant moved by
 * another tool whose leftovers were never deleted, a tenant removed from
 * the directory with rows left behind, rows written by an application
 * whose router had the wrong location, a half-finished copy after a
 * crash.  shard_orphans is the check an operator runs to find them: it
 * reads every table with the tenant column in every shard (tenantrows.c),
 * groups the rows by tenant and reports each group the shard does not
 * own, with the reason.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "funcapi.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(shard_orphans);

/*
 * orphan_reason
 *		Why a shard holds rows of tenant (NULL: rows of no tenant), or NULL
 *		when the shard owns them; *owner receives the owner, if any.
 */
static const char *
orphan_reason(ShardDirectory *dir, const char *shard_id, const char *tenant,
			  const char **owner)
{
	ShardLocation *loc;

	*owner = NULL;
	if (tenant == NULL)
		return "no tenant";
	loc = shard_directory_locate(dir, tenant);
	if (loc == NULL)
		return "unknown tenant";
	*owner = loc->owner;
	if (strcmp(loc->owner, shard_id) == 0)
		return NULL;
	if (loc->target_shard_id != NULL &&
		strcmp(loc->target_shard_id, shard_id) == 0)
		return "move copy";
	if (strcmp(loc->shard_id, shard_id) == 0)
		return "move leftover";
	return "owned elsewhere";
}

/*
 * shard_orphans
 *		shard_orphans(server [, tenant_column]): per shard, table and
 *		tenant, the rows of tenants that the shard does not own (in every
 *		table with a column named tenant_column, by default with the name
 *		of any tenant column of the server's foreign tables), with the
 *		owner and the reason: "unknown tenant" (the directory does not know
 *		it), "owned elsewhere", "move copy" (a copy on a move's target
 *		before cutover), "move leftover" (the source's rows after it) and
 *		"no tenant" (a NULL or a value that is no tenant id).
 */
Datum
shard_orphans(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardServerOptions *opts;
	ShardDirectory *dir;
	ShardTenantSpec *spec;
	ListCell   *lc;

	opts = shard_admin_server_arg(fcinfo);
	spec = shard_tenant_spec(opts->serverid);
	if (PG_NARGS() > 1 && !PG_ARGISNULL(1))
	{
		char	   *column = text_to_cstring(PG_GETARG_TEXT_PP(1));

		if (column[0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("tenant column must not be empty")));
		/* every table with that column but the reference tables */
		spec->columns = list_make1(column);
		foreach(lc, spec->named)
		{
			ShardSpecTable *st = lfirst(lc);

			if (!st->reference)
				spec->named = foreach_delete_current(spec->named, lc);
		}
	}
	shard_require_admin(gettext_noop("permission denied to list orphan rows"),
						gettext_noop("Only roles with privileges of the \"%s\" role may list orphan rows."));
	InitMaterializedSRF(fcinfo, 0);
	dir = shard_directory_get(opts);

	foreach(lc, shard_directory_shards(dir))
	{
		ShardInfo  *info = lfirst(lc);
		ShardConn  *conn = shard_conn_get(opts, info, opts->skip_missing);
		ListCell   *lt;

		if (conn == NULL)
		{
			shard_warn_skipped(info, NULL);
			continue;
		}
		foreach(lt, shard_server_tenant_tables(conn, info->shard_id, spec))
		{
			ShardTenantTable *tt = lfirst(lt);
			ListCell   *lr;

			foreach(lr, shard_tenant_table_counts(conn, info->shard_id, tt))
			{
				ShardTenantRows *tr = lfirst(lr);
				const char *owner;
				const char *reason = orphan_reason(dir, info->shard_id,
												   tr->tenant, &owner);
				Datum		values[6];
				bool		nulls[6] = {false, false, false, false, false, false};

				if (reason == NULL)
					continue;
				values[0] = CStringGetTextDatum(info->shard_id);
				values[1] = CStringGetTextDatum(tt->table);
				if (tr->tenant)
					values[2] = shard_tenant_id_datum(tr->tenant);
				else
					nulls[2] = true;
				values[3] = Int64GetDatum(tr->rows);
				if (owner)
					values[4] = CStringGetTextDatum(owner);
				else
					nulls[4] = true;
				values[5] = CStringGetTextDatum(reason);
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
									 values, nulls);
			}
		}
		shard_conn_release(conn);
	}
	return (Datum) 0;
}
