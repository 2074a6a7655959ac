/*-------------------------------------------------------------------------
 *
 * movecopy.c
 *		  The SQL a tenant move runs inside the shards: capture, copy,
 *		  replay, verification, fence and cleanup
 *
 * Everything here works on the move's own two handles (move.h).  The
 * tenant's rows are every row of a table with the tenant column whose
 * stored value equals the tenant id: compared as stored where the shard
 * declares the column with an affinity (SQLite converts the bound id, so
 * an INTEGER column's 42 is tenant "42"), as CAST(col AS TEXT) where it
 * declares none.  Rows are found again by their primary key, on both
 * shards, which is why a table without one cannot be moved.
 *
 * Capture: triggers inside the source, which fire for every connection
 * (the application's, which knows nothing of the move, included), append
 * the primary key of every row of the tenant inserted, updated or deleted
 * to a change log table in the source, "<prefix>log".  Replay is by state,
 * not by statement: for each logged key, the target's row of the tenant
 * is deleted and the source's current row, if it still belongs to the
 * tenant, is copied again.  So replaying a key twice, or a key whose row
 * the copy already took, changes nothing, and a replay that a crash cut
 * short can simply run again.
 *
 * Triggers are DDL and cannot take bound values: the tenant id and the
 * table names appear in them as SQL string literals, quoted with every
 * single quote doubled.  Everywhere else values are bound.
 *
 * Which tables the move takes, and the target's copies of them, are
 * found and checked in movetables.c.
 *
 * Verification sums a hash of every row (ssfdw_move_sum, movesum.c) and
 * counts rows on both sides.  The sum is additive, so the rows of keys the
 * log names after a point can be left out on both sides: move.c verifies
 * the bulk of the rows before it takes the source's write lock, less those
 * written meanwhile, to find a bad copy while the application still
 * writes.  The capture misses writes that fire no trigger, so that check
 * proves nothing about them; the last check, under the lock, compares
 * every row of the tenant again.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "miscadmin.h"

#include "control/move.h"

/*
 * move_error
 *		Raise a failed SQLite call on one of the move's handles, naming the
 *		shard, the table (if any) and the tenant: fmt is the whole message,
 *		filled in with the table, the tenant and the shard ("could not copy
 *		table \"%s\" of tenant \"%s\" on shard \"%s\""), or without a table
 *		with the tenant and the shard (as for the helpers that pass theirs).
 */
void
move_error(MoveShards *ms, sqlite3 *db, const char *shard_id,
		   const char *table, const char *fmt)
{
	int			rc = sqlite3_extended_errcode(db);

	shard_check_lock_wait(rc, false, shard_id);
	ereport(ERROR,
			(errcode(shard_sqlite_sqlstate(rc)),
			 table != NULL ?
			 errmsg(fmt, table, ms->tenant, shard_id) :
			 errmsg(fmt, ms->tenant, shard_id),
			 errdetail_internal("%s", sqlite3_errmsg(db))));
}

/*
 * move_shard_of
 *		The id of the shard a handle of the move is open on.
 */
const char *
move_shard_of(MoveShards *ms, sqlite3 *db)
{
	return db == ms->src ? ms->source->shard_id : ms->target->shard_id;
}

/*
 * open_one
 *		Open a shard for the move, read-write, with the checksum aggregate.
 */
static sqlite3 *
open_one(MoveShards *ms, ShardInfo *shard)
{
	sqlite3    *db;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	if (shardio_file_state(shard->path) != SHARDIO_FILE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("could not open shard \"%s\": file \"%s\" does not exist or cannot be read",
						shard->shard_id, shard->path)));
	shard_check_wal_folder(shard->shard_id, shard->path);
	rc = shardio_open(shard->path, SHARDIO_OPEN_READWRITE,
					  ms->opts->busy_timeout_ms, &db, errbuf);
	if (rc == SQLITE_OK)
		rc = shardio_register_move_sum(db);
	/* a move reads and writes whole tenants: a page cache to match */
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, "PRAGMA cache_size = -65536", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
	{
		if (db != NULL)
		{
			strlcpy(errbuf, sqlite3_errmsg(db), sizeof(errbuf));
			shardio_close(db);
		}
		shard_check_lock_wait(rc, false, shard->shard_id);
		ereport(ERROR,
				(errcode(shard_write_access_sqlstate(shard->path, rc,
												 shard_sqlite_sqlstate(rc))),
				 errmsg("could not open shard \"%s\" to move tenant \"%s\"",
						shard->shard_id, ms->tenant),
				 errdetail_internal("File \"%s\": %s", shard->path, errbuf),
				 shard_errhint_write_access(shard->path, rc)));
	}
	return db;
}

/*
 * move_open_shards
 *		Open the move's own handles on both shards and attach the source to
 *		the target's handle as "src".
 */
