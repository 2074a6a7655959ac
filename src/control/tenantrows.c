/*-------------------------------------------------------------------------
 *
 * tenantrows.c
 *		  The tenants' rows inside one shard: which tables hold them, and how
 *		  many rows each tenant has there
 *
 * The control plane's checks and statistics (shard_orphans, tenant_stats,
 * tenant_remove) look at a shard as the application wrote it, not only
 * through the foreign tables defined in PostgreSQL: every table of the
 * shard with a column of the tenant column's name is a tenant table.
 * Tables whose names begin with "sqlite_" (SQLite's own), "ssfdw_" or
 * "_ssfdw_" (the extension's bookkeeping inside a shard: a move's change
 * log and fence) and virtual tables are left out.
 *
 * A row belongs to the tenant whose id its stored value is, read as the
 * tenant filters of text-like tenant columns read it (tenantkey.c): the
 * stored text byte for byte, or an integer's decimal form; so integer and
 * text tenants are recognized whatever the foreign tables' types, uuids
 * when they are stored as the text PostgreSQL prints.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_foreign_table.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/*
 * tenant_rows_failed
 *		Raise a failed read of a shard's tenant tables, whose primary
 *		message is message (translated already); the statement is finalized
 *		first so that nothing is left prepared on the handle.
 */
static void
tenant_rows_failed(sqlite3_stmt *stmt, int rc, const char *shard_id,
				   const char *message, const char *msg)
{
	char	   *copy = pstrdup(msg);

	sqlite3_finalize(stmt);
	shard_sqlite_error(ERROR, rc, shard_id, copy, "%s", message);
}

/*
 * shard_tenant_tables
 *		The tables of a shard that have a column named column (SQLite's
 *		rules: case does not matter), ordered by name, as ShardTenantTables.
 */
List *
shard_tenant_tables(ShardConn *conn, const char *shard_id, const char *column)
{
	sqlite3    *db = shard_conn_db(conn);
	sqlite3_stmt *stmt;
	char		errbuf[SHARDIO_ERRLEN];
	List	   *result = NIL;
	ListCell   *lc;
	int			rc;

	rc = shardio_prepare(db,
						 "SELECT m.name, p.name FROM sqlite_schema AS m, "
						 "pragma_table_info(m.name) AS p "
						 "WHERE m.type = 'table' "
						 "AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
						 "AND m.name NOT LIKE 'ssfdw\\_%' ESCAPE '\\' "
						 "AND m.name NOT LIKE '\\_ssfdw\\_%' ESCAPE '\\' "
						 "AND coalesce(m.sql, '') NOT LIKE 'CREATE VIRTUAL%' "
						 "AND p.name = ?1 COLLATE NOCASE ORDER BY m.name",
						 0, &stmt, errbuf);
	if (rc != SQLITE_OK)
		shard_sqlite_error(ERROR, rc, shard_id, errbuf,
						   "could not list the tables of shard \"%s\"",
						   shard_id);
	sqlite3_bind_text(stmt, 1, column, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		ShardTenantTable *tt = palloc0(sizeof(ShardTenantTable));

		tt->table = pstrdup((const char *) sqlite3_column_text(stmt, 0));
		tt->column = pstrdup((const char *) sqlite3_column_text(stmt, 1));
		result = lappend(result, tt);
	}
	if (rc != SQLITE_DONE)
		tenant_rows_failed(stmt, rc, shard_id,
						   psprintf(_("could not list the tables of shard \"%s\""),
									shard_id),
						   sqlite3_errmsg(db));
	sqlite3_finalize(stmt);

	/* An index on a TEXT tenant column serves a single tenant's rows. */
	foreach(lc, result)
	{
		ShardTenantTable *tt = lfirst(lc);

		tt->column_is_text = shard_tenant_column_is_text(conn, tt->table,
														 tt->column,
														 SHARDIO_TENANT_TEXT);
	}
	return result;
}

/*
 * shard_tenant_table_counts
 *		The rows of each tenant in one tenant table of a shard, ordered by
 *		tenant id, as ShardTenantRows; rows of no tenant (NULL, or a value
 *		that is no tenant's id) come first, with a NULL tenant.
 */
List *
shard_tenant_table_counts(ShardConn *conn, const char *shard_id,
						  ShardTenantTable *tt)
{
	sqlite3    *db = shard_conn_db(conn);
	sqlite3_stmt *stmt;
	char		errbuf[SHARDIO_ERRLEN];
	StringInfoData sql;
	List	   *result = NIL;
	char	   *what = psprintf(_("could not count the rows of table \"%s\" on shard \"%s\""),
								tt->table, shard_id);
	int			rc;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ssfdw_tenant(");
	shard_quote_identifier(&sql, tt->column);
	appendStringInfo(&sql, ", %d) AS t, count(*) FROM ", SHARDIO_TENANT_TEXT);
	shard_quote_identifier(&sql, tt->table);
	appendStringInfoString(&sql, " GROUP BY t ORDER BY t");
	rc = shardio_prepare(db, sql.data, 0, &stmt, errbuf);
	if (rc != SQLITE_OK)
		shard_sqlite_error(ERROR, rc, shard_id, errbuf, "%s", what);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		ShardTenantRows *tr = palloc0(sizeof(ShardTenantRows));
		const char *tenant = (const char *) sqlite3_column_text(stmt, 0);

		tr->tenant = tenant ? pstrdup(tenant) : NULL;
		tr->rows = sqlite3_column_int64(stmt, 1);
		result = lappend(result, tr);
	}
	if (rc != SQLITE_DONE)
		tenant_rows_failed(stmt, rc, shard_id, what, sqlite3_errmsg(db));
	sqlite3_finalize(stmt);
	return result;
}

