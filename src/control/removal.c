/*-------------------------------------------------------------------------
 *
 * removal.c
 *		  tenant_remove and shard_remove: taking tenants and shards out of
 *		  the directory
 *
 * Both write the directory through the transaction's directory handle, as
 * tenant_add and shard_add do (connection.c): the directory's write lock is
 * taken first, so nothing another session commits can slip between the
 * checks and the delete, and the removal commits or rolls back with the
 * PostgreSQL transaction.  They refuse what would leave the directory
 * disagreeing with the data:
 *
 * - a tenant with rows on its shard, in any table with a tenant column
 *   (found in the shard's schema: tenantrows.c), counted under the shard's
 *   write lock, held to the commit so that no row can arrive in between,
 *   unless asked to delete them, in the shard's write transaction,
 *   committed with the PostgreSQL transaction (the directory commits
 *   first: should the shard's commit fail, its rows stay, as rows of a
 *   tenant the directory does not know, which shard_orphans lists);
 * - a tenant in a move (a target shard other than its own);
 * - a shard that answers for tenants, or takes part in a move.
 *
 * Neither touches a shard's file otherwise: removing a shard forgets it.
 *
 * On a server of layout 'file_per_tenant' the file is the tenant, and
 * tenant_remove removes it (with its -wal, -shm and -journal files), or,
 * with the server option archive_folder, keeps a copy of it there.  The
 * file goes when the transaction commits, not before: a transaction, or a
 * savepoint, that rolls back leaves it as it was.
 *
 * - tenant_remove takes the file's write lock without waiting (a tenant
 *   whose file another transaction is writing is refused, 55P03) and holds
 *   it until the transaction ends, so that no row arrives after the rows
 *   were counted (refused as above unless delete_rows, or archived) nor
 *   after the archive's copy was made.
 * - In that write transaction it creates a fence: triggers that make every
 *   write to the file fail with a message naming the tenant
 *   (SHARD_REMOVED_FORMAT; sqliteerror.c reports it as a serialization
 *   failure).
 * - Once PostgreSQL's commit is certain (the release of the transaction's
 *   resources, after its commit record and every transaction callback), the
 *   fence commits, the write-ahead log is copied into the file, and the
 *   file and its companions are removed.  A writer of another session, or
 *   of the application, that had the file open or was waiting for its lock
 *   then fails on the fence instead of writing to a removed file; readers
 *   read the file as it was until they next look for it.  Nothing there
 *   may raise an error: a failure is a WARNING naming the file.
 * - Should the transaction abort, even after the directory committed (a
 *   later file's commit failed), the fence rolls back, the file stays and
 *   the archive's copy goes.
 *
 * Where the directory names the files, the tenant's shard_map and shards
 * rows are deleted in the transaction's directory transaction, which
 * commits before PostgreSQL does: should PostgreSQL's commit fail after
 * it, the file stays without its rows.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <sys/stat.h>
#include <unistd.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

PG_FUNCTION_INFO_V1(shard_tenant_remove);
PG_FUNCTION_INFO_V1(shard_remove);

/*
 * directory_delete
 *		Delete the row of key from a directory table (its key column given),
 *		inside the transaction's write transaction on the directory.
 */
static void
directory_delete(ShardServerOptions *opts, sqlite3 *db, const char *table,
				 const char *column, const char *key, const char *fmt)
{
	sqlite3_stmt *stmt;
	char	   *sql = psprintf("DELETE FROM %s WHERE %s = ?1", table, column);

	if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK)
		shard_admin_write_failed(opts, db, fmt);
	sqlite3_bind_text(stmt, 1, key, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(stmt) != SQLITE_DONE)
	{
		sqlite3_finalize(stmt);
		shard_admin_write_failed(opts, db, fmt);
	}
	sqlite3_finalize(stmt);
}

/*
 * lock_for_count
 *		Take the shard's write lock before a tenant's rows are counted, by a
 *		write that changes nothing (a DELETE of no row of table).  A handle
 *		inside a REPEATABLE READ snapshot, or one the statement has already
 *		read through, holds only a read transaction until its first write:
 *		a count there could miss rows committed since, and another writer
 *		could add rows between the count and the commit.  The lock lasts
 *		until the PostgreSQL transaction ends; a snapshot older than the
 *		shard's last commit cannot take it, which is a serialization
 *		failure (40001), as for any write through such a snapshot.
 */
