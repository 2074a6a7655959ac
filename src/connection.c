/*-------------------------------------------------------------------------
 *
 * connection.c
 *		  Cache of SQLite shard handles and their read and write transactions
 *
 * A backend keeps its shard handles open between statements, keyed by file
 * path, so that a fan-out over thousands of tenant files reads each through
 * a handle whose schema is parsed and whose statement is prepared.  Three
 * bounds keep the idle handles in check, the least recently used handle
 * closing first whenever one is passed (a list in order of use makes that
 * choice without a scan of the cache):
 *
 *	- sqlite_shard_fdw.max_open_shards handles;
 *	- sqlite_shard_fdw.open_shards_memory, the memory SQLite holds for the
 *	  handles (page cache, schema and prepared statements, as SQLite counts
 *	  them, plus a fixed estimate of each connection's own), measured each
 *	  time a handle becomes idle;
 *	- PostgreSQL's budget of descriptors outside its own file layer (a
 *	  third of max_files_per_process, see below) but FDS_LEFT, so that
 *	  other users of that budget, postgres_fdw's connections among them,
 *	  find some left.
 *
 * Which handle goes: the least recently used of those no read of the
 * current statement needs; when only the current statement's are left, the
 * one it used last (see evict_idle).
 *
 * A handle in use, or holding a transaction snapshot, is never closed, so
 * a query may read more shards than the bounds.
 *
 * Reads of a shard happen inside one SQLite read transaction per statement:
 * it begins when a statement first takes the handle and ends when a later
 * statement takes it (or the transaction ends), so two scans of one shard
 * in one statement see the same state of it.  A statement is known by its
 * start time (one top-level statement, a function call included).  Under
 * REPEATABLE READ and SERIALIZABLE the read transaction lasts until the
 * PostgreSQL transaction ends, so every statement of the transaction sees
 * the same state of that shard.  There is no snapshot across shards.
 *
 * Waiting: a handle locked by another process is waited for by SQLite's
 * busy handler (shardio.c), on whichever thread reads it.  On the backend
 * that wait gives up as soon as a cancel, a statement timeout or a
 * termination is pending (shard_interrupts_pending reads the flags; it must
 * not process them inside SQLite), and the failed call raises them
 * afterwards (shard_check_lock_wait, sqliteerror.c).  On a fan-out worker
 * the fan-out's stop flag ends the wait: the backend keeps checking for
 * interrupts while it waits for the workers, and the error it raises stops
 * the fan-out (the scan's cleanup destroys it, or the transaction's abort
 * stops it first).
 *
 * Handles are opened for writing but kept query_only until a write first
 * needs them.  A shard's write transaction begins at the PostgreSQL
 * transaction's first write to it (BEGIN IMMEDIATE, which takes the write
 * lock up front, or the upgrade of a read transaction a REPEATABLE READ
 * snapshot, or an earlier read of the same statement, still holds) and
 * lasts until the PostgreSQL transaction ends: later reads of the shard see
 * its writes.  No read of planning stays open into execution
 * (shard_conn_get_brief), and the scan of a table its statement writes
 * takes the write lock before it reads (shard_conn_get_locked), so a
 * statement in autocommit never has to turn a snapshot into a write, which
 * SQLite refuses once another connection has written the shard.
 * Savepoints mirror PostgreSQL's subtransactions, so a failed statement
 * inside a savepoint or a PL/pgSQL exception block undoes its shard writes
 * too.  At commit the written shards commit one after another in a fixed
 * order, after every lock they need was taken and, for several, after the
 * commit was recorded in the commit log (shardcommit.c, commitlog.c); if
 * one fails, the error names those that committed and those that did not
 * (SQLite has no two-phase commit).  PREPARE TRANSACTION is refused once a
 * shard was written.
 *
 * Each open handle counts its descriptors against PostgreSQL's budget
 * (AcquireExternalFD, as postgres_fdw counts its connections).  The bounds
 * and the list in order of use are handlecache.c's.
 *
 * What a shard's tables look like (declared affinities, primary keys) is
 * read through a handle in shardschema.c, which shares the handle's
 * structure (connection_int.h).
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xact.h"
#include "fanout.h"
#include "lib/ilist.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "connection_int.h"

/* The tenant of a tenant file's handle, found by the handle. */
typedef struct FileTenantEntry
{
	sqlite3    *db;				/* hash key */
	char	   *tenant;
} FileTenantEntry;

/* An idle prepared statement kept for its SQL text. */
typedef struct CachedStmt
{
	char	   *sql;
	sqlite3_stmt *stmt;
} CachedStmt;

/* Idle statements kept per handle; the oldest goes first. */
#define MAX_CACHED_STMTS 16

/* A scan's hold on a handle, and the subtransaction that took it. */
typedef struct ConnHold
{
	ShardConn  *conn;
	SubTransactionId subid;
} ConnHold;

/*
 * How a handle's transaction begins when it has none: a read for the
 * statement, a read for planning that ends when the handle is given back,
 * or with the write lock (BEGIN IMMEDIATE) for a statement that will write.
 */
typedef enum ConnBegin
{
	CONN_BEGIN_READ,
	CONN_BEGIN_BRIEF,
	CONN_BEGIN_LOCKED
} ConnBegin;

/* Which file a handle is opened on, and how. */
typedef enum ConnFile
{
	CONN_SHARD,					/* a shard file, which must exist */
	CONN_DIRECTORY,				/* the directory, which must exist */
	CONN_DIRECTORY_CREATE		/* the directory, created if missing */
} ConnFile;

static HTAB *ConnectionHash = NULL;
static HTAB *FileTenantHash = NULL;
static uint64 use_counter = 0;

/*
 * Shard writes begun in this backend (each statement's first write to each
 * shard): a scan of a table its statement writes checks, before it reads,
 * that nothing was written since the statement began.
 */
uint64		shard_writes_begun = 0;
static uint64 directory_generation = 0;
static List *holds = NIL;		/* ConnHold, in TopMemoryContext */

