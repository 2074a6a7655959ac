/*-------------------------------------------------------------------------
 *
 * connection.c
 *		  Cache of SQLite shard handles and their read transactions
 *
 * A backend keeps its shard handles open between statements, keyed by file
 * path, up to sqlite_shard_fdw.max_open_shards idle handles; beyond that
 * the least recently used idle handle is closed.  A handle in use, or
 * holding a transaction snapshot, is never closed, so a query may read more
 * shards than the cap.
 *
 * Reads of a shard happen inside one SQLite read transaction per statement:
 * it begins when the first scan of the statement takes the handle and ends
 * when the last one gives it back.  Under REPEATABLE READ and SERIALIZABLE
 * the read transaction lasts until the PostgreSQL transaction ends, so
 * every statement of the transaction sees the same state of that shard.
 * There is no snapshot across shards.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/xact.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

struct ShardConn
{
	char		path[MAXPGPATH];	/* hash key */
	char		shard_id[NAMEDATALEN * 2];	/* for messages */
	sqlite3    *db;
	int			refcount;		/* scans using the handle now */
	bool		in_xact;		/* a read transaction is open */
	bool		xact_scoped;	/* ... and lasts for the transaction */
	uint64		last_used;
};

static HTAB *ConnectionHash = NULL;
static uint64 use_counter = 0;
static int	open_count = 0;

static void shard_xact_callback(XactEvent event, void *arg);

/*
 * shard_report_sqlite_error
 *		Raise an SQLite failure on a shard with the SQLSTATE that matches
 *		its cause.
 */
void
shard_report_sqlite_error(int elevel, int rc, const char *shard_id,
						  const char *what, const char *msg)
{
	int			sqlstate;

	switch (rc & 0xff)
	{
		case SQLITE_BUSY:
		case SQLITE_LOCKED:
			sqlstate = ERRCODE_LOCK_NOT_AVAILABLE;
			break;
		case SQLITE_CORRUPT:
		case SQLITE_NOTADB:
			sqlstate = ERRCODE_DATA_CORRUPTED;
			break;
		case SQLITE_FULL:
			sqlstate = ERRCODE_DISK_FULL;
			break;
		case SQLITE_NOMEM:
			sqlstate = ERRCODE_OUT_OF_MEMORY;
			break;
		case SQLITE_INTERRUPT:
			sqlstate = ERRCODE_QUERY_CANCELED;
			break;
		case SQLITE_CANTOPEN:
		case SQLITE_PERM:
		case SQLITE_AUTH:
			sqlstate = ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION;
			break;
		default:
			sqlstate = ERRCODE_FDW_ERROR;
			break;
	}
	ereport(elevel,
			(errcode(sqlstate),
			 errmsg("could not %s on shard \"%s\"", what, shard_id),
			 errdetail_internal("%s", msg)));
}

/*
 * close_conn
 *		Close a handle and forget it.
 */
static void
close_conn(ShardConn *conn)
{
	shardio_close(conn->db);
	conn->db = NULL;
	open_count--;
	hash_search(ConnectionHash, conn->path, HASH_REMOVE, NULL);
}

/*
 * evict_idle
 *		Close least recently used idle handles until at most "keep" remain
 *		open (handles in use do not count against the cap).
 */
static void
evict_idle(int keep)
{
	while (open_count > keep)
	{
		HASH_SEQ_STATUS scan;
		ShardConn  *conn;
		ShardConn  *victim = NULL;

		hash_seq_init(&scan, ConnectionHash);
		while ((conn = hash_seq_search(&scan)) != NULL)
		{
			if (conn->refcount > 0 || conn->in_xact)
				continue;
			if (victim == NULL || conn->last_used < victim->last_used)
				victim = conn;
		}
		if (victim == NULL)
			return;
		close_conn(victim);
	}
}

/*
 * open_shard_file
 *		Open a shard read-only, telling a missing or unreadable file from one
 *		that is not an SQLite database.  Returns NULL only for a missing file
 *		when missing_ok.
 */