/*
 * shard_tenant_table_rows
 *		One tenant's rows in one tenant table of a shard; with delete, they
 *		are deleted (the shard must be held for writing) and the number
 *		deleted is returned.
 */
int64
shard_tenant_table_rows(ShardConn *conn, const char *shard_id,
						ShardTenantTable *tt, const char *tenant, bool delete)
{
	sqlite3    *db = shard_conn_db(conn);
	sqlite3_stmt *stmt = NULL;
	char		errbuf[SHARDIO_ERRLEN];
	StringInfoData sql;
	ShardValue	bind;
	char	   *what;
	int64		rows = 0;
	int			rc;

	what = delete ?
		psprintf(_("could not delete the rows of tenant \"%s\" from table \"%s\" on shard \"%s\""),
				 tenant, tt->table, shard_id) :
		psprintf(_("could not count the rows of tenant \"%s\" in table \"%s\" on shard \"%s\""),
				 tenant, tt->table, shard_id);
	initStringInfo(&sql);
	appendStringInfoString(&sql, delete ? "DELETE FROM " : "SELECT count(*) FROM ");
	shard_quote_identifier(&sql, tt->table);
	appendStringInfoString(&sql, " WHERE ");
	bind = shard_tenant_condition(&sql, tt->column, SHARDIO_TENANT_TEXT,
								  tt->column_is_text, list_make1((char *) tenant),
								  false, 1);
	rc = shardio_prepare(db, sql.data, 0, &stmt, errbuf);
	if (rc == SQLITE_OK)
		rc = shardio_bind(stmt, 1, &bind, 1, errbuf);
	if (rc != SQLITE_OK)
	{
		sqlite3_finalize(stmt);
		shard_sqlite_error(ERROR, rc, shard_id, errbuf, "%s", what);
	}
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW && !delete)
		rows = sqlite3_column_int64(stmt, 0);
	else if (rc == SQLITE_DONE && delete)
		rows = sqlite3_changes(db);
	else
	{
		if (delete)
			rc = shard_conn_write_failed(conn, rc);
		tenant_rows_failed(stmt, rc, shard_id, what, sqlite3_errmsg(db));
	}
	sqlite3_finalize(stmt);
	return rows;
}

/*
 * server_foreign_tables
 *		The OIDs of a server's foreign tables.
 */
static List *
server_foreign_tables(Oid serverid)
{
	List	   *result = NIL;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;

	rel = table_open(ForeignTableRelationId, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_foreign_table ft = (Form_pg_foreign_table) GETSTRUCT(tuple);

		if (ft->ftserver == serverid)
			result = lappend_oid(result, ft->ftrelid);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

/*
 * shard_server_tenant_columns
 *		The names a tenant column has on a server's shards: "tenant_id",
 *		the default, and the "tenant_column" of every foreign table of the
 *		server, each once.
 */
List *
shard_server_tenant_columns(Oid serverid)
{
	List	   *result = list_make1(pstrdup("tenant_id"));
	ListCell   *lt;

	foreach(lt, server_foreign_tables(serverid))
	{
		ListCell   *lc;

		foreach(lc, GetForeignTable(lfirst_oid(lt))->options)
		{
			DefElem    *def = lfirst(lc);
			char	   *name = defGetString(def);
			ListCell   *lr;
			bool		known = false;

			if (strcmp(def->defname, "tenant_column") != 0)
				continue;
			foreach(lr, result)
				known |= (pg_strcasecmp(lfirst(lr), name) == 0);
			if (!known)
				result = lappend(result, pstrdup(name));
		}
	}
	return result;
}

/*
 * shard_server_reference_tables
 *		The SQLite tables a server's reference tables read: they belong to
 *		no tenant, even when they have a column named like a tenant column
 *		(a table of tenants' names), so no tenant's rows are counted,
 *		listed or deleted in them.
 */
List *
shard_server_reference_tables(Oid serverid)
{
	List	   *result = NIL;
	ListCell   *lt;

	foreach(lt, server_foreign_tables(serverid))
	{
		Oid			relid = lfirst_oid(lt);
		char	   *name = get_rel_name(relid);
		ListCell   *lc;

		if (!shard_table_is_reference(relid))
			continue;
		foreach(lc, GetForeignTable(relid)->options)
		{
			DefElem    *def = lfirst(lc);

			if (strcmp(def->defname, "table") == 0)
				name = defGetString(def);
		}
		if (name != NULL)
			result = lappend(result, name);
	}
	return result;
}

/*
 * shard_server_tenant_tables
 *		The tenant tables of a shard (shard_tenant_tables) for each name in
 *		columns (shard_server_tenant_columns gives a server's), but none of
 *		those in reference (shard_server_reference_tables); a table is
 *		listed once, with the first name it has.
 */
List *
shard_server_tenant_tables(ShardConn *conn, const char *shard_id,
						   List *columns, List *reference)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, columns)
	{
		ListCell   *lt;

		foreach(lt, shard_tenant_tables(conn, shard_id, lfirst(lc)))
		{
			ShardTenantTable *tt = lfirst(lt);
			ListCell   *lr;
			bool		known = false;

			foreach(lr, result)
				known |= (strcmp(((ShardTenantTable *) lfirst(lr))->table,
								 tt->table) == 0);
			foreach(lr, reference)
				known |= (strcmp((char *) lfirst(lr), tt->table) == 0);
			if (!known)
				result = lappend(result, tt);
		}
	}
	return result;
}