static void shard_xact_callback(XactEvent event, void *arg);
static void end_savepoints(bool commit);
static ShardConn *hash_search_conn(ShardInfo *shard);
static ShardConn *shard_conn_get_internal(ShardServerOptions *opts,
										  ShardInfo *shard, bool missing_ok,
										  ConnBegin begin, ConnFile file);
static void conn_exec(ShardConn *conn, const char *sql, ConnExecOp op);
static void conn_step(ShardConn *conn, sqlite3_stmt *stmt, ConnExecOp op);
static void allow_writes(ShardConn *conn);


/*
 * shard_conn_stale_read
 *		Is a handle's read transaction one that no scan uses and that an
 *		earlier statement began?  Then it may end.
 */
bool
shard_conn_stale_read(ShardConn *conn)
{
	return conn->in_xact && conn->refcount == 0 && conn->open_stmts == 0 &&
		!conn->xact_scoped && !conn->write_xact &&
		conn->xact_stmt != GetCurrentStatementStartTimestamp();
}
static void shard_subxact_callback(SubXactEvent event,
								   SubTransactionId mySubid,
								   SubTransactionId parentSubid, void *arg);

/*
 * shard_conn_close
 *		Close a handle and forget it.
 */
void
shard_conn_close(ShardConn *conn)
{
	ListCell   *lc;

	foreach(lc, conn->stmts)
	{
		CachedStmt *cs = lfirst(lc);

		sqlite3_finalize(cs->stmt);
		pfree(cs->sql);
	}
	list_free_deep(conn->stmts);
	conn->stmts = NIL;
	list_free_deep(conn->checked);
	conn->checked = NIL;
	sqlite3_finalize(conn->begin_stmt);
	sqlite3_finalize(conn->rollback_stmt);
	sqlite3_finalize(conn->immediate_stmt);
	sqlite3_finalize(conn->commit_stmt);
	if (conn->file_tenant != NULL)
	{
		hash_search(FileTenantHash, &conn->db, HASH_REMOVE, NULL);
		pfree(conn->file_tenant);
		conn->file_tenant = NULL;
	}
	shardio_close(conn->db);
	conn->db = NULL;
	shard_cache_forget(conn);
	hash_search(ConnectionHash, conn->path, HASH_REMOVE, NULL);
}






/*
 * set_file_tenant
 *		Make a new handle the file of tenant: register ssfdw_file_tenant on
 *		it, and remember the tenant for shard_conn_file_tenant.
 */
static void
set_file_tenant(ShardConn *conn, const char *shard_id, const char *tenant)
{
	FileTenantEntry *entry;
	int			rc;

	if (FileTenantHash == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(sqlite3 *);
		ctl.entrysize = sizeof(FileTenantEntry);
		FileTenantHash = hash_create("sqlite_shard_fdw tenant files", 64,
									 &ctl, HASH_ELEM | HASH_BLOBS);
	}
	rc = shardio_set_file_tenant(conn->db, tenant);
	if (rc != SQLITE_OK)
	{
		shard_conn_close(conn);
		shard_sqlite_error(ERROR, rc, shard_id, "",
						   "could not prepare shard \"%s\" as the file of one tenant",
						   shard_id);
	}
	conn->file_tenant = MemoryContextStrdup(TopMemoryContext, tenant);
	entry = hash_search(FileTenantHash, &conn->db, HASH_ENTER, NULL);
	entry->tenant = conn->file_tenant;
}

/*
 * shard_conn_file_tenant
 *		The tenant whose file an open shard handle is, or NULL for a shard
 *		of the shared layout (or any other handle).
 */
const char *
shard_conn_file_tenant(sqlite3 *db)
{
	FileTenantEntry *entry;

	if (FileTenantHash == NULL || db == NULL)
		return NULL;
	entry = hash_search(FileTenantHash, &db, HASH_FIND, NULL);
	return entry ? entry->tenant : NULL;
}




/*
 * shard_file_kind
 *		What a file's first 100 bytes say it is: not an SQLite database (an
 *		empty file, text, anything without SQLite's header), or one in WAL
 *		or rollback-journal mode.  Reads the header without a lock, so it
 *		never waits for a writer, and through SQLite's file layer, so the
 *		locks of the handles this backend has open on the file stay
 *		(shardio_read_header); the caller has checked that the file is a
 *		regular one.
 */
int
shard_file_kind(const char *path)
{
	unsigned char header[100];
	int			n;

	n = shardio_read_header(path, header, sizeof(header));
	if (n < 0)
		return SHARD_FILE_UNKNOWN;
	if (n < (int) sizeof(header) ||
		memcmp(header, "SQLite format 3", 16) != 0)
		return SHARD_FILE_NOT_SQLITE;
	/* the file format's write and read versions: 2 is WAL */
	if (header[18] == 2 || header[19] == 2)
		return SHARD_FILE_WAL;
	return SHARD_FILE_ROLLBACK;
}

/*
 * shard_wal_folder_unwritable
 *		The folder of a database in WAL mode when the server's operating
 *		system user cannot create files in it; NULL otherwise.
 *
 * Reading a WAL database needs its -wal and -shm files.  While another
 * process has the database open they exist and a read works; once the last
 * one closes it, SQLite removes them and the next reader must create them,
 * which fails with "attempt to write a readonly database".  Checked before
 * every open, so the answer does not depend on what other processes do.
 */
char *
shard_wal_folder_unwritable(const char *path)
{
	char	   *folder;

	if (shard_file_kind(path) != SHARD_FILE_WAL)
		return NULL;
	folder = pstrdup(path);
	get_parent_directory(folder);
	if (folder[0] == '\0')
		folder = pstrdup(".");
	if (access(folder, W_OK | X_OK) == 0)
		return NULL;
	return folder;
}

/*
 * shard_check_wal_folder
 *		Refuse, with what is missing, a shard in WAL mode whose folder the
 *		server cannot write (shard_wal_folder_unwritable).
 */