static void
lock_for_count(ShardConn *conn, const char *shard_id, const char *table)
{
	sqlite3    *db = shard_conn_db(conn);
	char		errbuf[SHARDIO_ERRLEN];
	StringInfoData sql;
	int			rc;

	if (sqlite3_txn_state(db, "main") == SQLITE_TXN_WRITE)
		return;
	initStringInfo(&sql);
	appendStringInfoString(&sql, "DELETE FROM ");
	shard_quote_identifier(&sql, table);
	appendStringInfoString(&sql, " WHERE 0");
	rc = shardio_exec(db, sql.data, errbuf);
	if (rc != SQLITE_OK)
		shard_write_error(shard_conn_write_failed(conn, rc), shard_id,
						  NULL, NULL, errbuf,
						  "could not take the write lock of shard \"%s\"",
						  shard_id);
	pfree(sql.data);
}

/*
 * tenant_rows_on_owner
 *		Count (or, with delete, delete) a tenant's rows in every tenant
 *		table of its shard, under the shard's write lock (lock_for_count),
 *		held until the transaction ends; *detail receives "table: rows"
 *		for each table holding some.  Returns the total.  A shard without
 *		tenant tables holds no rows of any tenant and is not locked.
 */
static int64
tenant_rows_on_owner(ShardServerOptions *opts, ShardInfo *info,
					 const char *tenant, bool delete, StringInfo detail)
{
	ShardConn  *conn = shard_conn_get_for_write(opts, info);
	List	   *tables = shard_server_tenant_tables(conn, info->shard_id,
													shard_tenant_spec(opts->serverid));
	int64		total = 0;
	ListCell   *lc;

	if (tables != NIL)
		lock_for_count(conn, info->shard_id,
					   ((ShardTenantTable *) linitial(tables))->table);
	foreach(lc, tables)
	{
		ShardTenantTable *tt = lfirst(lc);
		int64		rows = shard_tenant_table_rows(conn, info->shard_id, tt,
												   tenant, delete);

		if (rows > 0)
			appendStringInfo(detail, "%s\"%s\" %lld",
							 detail->len ? ", " : "", tt->table,
							 (long long) rows);
		total += rows;
	}
	shard_conn_release(conn);
	return total;
}

/*
 * file_rows
 *		The rows of every table of a tenant's file; *detail receives
 *		"table: rows" for each table holding some.
 */
static int64
file_rows(sqlite3 *db, const char *tenant, StringInfo detail)
{
	sqlite3_stmt *stmt;
	List	   *tables = NIL;
	ListCell   *lc;
	int64		total = 0;

	if (sqlite3_prepare_v2(db,
						   "SELECT name FROM sqlite_schema WHERE type = 'table' "
						   "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
						   -1, &stmt, NULL) != SQLITE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("could not read the tables of the file of tenant \"%s\"",
						tenant),
				 errdetail_internal("%s", sqlite3_errmsg(db))));
	while (sqlite3_step(stmt) == SQLITE_ROW)
		tables = lappend(tables, pstrdup((const char *) sqlite3_column_text(stmt, 0)));
	sqlite3_finalize(stmt);
	foreach(lc, tables)
	{
		StringInfoData sql;
		int64		rows = 0;

		initStringInfo(&sql);
		appendStringInfoString(&sql, "SELECT count(*) FROM ");
		shard_quote_identifier(&sql, lfirst(lc));
		if (sqlite3_prepare_v2(db, sql.data, -1, &stmt, NULL) == SQLITE_OK &&
			sqlite3_step(stmt) == SQLITE_ROW)
			rows = sqlite3_column_int64(stmt, 0);
		sqlite3_finalize(stmt);
		if (rows > 0)
			appendStringInfo(detail, "%s\"%s\" %lld",
							 detail->len ? ", " : "", (char *) lfirst(lc),
							 (long long) rows);
		total += rows;
	}
	return total;
}

