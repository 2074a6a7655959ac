/*-------------------------------------------------------------------------
 *
 * truncate.c
 *		  TRUNCATE of foreign tables: every shard's rows of each table deleted
 *		  inside the PostgreSQL transaction
 *
 * SQLite has no TRUNCATE: each shard runs DELETE FROM "table" inside its
 * write transaction (connection.c), which commits with PostgreSQL's and
 * rolls back, to a savepoint too, with it, as any other write.  A DELETE,
 * not a DROP and CREATE: the shard's own triggers fire, so a tenant move
 * in progress captures the deletion of the tenant's rows on its source
 * and replays it on its target, and the table keeps its indexes, triggers
 * and declarations.  A tenant table keeps, as a DELETE without WHERE
 * keeps, the rows no statement may count: a moving tenant's copy on its
 * target before cutover, and its leftovers on the old shard after it,
 * which the move's fence guards until cleanup; the move and the cleanup
 * own those.  A reference table loses every copy's rows.
 *
 * As in postgres_fdw, the "truncatable" option of the table or its server
 * may forbid it.  postgres_fdw passes CASCADE on to the remote server,
 * which truncates the tables that refer to one; SQLite cannot (its foreign
 * keys, enforced on shard handles, refuse the DELETE, or cascade it where
 * the shard declares ON DELETE CASCADE, whatever the statement says), so
 * CASCADE is taken where no other table of a shard refers to a truncated
 * one (it then changes nothing), and refused, naming the shard and the
 * table that refers, where one does.  RESTART IDENTITY
 * forgets the counter of an AUTOINCREMENT table (sqlite_sequence); an
 * ordinary rowid table numbers its next row 1 once empty whatever is
 * asked.  A tenant-scoped role may truncate nothing: the statement would
 * remove other tenants' rows.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/rel.h"

/*
 * check_truncate
 *		Refuse to truncate rel, before anything changes, where it may not
 *		be: its "truncatable" option says no, or the role is limited to
 *		some tenants.
 */
static void
check_truncate(Relation rel, DropBehavior behavior)
{
	Oid			relid = RelationGetRelid(rel);
	Oid			serverid = GetForeignServerIdByRelId(relid);

	if (!shard_table_truncatable(relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("foreign table \"%s\" does not allow truncates",
						RelationGetRelationName(rel)),
				 errhint("Set option \"truncatable\" of the foreign table or its server to true.")));
	if (shard_user_tenants(serverid, GetUserId()) != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to truncate foreign table \"%s\"",
						RelationGetRelationName(rel)),
				 errdetail("The user mapping limits the role to its own tenants, and TRUNCATE removes the rows of every tenant.")));
}

/*
 * check_cascade
 *		For a TRUNCATE ... CASCADE, refuse a shard where a table that the
 *		statement does not truncate (none of tables, SQLite names) has a
 *		foreign key to table: SQLite cannot truncate it with table.
 */
static void
check_cascade(ShardConn *conn, const char *shard_id, Relation rel,
			  const char *table, List *tables)
{
	sqlite3_stmt *stmt;
	ShardValue	bind;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	rc = shard_conn_prepare(conn,
							"SELECT m.name FROM main.sqlite_schema AS m,"
							" pragma_foreign_key_list(m.name) AS f"
							" WHERE m.type = 'table'"
							" AND f.\"table\" = ?1 COLLATE NOCASE",
							&stmt, errbuf);
	if (rc != SQLITE_OK)
		shard_sqlite_error(ERROR, rc, shard_id, errbuf,
						   gettext_noop("could not read the schema of shard \"%s\""),
						   shard_id);
	memset(&bind, 0, sizeof(bind));
	bind.type = SQLITE_TEXT;
	bind.u.p = (char *) table;
	bind.len = strlen(table);
	rc = shardio_bind(stmt, 1, &bind, 1, errbuf);
	while (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		const char *referer = (const char *) sqlite3_column_text(stmt, 0);
		ListCell   *lc;
		bool		truncated = false;

		/* SQLite's table names ignore ASCII case */
		foreach(lc, tables)
			if (pg_strcasecmp((const char *) lfirst(lc), referer) == 0)
				truncated = true;
		if (!truncated)
		{
			char	   *name = pstrdup(referer);

			shard_conn_unprepare(conn, stmt);
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot truncate foreign table \"%s\" with CASCADE on shard \"%s\"",
							RelationGetRelationName(rel), shard_id),
					 errdetail("Table \"%s\" of the shard refers to table \"%s\", and SQLite cannot truncate it with it.",
							   name, table),
					 errhint("Name a foreign table of \"%s\" in the same TRUNCATE.",
							 name)));
		}
	}
	if (rc != SQLITE_DONE)
	{
		char	   *msg = pstrdup(sqlite3_errmsg(shard_conn_db(conn)));

		shard_conn_unprepare(conn, stmt);
		shard_sqlite_error(ERROR, rc, shard_id, msg,
						   gettext_noop("could not read the schema of shard \"%s\""),
						   shard_id);
	}
	shard_conn_unprepare(conn, stmt);
}