void
move_open_shards(MoveShards *ms)
{
	sqlite3_stmt *stmt;
	int			rc;

	ms->src = open_one(ms, ms->source);
	ms->dst = open_one(ms, ms->target);
	if (sqlite3_prepare_v2(ms->dst, "ATTACH DATABASE ?1 AS src", -1, &stmt,
						   NULL) != SQLITE_OK)
		move_error(ms, ms->dst, ms->target->shard_id, NULL,
				   gettext_noop("could not attach the source shard for tenant \"%s\" on shard \"%s\""));
	sqlite3_bind_text(stmt, 1, ms->source->path, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		move_error(ms, ms->dst, ms->target->shard_id, NULL,
				   gettext_noop("could not attach the source shard for tenant \"%s\" on shard \"%s\""));
}

/*
 * move_open_source
 *		Open the move's own handle on the source alone: enough to look at
 *		its fence or lift it, without the target.
 */
void
move_open_source(MoveShards *ms)
{
	ms->src = open_one(ms, ms->source);
}

/*
 * move_set_durable
 *		How the target commits: a WAL target commits the copy and the
 *		replay rounds with synchronous = NORMAL (no fsync per batch: a
 *		crash may lose the last batches, and a move that is run again
 *		deletes the copy and makes it afresh anyway), and everything from
 *		the cutover on with FULL, whose first commit makes every earlier
 *		one durable too (one write-ahead log, synced to its end) before
 *		the directory names the target.  Other journal modes keep FULL.
 */
void
move_set_durable(MoveShards *ms, bool durable)
{
	if (!durable)
	{
		sqlite3_stmt *stmt;
		bool		wal = false;

		if (sqlite3_prepare_v2(ms->dst, "PRAGMA main.journal_mode", -1, &stmt,
							   NULL) != SQLITE_OK)
			move_error(ms, ms->dst, ms->target->shard_id, NULL,
					   gettext_noop("could not read the journal mode for tenant \"%s\" on shard \"%s\""));
		if (sqlite3_step(stmt) == SQLITE_ROW)
			wal = pg_strcasecmp((const char *) sqlite3_column_text(stmt, 0),
								"wal") == 0;
		sqlite3_finalize(stmt);
		if (!wal)
			return;
	}
	if (sqlite3_exec(ms->dst, durable ? "PRAGMA main.synchronous = FULL" :
					 "PRAGMA main.synchronous = NORMAL", NULL, NULL,
					 NULL) != SQLITE_OK)
		move_error(ms, ms->dst, ms->target->shard_id, NULL,
				   gettext_noop("could not set the durability for tenant \"%s\" on shard \"%s\""));
}

/*
 * move_sync_target
 *		Inside the cutover's transaction on the target: make it write, so
 *		that its commit (synchronous = FULL) syncs the write-ahead log to
 *		its end, the unsynced batches of the copy and the replays with it,
 *		even when the last replay had nothing to apply.  It rewrites the
 *		file's user_version with the value it has.
 */
void
move_sync_target(MoveShards *ms)
{
	int64		v = move_query_int(ms, ms->dst, "PRAGMA main.user_version", NULL,
								   gettext_noop("could not read the user version for tenant \"%s\" on shard \"%s\""));

	if (sqlite3_exec(ms->dst, psprintf("PRAGMA main.user_version = " INT64_FORMAT, v),
					 NULL, NULL, NULL) != SQLITE_OK)
		move_error(ms, ms->dst, ms->target->shard_id, NULL,
				   gettext_noop("could not commit for tenant \"%s\" on shard \"%s\""));
}

/*
 * move_close_shards
 *		Roll back whatever a failed step left open and close both handles;
 *		called on success and on error.
 */
void
move_close_shards(MoveShards *ms)
{
	if (ms->dst != NULL)
	{
		move_rollback(ms->dst);
		shardio_close(ms->dst);
		ms->dst = NULL;
	}
	if (ms->src != NULL)
	{
		move_rollback(ms->src);
		shardio_close(ms->src);
		ms->src = NULL;
	}
}

/*
 * move_begin
 *		Begin a transaction on one of the move's handles; immediate takes
 *		the source's write lock at once, waiting as long as the busy timeout
 *		allows.  The target's handle always begins deferred: BEGIN
 *		IMMEDIATE there would take the write lock of the attached source
 *		too, stopping the application's writers for every batch (and
 *		clashing with the source handle's own lock at cutover); its first
 *		write takes the target's lock alone.
 */
void
move_begin(MoveShards *ms, sqlite3 *db, bool immediate)
{
	if (db == ms->dst)
		immediate = false;
	if (sqlite3_exec(db, immediate ? "BEGIN IMMEDIATE" : "BEGIN", NULL, NULL,
					 NULL) != SQLITE_OK)
		move_error(ms, db, move_shard_of(ms, db), NULL,
				   gettext_noop("could not begin a transaction for tenant \"%s\" on shard \"%s\""));
}

/*
 * move_commit
 *		Commit a transaction of the move: from here on it is durable.
 */
void
move_commit(MoveShards *ms, sqlite3 *db)
{
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		move_error(ms, db, move_shard_of(ms, db), NULL,
				   gettext_noop("could not commit for tenant \"%s\" on shard \"%s\""));
}

/*
 * move_rollback
 *		Roll back the open transaction of a handle, if any, ignoring errors:
 *		used on the way out of a failed step.
 */
void
move_rollback(sqlite3 *db)
{
	sqlite3_stmt *stmt = NULL;

	/* statements left running would keep the transaction's locks */
	while ((stmt = sqlite3_next_stmt(db, NULL)) != NULL)
		sqlite3_finalize(stmt);
	if (!sqlite3_get_autocommit(db))
		(void) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

/*
 * append_columns
 *		Append a comma-separated list of quoted column names, each prefixed
 *		with qual (a table alias and a dot, or "").
 */
static void
append_columns(StringInfo buf, List *cols, const char *qual)
{
	ListCell   *lc;

	foreach(lc, cols)
	{
		if (lc != list_head(cols))
			appendStringInfoString(buf, ", ");
		appendStringInfoString(buf, qual);
		shard_quote_identifier(buf, (char *) lfirst(lc));
	}
}

/*
 * move_append_key
 *		Append a table's primary key as a row value: ("a", "b").
 */
void
move_append_key(StringInfo buf, MoveTable *t, const char *qual)
{
	appendStringInfoChar(buf, '(');
	append_columns(buf, t->pk, qual);
	appendStringInfoChar(buf, ')');
}

/*
 * append_log_keys
 *		Append the change log's key columns that hold this table's key:
 *		k1, ..., kn for a key of n columns.
 */
static void
append_log_keys(StringInfo buf, MoveTable *t)
{
	int			i;

	for (i = 1; i <= list_length(t->pk); i++)
		appendStringInfo(buf, "%sk%d", i > 1 ? ", " : "", i);
}

/*
 * move_append_tenant
 *		Append "the row is the tenant's", the tenant bound as :tenant.
 */
void
move_append_tenant(StringInfo buf, MoveTable *t, const char *qual)
{
	shard_tenant_match(buf, qual, t->tenant_col, &t->rule, ":tenant");
}

/*
 * move_append_tenant_rows
 *		Append " <schema>.<table> WHERE <the row is the tenant's>", the
 *		tenant bound as :tenant: what most of the move's statements read
 *		or change.
 */
void
move_append_tenant_rows(StringInfo buf, MoveTable *t, const char *schema)
{
	appendStringInfo(buf, " %s.", schema);
	shard_quote_identifier(buf, t->name);
	appendStringInfoString(buf, " WHERE ");
	move_append_tenant(buf, t, "");
}

/*
 * append_trigger_tenant
 *		Append "the row (NEW or OLD) is the tenant's" for a trigger.
 */
static void
append_trigger_tenant(StringInfo buf, MoveShards *ms, MoveTable *t,
					  const char *row)
{
	shard_tenant_trigger_match(buf, row, t->tenant_col, &t->rule,
							   ms->tenant);
}

/*
 * append_log_subquery
 *		Append the keys the change log holds for a table between :lo
 *		(excluded) and :hi.
 */
static void
append_log_subquery(StringInfo buf, MoveShards *ms, MoveTable *t)
{
	appendStringInfoString(buf, "(SELECT ");
	append_log_keys(buf, t);
	appendStringInfoString(buf, " FROM src.");
	shard_quote_identifier(buf, psprintf("%slog", ms->prefix));
	appendStringInfoString(buf, " WHERE tbl = :tbl AND seq > :lo AND seq <= :hi)");
}

/*
 * move_prepare_bound
 *		Prepare SQL on a handle of the move and bind the named parameters
 *		it uses: :tenant, :tbl (the table's name), :lo and :hi.
 */
sqlite3_stmt *
move_prepare_bound(MoveShards *ms, sqlite3 *db, const char *sql, MoveTable *t,
				   int64 lo, int64 hi, const char *fmt)
{
	sqlite3_stmt *stmt;
	int			idx;

	if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK)
		move_error(ms, db, move_shard_of(ms, db), t ? t->name : NULL, fmt);
	if ((idx = sqlite3_bind_parameter_index(stmt, ":tenant")) > 0)
		sqlite3_bind_text(stmt, idx, ms->tenant, -1, SQLITE_TRANSIENT);
	if (t != NULL && (idx = sqlite3_bind_parameter_index(stmt, ":tbl")) > 0)
		sqlite3_bind_text(stmt, idx, t->name, -1, SQLITE_TRANSIENT);
	if ((idx = sqlite3_bind_parameter_index(stmt, ":lo")) > 0)
		sqlite3_bind_int64(stmt, idx, lo);
	if ((idx = sqlite3_bind_parameter_index(stmt, ":hi")) > 0)
		sqlite3_bind_int64(stmt, idx, hi);
	return stmt;
}

/*
 * run_bound
 *		Run a statement that returns no rows; returns the rows it changed.
 */
static int64
run_bound(MoveShards *ms, sqlite3 *db, const char *sql, MoveTable *t,
		  int64 lo, int64 hi, const char *fmt)
{
	sqlite3_stmt *stmt = move_prepare_bound(ms, db, sql, t, lo, hi, fmt);
	int			rc = sqlite3_step(stmt);

	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		move_error(ms, db, move_shard_of(ms, db), t ? t->name : NULL, fmt);
	return sqlite3_changes64(db);
}

/*
 * move_query_int
 *		Run a query of one integer (or NULL, read as 0) on a handle.
 */
int64
move_query_int(MoveShards *ms, sqlite3 *db, const char *sql, MoveTable *t,
			   const char *fmt)
{
	sqlite3_stmt *stmt = move_prepare_bound(ms, db, sql, t, 0, 0, fmt);
	int			rc = sqlite3_step(stmt);
	int64		v = 0;

	if (rc == SQLITE_ROW)
		v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		move_error(ms, db, move_shard_of(ms, db), t ? t->name : NULL, fmt);
	return v;
}

/*
 * exec_ddl
 *		Run DDL the move builds on the source, naming the table on failure.
 */
static void
exec_ddl(MoveShards *ms, const char *sql, MoveTable *t, const char *fmt)
{
	if (sqlite3_exec(ms->src, sql, NULL, NULL, NULL) != SQLITE_OK)
		move_error(ms, ms->src, ms->source->shard_id, t ? t->name : NULL,
				   fmt);
}

/*
 * trigger_head
 *		Start "CREATE TRIGGER IF NOT EXISTS <prefix><kind>_<table> <when>
 *		ON <table> WHEN " in buf.  Names inside a trigger cannot name their
 *		schema: a trigger of the source's main schema reads and writes it.
 */
static void
trigger_head(StringInfo buf, MoveShards *ms, MoveTable *t, const char *kind,
			 const char *when)
{
	resetStringInfo(buf);
	appendStringInfoString(buf, "CREATE TRIGGER IF NOT EXISTS ");
	shard_quote_identifier(buf, psprintf("%s%s_%s", ms->prefix, kind, t->name));
	appendStringInfo(buf, " %s ON ", when);
	shard_quote_identifier(buf, t->name);
	appendStringInfoString(buf, " WHEN ");
}

/*
 * append_log_insert
 *		Append "INSERT INTO <log>(tbl, k..) SELECT '<table>', ROW.key..",
 *		ROW being NEW or OLD.
 */
static void
append_log_insert(StringInfo buf, MoveShards *ms, MoveTable *t,
				  const char *row)
{
	appendStringInfoString(buf, "INSERT INTO ");
	shard_quote_identifier(buf, psprintf("%slog", ms->prefix));
	appendStringInfoString(buf, " (tbl, ");
	append_log_keys(buf, t);
	appendStringInfoString(buf, ") SELECT ");
	shard_append_sql_literal(buf, t->name);
	appendStringInfoString(buf, ", ");
	append_columns(buf, t->pk, psprintf("%s.", row));
}

/*
 * create_row_trigger
 *		Create the capture trigger of an insert or a delete: when row (NEW
 *		or OLD) is the tenant's, it logs the row's key.
 */
static void
create_row_trigger(StringInfo buf, MoveShards *ms, MoveTable *t,
				   const char *kind, const char *event, const char *row)
{
	trigger_head(buf, ms, t, kind, event);
	append_trigger_tenant(buf, ms, t, row);
	appendStringInfoString(buf, " BEGIN ");
	append_log_insert(buf, ms, t, row);
	appendStringInfoString(buf, "; END");
	exec_ddl(ms, buf->data, t,
			 gettext_noop("could not create the capture triggers of table \"%s\" of tenant \"%s\" on shard \"%s\""));
}

/*
 * move_install_capture
 *		Create the change log and the capture triggers inside the source,
 *		in one transaction: from its commit on, every write of the tenant's
 *		rows, by any connection, leaves its keys in the log.  Running it
 *		again (a resumed move) changes nothing that exists.
 */
void
move_install_capture(MoveShards *ms)
{
	StringInfoData buf;
	ListCell   *lc;
	int			i;

	initStringInfo(&buf);
	move_begin(ms, ms->src, true);
	appendStringInfoString(&buf, "CREATE TABLE IF NOT EXISTS main.");
	shard_quote_identifier(&buf, psprintf("%slog", ms->prefix));
	appendStringInfoString(&buf, " (seq INTEGER PRIMARY KEY, tbl TEXT NOT NULL");
	for (i = 1; i <= ms->nkeys; i++)
		appendStringInfo(&buf, ", k%d", i);
	appendStringInfoChar(&buf, ')');
	exec_ddl(ms, buf.data, NULL,
			 gettext_noop("could not create the change log for tenant \"%s\" on shard \"%s\""));

	foreach(lc, ms->tables)
	{
		MoveTable  *t = lfirst(lc);
		ListCell   *k;

		create_row_trigger(&buf, ms, t, "cap_i", "AFTER INSERT", "NEW");

		/* the old key always; the new one too when the update changed it */
		trigger_head(&buf, ms, t, "cap_u", "AFTER UPDATE");
		append_trigger_tenant(&buf, ms, t, "OLD");
		appendStringInfoString(&buf, " OR ");
		append_trigger_tenant(&buf, ms, t, "NEW");
		appendStringInfoString(&buf, " BEGIN ");
		append_log_insert(&buf, ms, t, "OLD");
		appendStringInfoString(&buf, "; ");
		append_log_insert(&buf, ms, t, "NEW");
		appendStringInfoString(&buf, " WHERE ");
		foreach(k, t->pk)
		{
			if (k != list_head(t->pk))
				appendStringInfoString(&buf, " OR ");
			appendStringInfoString(&buf, "NEW.");
			shard_quote_identifier(&buf, lfirst(k));
			appendStringInfoString(&buf, " IS NOT OLD.");
			shard_quote_identifier(&buf, lfirst(k));
		}
		appendStringInfoString(&buf, "; END");
		exec_ddl(ms, buf.data, t,
				 gettext_noop("could not create the capture triggers of table \"%s\" of tenant \"%s\" on shard \"%s\""));

		create_row_trigger(&buf, ms, t, "cap_d", "AFTER DELETE", "OLD");
	}
	move_commit(ms, ms->src);
}

/*
 * move_install_fence
 *		Create, inside the source's open transaction, the triggers that make
 *		every insert, update or delete of the tenant's rows there fail with
 *		a message naming the new shard, from any connection.  A delete is
 *		let through only inside a transaction that has a row in
 *		"<prefix>unfence": the cleanup's own, which no other connection can
 *		see before it commits, and it empties the table before then.
 */
void
move_install_fence(MoveShards *ms)
{
	StringInfoData buf;
	StringInfoData raise;
	char	   *unfence = psprintf("%sunfence", ms->prefix);
	ListCell   *lc;

	initStringInfo(&buf);
	initStringInfo(&raise);
	appendStringInfoString(&raise, " BEGIN SELECT RAISE(ABORT, ");
	shard_append_sql_literal(&raise,
				   psprintf(SHARD_FENCE_FORMAT,
							ms->tenant, ms->target->shard_id));
	appendStringInfoString(&raise, "); END");

	appendStringInfoString(&buf, "CREATE TABLE IF NOT EXISTS main.");
	shard_quote_identifier(&buf, unfence);
	appendStringInfoString(&buf, " (x)");
	exec_ddl(ms, buf.data, NULL,
			 gettext_noop("could not create the fence for tenant \"%s\" on shard \"%s\""));

	foreach(lc, ms->tables)
	{
		MoveTable  *t = lfirst(lc);

		trigger_head(&buf, ms, t, "fence_i", "BEFORE INSERT");
		append_trigger_tenant(&buf, ms, t, "NEW");
		appendStringInfoString(&buf, raise.data);
		exec_ddl(ms, buf.data, t,
				 gettext_noop("could not create the fence of table \"%s\" of tenant \"%s\" on shard \"%s\""));

		trigger_head(&buf, ms, t, "fence_u", "BEFORE UPDATE");
		append_trigger_tenant(&buf, ms, t, "OLD");
		appendStringInfoString(&buf, " OR ");
		append_trigger_tenant(&buf, ms, t, "NEW");
		appendStringInfoString(&buf, raise.data);
		exec_ddl(ms, buf.data, t,
				 gettext_noop("could not create the fence of table \"%s\" of tenant \"%s\" on shard \"%s\""));

		trigger_head(&buf, ms, t, "fence_d", "BEFORE DELETE");
		append_trigger_tenant(&buf, ms, t, "OLD");
		appendStringInfoString(&buf, " AND NOT EXISTS (SELECT 1 FROM ");
		shard_quote_identifier(&buf, unfence);
		appendStringInfoChar(&buf, ')');
		appendStringInfoString(&buf, raise.data);
		exec_ddl(ms, buf.data, t,
				 gettext_noop("could not create the fence of table \"%s\" of tenant \"%s\" on shard \"%s\""));
	}
}

/*
 * count_objects
 *		How many objects of the source's schema begin with a name prefix.
 */
static int64
count_objects(MoveShards *ms, const char *prefix)
{
	sqlite3_stmt *stmt;
	int64		n = 0;
	int			rc;

	if (sqlite3_prepare_v2(ms->src,
						   "SELECT count(*) FROM sqlite_schema "
						   "WHERE substr(name, 1, length(?1)) = ?1",
						   -1, &stmt, NULL) != SQLITE_OK)
		move_error(ms, ms->src, ms->source->shard_id, NULL,
				   gettext_noop("could not read the schema for tenant \"%s\" on shard \"%s\""));
	sqlite3_bind_text(stmt, 1, prefix, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		n = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	if (rc != SQLITE_ROW)
		move_error(ms, ms->src, ms->source->shard_id, NULL,
				   gettext_noop("could not read the schema for tenant \"%s\" on shard \"%s\""));
	return n;
}

/*
 * move_fence_present
 *		Is the move's fence committed in the source?  Then the copy on the
 *		target was complete and verified when the source stopped taking the
 *		tenant's writes.
 */
bool
move_fence_present(MoveShards *ms)
{
	return count_objects(ms, psprintf("%sfence_", ms->prefix)) > 0;
}

/*
 * move_drop_objects
 *		Drop, in one transaction on the source, what the move created there
 *		whose name begins with "<prefix><kind>": "cap_" the capture
 *		triggers, "fence_" the fence, "" everything (log and fence
 *		tables included).  Triggers go before tables.
 */
void
move_drop_objects(MoveShards *ms, const char *kind)
{
	sqlite3_stmt *stmt;
	char	   *prefix = psprintf("%s%s", ms->prefix, kind);
	List	   *drops = NIL;
	ListCell   *lc;
	int			rc;

	move_begin(ms, ms->src, true);
	if (sqlite3_prepare_v2(ms->src,
						   "SELECT type, name FROM sqlite_schema "
						   "WHERE substr(name, 1, length(?1)) = ?1 "
						   "AND type IN ('trigger', 'table') ORDER BY type DESC",
						   -1, &stmt, NULL) != SQLITE_OK)
		move_error(ms, ms->src, ms->source->shard_id, NULL,
				   gettext_noop("could not read the schema for tenant \"%s\" on shard \"%s\""));
	sqlite3_bind_text(stmt, 1, prefix, -1, SQLITE_TRANSIENT);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		appendStringInfo(&buf, "DROP %s IF EXISTS main.",
						 strcmp((const char *) sqlite3_column_text(stmt, 0),
								"trigger") == 0 ? "TRIGGER" : "TABLE");
		shard_quote_identifier(&buf, (const char *) sqlite3_column_text(stmt, 1));
		drops = lappend(drops, buf.data);
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		move_error(ms, ms->src, ms->source->shard_id, NULL,
				   gettext_noop("could not read the schema for tenant \"%s\" on shard \"%s\""));
	foreach(lc, drops)
		exec_ddl(ms, lfirst(lc), NULL,
				 gettext_noop("could not drop the triggers and logs for tenant \"%s\" on shard \"%s\""));
	move_commit(ms, ms->src);
}

/*
 * move_delete_rows
 *		Delete the tenant's rows from every moved table of a shard (the
 *		target's partial copy on abort or restart, the source's leftovers
 *		at cleanup), MOVE_BATCH_ROWS at a time, each batch a transaction of
 *		its own so that the shard's writers keep going.  With unfence, each
 *		batch lets itself through the fence (move_install_fence).  Returns
 *		the rows deleted.
 */
int64
move_delete_rows(MoveShards *ms, sqlite3 *db, bool unfence)
{
	int64		total = 0;
	char	   *unfence_table = psprintf("%sunfence", ms->prefix);
	ListCell   *lc;

	if (unfence)
		unfence = count_objects(ms, unfence_table) > 0;
	foreach(lc, ms->tables)
	{
		MoveTable  *t = lfirst(lc);
		StringInfoData q;
		StringInfoData mark;
		int64		n;

		if (db == ms->dst && t->create_sql != NULL)
			continue;			/* the target does not have the table */
		initStringInfo(&q);
		appendStringInfoString(&q, "DELETE FROM main.");
		shard_quote_identifier(&q, t->name);
		appendStringInfoString(&q, " WHERE ");
		move_append_key(&q, t, "");
		appendStringInfoString(&q, " IN (SELECT ");
		append_columns(&q, t->pk, "");
		appendStringInfoString(&q, " FROM");
		move_append_tenant_rows(&q, t, "main");
		appendStringInfo(&q, " LIMIT %d)", MOVE_BATCH_ROWS);

		initStringInfo(&mark);
		appendStringInfoString(&mark, "main.");
		shard_quote_identifier(&mark, unfence_table);
		do
		{
			CHECK_FOR_INTERRUPTS();
			move_begin(ms, db, true);
			if (unfence)
				run_bound(ms, db, psprintf("INSERT INTO %s VALUES (1)", mark.data),
						  NULL, 0, 0,
						  gettext_noop("could not lift the fence for tenant \"%s\" on shard \"%s\""));
			n = run_bound(ms, db, q.data, t, 0, 0,
						  gettext_noop("could not delete the rows of table \"%s\" of tenant \"%s\" on shard \"%s\""));
			if (unfence)
				run_bound(ms, db, psprintf("DELETE FROM %s", mark.data),
						  NULL, 0, 0,
						  gettext_noop("could not restore the fence for tenant \"%s\" on shard \"%s\""));
			move_commit(ms, db);
			total += n;
		} while (n > 0);
	}
	return total;
}

/*
 * move_log_top
 *		The last sequence number of the change log (0 when empty), read on
 *		the target's handle: inside a transaction there, it is the state of
 *		the source that transaction reads.
 */
int64
move_log_top(MoveShards *ms)
{
	StringInfoData q;

	initStringInfo(&q);
	appendStringInfoString(&q, "SELECT max(seq) FROM src.");
	shard_quote_identifier(&q, psprintf("%slog", ms->prefix));
	return move_query_int(ms, ms->dst, q.data, NULL,
						  gettext_noop("could not read the change log for tenant \"%s\" on shard \"%s\""));
}

/*
 * move_copy_batch
 *		Copy the next MOVE_BATCH_ROWS of the tenant's rows of a table, in
 *		primary key order after *cursor (NULL: from the start), in one
 *		transaction on the target that reads one state of the source.
 *		Moves *cursor on to the last key copied (the greatest key of the
 *		tenant on the target: the copy runs on a target holding none of
 *		the tenant's rows, and before any replay), sets *done after the
 *		last batch; returns the rows copied.
 */
int64
move_copy_batch(MoveShards *ms, MoveTable *t, sqlite3_value ***cursor,
				bool *done)
{
	StringInfoData q;
	sqlite3_stmt *stmt;
	sqlite3_value **next = NULL;
	int			nk = list_length(t->pk);
	int			rc;
	int			i;
	int64		n;

	move_begin(ms, ms->dst, false);
	initStringInfo(&q);
	appendStringInfoString(&q, "INSERT INTO main.");
	shard_quote_identifier(&q, t->name);
	appendStringInfoString(&q, " (");
	append_columns(&q, t->cols, "");
	appendStringInfoString(&q, ") SELECT ");
	append_columns(&q, t->cols, "");
	appendStringInfoString(&q, " FROM");
	move_append_tenant_rows(&q, t, "src");
	if (*cursor != NULL)
	{
		appendStringInfoString(&q, " AND ");
		move_append_key(&q, t, "");
		appendStringInfoString(&q, " > (");
		/* named: the tenant condition's own parameter is :tenant */
		for (i = 1; i <= nk; i++)
			appendStringInfo(&q, "%s:c%d", i > 1 ? ", " : "", i);
		appendStringInfoChar(&q, ')');
	}
	appendStringInfoString(&q, " ORDER BY ");
	append_columns(&q, t->pk, "");
	appendStringInfo(&q, " LIMIT %d", MOVE_BATCH_ROWS);
	stmt = move_prepare_bound(ms, ms->dst, q.data, t, 0, 0,
							  gettext_noop("could not copy table \"%s\" of tenant \"%s\" on shard \"%s\""));
	if (*cursor != NULL)
		for (i = 0; i < nk; i++)
		{
			char		name[16];

			snprintf(name, sizeof(name), ":c%d", i + 1);
			sqlite3_bind_value(stmt, sqlite3_bind_parameter_index(stmt, name),
							   (*cursor)[i]);
		}
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		move_error(ms, ms->dst, ms->target->shard_id, t->name,
				   gettext_noop("could not copy table \"%s\" of tenant \"%s\" on shard \"%s\""));
	n = sqlite3_changes64(ms->dst);

	/* where the next batch starts */
	resetStringInfo(&q);
	appendStringInfoString(&q, "SELECT ");
	append_columns(&q, t->pk, "");
	appendStringInfoString(&q, " FROM");
	move_append_tenant_rows(&q, t, "main");
	appendStringInfoString(&q, " ORDER BY ");
	for (i = 0; i < nk; i++)
	{
		appendStringInfoString(&q, i > 0 ? ", " : "");
		shard_quote_identifier(&q, list_nth(t->pk, i));
		appendStringInfoString(&q, " DESC");
	}
	appendStringInfoString(&q, " LIMIT 1");
	stmt = move_prepare_bound(ms, ms->dst, q.data, t, 0, 0,
							  gettext_noop("could not copy table \"%s\" of tenant \"%s\" on shard \"%s\""));
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW && n == MOVE_BATCH_ROWS)
	{
		next = palloc(sizeof(sqlite3_value *) * nk);
		for (i = 0; i < nk; i++)
			next[i] = sqlite3_value_dup(sqlite3_column_value(stmt, i));
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		move_error(ms, ms->dst, ms->target->shard_id, t->name,
				   gettext_noop("could not copy table \"%s\" of tenant \"%s\" on shard \"%s\""));
	move_commit(ms, ms->dst);

	if (*cursor != NULL)
	{
		for (i = 0; i < nk; i++)
			sqlite3_value_free((*cursor)[i]);
		pfree(*cursor);
	}
	*cursor = next;
	*done = (next == NULL);
	t->copied += n;
	return n;
}

/*
 * replay_table
 *		Apply the log entries (lo, hi] of one table to the target, inside
 *		the caller's transaction: the tenant's rows of those keys are
 *		deleted there and copied again from the source's current state.
 */
static int64
replay_table(MoveShards *ms, MoveTable *t, int64 lo, int64 hi)
{
	StringInfoData q;
	int64		n;

	initStringInfo(&q);
	appendStringInfoString(&q, "DELETE FROM");
	move_append_tenant_rows(&q, t, "main");
	appendStringInfoString(&q, " AND ");
	move_append_key(&q, t, "");
	appendStringInfoString(&q, " IN ");
	append_log_subquery(&q, ms, t);
	n = run_bound(ms, ms->dst, q.data, t, lo, hi,
				  gettext_noop("could not replay the changes of table \"%s\" of tenant \"%s\" on shard \"%s\""));

	resetStringInfo(&q);
	appendStringInfoString(&q, "INSERT INTO main.");
	shard_quote_identifier(&q, t->name);
	appendStringInfoString(&q, " (");
	append_columns(&q, t->cols, "");
	appendStringInfoString(&q, ") SELECT ");
	append_columns(&q, t->cols, "");
	appendStringInfoString(&q, " FROM");
	move_append_tenant_rows(&q, t, "src");
	appendStringInfoString(&q, " AND ");
	move_append_key(&q, t, "");
	appendStringInfoString(&q, " IN ");
	append_log_subquery(&q, ms, t);
	n += run_bound(ms, ms->dst, q.data, t, lo, hi,
				   gettext_noop("could not replay the changes of table \"%s\" of tenant \"%s\" on shard \"%s\""));
	return n;
}

/*
 * move_replay
 *		Apply the change log after ms->replayed to the target, up to upto,
 *		or (upto < 0) up to its end as a new transaction on the target
 *		reads the source; commits and returns the log entries applied.
 *		Inside a transaction the caller opened on the target, it neither
 *		begins nor commits.
 */
int64
move_replay(MoveShards *ms, int64 upto)
{
	bool		own = sqlite3_get_autocommit(ms->dst);
	int64		hi;
	ListCell   *lc;

	if (own)
		move_begin(ms, ms->dst, true);
	hi = upto >= 0 ? upto : move_log_top(ms);
	if (hi > ms->replayed)
		foreach(lc, ms->tables)
			(void) replay_table(ms, lfirst(lc), ms->replayed, hi);
	if (own)
		move_commit(ms, ms->dst);
	hi = Max(hi, ms->replayed);
	{
		int64		applied = hi - ms->replayed;

		ms->replayed = hi;
		return applied;
	}
}

/*
 * sum_rows
 *		The count and checksum of the tenant's rows of a table on one side
 *		("main" the target, "src" the source): of the keys the log holds in
 *		(lo, hi] with keys_only, else of all of them.
 */
static void
sum_rows(MoveShards *ms, MoveTable *t, const char *side, int64 lo, int64 hi,
		 bool keys_only, int64 *count, int64 *sum)
{
	StringInfoData q;
	sqlite3_stmt *stmt;
	int			rc;

	initStringInfo(&q);
	appendStringInfoString(&q, "SELECT count(*), ssfdw_move_sum(");
	append_columns(&q, t->cols, "");
	appendStringInfoString(&q, ") FROM");
	move_append_tenant_rows(&q, t, side);
	if (keys_only)
	{
		appendStringInfoString(&q, " AND ");
		move_append_key(&q, t, "");
		appendStringInfoString(&q, " IN ");
		append_log_subquery(&q, ms, t);
	}
	stmt = move_prepare_bound(ms, ms->dst, q.data, t, lo, hi,
							  gettext_noop("could not verify table \"%s\" of tenant \"%s\" on shard \"%s\""));
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
	{
		*count = sqlite3_column_int64(stmt, 0);
		*sum = sqlite3_column_int64(stmt, 1);
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_ROW)
		move_error(ms, ms->dst,
				   strcmp(side, "src") == 0 ? ms->source->shard_id :
				   ms->target->shard_id, t->name,
				   gettext_noop("could not verify table \"%s\" of tenant \"%s\" on shard \"%s\""));
}

/*
 * sum_side
 *		The count and checksum of the tenant's rows of a table on one side,
 *		less those of the keys the log holds in (lo, hi]: all rows less
 *		those, as the sum is additive, so that the large side reads no
 *		subquery per row.  With lo == hi, every row.
 */
static void
sum_side(MoveShards *ms, MoveTable *t, const char *side, int64 lo, int64 hi,
		 int64 *count, int64 *sum)
{
	int64		kcount = 0;
	int64		ksum = 0;

	sum_rows(ms, t, side, lo, hi, false, count, sum);
	if (hi > lo)
		sum_rows(ms, t, side, lo, hi, true, &kcount, &ksum);
	*count -= kcount;
	*sum = (int64) ((uint64) *sum - (uint64) ksum);
}

/*
 * move_verify
 *		Compare the tenant's rows of every table on both shards, by count
 *		and checksum, less the rows of the keys the log holds in (since,
 *		upto]: with since == upto, every row.  Runs inside the caller's
 *		transaction on the target, or in a read transaction of its own
 *		(which reads one state of each shard); upto < 0 reads the log's end
 *		in that transaction.  Raises XX001 naming the table and both shards
 *		on any difference; returns the rows compared.
 *
 *		locked says that the caller holds the source's write lock and
 *		compares every row: the last check before the fence.  A difference
 *		found there is a write the capture triggers did not see (they fire
 *		for no row an INSERT OR REPLACE removes through another unique
 *		index unless recursive_triggers is on, for no incremental blob
 *		write, and for nothing a connection with triggers disabled
 *		writes), and the error says so.
 */
int64
move_verify(MoveShards *ms, int64 since, int64 upto, bool locked)
{
	bool		own = sqlite3_get_autocommit(ms->dst);
	int64		rows = 0;
	ListCell   *lc;

	if (own)
		move_begin(ms, ms->dst, false);
	if (upto < 0)
		upto = Max(move_log_top(ms), since);
	foreach(lc, ms->tables)
	{
		MoveTable  *t = lfirst(lc);
		int64		scount = 0,
					ssum = 0,
					dcount = 0,
					dsum = 0;

		CHECK_FOR_INTERRUPTS();
		sum_side(ms, t, "src", since, upto, &scount, &ssum);
		sum_side(ms, t, "main", since, upto, &dcount, &dsum);
		if (scount != dcount || ssum != dsum)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("copy of table \"%s\" of tenant \"%s\" on shard \"%s\" does not match shard \"%s\"",
							t->name, ms->tenant, ms->target->shard_id,
							ms->source->shard_id),
					 locked ?
					 errdetail("%lld rows with checksum %lld on shard \"%s\", %lld rows with checksum %lld on shard \"%s\", compared under the write lock of shard \"%s\": a write the move's capture triggers did not see changed the tenant's rows there during the move.",
							   (long long) scount, (long long) ssum,
							   ms->source->shard_id, (long long) dcount,
							   (long long) dsum, ms->target->shard_id,
							   ms->source->shard_id) :
					 errdetail("%lld rows with checksum %lld on shard \"%s\", %lld rows with checksum %lld on shard \"%s\".",
							   (long long) scount, (long long) ssum,
							   ms->source->shard_id, (long long) dcount,
							   (long long) dsum, ms->target->shard_id),
					 locked ?
					 errhint("Writes that fire no trigger are not captured: an INSERT OR REPLACE that removes a row through another unique index, an incremental blob write, a connection with triggers disabled.  Run tenant_move() again to copy the tenant afresh, or tenant_move_abort().") :
					 errhint("Run tenant_move() again to copy the tenant afresh, or tenant_move_abort().")));
		rows += scount;
	}
	if (own)
		move_commit(ms, ms->dst);
	return rows;
}

/*
 * move_reclaim_space
 *		Give the space the tenant's deleted rows took back: an incremental
 *		vacuum where the shard has auto_vacuum = INCREMENTAL, nothing where
 *		it vacuums itself (FULL), else VACUUM, which rewrites the file and
 *		holds the shard's write lock while it does.
 */
void
move_reclaim_space(MoveShards *ms, sqlite3 *db, const char *shard_id)
{
	int64		mode = move_query_int(ms, db, "PRAGMA auto_vacuum", NULL,
									  gettext_noop("could not read the vacuum mode for tenant \"%s\" on shard \"%s\""));
	const char *sql = NULL;

	if (mode == 2)
		sql = "PRAGMA incremental_vacuum";
	else if (mode == 0)
		sql = "VACUUM main";
	if (sql != NULL && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		move_error(ms, db, shard_id, NULL,
				   gettext_noop("could not reclaim space for tenant \"%s\" on shard \"%s\""));
}
