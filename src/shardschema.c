/*-------------------------------------------------------------------------
 *
 * shardschema.c
 *		  What a shard's tables look like: the declared affinities of their
 *		  columns, their primary keys and rowids, and whether the tables and
 *		  columns a foreign table reads are there
 *
 * A pushed-down query assumes things of the columns it reads (text compares
 * as PostgreSQL reads it, integers are stored as integers: the
 * SHARD_NEEDS_* letters); planning asks the first shard of the fleet, and
 * each shard is checked again when it is read.  What a handle learnt is
 * remembered on it (ShardConn, connection_int.h).
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "utils/memutils.h"

#include "connection_int.h"

/*
 * affinity_satisfies
 *		Does a column of this affinity hold only what the need assumes?
 *		SHARD_NEEDS_TEXT: numbers are stored as text, so text compares as
 *		PostgreSQL reads it.  SHARD_NEEDS_TEXT_ORDER and _TEXT_EXTREMA: the
 *		same, in a UTF-8 database, since a UTF-16 one ('U') orders text by
 *		UTF-16 bytes (COLLATE BINARY), not in code point order as
 *		PostgreSQL's C collation does.  SHARD_NEEDS_INTEGER: text that looks like an
 *		integer is stored as one.  SHARD_NEEDS_NUMBER: the same for numbers.
 */
static bool
affinity_satisfies(char need, char have)
{
	switch (need)
	{
		case SHARD_NEEDS_TEXT:
			return have == 'T' || have == 'U';
		case SHARD_NEEDS_TEXT_ORDER:
		case SHARD_NEEDS_TEXT_EXTREMA:
			return have == 'T';
		case SHARD_NEEDS_INTEGER:
			return have == 'I' || have == 'N';
		case SHARD_NEEDS_NUMBER:
			return have == 'I' || have == 'N' || have == 'R';
		default:
			return true;
	}
}

/*
 * shard_conn_is_utf8
 *		Is the shard's database encoded in UTF-8?  Asked once per handle.
 */
bool
shard_conn_is_utf8(ShardConn *conn)
{
	sqlite3_stmt *stmt;
	int			rc;

	if (conn->utf8 >= 0)
		return conn->utf8 == 1;
	if (sqlite3_prepare_v2(conn->db, "PRAGMA encoding", -1, &stmt,
						   NULL) != SQLITE_OK)
	{
		shard_check_lock_wait(sqlite3_errcode(conn->db), false,
							  conn->shard_id);
		return false;
	}
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
	{
		const char *enc = (const char *) sqlite3_column_text(stmt, 0);

		if (enc != NULL)
			conn->utf8 = (strcmp(enc, "UTF-8") == 0);
	}
	sqlite3_finalize(stmt);
	shard_check_lock_wait(rc, false, conn->shard_id);
	return conn->utf8 == 1;
}

/*
 * shard_conn_column_affinity
 *		The affinity of a column as this shard declares it, or 0 when the
 *		shard lacks it (the query then reports that).  Remembered per handle.
 */
char
shard_conn_column_affinity(ShardConn *conn, const char *table, const char *col)
{
	char	   *key = psprintf("%s.%s=", table, col);
	size_t		keylen = strlen(key);
	sqlite3_stmt *stmt;
	ListCell   *lc;
	char		aff = 0;
	int			rc;

	foreach(lc, conn->checked)
		if (strncmp((char *) lfirst(lc), key, keylen) == 0)
			return ((char *) lfirst(lc))[keylen];

	if (sqlite3_prepare_v2(conn->db,
						   "SELECT type FROM pragma_table_info(?1) "
						   "WHERE name = ?2 COLLATE NOCASE",
						   -1, &stmt, NULL) != SQLITE_OK)
	{
		shard_check_lock_wait(sqlite3_errcode(conn->db), false,
							  conn->shard_id);
		return 0;
	}
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 2, col, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		aff = shard_declared_affinity((const char *) sqlite3_column_text(stmt, 0));
	sqlite3_finalize(stmt);
	shard_check_lock_wait(rc, false, conn->shard_id);

	/* 'U': TEXT in a UTF-16 database (see affinity_satisfies) */
	if (aff == 'T' && !shard_conn_is_utf8(conn))
		aff = 'U';
	if (aff != 0)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		conn->checked = lappend(conn->checked, psprintf("%s%c", key, aff));
		MemoryContextSwitchTo(oldcxt);
	}
	return aff;
}

