/*-------------------------------------------------------------------------
 *
 * tenant.c
 *		  Tenant ids and the filters that keep a statement to its tenants
 *
 * A tenant's id is the canonical text form of its PostgreSQL value (the
 * type's output function) in UTF-8, the encoding of the directory and the
 * shards, whatever the database's encoding.  A stored row belongs to the
 * tenant whose id equals its stored tenant value read the same way
 * (tenantkey.c says exactly how, per type): byte for byte for text, so
 * that "acme " is not "acme" even in a char(n) or varchar(n) column.
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
 * shard_tenant_kind
 *		How ssfdw_tenant reads a tenant column of this type: SHARDIO_TENANT_
 *		kinds, integers by their bits.
 */
int
shard_tenant_kind(Oid typid)
{
	switch (getBaseType(typid))
	{
		case INT2OID:
			return 16;
		case INT4OID:
			return 32;
		case INT8OID:
			return 64;
		case UUIDOID:
			return SHARDIO_TENANT_UUID;
		default:
			return SHARDIO_TENANT_TEXT;
	}
}

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
 * shard_tenant_id
 *		The id of the tenant a value of a tenant column names.
 */
char *
shard_tenant_id(Oid typid, Datum value)
{
	Oid			typoutput;
	bool		typvarlena;

	getTypeOutputInfo(typid, &typoutput, &typvarlena);
	return shard_tenant_id_text(OidOutputFunctionCall(typoutput, value));
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
 * shard_tenant_column_is_text
 *		Can the tenant filters compare the shard's tenant column itself?
 *		Only for a text-like tenant type, on a shard that declares the
 *		column with TEXT affinity, where every value that can equal an id is
 *		stored as that text; otherwise they go through ssfdw_tenant.
 */
bool
shard_tenant_column_is_text(ShardConn *conn, const char *table,
							const char *column, int kind)
{
	if (kind != SHARDIO_TENANT_TEXT)
		return false;
	return shard_conn_affinity_mismatch(conn, table,
										list_make1(makeString(psprintf("%c%s",
																	   SHARD_NEEDS_TEXT,
																	   column)))) == NULL;
}

/*
 * shard_tenant_condition
 *		Append the SQLite condition "the row's tenant is [not] one of ids",
 *		with the ids bound as parameter ?paramno, whose value is returned.
 *
 * One id is compared with "=" (an index finds it); more are one JSON array
 * read by json_each.  A row of no tenant (a NULL, or a value ssfdw_tenant
 * reads as no tenant's) is in no list, and not excluded by a negated one.
 */
ShardValue
shard_tenant_condition(StringInfo buf, const char *column, int kind,
					   bool column_is_text, List *ids, bool negate,
					   int paramno)
{
	StringInfoData key;
	ShardValue	bind;

	Assert(ids != NIL);
	initStringInfo(&key);
	if (column_is_text)
	{
		shard_quote_identifier(&key, column);
		appendStringInfoString(&key, " COLLATE BINARY");
	}
	else
	{
		appendStringInfoString(&key, "ssfdw_tenant(");
		shard_quote_identifier(&key, column);
		appendStringInfo(&key, ", %d)", kind);
	}

	memset(&bind, 0, sizeof(bind));
	bind.type = SQLITE_TEXT;
	if (list_length(ids) == 1 && !negate)
	{
		appendStringInfo(buf, "%s = ?%d", key.data, paramno);
		bind.u.p = linitial(ids);
	}
	else
	{
		StringInfoData json;
		ListCell   *lc;

		initStringInfo(&json);
		appendStringInfoChar(&json, '[');
		foreach(lc, ids)
		{
			if (json.len > 1)
				appendStringInfoChar(&json, ',');
			escape_json(&json, (const char *) lfirst(lc));
		}
		appendStringInfoChar(&json, ']');
		bind.u.p = json.data;
		if (negate)
			appendStringInfo(buf,
							 "coalesce(%s NOT IN (SELECT value FROM json_each(?%d)), 1)",
							 key.data, paramno);
		else
			appendStringInfo(buf, "%s IN (SELECT value FROM json_each(?%d))",
							 key.data, paramno);
	}
	bind.len = strlen(bind.u.p);
	pfree(key.data);
	return bind;
}