void
shard_check_wal_folder(const char *shard_id, const char *path)
{
	char	   *folder = shard_wal_folder_unwritable(path);

	if (folder != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot read shard \"%s\": the server cannot create files in folder \"%s\"",
						shard_id, folder),
				 errdetail("The shard is in WAL mode: reading it needs its \"-wal\" and \"-shm\" files, which SQLite creates next to file \"%s\" whenever no other process has it open.",
						   path),
				 errhint("Give the server's operating system user write permission on the folder, or take the shard out of WAL mode (PRAGMA journal_mode = DELETE).")));
}

/*
 * open_shard_file
 *		Open a shard read-only, telling a missing or unreadable file from one
 *		that is not an SQLite database.  Returns NULL only for a missing file
 *		when missing_ok.  kind is what shard_file_kind said of the file.
 */
static sqlite3 *
open_shard_file(ShardServerOptions *opts, ShardInfo *shard, bool missing_ok,
				int kind)
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

	/* kind, read just before, spares a rollback-journal file a second read */
	if (kind == SHARD_FILE_WAL || kind == SHARD_FILE_UNKNOWN)
		shard_check_wal_folder(shard->shard_id, shard->path);

	/*
	 * A tenant's file is small and its handle may be one of a thousand
	 * kept: SQLite's lookaside buffer of 120 kB would be most of what each
	 * holds, and its few simple statements do with a small one.
	 */
	rc = shardio_open(shard->path,
					  SHARDIO_OPEN_READWRITE |
					  (opts->file_per_tenant ? SHARDIO_OPEN_SMALL : 0),
					  opts->busy_timeout_ms, &db, errbuf);
	/* Writes only where a write asks for them; foreign keys enforced. */
	if (rc == SQLITE_OK)
	{
		rc = sqlite3_exec(db, "PRAGMA query_only = 1; PRAGMA foreign_keys = 1",
						  NULL, NULL, NULL);
		if (rc != SQLITE_OK)
		{
			strlcpy(errbuf, sqlite3_errmsg(db), SHARDIO_ERRLEN);
			shardio_close(db);
		}
	}
	if (rc != SQLITE_OK)
	{
		if ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("shard \"%s\" is not a valid SQLite database", shard->shard_id),
					 errdetail_internal("File \"%s\": %s", shard->path, errbuf)));
		if ((rc & 0xff) == SQLITE_READONLY)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("could not open shard \"%s\": the server cannot write its \"-wal\" or \"-shm\" file",
							shard->shard_id),
					 errdetail_internal("File \"%s\": %s", shard->path, errbuf),
					 errhint("Give the server's operating system user write permission on the shard's folder and on the \"-wal\" and \"-shm\" files next to it."),
					 shard_errhint_write_access(shard->path, rc)));
		/* A cancel, timeout or termination in the lock wait; a lock held. */
		shard_check_lock_wait(rc, false, shard->shard_id);
		ereport(ERROR,
				(errcode(shard_write_access_sqlstate(shard->path, rc,
													 shard_sqlite_sqlstate(rc))),
				 errmsg("could not open shard \"%s\"", shard->shard_id),
				 errdetail_internal("File \"%s\": %s", shard->path, errbuf),
				 shard_errhint_write_access(shard->path, rc)));
	}
	return db;
}

/*
 * open_directory_file
 *		A read-write handle on a server's directory file, for the directory
 *		functions' and auto_register's writes; with create, a missing file
 *		is created (directory_init).
 */
static sqlite3 *
open_directory_file(ShardServerOptions *opts, bool create)
{
	sqlite3    *db;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	rc = shardio_open(opts->directory,
					  SHARDIO_OPEN_READWRITE | (create ? SHARDIO_OPEN_CREATE : 0),
					  opts->busy_timeout_ms, &db, errbuf);
	if (rc == SQLITE_OK)
		return db;
	if (!create && shardio_file_state(opts->directory) == SHARDIO_FILE_MISSING)
		shard_directory_report_missing(opts);
	if ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("directory \"%s\" of server \"%s\" is not a valid SQLite database",
						opts->directory, opts->servername),
				 errdetail_internal("%s", errbuf)));
	if ((rc & 0xff) == SQLITE_READONLY)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("could not open directory \"%s\" of server \"%s\" for writing: the server may not write the file",
						opts->directory, opts->servername),
				 errdetail_internal("%s", errbuf),
				 errhint("Give the server's operating system user write permission on the file, its folder and its \"-wal\" and \"-shm\" files."),
				 shard_errhint_write_access(opts->directory, rc)));
	/* a cancel, timeout or termination in the lock wait; a lock held */
	shard_check_lock_wait(rc, true, opts->directory);
	ereport(ERROR,
			(errcode(shard_write_access_sqlstate(opts->directory, rc,
												 ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION)),
			 errmsg("could not open directory \"%s\" of server \"%s\" for writing",
					opts->directory, opts->servername),
			 errdetail_internal("%s", errbuf),
			 shard_errhint_write_access(opts->directory, rc)));
	return NULL;				/* keep compiler quiet */
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
	return shard_conn_get_internal(opts, shard, missing_ok, CONN_BEGIN_READ,
								   CONN_SHARD);
}

/*
 * shard_conn_get_brief
 *		shard_conn_get for a read made while planning (row estimates, the
 *		shard's declared schema): a read transaction it begins ends when
 *		the handle is given back.
 *
 * Left open, it would be the statement's: a write of the same statement
 * would then have to turn that snapshot into a write transaction, which
 * SQLite refuses once another connection wrote the shard since (a
 * serialization failure that no PostgreSQL table would raise); and under
 * REPEATABLE READ it would fix the transaction's snapshot at planning.
 */
ShardConn *
shard_conn_get_brief(ShardServerOptions *opts, ShardInfo *shard,
					 bool missing_ok)
{
	return shard_conn_get_internal(opts, shard, missing_ok, CONN_BEGIN_BRIEF,
								   CONN_SHARD);
}