/*
 * shard_conn_primary_key
 *		The columns of the table's primary key, in key order (a List of
 *		palloc'd names), or NIL when it has none (a view, say).  A
 *		row-by-row change finds the rows of a WITHOUT ROWID table by them.
 *		*collations gets the collation the key compares each column with
 *		(the primary key's own, which may differ from the column's), or
 *		NULL for a column the key declares none for.
 */
List *
shard_conn_primary_key(ShardConn *conn, const char *table, List **collations)
{
	sqlite3_stmt *stmt;
	List	   *keys = NIL;
	int			rc;

	*collations = NIL;

	/*
	 * The key's index, where it has one (a WITHOUT ROWID table always
	 * has): its columns and collations; else the table's declarations.
	 */
	if (sqlite3_prepare_v2(conn->db,
						   "SELECT x.name, x.coll "
						   "FROM pragma_index_list(?1) l, "
						   "pragma_index_xinfo(l.name) x "
						   "WHERE l.origin = 'pk' AND x.key = 1 "
						   "UNION ALL "
						   "SELECT * FROM (SELECT name, NULL FROM pragma_table_info(?1) "
						   "WHERE pk > 0 AND NOT EXISTS (SELECT 1 FROM "
						   "pragma_index_list(?1) WHERE origin = 'pk') "
						   "ORDER BY pk)",
						   -1, &stmt, NULL) != SQLITE_OK)
	{
		shard_check_lock_wait(sqlite3_errcode(conn->db), false,
							  conn->shard_id);
		return NIL;
	}
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		const char *coll = (const char *) sqlite3_column_text(stmt, 1);

		keys = lappend(keys,
					   pstrdup((const char *) sqlite3_column_text(stmt, 0)));
		*collations = lappend(*collations, coll ? pstrdup(coll) : NULL);
	}
	sqlite3_finalize(stmt);
	shard_check_lock_wait(rc, false, conn->shard_id);
	if (rc != SQLITE_DONE)
		shard_sqlite_error(ERROR, rc, conn->shard_id, sqlite3_errmsg(conn->db),
						   "could not read the primary key of table \"%s\" on shard \"%s\"",
						   table, conn->shard_id);
	return keys;
}

/*
 * shard_conn_has_rowid
 *		Does the table have a rowid (not WITHOUT ROWID, not a view)?  False
 *		as well when the shard does not have the table.
 */
bool
shard_conn_has_rowid(ShardConn *conn, const char *table)
{
	StringInfoData sql;
	sqlite3_stmt *stmt;
	bool		ok;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT rowid FROM ");
	shard_quote_identifier(&sql, table);
	ok = (sqlite3_prepare_v2(conn->db, sql.data, -1, &stmt, NULL) == SQLITE_OK);
	sqlite3_finalize(stmt);
	pfree(sql.data);
	return ok;
}

/*
 * shard_explain_row_key
 *		For EXPLAIN: the primary key columns (and their collations) by
 *		which a row-by-row UPDATE or DELETE finds rows of the table on the
 *		first shard of the fleet, when its table there is WITHOUT ROWID; NIL
 *		when it has a rowid or cannot be read.  Shards are expected to share
 *		one schema; each is checked again when it is read.
 */
List *
shard_explain_row_key(ShardServerOptions *opts, const char *table,
					  List **collations)
{
	List	   *shards;
	ShardConn  *conn;
	List	   *keys = NIL;

	*collations = NIL;

	/*
	 * One file per tenant: the first file is another tenant's, which a
	 * scoped login must not open, and listing the files would name them.
	 */
	if (opts->file_per_tenant)
		return NIL;
	shards = shard_directory_shards(shard_directory_get(opts));
	if (shards == NIL)
		return NIL;
	conn = shard_conn_get_brief(opts, (ShardInfo *) linitial(shards), true);
	if (conn == NULL)
		return NIL;
	if (!shard_conn_has_rowid(conn, table))
		keys = shard_conn_primary_key(conn, table, collations);
	shard_conn_release(conn);
	return keys;
}

