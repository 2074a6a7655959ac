/*-------------------------------------------------------------------------
 *
 * commitlog.c
 *		  The record of commits that span several shards, kept so that one a
 *		  crash cut in half is found after the restart
 *
 * SQLite has no two-phase commit, so a PostgreSQL transaction that wrote
 * several shards commits them one after another (connection.c).  Before
 * the first of them commits, the commit is written, durably, to a small
 * SQLite file next to the server's directory file: "<directory>.commits"
 * (WAL mode, synchronous FULL, created on first use).  It names every shard
 * of the commit in commit order; each shard but the last is marked there
 * once it committed, and the whole entry goes once every shard committed.
 * An entry that stays is a commit that did not finish:
 *
 *	- "in progress": its backend is still committing;
 *	- "interrupted": its backend died between two shard commits (SIGKILL, a
 *	  crash of the server or the machine);
 *	- "failed": a shard's commit failed after others had committed, and
 *	  the error said so.
 *
 * shard_commits(server) lists them, each shard with whether it holds the
 * transaction's writes, as Citus lists the prepared transactions it has to
 * recover; shard_commit_forget(server, id) removes one once an operator
 * has put things right.  A commit that spans several servers is recorded
 * next to the directory of the first shard it commits.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/xact.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(shard_commits);
PG_FUNCTION_INFO_V1(shard_commit_forget);

/* Seconds from the Unix epoch to PostgreSQL's (2000-01-01). */
#define UNIX_EPOCH_SECS 946684800

/* How long a write to the log waits for another backend's. */
#define COMMITLOG_BUSY_MS 10000

/* The log's tables; "state" is 'committing' or 'failed'. */
static const char *const commitlog_schema =
"PRAGMA journal_mode = WAL;"
"PRAGMA synchronous = FULL;"
"CREATE TABLE IF NOT EXISTS commits ("
"  id INTEGER PRIMARY KEY,"
"  started REAL NOT NULL,"
"  pid INTEGER NOT NULL,"
"  postmaster_started INTEGER NOT NULL,"
"  xid TEXT,"
"  state TEXT NOT NULL,"
"  error TEXT);"
"CREATE TABLE IF NOT EXISTS commit_shards ("
"  commit_id INTEGER NOT NULL,"
"  position INTEGER NOT NULL,"
"  shard_id TEXT,"
"  path TEXT NOT NULL,"
"  committed INTEGER NOT NULL DEFAULT 0,"
"  PRIMARY KEY (commit_id, position));";

/* An open log, kept for the backend's next multi-shard commit. */
typedef struct CommitLog
{
	char	   *path;
	sqlite3    *db;
} CommitLog;

static List *open_logs = NIL;	/* CommitLog, in TopMemoryContext */

/* Test hook: milliseconds to sleep between two shard commits. */
static int	commit_pause_ms = 0;

/*
 * shard_commitlog_define_gucs
 *		Define the commit log's settings; called from _PG_init.
 */
void
shard_commitlog_define_gucs(void)
{
	DefineCustomIntVariable("sqlite_shard_fdw.commit_pause_ms",
							"For tests: milliseconds a commit that spans shards sleeps after each shard's commit but the last.",
							NULL,
							&commit_pause_ms,
							0, 0, 3600000,
							PGC_SUSET, GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL,
							NULL, NULL, NULL);
}

/*
 * shard_commitlog_path
 *		The log file of the server whose directory file is directory.
 */
char *
shard_commitlog_path(const char *directory)
{
	return psprintf("%s.commits", directory);
}

/*
 * commitlog_open
 *		The backend's handle on a log file, opened (and created with its
 *		tables, when create) on first use; NULL when the file does not
 *		exist and create is false.  Returns SQLITE_OK, or a failure's code
 *		with SQLite's message in errbuf.
 */
static int
commitlog_open(const char *path, bool create, sqlite3 **db, char *errbuf)
{
	ListCell   *lc;
	MemoryContext oldcxt;
	CommitLog  *log;
	int			rc;

	*db = NULL;
	foreach(lc, open_logs)
	{
		log = lfirst(lc);
		if (strcmp(log->path, path) == 0)
		{
			*db = log->db;
			return SQLITE_OK;
		}
	}
	if (!create && shardio_file_state(path) == SHARDIO_FILE_MISSING)
		return SQLITE_OK;

	/* One descriptor counted, as for a shard's handle (connection.c). */
	ReserveExternalFD();
	rc = shardio_open(path, SHARDIO_OPEN_READWRITE | SHARDIO_OPEN_CREATE,
					  COMMITLOG_BUSY_MS, db, errbuf);
	if (rc == SQLITE_OK)
	{
		rc = shardio_exec(*db, commitlog_schema, errbuf);
		if (rc != SQLITE_OK)
			shardio_close(*db);
	}
	if (rc != SQLITE_OK)
	{
		*db = NULL;
		ReleaseExternalFD();
		return rc;
	}
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	log = palloc(sizeof(CommitLog));
	log->path = pstrdup(path);
	log->db = *db;
	open_logs = lappend(open_logs, log);
	MemoryContextSwitchTo(oldcxt);
	return SQLITE_OK;
}