/*
 * shard_conn_get_locked
 *		shard_conn_get for a scan of a table its statement will write: a
 *		transaction it begins takes the shard's write lock first (BEGIN
 *		IMMEDIATE), so that the statement's writes never have to upgrade
 *		a read snapshot another connection has written past.  The shard
 *		counts as written only once a write asks for it; unwritten, the
 *		lock ends with the statement (or, under REPEATABLE READ, with the
 *		transaction).
 */
ShardConn *
shard_conn_get_locked(ShardServerOptions *opts, ShardInfo *shard,
					  bool missing_ok)
{
	return shard_conn_get_internal(opts, shard, missing_ok, CONN_BEGIN_LOCKED,
								   CONN_SHARD);
}

/*
 * hash_search_conn
 *		The cached handle of a shard, or NULL.
 */
static ShardConn *
hash_search_conn(ShardInfo *shard)
{
	if (ConnectionHash == NULL || strlen(shard->path) >= MAXPGPATH)
		return NULL;
	return hash_search(ConnectionHash, shard->path, HASH_FIND, NULL);
}

/*
 * shard_conn_get_internal
 *		shard_conn_get; begin says how a transaction it has to begin does
 *		(ConnBegin).
 */
static ShardConn *
shard_conn_get_internal(ShardServerOptions *opts, ShardInfo *shard,
						bool missing_ok, ConnBegin begin, ConnFile file)
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
		RegisterSubXactCallback(shard_subxact_callback, NULL);
	}

	conn = hash_search(ConnectionHash, shard->path, HASH_FIND, NULL);

	/*
	 * A shard file replaced on disk (a restore, a rebuilt shard) must not
	 * be read through the handle on the old file: reopen it, unless a read
	 * transaction still needs the old one.
	 */
	if (conn != NULL && conn->refcount == 0 && conn->open_stmts == 0 &&
		(!conn->in_xact || shard_conn_stale_read(conn)))
	{
		struct stat st;

		if (stat(shard->path, &st) != 0 || st.st_dev != conn->dev ||
			st.st_ino != conn->ino)
		{
			int			persist = 1;

			/* the names beside it are another file's now, or nobody's */
			(void) sqlite3_file_control(conn->db, "main",
										SQLITE_FCNTL_PERSIST_WAL, &persist);
			shard_conn_end_read_xact(conn);
			shard_conn_close(conn);
			conn = NULL;
		}
	}

	if (conn == NULL)
	{
		sqlite3    *db;
		int			nfds;
		int			kind;
		const char *file_tenant = NULL;

		/* The file of one tenant answers ssfdw_file_tenant with it. */
		if (file == CONN_SHARD && opts->file_per_tenant)
			file_tenant = shard_directory_file_tenant(shard_directory_get(opts),
													  shard->shard_id);

		/* Make room first, so the cap holds once this one is idle again. */
		shard_cache_evict_idle(shard_cache_keep() - 1);
		kind = shard_file_kind(shard->path);
		nfds = shard_cache_reserve_fds(shard, kind);
		PG_TRY();
		{
			if (file == CONN_SHARD)
				db = open_shard_file(opts, shard, missing_ok, kind);
			else
				db = open_directory_file(opts, file == CONN_DIRECTORY_CREATE);
		}
		PG_CATCH();
		{
			shard_cache_release_fds(nfds);
			PG_RE_THROW();
		}
		PG_END_TRY();
		if (db == NULL)
		{
			shard_cache_release_fds(nfds);
			return NULL;
		}
		conn = hash_search(ConnectionHash, shard->path, HASH_ENTER, &found);
		conn->db = db;
		conn->nfds = nfds;
		conn->mem = 0;
		conn->fixed_mem = 0;
		conn->measured_stmts = 0;
		shard_cache_add(conn);
		conn->brief = false;
		conn->checked = NIL;
		conn->stmts = NIL;
		conn->begin_stmt = NULL;
		conn->rollback_stmt = NULL;
		conn->immediate_stmt = NULL;
		conn->commit_stmt = NULL;
		conn->refcount = 0;
		conn->open_stmts = 0;
		conn->in_xact = false;
		conn->xact_scoped = false;
		conn->writable = (file != CONN_SHARD);
		conn->is_directory = (file != CONN_SHARD);
		conn->write_xact = false;
		conn->savepoints = 1;
		conn->utf8 = -1;
		conn->file_tenant = NULL;
		{
			struct stat st;

			conn->dev = 0;
			conn->ino = 0;
			if (stat(shard->path, &st) == 0)
			{
				conn->dev = st.st_dev;
				conn->ino = st.st_ino;
			}
		}
		if (file_tenant != NULL)
			set_file_tenant(conn, shard->shard_id, file_tenant);
		if (shardio_prepare(db, "BEGIN", 1, &conn->begin_stmt, errbuf) != SQLITE_OK ||
			shardio_prepare(db, "ROLLBACK", 1, &conn->rollback_stmt, errbuf) != SQLITE_OK ||
			shardio_prepare(db, "BEGIN IMMEDIATE", 1, &conn->immediate_stmt,
							errbuf) != SQLITE_OK ||
			shardio_prepare(db, "COMMIT", 1, &conn->commit_stmt, errbuf) != SQLITE_OK)
		{
			int			rc = sqlite3_errcode(db);

			shard_conn_close(conn);
			shard_sqlite_error(ERROR, rc, shard->shard_id, errbuf,
							   "could not prepare a read transaction on shard \"%s\"",
							   shard->shard_id);
		}
	}
	strlcpy(conn->shard_id, shard->shard_id, sizeof(conn->shard_id));
	conn->last_used = ++use_counter;
	shard_cache_touch(conn);

	strlcpy(conn->directory, opts->directory, sizeof(conn->directory));

	if (shard_conn_stale_read(conn))
		shard_conn_end_read_xact(conn);

	/*
	 * The shard counts as written (write_xact) only once its write
	 * transaction exists: get_for_write marks it after this succeeded, so
	 * a lock not had (55P03, perhaps caught by an exception block) leaves
	 * nothing for the commit to find.
	 */
	if (!conn->in_xact && begin == CONN_BEGIN_LOCKED)
	{
		allow_writes(conn);
		conn_step(conn, conn->immediate_stmt, CONN_LOCK);
		conn->in_xact = true;
		conn->xact_scoped = IsolationUsesXactSnapshot();
		conn->xact_stmt = GetCurrentStatementStartTimestamp();
		conn->brief = false;
	}
	else if (!conn->in_xact)
	{
		int			rc = sqlite3_step(conn->begin_stmt);

		sqlite3_reset(conn->begin_stmt);
		if (rc != SQLITE_DONE)
			shard_sqlite_error(ERROR, rc, shard->shard_id,
							   sqlite3_errmsg(conn->db),
							   "could not start a read transaction on shard \"%s\"",
							   shard->shard_id);
		conn->in_xact = true;
		conn->brief = (begin == CONN_BEGIN_BRIEF);
		conn->xact_scoped = !conn->brief && IsolationUsesXactSnapshot();
		conn->xact_stmt = GetCurrentStatementStartTimestamp();
	}
	else if (conn->brief && begin != CONN_BEGIN_BRIEF)
	{
		/* a scan takes over a planning read still open: it is the scan's */
		conn->brief = false;
		conn->xact_scoped = IsolationUsesXactSnapshot();
	}
	shard_cache_hold(conn);
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);
		ConnHold   *hold = palloc(sizeof(ConnHold));

		hold->conn = conn;
		hold->subid = GetCurrentSubTransactionId();
		holds = lappend(holds, hold);
		MemoryContextSwitchTo(oldcxt);
	}
	return conn;
}