static sqlite3 *
open_shard_file(ShardServerOptions *opts, ShardInfo *shard, bool missing_ok)
{
	sqlite3    *db;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	switch (shardio_file_state(shard->path))
	{
		case SHARDIO_FILE_MISSING:
			if (missing_ok)
				return NULL;
			ereport(ERROR,
					(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
					 errmsg("could not open shard \"%s\": file \"%s\" does not exist",
							shard->shard_id, shard->path),
					 errhint("Set the server option \"on_missing_shard\" to 'skip' to read the other shards.")));
			break;
		case SHARDIO_FILE_UNREADABLE:
			ereport(ERROR,
					(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
					 errmsg("could not open shard \"%s\": file \"%s\" cannot be read",
							shard->shard_id, shard->path),
					 errdetail("The server's operating system user needs read permission on the file and its folder.")));
			break;
		case SHARDIO_FILE_NOT_REGULAR:
			ereport(ERROR,
					(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
					 errmsg("could not open shard \"%s\": \"%s\" is not a regular file",
							shard->shard_id, shard->path)));
			break;
		default:
			break;
	}

	rc = shardio_open(shard->path, 0, opts->busy_timeout_ms, &db, errbuf);
	if (rc != SQLITE_OK)
	{
		if ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("shard \"%s\" is not a valid SQLite database", shard->shard_id),
					 errdetail_internal("File \"%s\": %s", shard->path, errbuf)));
		shard_report_sqlite_error(ERROR, rc, shard->shard_id, "open the shard",
								  errbuf);
	}
	return db;
}

/*
 * shard_conn_get
 *		A handle on a shard inside a read transaction, for one scan.
 *
 * Every shard_conn_get must be matched by a shard_conn_release once the
 * scan is done with the shard.  Returns NULL only when the file is missing
 * and missing_ok is set.
 */
ShardConn *
shard_conn_get(ShardServerOptions *opts, ShardInfo *shard, bool missing_ok)
{
	ShardConn  *conn;
	bool		found;
	char		errbuf[SHARDIO_ERRLEN];

	if (strlen(shard->path) >= MAXPGPATH)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("path of shard \"%s\" is too long", shard->shard_id)));

	if (ConnectionHash == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = MAXPGPATH;
		ctl.entrysize = sizeof(ShardConn);
		ConnectionHash = hash_create("sqlite_shard_fdw connections", 64, &ctl,
									 HASH_ELEM | HASH_STRINGS);
		RegisterXactCallback(shard_xact_callback, NULL);
	}

	conn = hash_search(ConnectionHash, shard->path, HASH_FIND, NULL);
	if (conn == NULL)
	{
		sqlite3    *db;

		/* Make room first, so the cap holds once this one is idle again. */
		evict_idle(shard_max_open_shards - 1);
		db = open_shard_file(opts, shard, missing_ok);
		if (db == NULL)
			return NULL;
		conn = hash_search(ConnectionHash, shard->path, HASH_ENTER, &found);
		conn->db = db;
		conn->refcount = 0;
		conn->in_xact = false;
		conn->xact_scoped = false;
		open_count++;
	}
	strlcpy(conn->shard_id, shard->shard_id, sizeof(conn->shard_id));
	conn->last_used = ++use_counter;

	if (!conn->in_xact)
	{
		int			rc = shardio_exec(conn->db, "BEGIN", errbuf);

		if (rc != SQLITE_OK)
			shard_report_sqlite_error(ERROR, rc, shard->shard_id,
									  "start a read transaction", errbuf);
		conn->in_xact = true;
		conn->xact_scoped = IsolationUsesXactSnapshot();
	}
	conn->refcount++;
	return conn;
}

/*
 * shard_conn_db
 *		The SQLite handle of a connection.
 */
sqlite3 *
shard_conn_db(ShardConn *conn)
{
	return conn->db;
}

/*
 * end_read_xact
 *		End a handle's read transaction.  ROLLBACK, unlike COMMIT, succeeds
 *		even while a statement is still open, and a read has nothing to keep.
 */
static void
end_read_xact(ShardConn *conn)
{
	if (conn->in_xact && conn->db != NULL &&
		!sqlite3_get_autocommit(conn->db))
		(void) shardio_exec(conn->db, "ROLLBACK", NULL);
	conn->in_xact = false;
	conn->xact_scoped = false;
}

/*
 * shard_conn_release
 *		A scan is done with a shard; the statement's read transaction ends
 *		with the last scan unless the transaction keeps its snapshot.
 */
void
shard_conn_release(ShardConn *conn)
{
	if (conn->refcount > 0)
		conn->refcount--;
	if (conn->refcount == 0 && !conn->xact_scoped)
	{
		end_read_xact(conn);
		evict_idle(shard_max_open_shards);
	}
}

/*
 * shard_xact_callback
 *		End every read transaction with the PostgreSQL transaction; after an
 *		error, scans never gave their handles back, so forget their counts.
 */
static void
shard_xact_callback(XactEvent event, void *arg)
{
	HASH_SEQ_STATUS scan;
	ShardConn  *conn;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT &&
		event != XACT_EVENT_PARALLEL_ABORT && event != XACT_EVENT_PREPARE)
		return;

	hash_seq_init(&scan, ConnectionHash);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		end_read_xact(conn);
		conn->refcount = 0;
	}
	evict_idle(shard_max_open_shards);
}
