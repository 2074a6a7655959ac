/*-------------------------------------------------------------------------
 *
 * shardcommit.c
 *		  The commit of the files a transaction wrote, before PostgreSQL's
 *		  own: checked, locked, logged when several, then committed one
 *		  after another in a fixed order
 *
 * connection.c keeps the handles and begins their write transactions;
 * its transaction callback calls shard_commit_writes at PRE_COMMIT.  What
 * the commit promises is in shard_commit_writes's comment and in
 * docs/reference/writes.md ("What a COMMIT promises").
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/predicate.h"

#include "connection_int.h"

/*
 * write_conn_cmp
 *		Order written shards by id: the fixed order commits follow.
 */
static int
write_conn_cmp(const ListCell *a, const ListCell *b)
{
	ShardConn  *ca = lfirst(a);
	ShardConn  *cb = lfirst(b);

	if (ca->is_directory != cb->is_directory)
		return ca->is_directory ? -1 : 1;
	return strcmp(ca->shard_id, cb->shard_id);
}

/*
 * lock_for_commit
 *		Check that a written handle's COMMIT can succeed as far as SQLite
 *		tells before it runs, and take every lock it needs, waiting for other
 *		connections as any write does: in rollback-journal mode the
 *		exclusive lock, which readers of the file hold off, taken by
 *		writing the changed pages out (SQLite's cache flush); in WAL mode
 *		the write lock held since the first write is all.  A cancel or a
 *		statement timeout while waiting is raised as such.
 *
 * In WAL mode the cache flush takes no lock; it writes the changed pages
 * into the WAL ahead of the commit, which must then add a frame of its own
 * (the database's first page, unchanged) to mark the commit: one more page
 * written and synced per commit.  Among several files that is worth it, as
 * a full disk or a failed write then shows before any of them commits; a
 * lone file (alone) gains nothing from it, and its commit is left whole.
 */
static void
lock_for_commit(ShardConn *conn, bool alone)
{
	int			fks = 0;
	int			highwater;
	int			rc;

	/*
	 * A deferred foreign key left unsatisfied would fail the COMMIT:
	 * refuse it now, while nothing has committed.
	 */
	if (sqlite3_db_status(conn->db, SQLITE_DBSTATUS_DEFERRED_FKS, &fks,
						  &highwater, 0) == SQLITE_OK && fks > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
				 conn->is_directory ?
				 errmsg("could not commit the writes to directory \"%s\"",
						conn->path) :
				 errmsg("could not commit the writes to shard \"%s\"",
						conn->shard_id),
				 conn->is_directory ?
				 errdetail("A deferred foreign key constraint of the directory is not satisfied. Nothing committed.") :
				 errdetail("A deferred foreign key constraint of the shard is not satisfied. Nothing committed.")));

	if (alone && shardio_in_wal_mode(conn->db))
		return;
	rc = sqlite3_db_cacheflush(conn->db);

	if (rc != SQLITE_OK)
	{
		char		errbuf[SHARDIO_ERRLEN];

		if ((rc & 0xff) == SQLITE_BUSY)
			strlcpy(errbuf, sqlite3_errstr(rc), SHARDIO_ERRLEN);
		else
			strlcpy(errbuf, sqlite3_errmsg(conn->db), SHARDIO_ERRLEN);
		shard_conn_failed(conn, rc, errbuf, CONN_COMMIT_LOCK);
	}
}

/*
 * commit_failed
 *		Raise the failure (rc, SQLite's message errbuf) of the commit of
 *		written's file at position failed: the files before it committed,
 *		it and those after it roll back with the PostgreSQL transaction.
 *		A logged commit (log_id) stays in the log as failed when some
 *		committed, and goes when none did.
 */
static void
commit_failed(List *written, int failed, int rc, const char *errbuf,
			  int64 log_id)
{
	ShardConn  *conn = list_nth(written, failed);
	StringInfoData done;
	StringInfoData rest;
	ListCell   *lc;

	initStringInfo(&done);
	initStringInfo(&rest);
	foreach(lc, written)
	{
		StringInfo	buf = foreach_current_index(lc) < failed ? &done : &rest;

		appendStringInfo(buf, "%s%s", buf->len > 0 ? ", " : "",
						 shard_conn_label(lfirst(lc)));
	}
	RESUME_INTERRUPTS();
	if (log_id > 0)
		shard_commitlog_end(conn->directory, log_id,
							failed > 0 ? errbuf : NULL);
	ereport(ERROR,
			(errcode(rc == SQLITE_CONSTRAINT_FOREIGNKEY ?
					 ERRCODE_FOREIGN_KEY_VIOLATION :
					 shard_sqlite_sqlstate(rc)),
			 conn->is_directory ?
			 errmsg("could not commit the writes to directory \"%s\"",
					conn->path) :
			 errmsg("could not commit the writes to shard \"%s\"",
					conn->shard_id),
			 failed > 0 ?
			 errdetail("These committed: %s. These did not: %s. SQLite said: %s",
					   done.data, rest.data, errbuf) :
			 errdetail("Nothing committed; these did not: %s. SQLite said: %s",
					   rest.data, errbuf),
			 failed > 0 ?
			 errhint("The files that committed keep the transaction's writes; shard_commits() lists the commit until shard_commit_forget() removes it.") :
			 0));
}