/*
 * commitlog_run
 *		Run one statement on the log with up to three integer arguments and
 *		one text argument (NULL: none); SQLITE_OK or the failure's code with
 *		SQLite's message in errbuf.
 */
static int
commitlog_run(sqlite3 *db, const char *sql, int64 a, int64 b, int64 c,
			  const char *text, char *errbuf)
{
	sqlite3_stmt *stmt;
	int			rc;

	rc = shardio_prepare(db, sql, 0, &stmt, errbuf);
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_bind_int64(stmt, 1, a);
	sqlite3_bind_int64(stmt, 2, b);
	sqlite3_bind_int64(stmt, 3, c);
	if (text != NULL)
		sqlite3_bind_text(stmt, 4, text, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_DONE || rc == SQLITE_ROW)
		rc = SQLITE_OK;
	else
	{
		rc = sqlite3_extended_errcode(db);
		strlcpy(errbuf, sqlite3_errmsg(db), SHARDIO_ERRLEN);
	}
	sqlite3_finalize(stmt);
	return rc;
}

/*
 * commitlog_delete
 *		Remove the commit id and its files from the log, in one
 *		transaction; SQLITE_OK or the failure's code with SQLite's message
 *		in errbuf.
 */
static int
commitlog_delete(sqlite3 *db, int64 id, char *errbuf)
{
	int			rc = shardio_exec(db, "BEGIN IMMEDIATE", errbuf);

	if (rc == SQLITE_OK)
		rc = commitlog_run(db, "DELETE FROM commit_shards WHERE commit_id = ?1",
						   id, 0, 0, NULL, errbuf);
	if (rc == SQLITE_OK)
		rc = commitlog_run(db, "DELETE FROM commits WHERE id = ?1",
						   id, 0, 0, NULL, errbuf);
	if (rc == SQLITE_OK)
		rc = shardio_exec(db, "COMMIT", errbuf);
	if (rc != SQLITE_OK && !sqlite3_get_autocommit(db))
	{
		char		ignored[SHARDIO_ERRLEN];

		(void) shardio_exec(db, "ROLLBACK", ignored);
	}
	return rc;
}

/*
 * shard_commitlog_begin
 *		Record, durably, a commit of n files about to begin in this order
 *		(shard_ids[i] NULL for a directory file), in the log next to the
 *		directory file directory.  Returns SQLITE_OK with the entry's id in
 *		*id, or a failure's code with SQLite's message in errbuf; nothing is
 *		left behind then.
 */
int
shard_commitlog_begin(const char *directory, int n, char **shard_ids,
					  char **paths, int64 *id, char *errbuf)
{
	sqlite3    *db;
	TransactionId xid = GetTopTransactionIdIfAny();
	char	   *xidtext = TransactionIdIsValid(xid) ? psprintf("%u", xid) : NULL;
	sqlite3_stmt *stmt = NULL;
	int			rc;
	int			i;

	rc = commitlog_open(shard_commitlog_path(directory), true, &db, errbuf);
	if (rc != SQLITE_OK)
		return rc;
	rc = shardio_exec(db, "BEGIN IMMEDIATE", errbuf);
	if (rc != SQLITE_OK)
		return rc;
	rc = commitlog_run(db,
					   "INSERT INTO commits(started, pid, postmaster_started, xid, state) "
					   "VALUES (?1 / 1000000.0 + " CppAsString2(UNIX_EPOCH_SECS) ", "
					   "?2, ?3, ?4, 'committing')",
					   (int64) GetCurrentTimestamp(), MyProcPid,
					   (int64) PgStartTime, xidtext, errbuf);
	*id = sqlite3_last_insert_rowid(db);
	if (rc == SQLITE_OK)
		rc = shardio_prepare(db,
							 "INSERT INTO commit_shards(commit_id, position, shard_id, path) "
							 "VALUES (?1, ?2, ?3, ?4)", 0, &stmt, errbuf);
	for (i = 0; rc == SQLITE_OK && i < n; i++)
	{
		sqlite3_reset(stmt);
		sqlite3_bind_int64(stmt, 1, *id);
		sqlite3_bind_int(stmt, 2, i + 1);
		if (shard_ids[i] != NULL)
			sqlite3_bind_text(stmt, 3, shard_ids[i], -1, SQLITE_TRANSIENT);
		else
			sqlite3_bind_null(stmt, 3);
		sqlite3_bind_text(stmt, 4, paths[i], -1, SQLITE_TRANSIENT);
		if (sqlite3_step(stmt) != SQLITE_DONE)
		{
			rc = sqlite3_extended_errcode(db);
			strlcpy(errbuf, sqlite3_errmsg(db), SHARDIO_ERRLEN);
		}
		if (i == n - 1 || rc != SQLITE_OK)
			sqlite3_finalize(stmt);
	}
	if (rc == SQLITE_OK)
		rc = shardio_exec(db, "COMMIT", errbuf);
	if (rc != SQLITE_OK && !sqlite3_get_autocommit(db))
	{
		char		ignored[SHARDIO_ERRLEN];

		(void) shardio_exec(db, "ROLLBACK", ignored);
	}
	return rc;
}

