/*-------------------------------------------------------------------------
 *
 * schemareport.c
 *		  shard_schemas: the schemas of one table across the fleet
 *
 * Files made at different migrations hold a table in different forms (a
 * column added later, a table added later).  shard_schemas reads each
 * shard's declaration of the table, as PRAGMA table_info gives it (each
 * column's name and declared type, in order), and reports each distinct
 * declaration once, with the number of shards that have it and the first
 * of them (in shard id order), and the shards without the table.  Only
 * the schema is read: no SQL text found in a file is run.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(shard_schemas);

/* One distinct declaration of the table, and the shards that have it. */
typedef struct SchemaVersion
{
	char	   *columns;		/* "name TYPE, ...", or NULL: no table */
	int64		shards;			/* shards that declare it so */
	char	   *example_shard;	/* the first of them */
	char	   *example_path;
} SchemaVersion;

/*
 * table_declaration
 *		The table's columns in one shard, "name TYPE, ..." in column order
 *		(a column without a declared type is its name alone), or NULL when
 *		the shard has no such table.
 */
static char *
table_declaration(ShardConn *conn, const char *shard_id, const char *table)
{
	sqlite3    *db = shard_conn_db(conn);
	sqlite3_stmt *stmt;
	StringInfoData buf;
	int			rc;
	int			n = 0;

	if (sqlite3_prepare_v2(db, "SELECT name, type FROM pragma_table_info(?1, 'main') "
						   "ORDER BY cid", -1, &stmt, NULL) != SQLITE_OK)
		shard_sqlite_error(ERROR, sqlite3_errcode(db), shard_id,
						   sqlite3_errmsg(db),
						   "could not read the schema of table \"%s\" on shard \"%s\"",
						   table, shard_id);
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
	initStringInfo(&buf);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		const char *name = (const char *) sqlite3_column_text(stmt, 0);
		const char *type = (const char *) sqlite3_column_text(stmt, 1);

		if (n++ > 0)
			appendStringInfoString(&buf, ", ");
		appendStringInfoString(&buf, name ? name : "");
		if (type != NULL && type[0] != '\0')
			appendStringInfo(&buf, " %s", type);
	}
	sqlite3_finalize(stmt);
	shard_check_lock_wait(rc, false, shard_id);
	if (rc != SQLITE_DONE)
		shard_sqlite_error(ERROR, rc, shard_id, sqlite3_errmsg(db),
						   "could not read the schema of table \"%s\" on shard \"%s\"",
						   table, shard_id);
	if (n == 0)
		return NULL;
	return pg_any_to_server(buf.data, buf.len, PG_UTF8);
}

/*
 * shard_schemas
 *		shard_schemas(server, table): each distinct declaration of an SQLite
 *		table among the server's shards (or files), most shards first:
 *		columns ("name TYPE, ...", NULL for the shards without the table),
 *		shards, and the first shard having it and its path.  It opens every
 *		shard, so it needs the fleet checks' privileges: a role scoped to
 *		some tenants, which must learn nothing of other tenants' files,
 *		may not call it.
 */
Datum
shard_schemas(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardServerOptions *opts;
	const char *table;
	List	   *versions = NIL;
	ListCell   *lc;
	int64		most = 0;

	opts = shard_admin_server_arg(fcinfo);
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("table must not be null")));
	shard_require_admin(gettext_noop("permission denied to read the schemas of the shards"),
						gettext_noop("Only roles with privileges of the \"%s\" role may read the schemas of the shards."));
	table = text_to_cstring(PG_GETARG_TEXT_PP(1));
	InitMaterializedSRF(fcinfo, 0);

	foreach(lc, shard_directory_shards(shard_directory_get(opts)))
	{
		ShardInfo  *info = lfirst(lc);
		ShardConn  *conn = shard_conn_get_brief(opts, info, false);
		char	   *columns = table_declaration(conn, info->shard_id, table);
		SchemaVersion *found = NULL;
		ListCell   *vc;

		shard_conn_release(conn);
		shard_conn_end_reads();
		foreach(vc, versions)
		{
			SchemaVersion *v = lfirst(vc);

			if (columns == NULL ? v->columns == NULL :
				(v->columns != NULL && strcmp(v->columns, columns) == 0))
			{
				found = v;
				break;
			}
		}
		if (found == NULL)
		{
			found = palloc0(sizeof(SchemaVersion));
			found->columns = columns;
			found->example_shard = pstrdup(info->shard_id);
			found->example_path = pstrdup(info->path);
			versions = lappend(versions, found);
		}
		found->shards++;
		most = Max(most, found->shards);
	}

	/* most shards first; among as many, the first seen first */
	for (; most > 0; most--)
		foreach(lc, versions)
		{
			SchemaVersion *v = lfirst(lc);
			Datum		values[4];
			bool		nulls[4] = {false, false, false, false};

			if (v->shards != most)
				continue;
			if (v->columns)
				values[0] = CStringGetTextDatum(v->columns);
			else
				nulls[0] = true;
			values[1] = Int64GetDatum(v->shards);
			values[2] = CStringGetTextDatum(v->example_shard);
			values[3] = CStringGetTextDatum(v->example_path);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
								 values, nulls);
		}
	return (Datum) 0;
}