/*
 * truncate_failed
 *		Report a failed statement of a shard's truncation of table.
 */
static void
truncate_failed(ShardConn *conn, sqlite3_stmt *stmt, const char *shard_id,
				const char *table)
{
	sqlite3    *db = shard_conn_db(conn);
	char	   *msg = pstrdup(sqlite3_errmsg(db));
	int			rc = sqlite3_extended_errcode(db);

	sqlite3_reset(stmt);
	rc = shard_conn_write_failed(conn, rc);
	shard_write_error(rc, shard_id, NULL, NULL, msg,
					  gettext_noop("could not truncate table \"%s\" on shard \"%s\""),
					  table, shard_id);
}

/*
 * run_statement
 *		Prepare sql on the shard, bind binds, run it to its end, and keep
 *		it for the next TRUNCATE.  A preparation that fails because the
 *		shard lacks the table names the shard and the foreign table.
 */
static void
run_statement(ShardConn *conn, const char *sql, ShardValue *binds,
			  int nbinds, const char *shard_id, Relation rel,
			  const char *table)
{
	sqlite3_stmt *stmt;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	rc = shard_conn_prepare(conn, sql, &stmt, errbuf);
	if (rc != SQLITE_OK)
	{
		shard_conn_check_table(conn, RelationGetRelationName(rel), table,
							   NULL, 0);
		shard_sqlite_error(ERROR, rc, shard_id, errbuf,
						   gettext_noop("could not prepare to truncate table \"%s\" on shard \"%s\""),
						   table, shard_id);
	}
	rc = shardio_bind(stmt, 1, binds, nbinds, errbuf);
	if (rc != SQLITE_OK)
		shard_sqlite_error(ERROR, rc, shard_id, errbuf,
						   gettext_noop("could not truncate table \"%s\" on shard \"%s\""),
						   table, shard_id);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		;
	if (rc != SQLITE_DONE)
		truncate_failed(conn, stmt, shard_id, table);
	shard_conn_unprepare(conn, stmt);
}

/*
 * has_sequence_table
 *		Does the shard have sqlite_sequence, the counters of its
 *		AUTOINCREMENT tables (made with the first of them)?
 */