/*
 * shard_commit_writes
 *		Commit every file the transaction wrote, in a fixed order (the
 *		directory first, then shards by id), before PostgreSQL commits.
 *
 * The order of the work is what a COMMIT promises (docs/reference/writes.md, "What a COMMIT
 * promises"):
 *
 * 1. Under SERIALIZABLE, PostgreSQL's own check for serialization failures
 *	  runs first.  It marks the transaction as one that may no longer be
 *	  chosen to fail, as for PREPARE TRANSACTION, so that PostgreSQL's
 *	  commit cannot fail that way after the shards committed.
 * 2. Every lock the commits need is taken, each waited for as a write
 *	  waits; a cancel, a statement timeout or a lock not had aborts the
 *	  transaction with nothing committed.
 * 3. A commit of several files is recorded, durably, in the server's
 *	  commit log (commitlog.c), so that a crash between two of them is
 *	  found after the restart.
 * 4. The files commit one after another, with interrupts held off, each
 *	  marked in the log once it committed.  A failure is an error that
 *	  aborts the PostgreSQL transaction (the files not yet committed roll
 *	  back with it) and names the files that committed, which stay
 *	  committed.
 */
void
shard_commit_writes(bool parallel)
{
	ShardConn  *conn;
	List	   *written = shard_conn_written();
	ListCell   *lc;
	int64		log_id = 0;
	int			n;

	if (written == NIL)
		return;
	list_sort(written, write_conn_cmp);
	n = list_length(written);

	/* nothing commits if one shard's writes are already gone */
	foreach(lc, written)
	{
		conn = lfirst(lc);
		if (conn->write_lost || sqlite3_get_autocommit(conn->db))
		{
			conn->write_lost = true;
			shard_conn_report_write_lost(conn);
		}
	}

	if (!parallel && IsolationIsSerializable())
		PreCommit_CheckForSerializationFailure();

	foreach(lc, written)
		lock_for_commit(lfirst(lc), n == 1);

	if (n > 1)
	{
		char	  **ids = palloc(sizeof(char *) * n);
		char	  **paths = palloc(sizeof(char *) * n);
		char		errbuf[SHARDIO_ERRLEN];
		int			rc;

		foreach(lc, written)
		{
			conn = lfirst(lc);
			ids[foreach_current_index(lc)] =
				conn->is_directory ? NULL : conn->shard_id;
			paths[foreach_current_index(lc)] = conn->path;
		}
		conn = linitial(written);
		rc = shard_commitlog_begin(conn->directory, n, ids, paths, &log_id,
								   errbuf);
		if (rc != SQLITE_OK)
			ereport(ERROR,
					(errcode(shard_sqlite_sqlstate(rc)),
					 errmsg("could not record a commit of %d shards in file \"%s\"",
							n, shard_commitlog_path(conn->directory)),
					 errdetail("Nothing committed. SQLite said: %s", errbuf),
					 errhint("The server's operating system user must be able to create and write the file next to the directory file.")));
	}

	/* Nothing may stop the commits half-way but a failed commit. */
	HOLD_INTERRUPTS();
	foreach(lc, written)
	{
		char		errbuf[SHARDIO_ERRLEN];
		int			i = foreach_current_index(lc);
		int			rc;

		conn = lfirst(lc);
		rc = shard_conn_run(conn, conn->commit_stmt, errbuf);
		if (rc != SQLITE_OK)
			commit_failed(written, i, rc, errbuf, log_id);
		conn->in_xact = false;
		shard_conn_end_read_xact(conn);
		if (log_id > 0 && i < n - 1)
		{
			rc = shard_commitlog_committed(conn->directory, log_id, i + 1,
										   errbuf);
			if (rc != SQLITE_OK)
				commit_failed(written, i + 1, rc, errbuf, 0);
		}
	}
	if (log_id > 0)
		shard_commitlog_end(((ShardConn *) linitial(written))->directory,
							log_id, NULL);
	RESUME_INTERRUPTS();
	list_free(written);
}

