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

/*
 * append_as_read
 *		Append a stored text value (expr) as PostgreSQL reads it into a
 *		tenant column of basetype and typmod: a char(n) value without its
 *		trailing spaces, a varchar(n) value without the spaces beyond n
 *		characters (as ssfdw_varchar, but text too long is left as it is
 *		rather than an error: it never equals a value read, and a condition
 *		must not fail on a row it does not keep).
 */
static void
append_as_read(StringInfo buf, const char *expr, Oid basetype, int32 typmod)
{
	if (basetype == BPCHAROID)
		appendStringInfo(buf, "rtrim(%s, ' ')", expr);
	else if (basetype == VARCHAROID && typmod >= (int32) VARHDRSZ)
	{
		int			n = typmod - VARHDRSZ;

		appendStringInfo(buf,
						 "CASE WHEN rtrim(substr(%s, %d), ' ') = '' THEN substr(%s, 1, %d) ELSE %s END",
						 expr, n + 1, expr, n, expr);
	}
	else
		appendStringInfoString(buf, expr);
}

/*
 * shard_tenant_row_condition
 *		Append the condition of a row-by-row UPDATE or DELETE that the row
 *		its rowid or key names still holds the tenant value the scan read,
 *		given as its id in parameter ?paramno (NULL for a NULL), for a
 *		tenant column of type typid and typmod.
 *
 * The scan chose the rows (a routed one by shard_tenant_condition, byte
 * for byte); this only checks that the row found again is the one read,
 * so it compares the stored value as the scan read it.  A value that is
 * no tenant's id (a real in a text column) is compared as the text the
 * scan read it as.  A char(n) value read back has lost the trailing spaces
 * it was stored with (PostgreSQL pads it, and its id drops the pad), and a
 * varchar(n) value the spaces beyond n characters (as varchar's input
 * drops them): so a row stored as 'a  ' that a scan over every shard read
 * is changed where it is, as a statement run inside the shards changes it.
 */
void
shard_tenant_row_condition(StringInfo buf, const char *column, Oid typid,
						   int32 typmod, int paramno)
{
	StringInfoData key;
	StringInfoData text;
	int32		basetypmod = -1;
	Oid			basetype = getBaseTypeAndTypmod(typid, &basetypmod);

	if (basetype != typid)
		typmod = basetypmod;
	initStringInfo(&key);
	appendStringInfoString(&key, "ssfdw_tenant(");
	shard_quote_identifier(&key, column);
	appendStringInfo(&key, ", %d)", shard_tenant_kind(typid));
	initStringInfo(&text);
	appendStringInfoString(&text, "CAST(");
	shard_quote_identifier(&text, column);
	appendStringInfoString(&text, " AS TEXT)");

	appendStringInfoChar(buf, '(');
	append_as_read(buf, key.data, basetype, typmod);
	appendStringInfo(buf, " IS ?%d OR %s IS NULL AND ", paramno, key.data);
	append_as_read(buf, text.data, basetype, typmod);
	appendStringInfo(buf, " IS ?%d)", paramno);
	pfree(key.data);
	pfree(text.data);
}