/*
 * A tenant's file that goes when the transaction commits: the handle that
 * holds its write lock, with the fence in its open transaction, and what
 * the commit needs, computed beforehand (TopMemoryContext), since nothing
 * may fail once PostgreSQL has committed.
 */
typedef struct PendingRemoval
{
	char	   *tenant;
	char	   *path;
	char	   *companions[3];	/* its -wal, -shm and -journal files */
	char	   *archive;		/* the copy made in archive_folder, or NULL */
	sqlite3    *db;
	dev_t		dev;			/* the file locked, to remove no other */
	ino_t		ino;
	int			busy_timeout_ms;
	SubTransactionId subid;		/* the subtransaction that removed it */
} PendingRemoval;

static List *pending_removals = NIL;
static bool removal_callbacks_registered = false;

/*
 * drop_pending
 *		The transaction or subtransaction that removed a tenant's file
 *		rolls back: the fence rolls back with the file's write transaction,
 *		the lock goes with the handle, the file stays, and the archive's
 *		copy, which no commit vouches for, is removed.
 */
static void
drop_pending(PendingRemoval *pr)
{
	char		errbuf[SHARDIO_ERRLEN];
	int			i;

	(void) shardio_exec(pr->db, "ROLLBACK", errbuf);
	shardio_close(pr->db);
	if (pr->archive != NULL && unlink(pr->archive) != 0 && errno != ENOENT)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", pr->archive)));
	pfree(pr->tenant);
	pfree(pr->path);
	for (i = 0; i < lengthof(pr->companions); i++)
		pfree(pr->companions[i]);
	if (pr->archive != NULL)
		pfree(pr->archive);
	pfree(pr);
}

/*
 * finish_pending
 *		PostgreSQL has committed the removal of a tenant's file: commit the
 *		fence, so that a writer that opened the file before, or waits for
 *		its lock, fails (naming the tenant) rather than writes to a file
 *		about to be gone; copy the write-ahead log into the file, so that a
 *		reader opening it meanwhile reads it whole; then remove the file
 *		and its -wal, -shm and -journal files.  Nothing may raise an error
 *		here: a failure is a WARNING naming the file.
 */
static void
finish_pending(PendingRemoval *pr)
{
	char		errbuf[SHARDIO_ERRLEN];
	struct stat st;
	int			persist = 1;
	int			i;

	/* the lock was taken before PostgreSQL committed: this cannot wait long */
	sqlite3_busy_timeout(pr->db, pr->busy_timeout_ms);
	if (shardio_exec(pr->db, "COMMIT", errbuf) != SQLITE_OK)
	{
		ereport(WARNING,
				(errmsg("could not fence the file of removed tenant \"%s\"",
						pr->tenant),
				 errdetail_internal("%s", errbuf),
				 errhint("A connection that was waiting to write file \"%s\" may write to it after it is removed.",
						 pr->path)));
		(void) shardio_exec(pr->db, "ROLLBACK", errbuf);
	}
	else
		(void) shardio_exec(pr->db, "PRAGMA wal_checkpoint(PASSIVE)", errbuf);
	/* the names are this file's no more: closing must not remove them */
	(void) sqlite3_file_control(pr->db, "main", SQLITE_FCNTL_PERSIST_WAL,
								&persist);
	shardio_close(pr->db);
	pr->db = NULL;

	if (stat(pr->path, &st) != 0 || st.st_dev != pr->dev ||
		st.st_ino != pr->ino)
	{
		ereport(WARNING,
				(errmsg("did not remove file \"%s\" of tenant \"%s\": it was replaced or removed meanwhile",
						pr->path, pr->tenant)));
		return;
	}
	if (unlink(pr->path) != 0)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\" of tenant \"%s\": %m",
						pr->path, pr->tenant)));
	for (i = 0; i < lengthof(pr->companions); i++)
		(void) unlink(pr->companions[i]);
}

/*
 * removal_xact_callback
 *		Refuse to prepare a transaction that removed a tenant's file (the
 *		file would have to go at COMMIT PREPARED, which no session of this
 *		backend may see); take the fence's lock before PostgreSQL commits;
 *		keep the files of an aborted one.
 */