/*
 * The failures of conn_exec's statements, by ConnExecOp: on a shard, and
 * on the directory.
 */
static const char *const conn_exec_failures[][2] = {
	[CONN_LOCK] = {gettext_noop("could not lock shard \"%s\" for writing"),
	gettext_noop("could not lock directory \"%s\" for writing")},
	[CONN_ALLOW_WRITES] = {gettext_noop("could not allow writes to shard \"%s\""),
	gettext_noop("could not allow writes to directory \"%s\"")},
	[CONN_SAVEPOINT] = {gettext_noop("could not set a savepoint on shard \"%s\""),
	gettext_noop("could not set a savepoint in directory \"%s\"")},
	[CONN_RELEASE] = {gettext_noop("could not release a savepoint on shard \"%s\""),
	gettext_noop("could not release a savepoint in directory \"%s\"")},
	[CONN_COMMIT_LOCK] = {gettext_noop("could not lock shard \"%s\" to commit"),
	gettext_noop("could not lock directory \"%s\" to commit")},
};

/*
 * conn_exec
 *		Run one of the write transaction's own statements (op) on a shard
 *		or the directory, with the SQLSTATE its failure calls for.
 */
static void
conn_exec(ShardConn *conn, const char *sql, ConnExecOp op)
{
	char		errbuf[SHARDIO_ERRLEN];

	if (shardio_exec(conn->db, sql, errbuf) != SQLITE_OK)
		shard_conn_failed(conn, sqlite3_extended_errcode(conn->db), errbuf,
						  op);
}

/*
 * shard_conn_run
 *		Run one of the statements a handle keeps prepared (BEGIN IMMEDIATE,
 *		COMMIT) and reset it: SQLITE_OK, or the extended result code with
 *		SQLite's message in errbuf (SHARDIO_ERRLEN bytes).  A routed write
 *		runs both every time, and compiling them again each time costs more
 *		than running them.
 */
int
shard_conn_run(ShardConn *conn, sqlite3_stmt *stmt, char *errbuf)
{
	int			rc = sqlite3_step(stmt);

	if (rc != SQLITE_DONE)
	{
		rc = sqlite3_extended_errcode(conn->db);
		strlcpy(errbuf, sqlite3_errmsg(conn->db), SHARDIO_ERRLEN);
	}
	else
		rc = SQLITE_OK;
	sqlite3_reset(stmt);
	return rc;
}

/*
 * conn_step
 *		conn_exec for a statement the handle keeps prepared (conn_run).
 */
static void
conn_step(ShardConn *conn, sqlite3_stmt *stmt, ConnExecOp op)
{
	char		errbuf[SHARDIO_ERRLEN];
	int			rc = shard_conn_run(conn, stmt, errbuf);

	if (rc != SQLITE_OK)
		shard_conn_failed(conn, rc, errbuf, op);
}

/*
 * check_write_access
 *		Raise a write on a shard's handle that failed with rc because the
 *		server may not write the shard's file or folder, naming them and
 *		the operating system user (shard_write_access_sqlstate); return
 *		otherwise.
 */
static void
check_write_access(ShardConn *conn, int rc)
{
	int			sqlstate = shard_write_access_sqlstate(conn->path, rc, 0);

	if (sqlstate != 0)
		ereport(ERROR,
				(errcode(sqlstate),
				 errmsg("could not write to shard \"%s\": the server may not write its files",
						conn->shard_id),
				 errdetail_internal("File \"%s\": %s", conn->path,
									conn->db != NULL ? sqlite3_errmsg(conn->db) :
									sqlite3_errstr(rc)),
				 shard_errhint_write_access(conn->path, rc)));
}

/*
 * shard_conn_failed
 *		Report that one of a handle's own statements (op) failed with
 *		extended result code rc (errbuf: SQLite's message), with the
 *		SQLSTATE rc calls for; on the directory, naming its file.
 */
void
shard_conn_failed(ShardConn *conn, int rc, const char *errbuf,
				  ConnExecOp op)
{
	if (conn->is_directory)
	{
		shard_check_lock_wait(rc, true, conn->path);
		ereport(ERROR,
				(errcode(shard_write_access_sqlstate(conn->path, rc,
													 shard_sqlite_sqlstate(rc))),
				 errmsg(conn_exec_failures[op][1], conn->path),
				 errdetail_internal("%s", errbuf),
				 shard_errhint_write_access(conn->path, rc)));
	}
	check_write_access(conn, rc);
	shard_write_error(rc, conn->shard_id, NULL, NULL, errbuf,
					  conn_exec_failures[op][0], conn->shard_id);
}

