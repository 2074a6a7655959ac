/*-------------------------------------------------------------------------
 *
 * tenant.c
 *		  Tenant ids and the filters that keep a statement to its tenants
 *
 * A tenant's id is the canonical text form of its PostgreSQL value (the
 * type's output function) in UTF-8, the encoding of the directory and the
 * shards, whatever the database's encoding; of a char(n) value, its text
 * without the pad (what a cast to text gives: 'a'::char(3) is tenant "a",
 * not "a  ").  A stored row belongs to the tenant whose id equals its
 * stored tenant value read the same way (tenantkey.c says exactly how, per
 * type): byte for byte for text, so that "acme " is not "acme" even in a
 * char(n) or varchar(n) column, where PostgreSQL reads both alike.  So a
 * row inserted for a tenant stores its id, and a statement that names
 * tenant "a" of a char(3) column reads, changes and routes the rows stored
 * as 'a', never those stored as 'a  ' (a tenant the directory does not
 * know).
 *
 * The filters a scan adds at run time (the tenants a routed statement
 * names, a user mapping's "tenants", the stale copy of a moving tenant)
 * are conditions in the shard's own query, never checks on fetched rows:
 * a row the statement may not see is never fetched, so it is never
 * converted, counted in EXPLAIN ANALYZE or named in an error.  They are
 * exact on every shard, however it declares the tenant column.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"

/*
 * shard_tenant_id_text
 *		A tenant id given in the server encoding (a user mapping's list, a
 *		function's argument) as the directory keys it: in UTF-8.
 */
char *
shard_tenant_id_text(const char *text)
{
	return pg_server_to_any(text, strlen(text), PG_UTF8);
}

/*
 * shard_tenant_id_init
 *		Prepare to take the tenant ids of values of typid, once for many.
 */
void
shard_tenant_id_init(ShardTenantIdConv *conv, Oid typid)
{
	Oid			typoutput;
	bool		typvarlena;

	getTypeOutputInfo(typid, &typoutput, &typvarlena);
	fmgr_info(typoutput, &conv->outfunc);
	conv->padded = getBaseType(typid) == BPCHAROID;
}

/*
 * shard_tenant_id_of
 *		The id of the tenant a value of a tenant column names: its output
 *		text, for char(n) without the trailing spaces that pad it (they are
 *		no part of the value: PostgreSQL's comparisons and its cast to text
 *		ignore them).
 */
char *
shard_tenant_id_of(ShardTenantIdConv *conv, Datum value)
{
	char	   *text = OutputFunctionCall(&conv->outfunc, value);

	if (conv->padded)
	{
		size_t		len = strlen(text);

		while (len > 0 && text[len - 1] == ' ')
			len--;
		text[len] = '\0';
	}
	return shard_tenant_id_text(text);
}

/*
 * shard_tenant_id
 *		The id of the tenant a value of a tenant column names, for one
 *		value (shard_tenant_id_of for many).
 */
char *
shard_tenant_id(Oid typid, Datum value)
{
	ShardTenantIdConv conv;

	shard_tenant_id_init(&conv, typid);
	return shard_tenant_id_of(&conv, value);
}

/*
 * shard_tenant_value_type_ok
 *		Does a value of typid name a tenant by its id, so that a condition
 *		"tenant = value" can route a statement?  The tenant types, of which
 *		char(n) by its text without the pad.
 */
bool
shard_tenant_value_type_ok(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case UUIDOID:
			return true;
		default:
			return false;
	}
}

/*
 * shard_tenant_store_id
 *		The tenant column of a row to insert is stored as its tenant's id,
 *		so that the row is that tenant's: a text form (v, as store.c made
 *		it) becomes the id itself, which differs from the column's output
 *		text only for char(n), by the pad.  Integers stay integers.
 */
void
shard_tenant_store_id(ShardValue *v, const char *id)
{
	if (v->type != SQLITE_TEXT || id == NULL)
		return;
	v->u.p = id;
	v->len = strlen(id);
}

/*
 * shard_tenant_id_datum
 *		A tenant id as the directory or a shard keys it (UTF-8), as a text
 *		Datum in the server encoding, for a function's result.
 */
Datum
shard_tenant_id_datum(const char *id)
{
	return CStringGetTextDatum(pg_any_to_server(id, strlen(id), PG_UTF8));
}

/*
 * shard_tenant_ids_text
 *		shard_tenant_id_text of each id of a list.
 */
List *
shard_tenant_ids_text(List *ids)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, ids)
		result = lappend(result, shard_tenant_id_text(lfirst(lc)));
	return result;
}

/*
 * sqlite_shard_fdw.unknown_tenants: what a routed read does for a tenant
 * the directory does not know (UNKNOWN_TENANTS_*).
 */
int			shard_unknown_tenants = UNKNOWN_TENANTS_WARNING;

/*
 * shard_check_unknown_tenant
 *		A routed read named tenant, which the directory does not know, so
 *		it reads no shard for it.  Unless sqlite_shard_fdw.unknown_tenants
 *		is off, count the tenant's rows in the read's table on every shard
 *		(by the one tenant rule, as shard_orphans counts them), and where a
 *		shard holds some, say so: the read returns nothing while a fan-out
 *		counts them, until the tenant is registered.  A warning, or with
 *		"error" an error (55000).  Only for a tenant the statement may read:
 *		the caller has kept a scoped role to its own.
 */
void
shard_check_unknown_tenant(ShardServerOptions *opts, ShardDirectory *dir,
						   ShardTableOptions *topts, int kind,
						   const char *tenant)
{
	ListCell   *lc;

	/* in a fleet of one file per tenant, no file holds another's rows */
	if (shard_unknown_tenants == UNKNOWN_TENANTS_OFF || topts->reference ||
		opts->file_per_tenant)
		return;
	foreach(lc, shard_directory_shards(dir))
	{
		ShardInfo  *info = lfirst(lc);
		ShardConn  *conn = shard_conn_get_brief(opts, info, true);
		ShardTenantTable tt;
		int64		rows = 0;

		if (conn == NULL)
			continue;
		/* a shard without the table or its tenant column has no rows */
		if (shard_conn_column_affinity(conn, topts->table,
									   topts->tenant_column) != 0)
		{
			tt.table = topts->table;
			tt.column = topts->tenant_column;
			shard_tenant_rule_lookup(&tt.rule, shard_conn_db(conn),
									 tt.table, tt.column, kind);
			rows = shard_tenant_table_rows(conn, info->shard_id, &tt, tenant,
										   false);
		}
		shard_conn_release(conn);
		if (rows > 0)
			ereport(shard_unknown_tenants == UNKNOWN_TENANTS_ERROR ?
					ERROR : WARNING,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("tenant \"%s\" is not in the directory of server \"%s\", but shard \"%s\" holds " INT64_FORMAT " of its rows in table \"%s\"",
							tenant, opts->servername, info->shard_id, rows,
							topts->table),
					 errdetail("A routed statement reads no shard for a tenant the directory does not know, while a statement over every shard counts its rows."),
					 errhint("Register the tenant with tenant_add('%s', '%s', '%s'), or every tenant the shards hold with directory_adopt('%s').",
							 opts->servername, tenant, info->shard_id,
							 opts->servername)));
	}
}