static void
removal_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (pending_removals == NIL)
		return;
	if (event == XACT_EVENT_PRE_PREPARE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot prepare a transaction that removed tenant \"%s\"",
						((PendingRemoval *) linitial(pending_removals))->tenant),
				 errdetail("The file of a removed tenant goes when its transaction commits.")));
	if (event == XACT_EVENT_PRE_COMMIT)
	{
		/*
		 * Take now, while the commit may still wait and be cancelled, the
		 * lock the fence's COMMIT needs (readers of a rollback-journal file
		 * hold it off): SQLite's cache flush takes it, as lock_for_commit
		 * does for the shards' writes.  After PostgreSQL's commit nothing
		 * may wait.
		 */
		foreach(lc, pending_removals)
		{
			PendingRemoval *pr = lfirst(lc);
			int			rc = sqlite3_db_cacheflush(pr->db);

			if (rc != SQLITE_OK)
			{
				CHECK_FOR_INTERRUPTS();
				ereport(ERROR,
						(errcode(shard_sqlite_sqlstate(rc)),
						 errmsg("could not remove the file of tenant \"%s\"",
								pr->tenant),
						 errdetail("Nothing was removed. SQLite said: %s",
								   sqlite3_errmsg(pr->db))));
			}
		}
		return;
	}
	if (event != XACT_EVENT_ABORT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	foreach(lc, pending_removals)
		drop_pending(lfirst(lc));
	list_free(pending_removals);
	pending_removals = NIL;
}

/*
 * removal_subxact_callback
 *		A savepoint rolled back: the files removed since stay.  A committed
 *		subtransaction hands its removals to its parent.
 */
static void
removal_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB)
		return;
	foreach(lc, pending_removals)
	{
		PendingRemoval *pr = lfirst(lc);

		if (pr->subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_COMMIT_SUB)
			pr->subid = parentSubid;
		else
		{
			pending_removals = foreach_delete_current(pending_removals, lc);
			drop_pending(pr);
		}
	}
}

/*
 * removal_release_callback
 *		Remove the files once PostgreSQL's commit is certain.
 *
 * The transaction's resources are released after its commit record is
 * written and after every transaction callback ran (connection.c ends this
 * backend's own reads of the files there, which in rollback-journal mode
 * would hold the fence's commit off).  The files go in the last phase; the
 * list is emptied first, so the call for each resource owner of the tree
 * finds nothing left.
 */
static void
removal_release_callback(ResourceReleasePhase phase, bool isCommit,
						 bool isTopLevel, void *arg)
{
	List	   *done = pending_removals;
	ListCell   *lc;

	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !isCommit || !isTopLevel ||
		done == NIL)
		return;
	pending_removals = NIL;
	foreach(lc, done)
	{
		PendingRemoval *pr = lfirst(lc);

		finish_pending(pr);
		pr->archive = NULL;		/* kept: it is the tenant's file now */
		pr->db = NULL;
	}
	foreach(lc, done)
	{
		PendingRemoval *pr = lfirst(lc);
		int			i;

		pfree(pr->tenant);
		pfree(pr->path);
		for (i = 0; i < lengthof(pr->companions); i++)
			pfree(pr->companions[i]);
		pfree(pr);
	}
	list_free(done);
}

/*
 * find_pending
 *		The removal this transaction made of the file at path, or NULL.
 */
static PendingRemoval *
find_pending(const char *path)
{
	ListCell   *lc;

	foreach(lc, pending_removals)
	{
		PendingRemoval *pr = lfirst(lc);

		if (strcmp(pr->path, path) == 0)
			return pr;
	}
	return NULL;
}

/*
 * remember_pending
 *		Have the file at path (st: what was locked) removed when the
 *		transaction commits, through db, which holds its write lock and the
 *		fence; archive is the copy to remove should it roll back instead.
 *		On success the handle is the list's; on an error, still the
 *		caller's.
 */
static void
remember_pending(ShardServerOptions *opts, const char *tenant,
				 const char *path, const char *archive, sqlite3 *db,
				 struct stat *st)
{
	MemoryContext oldcxt;
	PendingRemoval *pr;