/*
 * allow_writes
 *		Turn query_only off on a handle's first write.  It stays off: turning
 *		it on again after each write transaction would make SQLite prepare
 *		every cached statement of the handle again.  A written handle also
 *		gets a page cache of 32 MB instead of SQLite's 2 MB, allocated as it
 *		fills: a load that spreads rows over a shard's indexes touches more
 *		pages than that, and rereading them costs more than the memory (a
 *		COPY into 4,000,000 rows over 16 shards: 3.4 s with 2 MB, 2.4 s).
 */
static void
allow_writes(ShardConn *conn)
{
	if (conn->writable)
		return;
	conn_exec(conn, "PRAGMA query_only = 0; PRAGMA cache_size = -32768",
			  CONN_ALLOW_WRITES);
	conn->writable = true;
}

/*
 * savepoint_sql
 *		"SAVEPOINT|RELEASE|ROLLBACK TO ssfdw_<level>".
 */
static char *
savepoint_sql(const char *verb, int level)
{
	return psprintf("%s ssfdw_%d", verb, level);
}

/*
 * shard_conn_label
 *		How the lists of files in messages name a handle's file: shard
 *		"id", or directory "path".
 */
char *
shard_conn_label(ShardConn *conn)
{
	if (conn->is_directory)
		return psprintf("directory \"%s\"", conn->path);
	return psprintf("shard \"%s\"", conn->shard_id);
}

/*
 * shard_conn_report_write_lost
 *		Refuse to go on writing to, or to commit, a shard whose write
 *		transaction SQLite rolled back: the transaction's earlier writes to
 *		it are gone, so nothing more may be acknowledged.
 */
void
shard_conn_report_write_lost(ShardConn *conn)
{
	ereport(ERROR,
			(errcode(ERRCODE_IN_FAILED_SQL_TRANSACTION),
			 conn->is_directory ?
			 errmsg("the writes of this transaction to directory \"%s\" were rolled back",
					conn->path) :
			 errmsg("the writes of this transaction to shard \"%s\" were rolled back",
					conn->shard_id),
			 errdetail("SQLite rolled back the file's transaction when a write to it failed."),
			 errhint("Roll back the transaction and run it again.")));
}

/*
 * shard_conn_write_failed
 *		A write statement on the handle failed with rc: note whether SQLite
 *		rolled back the whole write transaction with it (as it does after an
 *		interrupt, a full disk or an I/O error), which a later write or the
 *		commit must not ignore; and return the result code to report.
 *
 * A lock refused while the transaction's read snapshot was to become a
 * write is a serialization failure, not a lock timeout: SQLite does not
 * wait there (another writer could not commit while the snapshot is held,
 * or has committed past it), and a retry of the transaction succeeds.
 *
 * A write the file's permissions refused (SQLite could not create the
 * journal in the shard's folder, or write the file) is raised here, as
 * only the handle knows the file: naming the folder or file and the
 * operating system user that may not write it.
 */
int
shard_conn_write_failed(ShardConn *conn, int rc)
{
	if (conn->write_xact && conn->db != NULL &&
		sqlite3_get_autocommit(conn->db))
		conn->write_lost = true;
	check_write_access(conn, rc);
	if ((rc & 0xff) == SQLITE_BUSY && conn->db != NULL &&
		sqlite3_txn_state(conn->db, "main") == SQLITE_TXN_READ)
		return SQLITE_BUSY_SNAPSHOT;
	return rc;
}

/*
 * shard_conn_check_no_reader
 *		Refuse to write table on the shard while a statement of the same
 *		handle is part-way through reading it (a cursor; a statement's own
 *		scans of a table it writes read it first, see scan.c): SQLite
 *		leaves undefined what such a read sees, and it could read the rows
 *		being written, without end.  Our reads all say FROM "table".
 */
void
shard_conn_check_no_reader(ShardConn *conn, const char *table)
{
	StringInfoData from;
	sqlite3_stmt *stmt = NULL;

	initStringInfo(&from);
	appendStringInfoString(&from, " FROM ");
	shard_quote_identifier(&from, table);
	while ((stmt = sqlite3_next_stmt(conn->db, stmt)) != NULL)
	{
		const char *sql = sqlite3_sql(stmt);

		if (sqlite3_stmt_busy(stmt) && sqlite3_stmt_readonly(stmt) &&
			sql != NULL && strstr(sql, from.data) != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot write table \"%s\" on shard \"%s\" while the transaction reads it there",
							table, conn->shard_id),
					 errdetail("A scan of the same table on the same shard (the statement's own, or an open cursor's) has not finished; SQLite does not define what it would read of the rows written."),
					 errhint("Copy the rows into a temporary table first, or finish the cursor.")));
	}
	pfree(from.data);
}

/*
 * get_for_write
 *		shard_conn_get_for_write on a shard or on the directory file.
 */
static ShardConn *
get_for_write(ShardServerOptions *opts, ShardInfo *shard, ConnFile file)
{
	ShardConn  *conn;
	int			level = GetCurrentTransactionNestLevel();

	conn = hash_search_conn(shard);
	if (conn != NULL && !conn->write_xact && shard_conn_stale_read(conn))
		shard_conn_end_read_xact(conn);
	/* No read to upgrade: take the write lock up front. */
	conn = shard_conn_get_internal(opts, shard, false, CONN_BEGIN_LOCKED, file);

	if (conn->write_lost)
		shard_conn_report_write_lost(conn);
	if (!conn->write_xact)
	{
		allow_writes(conn);
		conn->write_xact = true;
		conn->xact_scoped = true;
		conn->savepoints = 1;
	}
	while (conn->savepoints < level)
	{
		conn->savepoints++;
		conn_exec(conn, savepoint_sql("SAVEPOINT", conn->savepoints),
				  CONN_SAVEPOINT);
	}
	return conn;
}