/*
 * shard_commitlog_committed
 *		Record, durably, that the file at position (from 1) of the commit
 *		id committed; then, for tests, pause (sqlite_shard_fdw.commit_pause_ms).
 */
int
shard_commitlog_committed(const char *directory, int64 id, int position,
						  char *errbuf)
{
	sqlite3    *db;
	int			rc;

	rc = commitlog_open(shard_commitlog_path(directory), true, &db, errbuf);
	if (rc == SQLITE_OK)
		rc = commitlog_run(db,
						   "UPDATE commit_shards SET committed = 1 "
						   "WHERE commit_id = ?1 AND position = ?2",
						   id, position, 0, NULL, errbuf);
	if (rc == SQLITE_OK && commit_pause_ms > 0)
		pg_usleep(commit_pause_ms * 1000L);
	return rc;
}

/*
 * shard_commitlog_end
 *		The commit id is over: every file committed (forget it), or one
 *		failed after others had committed (keep it, marked failed, with
 *		SQLite's message error).  Failing here only warns: the commit's
 *		outcome is decided already.
 */
void
shard_commitlog_end(const char *directory, int64 id, const char *error)
{
	sqlite3    *db;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	rc = commitlog_open(shard_commitlog_path(directory), true, &db, errbuf);
	if (rc == SQLITE_OK && error != NULL)
		rc = commitlog_run(db,
						   "UPDATE commits SET state = 'failed', error = ?4 "
						   "WHERE id = ?1",
						   id, 0, 0, error, errbuf);
	else if (rc == SQLITE_OK)
		rc = commitlog_delete(db, id, errbuf);
	if (rc != SQLITE_OK)
		ereport(WARNING,
				(errcode(shard_sqlite_sqlstate(rc)),
				 errmsg("could not update commit %lld in file \"%s\"",
						(long long) id, shard_commitlog_path(directory)),
				 errdetail_internal("%s", errbuf)));
}

/*
 * commit_state
 *		What a log entry in state (from the file) with its backend's pid
 *		and postmaster start time says of the commit now.
 */
static const char *
commit_state(const char *state, int pid, int64 postmaster_started)
{
	if (strcmp(state, "failed") == 0)
		return "failed";
	if (postmaster_started == (int64) PgStartTime &&
		BackendPidGetProc(pid) != NULL)
		return "in progress";
	return "interrupted";
}

/*
 * column_text
 *		A text column of a log row as a Datum; *isnull for NULL.
 */
static Datum
column_text(sqlite3_stmt *stmt, int col, bool *isnull)
{
	const char *text = (const char *) sqlite3_column_text(stmt, col);

	*isnull = (text == NULL);
	return text ? CStringGetTextDatum(text) : (Datum) 0;
}

/*
 * shard_commits
 *		The commits of a server's log that did not finish, one row per file
 *		of each: the commit's id, when it began, its backend's pid and
 *		transaction id, its state (commit_state), the file's position in
 *		the commit order, shard id (NULL for a directory file) and path,
 *		and whether it committed (holds the transaction's writes).
 */