	if (!removal_callbacks_registered)
	{
		RegisterXactCallback(removal_xact_callback, NULL);
		RegisterSubXactCallback(removal_subxact_callback, NULL);
		RegisterResourceReleaseCallback(removal_release_callback, NULL);
		removal_callbacks_registered = true;
	}
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	pr = palloc0(sizeof(PendingRemoval));
	pr->tenant = pstrdup(tenant);
	pr->path = pstrdup(path);
	pr->companions[0] = psprintf("%s-wal", path);
	pr->companions[1] = psprintf("%s-shm", path);
	pr->companions[2] = psprintf("%s-journal", path);
	pr->archive = archive ? pstrdup(archive) : NULL;
	pr->dev = st->st_dev;
	pr->ino = st->st_ino;
	pr->busy_timeout_ms = opts->busy_timeout_ms;
	pr->subid = GetCurrentSubTransactionId();
	pending_removals = lappend(pending_removals, pr);
	pr->db = db;
	MemoryContextSwitchTo(oldcxt);
}

/*
 * install_fence
 *		Create, in the open write transaction of db (the tenant's file),
 *		triggers that make every insert, update and delete of every table
 *		fail with SHARD_REMOVED_FORMAT, from any connection.  They commit
 *		only once the removal has: then a writer that opened the file
 *		before it goes fails instead of writing to a removed file.
 */
static void
install_fence(sqlite3 *db, const char *tenant)
{
	static const char *const events[][2] = {
		{"i", "INSERT"}, {"u", "UPDATE"}, {"d", "DELETE"}
	};
	sqlite3_stmt *stmt;
	List	   *tables = NIL;
	StringInfoData raise;
	ListCell   *lc;
	char		errbuf[SHARDIO_ERRLEN];

	if (sqlite3_prepare_v2(db,
						   "SELECT name FROM sqlite_schema WHERE type = 'table' "
						   "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
						   "AND sql NOT LIKE 'CREATE VIRTUAL %' ORDER BY name",
						   -1, &stmt, NULL) != SQLITE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("could not read the tables of the file of tenant \"%s\"",
						tenant),
				 errdetail_internal("%s", sqlite3_errmsg(db))));
	while (sqlite3_step(stmt) == SQLITE_ROW)
		tables = lappend(tables, pstrdup((const char *) sqlite3_column_text(stmt, 0)));
	sqlite3_finalize(stmt);

	initStringInfo(&raise);
	appendStringInfoString(&raise, " BEGIN SELECT RAISE(ABORT, ");
	shard_append_sql_literal(&raise, psprintf(SHARD_REMOVED_FORMAT, tenant));
	appendStringInfoString(&raise, "); END");
	foreach(lc, tables)
	{
		int			e;

		for (e = 0; e < lengthof(events); e++)
		{
			StringInfoData sql;

			initStringInfo(&sql);
			appendStringInfoString(&sql, "CREATE TRIGGER main.");
			shard_quote_identifier(&sql,
								   psprintf("_ssfdw_removed_%d_%s",
											foreach_current_index(lc),
											events[e][0]));
			appendStringInfo(&sql, " BEFORE %s ON ", events[e][1]);
			shard_quote_identifier(&sql, lfirst(lc));
			appendStringInfoString(&sql, raise.data);
			if (shardio_exec(db, sql.data, errbuf) != SQLITE_OK)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
						 errmsg("could not fence table \"%s\" in the file of tenant \"%s\"",
								(char *) lfirst(lc), tenant),
						 errdetail_internal("%s", errbuf)));
			pfree(sql.data);
		}
	}
}

/*
 * remove_tenant_file
 *		tenant_remove on a server of layout 'file_per_tenant': take the
 *		tenant's file's write lock, check its rows, archive a copy with
 *		archive_folder, fence it, and have it removed when the transaction
 *		commits (removal_release_callback); where the directory names the
 *		files, delete its directory rows in the transaction.  Returns the
 *		rows of the file (with delete_rows).
 *
 * The lock is held until the transaction ends, so that no row can arrive
 * after the count nor after the archive's copy: other sessions' writers
 * wait for it, then fail on the fence once the removal has committed.  A
 * rollback (or a savepoint's) releases it and leaves the file as it was.
 */