/*
 * shard_conn_get_for_write
 *		A handle on a shard inside the PostgreSQL transaction's write
 *		transaction on it, with savepoints up to the current subtransaction:
 *		begun at the first write, upgraded from the read transaction the
 *		statement (or a REPEATABLE READ snapshot) still needs, if any.
 *		Match with shard_conn_release, as for reads.
 */
ShardConn *
shard_conn_get_for_write(ShardServerOptions *opts, ShardInfo *shard)
{
	shard_writes_begun++;
	return get_for_write(opts, shard, CONN_SHARD);
}

/*
 * shard_conn_directory_for_write
 *		The server's directory file inside the PostgreSQL transaction's
 *		write transaction on it, as a shard's (shard_conn_get_for_write):
 *		the directory functions and auto_register write through it, so
 *		that their changes commit with the transaction, before any shard,
 *		and vanish with its rollback; while it lasts, the backend's
 *		directory lookups read through it (shard_directory_get) and see
 *		them.  With create, a missing file is created.  Match with
 *		shard_conn_release.
 */
ShardConn *
shard_conn_directory_for_write(ShardServerOptions *opts, bool create)
{
	ShardInfo	info;
	ShardConn  *conn;

	info.shard_id = "directory";
	info.path = opts->directory;
	conn = get_for_write(opts, &info,
						 create ? CONN_DIRECTORY_CREATE : CONN_DIRECTORY);
	directory_generation++;
	return conn;
}

/*
 * shard_conn_directory_writer
 *		The handle of the directory file at path while the transaction
 *		writes it, or NULL; and the count of directory writes, savepoint
 *		rollbacks and transaction ends, which changes whenever what that
 *		handle shows may have.
 */
sqlite3 *
shard_conn_directory_writer(const char *path, uint64 *generation)
{
	ShardConn  *conn = NULL;

	*generation = directory_generation;
	if (ConnectionHash != NULL && strlen(path) < MAXPGPATH)
		conn = hash_search(ConnectionHash, path, HASH_FIND, NULL);
	if (conn == NULL || !conn->is_directory || !conn->write_xact)
		return NULL;
	return conn->db;
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
 * shard_conn_prepare
 *		A prepared statement for sql on this shard: an idle one kept from an
 *		earlier scan, or a new one.  Routed queries repeat the same SQL, and
 *		preparing costs more than running a point lookup.  Give it back with
 *		shard_conn_unprepare, or finalize it and call shard_conn_forget_stmt:
 *		until then the handle is never closed, whatever else happens to it.
 */
int
shard_conn_prepare(ShardConn *conn, const char *sql, sqlite3_stmt **stmt,
				   char *errbuf)
{
	ListCell   *lc;

	foreach(lc, conn->stmts)
	{
		CachedStmt *cs = lfirst(lc);

		if (strcmp(cs->sql, sql) == 0)
		{
			*stmt = cs->stmt;
			pfree(cs->sql);
			pfree(cs);
			conn->stmts = foreach_delete_current(conn->stmts, lc);
			conn->open_stmts++;
			return SQLITE_OK;
		}
	}
	if (shardio_prepare(conn->db, sql, 1, stmt, errbuf) != SQLITE_OK)
		return sqlite3_errcode(conn->db);
	conn->open_stmts++;
	return SQLITE_OK;
}

/*
 * shard_conn_forget_stmt
 *		A scan finalized a statement of this handle itself (after an
 *		error): the handle may be closed again once none is left.
 */
void
shard_conn_forget_stmt(ShardConn *conn)
{
	if (conn->open_stmts > 0)
		conn->open_stmts--;
}

/*
 * shard_conn_unprepare
 *		Keep a statement a scan has finished with for the next scan with the
 *		same SQL; it is reset first, so it holds no lock.
 */
void
shard_conn_unprepare(ShardConn *conn, sqlite3_stmt *stmt)
{
	MemoryContext oldcxt;
	CachedStmt *cs;

	shard_conn_forget_stmt(conn);
	sqlite3_reset(stmt);
	sqlite3_clear_bindings(stmt);
	if (list_length(conn->stmts) >= MAX_CACHED_STMTS)
	{
		CachedStmt *oldest = linitial(conn->stmts);

		sqlite3_finalize(oldest->stmt);
		pfree(oldest->sql);
		pfree(oldest);
		conn->stmts = list_delete_first(conn->stmts);
	}
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	cs = palloc(sizeof(CachedStmt));
	cs->sql = pstrdup(sqlite3_sql(stmt));
	cs->stmt = stmt;
	conn->stmts = lappend(conn->stmts, cs);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * shard_conn_end_read_xact
 *		End a handle's read transaction.  ROLLBACK, unlike COMMIT, succeeds
 *		even while a statement is still open, and a read has nothing to keep.
 */
void
shard_conn_end_read_xact(ShardConn *conn)
{
	if (conn->in_xact && conn->db != NULL &&
		!sqlite3_get_autocommit(conn->db))
	{
		(void) sqlite3_step(conn->rollback_stmt);
		sqlite3_reset(conn->rollback_stmt);
	}
	conn->in_xact = false;
	conn->xact_scoped = false;
	conn->write_xact = false;
	conn->write_lost = false;
	conn->brief = false;
	conn->savepoints = 1;
}

/*
 * shard_conn_release
 *		A scan is done with a shard.  The read transaction stays for the
 *		rest of the statement; the next statement, or the transaction's
 *		end, closes it.
 */
void
shard_conn_release(ShardConn *conn)
{
	ListCell   *lc;

	foreach(lc, holds)
	{
		ConnHold   *hold = lfirst(lc);

		if (hold->conn == conn)
		{
			holds = foreach_delete_current(holds, lc);
			pfree(hold);
			break;
		}
	}
	shard_cache_unhold(conn);
	/* a planning read's transaction ends with it (shard_conn_get_brief) */
	if (conn->refcount == 0 && conn->brief && conn->open_stmts == 0 &&
		!conn->write_xact)
		shard_conn_end_read_xact(conn);
	if (conn->refcount == 0)
	{
		shard_cache_measure(conn);
		shard_cache_evict_idle(shard_cache_keep());
	}
}

/*
 * shard_conn_end_reads
 *		End now the read transactions of this statement that no scan uses,
 *		no transaction snapshot keeps and no write needs.  A function that
 *		has read all it returns (statistics, a plan) lets the shards go
 *		before its rows are consumed: in rollback-journal mode a read
 *		transaction blocks every writer's commit, a move run on the same
 *		statement's rows included.
 */
void
shard_conn_end_reads(void)
{
	HASH_SEQ_STATUS scan;
	ShardConn  *conn;

	if (ConnectionHash == NULL)
		return;
	hash_seq_init(&scan, ConnectionHash);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (conn->in_xact && conn->refcount == 0 && conn->open_stmts == 0 &&
			!conn->xact_scoped && !conn->write_xact && !conn->is_directory)
			shard_conn_end_read_xact(conn);
	}
}

/*
 * shard_conn_written
 *		The handles the transaction wrote, in no order.
 */
List *
shard_conn_written(void)
{
	HASH_SEQ_STATUS scan;
	ShardConn  *conn;
	List	   *written = NIL;

	if (ConnectionHash == NULL)
		return NIL;
	hash_seq_init(&scan, ConnectionHash);
	while ((conn = hash_seq_search(&scan)) != NULL)
		if (conn->write_xact)
			written = lappend(written, conn);
	return written;
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

	if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PARALLEL_PRE_COMMIT)
	{
		shard_commit_writes(event == XACT_EVENT_PARALLEL_PRE_COMMIT);
		return;
	}
	if (event == XACT_EVENT_PRE_PREPARE)
	{
		hash_seq_init(&scan, ConnectionHash);
		while ((conn = hash_seq_search(&scan)) != NULL)
		{
			if (conn->write_xact)
			{
				hash_seq_term(&scan);
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 conn->is_directory ?
						 errmsg("cannot prepare a transaction that wrote to directory \"%s\"",
								conn->path) :
						 errmsg("cannot prepare a transaction that wrote to shard \"%s\"",
								conn->shard_id),
						 errdetail("SQLite has no two-phase commit.")));
			}
		}
		return;
	}
	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT &&
		event != XACT_EVENT_PARALLEL_ABORT && event != XACT_EVENT_PREPARE)
		return;

	/*
	 * The scans of an aborted transaction go away only after this, and their
	 * fan-out workers may still hold handles, in a statement or waiting for
	 * a lock: stop them first, so that ending the read transactions below
	 * does not wait for them.
	 */
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		fanout_stop_all();

	hash_seq_init(&scan, ConnectionHash);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		/* the directory's lookups go back to their own handle */
		if (conn->is_directory)
			shard_directory_writer_gone(conn->db);
		shard_conn_end_read_xact(conn);
		conn->refcount = 0;
		conn->open_stmts = 0;
	}
	shard_cache_unhold_all();
	directory_generation++;
	list_free_deep(holds);
	holds = NIL;

	/*
	 * After an abort, the scans of the transaction still point at their
	 * handles until their memory goes (their cleanup finalizes their
	 * statements there): no handle may close before.  The next open or
	 * release applies the cap.
	 */
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PREPARE)
		shard_cache_evict_idle(shard_max_open_shards);
}