/*
 * shard_conn_affinity_mismatch
 *		The first need this shard's declared affinities do not meet, or
 *		NULL: its need letter, or 'U' when only the shard's UTF-16 encoding
 *		fails it, followed by the SQLite column name.  needs is a List of
 *		String, each a need letter followed by the SQLite column name.
 */
char *
shard_conn_affinity_mismatch(ShardConn *conn, const char *table, List *needs)
{
	ListCell   *lc;

	foreach(lc, needs)
	{
		const char *need = strVal(lfirst(lc));
		char		have = shard_conn_column_affinity(conn, table, need + 1);

		if (have != 0 && !affinity_satisfies(need[0], have))
			return have == 'U' && affinity_satisfies(need[0], 'T') ?
				psprintf("U%s", need + 1) : pstrdup(need);
	}
	return NULL;
}

/*
 * shard_schema_meets
 *		At planning: does the first shard of the fleet declare the columns
 *		as the needs assume?  Shards are expected to share one schema; each
 *		is checked again when it is read.  False when no shard can be read.
 */
bool
shard_schema_meets(ShardServerOptions *opts, const char *table, List *needs)
{
	ShardDirectory *dir;
	List	   *shards;
	ShardConn  *conn;
	bool		ok;

	/*
	 * One file per tenant: no file stands for the others, and a scoped
	 * login must not open another tenant's; each file is checked when it
	 * is read.
	 */
	if (needs == NIL || opts->file_per_tenant)
		return true;
	dir = shard_directory_get(opts);
	shards = shard_directory_shards(dir);
	if (shards == NIL)
		return false;
	conn = shard_conn_get_brief(opts, (ShardInfo *) linitial(shards), true);
	if (conn == NULL)
		return false;
	ok = (shard_conn_affinity_mismatch(conn, table, needs) == NULL);
	shard_conn_release(conn);
	return ok;
}

/*
 * shard_conn_check_table
 *		Raise a clear error when a shard lacks the table a foreign table
 *		reads, or one of its columns (colnames, ncols), naming the shard.
 *		Returns quietly when everything is there.
 */
void
shard_conn_check_table(ShardConn *conn, const char *relname,
					   const char *table, char **colnames, int ncols)
{
	sqlite3_stmt *stmt;
	bool		found;
	int			rc;
	int			c;

	if (sqlite3_prepare_v2(conn->db,
						   "SELECT 1 FROM main.sqlite_schema"
						   " WHERE type IN ('table', 'view')"
						   " AND name = ?1 COLLATE NOCASE",
						   -1, &stmt, NULL) != SQLITE_OK)
	{
		shard_check_lock_wait(sqlite3_errcode(conn->db), false,
							  conn->shard_id);
		return;
	}
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(stmt);
	found = (rc == SQLITE_ROW);
	sqlite3_finalize(stmt);
	shard_check_lock_wait(rc, false, conn->shard_id);
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
				 errmsg("table \"%s\" does not exist on shard \"%s\"",
						table, conn->shard_id),
				 errdetail("Foreign table \"%s\" reads SQLite table \"%s\" from every shard.",
						   relname, table)));

	if (sqlite3_prepare_v2(conn->db,
						   "SELECT 1 FROM pragma_table_xinfo(?1, 'main')"
						   " WHERE name = ?2 COLLATE NOCASE",
						   -1, &stmt, NULL) != SQLITE_OK)
		return;
	for (c = 0; c < ncols; c++)
	{
		sqlite3_reset(stmt);
		sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(stmt, 2, colnames[c], -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(stmt);
		found = (rc == SQLITE_ROW);
		if (!found)
		{
			sqlite3_finalize(stmt);
			shard_check_lock_wait(rc, false, conn->shard_id);
			ereport(ERROR,
					(errcode(ERRCODE_FDW_COLUMN_NAME_NOT_FOUND),
					 errmsg("column \"%s\" of table \"%s\" does not exist on shard \"%s\"",
							colnames[c], table, conn->shard_id)));
		}
	}
	sqlite3_finalize(stmt);
}
