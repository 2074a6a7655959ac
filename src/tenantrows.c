/*-------------------------------------------------------------------------
 *
 * tenantrows.c
 *		  The tenants' rows inside one shard: which tables hold them, and how
 *		  many rows each tenant has there
 *
 * The control plane's checks and statistics (shard_orphans, tenant_stats,
 * tenant_remove) look at a shard as the application wrote it, not only
 * through the foreign tables defined in PostgreSQL: the tenant tables are
 * those shard_tenant_spec_table (tenantrule.c) names, as for a move, and
 * a row belongs to the tenant whose id its stored value reads as, by the
 * rule of tenantrule.c.  Tables whose names begin with "sqlite_" (SQLite's
 * own), "ssfdw_" or "_ssfdw_" (the extension's bookkeeping inside a shard:
 * a move's change log and fence) and virtual tables are left out.
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
 * shard_server_tenant_tables
 *		The tenant tables of a shard, ordered by name, as ShardTenantTable:
 *		the tables spec (shard_tenant_spec of the server) says hold tenants'
 *		rows, each with the rule of its tenant column.
 */
List *
shard_server_tenant_tables(ShardConn *conn, const char *shard_id,
						   ShardTenantSpec *spec)
{
	sqlite3    *db = shard_conn_db(conn);
	sqlite3_stmt *stmt;
	char		errbuf[SHARDIO_ERRLEN];
	List	   *names = NIL;
	List	   *columns = NIL;
	List	   *result = NIL;
	ListCell   *lc,
			   *lc2;
	int			rc;

	rc = shardio_prepare(db,
						 "SELECT m.name, p.name FROM sqlite_schema AS m, "
						 "pragma_table_info(m.name) AS p "
						 "WHERE " SHARD_APP_TABLES " ORDER BY m.name, p.cid",
						 0, &stmt, errbuf);
	if (rc != SQLITE_OK)
		shard_sqlite_error(ERROR, rc, shard_id, errbuf,
						   "could not list the tables of shard \"%s\"",
						   shard_id);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		const char *table = (const char *) sqlite3_column_text(stmt, 0);

		if (names == NIL || strcmp(llast(names), table) != 0)
		{
			names = lappend(names, pstrdup(table));
			columns = lappend(columns, NIL);
		}
		llast(columns) = lappend(llast(columns),
								 pstrdup((const char *) sqlite3_column_text(stmt, 1)));
	}
	if (rc != SQLITE_DONE)
		tenant_rows_failed(stmt, rc, shard_id,
						   psprintf(_("could not list the tables of shard \"%s\""),
									shard_id),
						   sqlite3_errmsg(db));
	sqlite3_finalize(stmt);

	forboth(lc, names, lc2, columns)
	{
		int			kind;
		const char *column = shard_tenant_spec_table(spec, lfirst(lc),
													 lfirst(lc2), &kind);
		ShardTenantTable *tt;

		if (column == NULL)
			continue;
		tt = palloc0(sizeof(ShardTenantTable));
		tt->table = lfirst(lc);
		tt->column = pstrdup(column);
		shard_tenant_rule_lookup(&tt->rule, db, tt->table, tt->column, kind);
		result = lappend(result, tt);
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
	appendStringInfoString(&sql, "SELECT ");
	shard_tenant_key(&sql, "", tt->column, &tt->rule);
	appendStringInfoString(&sql, " AS t, count(*) FROM ");
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
	bind = shard_tenant_condition(&sql, tt->column, &tt->rule,
								  list_make1((char *) tenant), false, 1, 0);
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