static int64
remove_tenant_file(ShardServerOptions *opts, const char *tenant,
				   bool delete_rows)
{
	ShardDirectory *dir = shard_directory_get(opts);
	ShardConn  *conn = NULL;
	sqlite3    *db = NULL;
	ShardInfo  *info;
	sqlite3    *file;
	struct stat st;
	char		errbuf[SHARDIO_ERRLEN];
	StringInfoData detail;
	volatile int64 rows = 0;
	char	   *volatile archive = NULL;
	int			rc;

	if (opts->tenant_path != NULL)
	{
		shard_tenant_id_path_check(tenant);
		info = shard_directory_shard(dir, tenant);
	}
	else
	{
		ShardLocation *loc;

		/* the directory's lock first, as for any tenant */
		conn = shard_conn_directory_for_write(opts, false);
		db = shard_conn_db(conn);
		loc = shard_directory_locate(dir, tenant);
		info = loc ? shard_directory_shard(dir, loc->owner) : NULL;
		if (loc == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("tenant \"%s\" does not exist in directory \"%s\"",
							tenant, opts->directory)));
	}
	if (info != NULL && find_pending(info->path) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("tenant \"%s\" has no file", tenant),
				 errdetail("This transaction removed it already; file \"%s\" goes when the transaction commits.",
						   info->path)));
	if (info == NULL || stat(info->path, &st) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("tenant \"%s\" has no file", tenant),
				 info ? errdetail("File \"%s\" does not exist.", info->path) : 0));

	/* the file's write lock, without waiting for it */
	rc = shardio_open(info->path, SHARDIO_OPEN_READWRITE, 0, &file, errbuf);
	if (rc == SQLITE_OK)
		rc = shardio_exec(file, "BEGIN IMMEDIATE", errbuf);
	if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
	{
		shardio_close(file);
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("cannot remove tenant \"%s\": a transaction is writing its file",
						tenant),
				 errdetail("File \"%s\" is locked for writing.", info->path),
				 errhint("Try again once that transaction has ended.")));
	}
	if (rc != SQLITE_OK)
	{
		shardio_close(file);
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("could not open the file of tenant \"%s\"", tenant),
				 errdetail_internal("%s", errbuf)));
	}
	/* the file locked is the one to remove: not one renamed over it since */
	if (stat(info->path, &st) != 0)
	{
		shardio_close(file);
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read the file of tenant \"%s\": %m", tenant)));
	}

	PG_TRY();
	{
		initStringInfo(&detail);
		rows = file_rows(file, tenant, &detail);
		if (rows > 0 && !delete_rows && opts->archive_folder == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("cannot remove tenant \"%s\": its file holds rows",
							tenant),
					 errdetail("Rows per table: %s.", detail.data),
					 errhint("Call tenant_remove('%s', '%s', delete_rows => true), or set the server option \"archive_folder\" to keep the file.",
							 opts->servername, tenant)));
		if (opts->archive_folder != NULL)
		{
			const char *slash = strrchr(info->path, '/');
			char	   *folder;
			char	   *copy;
			sqlite3    *reader;

			/*
			 * Copied through a second handle: SQLite copies nothing from a
			 * handle in a write transaction, and the lock the first one
			 * holds keeps every writer out until the file is gone.
			 */
			folder = shard_resolve_checked_path(opts, tenant,
												opts->archive_folder);
			copy = psprintf("%s/%s.%lld", folder,
							slash ? slash + 1 : info->path,
							(long long) time(NULL));
			if (shardio_open(info->path, 0, opts->busy_timeout_ms, &reader,
							 errbuf) != SQLITE_OK)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
						 errmsg("could not open the file of tenant \"%s\"",
								tenant),
						 errdetail_internal("%s", errbuf)));
			PG_TRY();
			{
				shard_tenant_file_copy(opts, reader, tenant, copy);
			}
			PG_FINALLY();
			{
				shardio_close(reader);
			}
			PG_END_TRY();
			archive = copy;
		}
		install_fence(file, tenant);
		remember_pending(opts, tenant, info->path, archive, file, &st);
	}
	PG_CATCH();
	{
		(void) shardio_exec(file, "ROLLBACK", errbuf);
		shardio_close(file);
		if (archive != NULL)
			(void) unlink(archive);
		PG_RE_THROW();
	}
	PG_END_TRY();

	if (conn != NULL)
	{
		directory_delete(opts, db, "shard_map", "tenant_id", tenant,
						 gettext_noop("could not remove a tenant in directory \"%s\""));
		if (shard_directory_has_column(db, "shards", "shard_id"))
			directory_delete(opts, db, "shards", "shard_id", info->shard_id,
							 gettext_noop("could not remove a shard in directory \"%s\""));
		shard_directory_changed(dir);
		shard_conn_release(conn);
	}
	return delete_rows ? rows : 0;
}