/*
 * end_savepoints
 *		A subtransaction ends: release (commit) or roll back to and release
 *		(abort) the savepoint of its level on every shard written inside it.
 */
static void
end_savepoints(bool commit)
{
	HASH_SEQ_STATUS scan;
	ShardConn  *conn;
	int			level = GetCurrentTransactionNestLevel();

	if (ConnectionHash == NULL)
		return;
	hash_seq_init(&scan, ConnectionHash);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		char		errbuf[SHARDIO_ERRLEN] = "";

		if (!conn->write_xact || conn->savepoints < level)
			continue;
		conn->savepoints = level - 1;
		if (conn->is_directory && !commit)
			directory_generation++;
		if (commit)
		{
			/* before the subtransaction commits: an error is allowed */
			conn_exec(conn, savepoint_sql("RELEASE", level), CONN_RELEASE);
			continue;
		}

		/*
		 * Aborting: no error may be raised here.  A savepoint that is gone
		 * means SQLite rolled back the whole write transaction (after an
		 * interrupt or an I/O error): the rest of the transaction must not
		 * commit as if it had not.
		 */
		if (conn->write_lost || sqlite3_get_autocommit(conn->db) ||
			shardio_exec(conn->db, savepoint_sql("ROLLBACK TO", level),
						 errbuf) != SQLITE_OK ||
			shardio_exec(conn->db, savepoint_sql("RELEASE", level),
						 errbuf) != SQLITE_OK)
		{
			conn->write_lost = true;
			if (!sqlite3_get_autocommit(conn->db))
				ereport(WARNING,
						(conn->is_directory ?
						 errmsg("could not roll back to a savepoint in directory \"%s\"",
								conn->path) :
						 errmsg("could not roll back to a savepoint on shard \"%s\"",
								conn->shard_id),
						 errdetail_internal("%s", errbuf)));
		}
	}
}

/*
 * shard_subxact_callback
 *		Scans of an aborted subtransaction (a failed statement inside a
 *		savepoint or a PL/pgSQL exception block) never give their handles
 *		back: release them here, so that under READ COMMITTED the next
 *		statement can read the shard afresh.  A committed subtransaction
 *		hands its holds to its parent.
 */
static void
shard_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event == SUBXACT_EVENT_PRE_COMMIT_SUB)
	{
		end_savepoints(true);
		return;
	}
	if (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB)
		return;
	if (event == SUBXACT_EVENT_ABORT_SUB)
		end_savepoints(false);
	foreach(lc, holds)
	{
		ConnHold   *hold = lfirst(lc);

		if (hold->subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_COMMIT_SUB)
		{
			hold->subid = parentSubid;
			continue;
		}
		holds = foreach_delete_current(holds, lc);
		shard_cache_unhold(hold->conn);
		pfree(hold);
	}
}