static bool
has_sequence_table(ShardConn *conn, const char *shard_id)
{
	sqlite3_stmt *stmt;
	int			rc;

	rc = sqlite3_prepare_v2(shard_conn_db(conn),
							"SELECT 1 FROM main.sqlite_schema"
							" WHERE type = 'table' AND name = 'sqlite_sequence'",
							-1, &stmt, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
	{
		shard_check_lock_wait(rc, false, shard_id);
		shard_sqlite_error(ERROR, rc, shard_id,
						   sqlite3_errmsg(shard_conn_db(conn)),
						   gettext_noop("could not read the schema of shard \"%s\""),
						   shard_id);
	}
	return rc == SQLITE_ROW;
}

/*
 * truncate_shard
 *		Delete the rows of rel's table on one shard, inside its write
 *		transaction: all of them, except, in a tenant table, those of the
 *		tenants whose rows there are stale (excluded).  With restart_seqs,
 *		forget the table's AUTOINCREMENT counter too.
 */
static void
truncate_shard(ShardServerOptions *opts, ShardInfo *shard, Relation rel,
			   ShardTableOptions *topts, List *excluded, bool restart_seqs,
			   List *cascade_tables)
{
	ShardConn  *conn;
	StringInfoData sql;
	ShardValue	bind;
	int			nbinds = 0;

	memset(&bind, 0, sizeof(bind));
	conn = shard_conn_get_for_write(opts, shard);
	shard_conn_check_no_reader(conn, topts->table);
	if (cascade_tables != NIL)
		check_cascade(conn, shard->shard_id, rel, topts->table,
					  cascade_tables);

	initStringInfo(&sql);
	appendStringInfoString(&sql, "DELETE FROM ");
	shard_quote_identifier(&sql, topts->table);
	if (excluded != NIL)
	{
		ShardTenantRule rule;

		shard_tenant_rule_lookup(&rule, shard_conn_db(conn), topts->table,
								 topts->tenant_column,
								 shard_tenant_kind(TupleDescAttr(RelationGetDescr(rel),
																 topts->tenant_attnum - 1)->atttypid));
		appendStringInfoString(&sql, " WHERE ");
		bind = shard_tenant_condition(&sql, topts->tenant_column, &rule,
									  excluded, true, 1, 0);
		nbinds = 1;
	}
	run_statement(conn, sql.data, &bind, nbinds, shard->shard_id, rel,
				  topts->table);

	if (restart_seqs && has_sequence_table(conn, shard->shard_id))
	{
		memset(&bind, 0, sizeof(bind));
		bind.type = SQLITE_TEXT;
		bind.u.p = topts->table;
		bind.len = strlen(topts->table);
		run_statement(conn,
					  "DELETE FROM main.sqlite_sequence WHERE name = ?1 COLLATE NOCASE",
					  &bind, 1, shard->shard_id, rel, topts->table);
	}
	shard_conn_release(conn);
}

/*
 * shardExecForeignTruncate
 *		Empty foreign tables of one server: each shard of its directory, in
 *		shard order, deletes every table's rows in its write transaction.
 *		Every table is checked before any shard is written.
 */
void
shardExecForeignTruncate(List *rels, DropBehavior behavior, bool restart_seqs)
{
	ShardServerOptions *opts;
	ShardDirectory *dir;
	List	   *topts_list = NIL;
	List	   *cascade_tables = NIL;
	bool		moving;
	ListCell   *lc;
	ListCell   *lc2;
	ListCell   *lc3;

	if (rels == NIL)
		return;
	foreach(lc, rels)
	{
		Relation	rel = (Relation) lfirst(lc);

		ShardTableOptions *topts;

		check_truncate(rel, behavior);
		topts = shard_table_options(rel);
		topts_list = lappend(topts_list, topts);
		if (behavior == DROP_CASCADE)
			cascade_tables = lappend(cascade_tables, topts->table);
	}

	/* ExecuteTruncate hands over the tables of one server at a time */
	opts = shard_server_options(((ShardTableOptions *) linitial(topts_list))->serverid);
	dir = shard_directory_get(opts);
	moving = shard_directory_moving(dir) != NIL;
	foreach(lc, shard_directory_shards(dir))
	{
		ShardInfo  *shard = (ShardInfo *) lfirst(lc);
		List	   *stale = NIL;

		/* the rows of a tenant in a move count only on its owner */
		if (moving)
			stale = shard_directory_stale_tenants(dir, shard->shard_id);
		forboth(lc2, rels, lc3, topts_list)
		{
			ShardTableOptions *topts = (ShardTableOptions *) lfirst(lc3);

			truncate_shard(opts, shard, (Relation) lfirst(lc2), topts,
						   topts->reference ? NIL : stale, restart_seqs,
						   cascade_tables);
		}
	}
}