/*
 * shard_tenant_remove
 *		tenant_remove(server, tenant [, delete_rows]): take a tenant out of
 *		the directory.  Refused while it is being moved, and while its shard
 *		holds rows of it, unless delete_rows: then they are deleted first.
 *		Returns the number of rows deleted.
 */
Datum
shard_tenant_remove(PG_FUNCTION_ARGS)
{
	static const char *const needed[] = {"tenant_id", "shard_id", NULL};
	ShardServerOptions *opts;
	char	   *tenant;
	bool		delete_rows;
	ShardConn  *conn;
	sqlite3    *db;
	ShardDirectory *dir;
	ShardLocation *loc;
	ShardInfo  *info;
	StringInfoData detail;
	int64		rows;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("server and tenant must not be null")));
	opts = shard_admin_server(PG_GETARG_NAME(0));
	tenant = shard_tenant_id_text(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	delete_rows = !PG_ARGISNULL(2) && PG_GETARG_BOOL(2);
	shard_require_file_privilege(true, gettext_noop("permission denied to remove a tenant"),
								 gettext_noop("Only roles with privileges of the \"%s\" role may remove a tenant."));
	if (opts->file_per_tenant)
		PG_RETURN_INT64(remove_tenant_file(opts, tenant, delete_rows));

	/* the lock first: nothing may change between the checks and the delete */
	conn = shard_conn_directory_for_write(opts, false);
	db = shard_conn_db(conn);
	shard_directory_require_columns(db, opts->directory, "shard_map", needed,
									gettext_noop("To remove a tenant, table \"%s\" needs the columns %s; it has %s."));
	dir = shard_directory_get(opts);
	loc = shard_directory_locate(dir, tenant);
	if (loc == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("tenant \"%s\" does not exist in directory \"%s\"",
						tenant, opts->directory)));
	if (loc->target_shard_id != NULL &&
		strcmp(loc->target_shard_id, loc->shard_id) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot remove tenant \"%s\": it is being moved", tenant),
				 errdetail("Its status is %s, from shard \"%s\" to shard \"%s\".",
						   loc->status, loc->shard_id, loc->target_shard_id),
				 errhint("Let the move finish and be cleaned up, or abort it, first.")));

	info = shard_directory_shard(dir, loc->owner);
	initStringInfo(&detail);
	rows = tenant_rows_on_owner(opts, info, tenant, delete_rows, &detail);
	if (rows > 0 && !delete_rows)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot remove tenant \"%s\": shard \"%s\" holds rows of it",
						tenant, loc->owner),
				 errdetail("Rows per table: %s.", detail.data),
				 errhint("Delete them first, or call tenant_remove('%s', '%s', delete_rows => true).",
						 opts->servername, tenant)));

	directory_delete(opts, db, "shard_map", "tenant_id", tenant,
					 gettext_noop("could not remove a tenant in directory \"%s\""));
	shard_directory_changed(dir);
	shard_conn_release(conn);
	PG_RETURN_INT64(delete_rows ? rows : 0);
}

/*
 * shard_remove
 *		shard_remove(server, shard): take a shard out of the directory's
 *		shards table.  Refused while it answers for tenants or takes part in
 *		a move (as its source or its target).  The file stays.
 */