Datum
shard_commits(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardServerOptions *opts = shard_admin_server(PG_GETARG_NAME(0));
	char	   *path = shard_commitlog_path(opts->directory);
	char		errbuf[SHARDIO_ERRLEN];
	sqlite3    *db;
	sqlite3_stmt *stmt = NULL;
	int			rc;

	shard_require_admin(gettext_noop("permission denied to list a server's commits"),
						gettext_noop("Only roles with privileges of the \"%s\" role may list a server's commits."));
	InitMaterializedSRF(fcinfo, 0);
	rc = commitlog_open(path, false, &db, errbuf);
	if (rc == SQLITE_OK && db == NULL)
		return (Datum) 0;
	if (rc == SQLITE_OK)
		rc = shardio_prepare(db,
							 "SELECT c.id, c.started, c.pid, c.postmaster_started, "
							 "c.xid, c.state, c.error, s.position, s.shard_id, "
							 "s.path, s.committed "
							 "FROM commits c JOIN commit_shards s ON s.commit_id = c.id "
							 "ORDER BY c.id, s.position", 0, &stmt, errbuf);
	while (rc == SQLITE_OK || rc == SQLITE_ROW)
	{
		Datum		values[10];
		bool		nulls[10] = {0};
		double		started;
		const char *state;

		rc = sqlite3_step(stmt);
		if (rc != SQLITE_ROW)
			break;
		state = (const char *) sqlite3_column_text(stmt, 5);
		started = sqlite3_column_double(stmt, 1);
		values[0] = Int64GetDatum(sqlite3_column_int64(stmt, 0));
		values[1] = TimestampTzGetDatum((TimestampTz)
										((started - UNIX_EPOCH_SECS) * USECS_PER_SEC));
		values[2] = Int32GetDatum(sqlite3_column_int(stmt, 2));
		values[3] = CStringGetTextDatum(commit_state(state ? state : "",
													 sqlite3_column_int(stmt, 2),
													 sqlite3_column_int64(stmt, 3)));
		values[4] = column_text(stmt, 4, &nulls[4]);	/* xid */
		values[5] = column_text(stmt, 6, &nulls[5]);	/* error */
		values[6] = Int32GetDatum(sqlite3_column_int(stmt, 7));
		values[7] = column_text(stmt, 8, &nulls[7]);	/* shard_id */
		values[8] = column_text(stmt, 9, &nulls[8]);	/* path */
		values[9] = BoolGetDatum(sqlite3_column_int(stmt, 10) != 0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	else if (db != NULL && stmt != NULL)
		strlcpy(errbuf, sqlite3_errmsg(db), SHARDIO_ERRLEN);
	if (db != NULL)
		sqlite3_finalize(stmt);
	if (rc != SQLITE_OK)
		ereport(ERROR,
				(errcode(shard_sqlite_sqlstate(rc)),
				 errmsg("could not read the commits in file \"%s\"", path),
				 errdetail_internal("%s", errbuf)));
	return (Datum) 0;
}

/*
 * shard_commit_forget
 *		Remove a commit from a server's log, once an operator has dealt
 *		with the shards it left committed and not; one in progress is
 *		refused.  Returns whether there was such a commit.
 */
Datum
shard_commit_forget(PG_FUNCTION_ARGS)
{
	ShardServerOptions *opts = shard_admin_server(PG_GETARG_NAME(0));
	int64		id = PG_GETARG_INT64(1);
	char	   *path = shard_commitlog_path(opts->directory);
	char		errbuf[SHARDIO_ERRLEN];
	sqlite3    *db;
	sqlite3_stmt *stmt = NULL;
	bool		found = false;
	int			rc;

	shard_require_admin(gettext_noop("permission denied to forget a commit"),
						gettext_noop("Only roles with privileges of the \"%s\" role may forget a server's commits."));
	rc = commitlog_open(path, false, &db, errbuf);
	if (rc == SQLITE_OK && db == NULL)
		PG_RETURN_BOOL(false);
	if (rc == SQLITE_OK)
		rc = shardio_prepare(db,
							 "SELECT state, pid, postmaster_started FROM commits "
							 "WHERE id = ?1", 0, &stmt, errbuf);
	if (rc == SQLITE_OK)
	{
		sqlite3_bind_int64(stmt, 1, id);
		rc = sqlite3_step(stmt);
		if (rc == SQLITE_ROW)
		{
			found = true;
			if (strcmp(commit_state((const char *) sqlite3_column_text(stmt, 0),
									sqlite3_column_int(stmt, 1),
									sqlite3_column_int64(stmt, 2)),
					   "in progress") == 0)
			{
				sqlite3_finalize(stmt);
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_IN_USE),
						 errmsg("commit %lld is in progress", (long long) id),
						 errhint("Wait until its backend has finished committing.")));
			}
		}
		rc = (rc == SQLITE_ROW || rc == SQLITE_DONE) ? SQLITE_OK :
			sqlite3_extended_errcode(db);
		if (rc != SQLITE_OK)
			strlcpy(errbuf, sqlite3_errmsg(db), SHARDIO_ERRLEN);
		sqlite3_finalize(stmt);
	}
	if (rc == SQLITE_OK && found)
		rc = commitlog_delete(db, id, errbuf);
	if (rc != SQLITE_OK)
		ereport(ERROR,
				(errcode(shard_sqlite_sqlstate(rc)),
				 errmsg("could not forget commit %lld in file \"%s\"",
						(long long) id, path),
				 errdetail_internal("%s", errbuf)));
	PG_RETURN_BOOL(found);
}