Datum
shard_remove(PG_FUNCTION_ARGS)
{
	static const char *const needed[] = {"shard_id", "path", NULL};
	ShardServerOptions *opts;
	char	   *shard_id;
	ShardConn  *conn;
	sqlite3    *db;
	ShardDirectory *dir;
	ShardInfo  *info;
	int64		owned = 0;
	char	   *moving = NULL;
	sqlite3_stmt *stmt;
	bool		has_target;
	int			rc;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("server and shard must not be null")));
	opts = shard_admin_server(PG_GETARG_NAME(0));
	shard_id = text_to_cstring(PG_GETARG_TEXT_PP(1));
	shard_require_file_privilege(true, gettext_noop("permission denied to remove a shard"),
								 gettext_noop("Only roles with privileges of the \"%s\" role may remove a shard."));

	conn = shard_conn_directory_for_write(opts, false);
	db = shard_conn_db(conn);
	dir = shard_directory_get(opts);
	if (!shard_directory_has_column(db, "shards", "shard_id"))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
				 errmsg("directory \"%s\" has no table \"shards\"",
						opts->directory),
				 errdetail("Its shards are named by shard_map and the server option \"shard_path\"; there is nothing to remove."),
				 errhint("Create the directory's tables with directory_init('%s').",
						 opts->servername)));
	shard_directory_require_columns(db, opts->directory, "shards", needed,
									gettext_noop("To remove a shard, table \"%s\" needs the columns %s; it has %s."));
	info = shard_admin_shard(opts, dir, shard_id);

	/* tenants it answers for */
	if (sqlite3_prepare_v2(db,
						   psprintf("SELECT count(*) FROM shard_map WHERE %s = ?1",
									shard_directory_owner_sql(dir)),
						   -1, &stmt, NULL) != SQLITE_OK)
		shard_admin_write_failed(opts, db,
								 gettext_noop("could not count the tenants of a shard in directory \"%s\""));
	sqlite3_bind_text(stmt, 1, info->shard_id, -1, SQLITE_TRANSIENT);
	/* a failed count is no answer: count(*) always returns its row */
	if (sqlite3_step(stmt) != SQLITE_ROW)
	{
		sqlite3_finalize(stmt);
		shard_admin_write_failed(opts, db,
								 gettext_noop("could not count the tenants of a shard in directory \"%s\""));
	}
	owned = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	if (owned > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg_plural("cannot remove shard \"%s\": it answers for %lld tenant",
							   "cannot remove shard \"%s\": it answers for %lld tenants",
							   (unsigned long) owned,
							   info->shard_id, (long long) owned),
				 errhint("Move its tenants to other shards, or remove them with tenant_remove(), first.")));

	/* a move from or to it (the other side still holds rows there) */
	has_target = shard_directory_has_column(db, "shard_map", "target_shard_id");
	if (has_target)
	{
		if (sqlite3_prepare_v2(db,
							   "SELECT tenant_id FROM shard_map "
							   "WHERE target_shard_id IS NOT NULL "
							   "AND target_shard_id <> shard_id "
							   "AND (shard_id = ?1 OR target_shard_id = ?1) "
							   "ORDER BY tenant_id LIMIT 1",
							   -1, &stmt, NULL) != SQLITE_OK)
			shard_admin_write_failed(opts, db,
									 gettext_noop("could not look for moves in directory \"%s\""));
		sqlite3_bind_text(stmt, 1, info->shard_id, -1, SQLITE_TRANSIENT);
		/* no row: no move; anything else is a failed look, not "none" */
		rc = sqlite3_step(stmt);
		if (rc == SQLITE_ROW)
			moving = pstrdup((const char *) sqlite3_column_text(stmt, 0));
		else if (rc != SQLITE_DONE)
		{
			sqlite3_finalize(stmt);
			shard_admin_write_failed(opts, db,
									 gettext_noop("could not look for moves in directory \"%s\""));
		}
		sqlite3_finalize(stmt);
	}
	if (moving != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot remove shard \"%s\": it takes part in the move of tenant \"%s\"",
						info->shard_id, moving),
				 errhint("Let the move finish and be cleaned up, or abort it, first.")));

	directory_delete(opts, db, "shards", "shard_id", info->shard_id,
					 gettext_noop("could not remove a shard in directory \"%s\""));
	shard_directory_changed(dir);
	shard_conn_release(conn);
	PG_RETURN_VOID();
}
