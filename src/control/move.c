/*-------------------------------------------------------------------------
 *
 * move.c
 *		  Moving a tenant between shards while its writers keep going
 *
 * tenant_move(server, tenant, target) is the usual way of moving a tenant
 * (mark it MIGRATING, copy its rows, replay the writes made meanwhile,
 * verify, cut over, delete the old rows later) made safe: a write to the
 * old shard after the cutover fails instead of being lost, no fan-out
 * counts the tenant twice, and a move cut short by a crash can be resumed.  Its state lives in the
 * directory, where the application's own router reads it: shard_map says
 * MIGRATING with the target from the first step on, and DONE (the target
 * answers, the old shard_id keeps the leftovers until cleanup) after the
 * cutover; the table tenant_moves, which the move creates in the directory
 * file, keeps one row per move with its phase, its progress and its error.
 * A shard_map written by hand needs nothing more.
 *
 * A move cannot be one PostgreSQL transaction: its progress must survive
 * the backend, and the application must keep writing while it copies.  So
 * it runs outside any transaction block, on handles of its own (never the
 * connection cache's, whose writes commit with the PostgreSQL transaction),
 * and every step commits in the shards and the directory at once:
 *
 *	1. directory: a tenant_moves row, shard_map MIGRATING with the target.
 *	   Readers skip the target's rows of the tenant from here on.
 *	2. source: the change log and the capture triggers (movecopy.c).
 *	3. target: tables it lacks are created; rows of the tenant it has (a
 *	   partial copy from an earlier attempt) are deleted; then every table
 *	   is copied in batches of MOVE_BATCH_ROWS, one transaction each
 *	   (not synced one by one in WAL mode: move_set_durable).
 *	4. the log is replayed until its backlog is small, the copy verified
 *	   (counts and checksums of every table, read without any lock, less
 *	   the rows written meanwhile), and replayed again.
 *	5. under the source's write lock: the last replay, the verification
 *	   of every row of the tenant again, and the fence; commit (the lock
 *	   is held for this step only: tenant_moves.lock_ms).
 *	6. directory: shard_map DONE.  tenant_cleanup later deletes the
 *	   leftovers, the triggers, the log and the fence.
 *
 * The capture triggers do not see every write: SQLite fires no trigger for
 * a row an INSERT OR REPLACE removes through another unique index (unless
 * recursive_triggers is on), for an incremental blob write, or for any
 * write of a connection that disabled triggers.  Such a write changes the
 * source without a trace in the log, so no check of logged keys can find
 * it; the check under the lock compares the whole tenant, which no write
 * can change any more until the fence is in, and fails the move (the
 * tenant stays on the source, which takes its writes) rather than flip to
 * a copy that lacks the write.  The check before the lock finds a bad copy
 * without stopping the writers; the one under it costs the lock a read of
 * the tenant's rows on both shards.  The fence is made of triggers too: such
 * a write after the cutover is not refused, and lands in the source's
 * leftover rows only, which tenant_cleanup deletes.
 *
 * The fence commits before the flip: a crash between them leaves a fenced
 * source that the directory still names, so the tenant's writes fail (they
 * are not lost) until the move is finished or the fence lifted, which
 * nobody has to do by hand: the next statement routed to the tenant lifts
 * the fence (cheap: the move becomes resumable, lift_dead_fence), and the
 * next call of a move function that writes finishes the move
 * (finish_dead_move) as the move run again does: it sees the fence, and
 * only verifies and flips.  A move's session is known to be gone when
 * nobody holds the tenant's advisory lock (try_lock_tenant).  A crash
 * anywhere before the fence leaves the source complete and named by the
 * directory, with a partial copy that readers skip; running the move
 * again restarts the copy (the triggers and the log stay), and
 * tenant_move_abort removes the copy, the triggers and the log.
 *
 * tenant_cleanup deletes the old shard's rows only once every transaction
 * that began before the flip has ended (wait_for_older_readers): a
 * statement routes by the directory as it was when it started.
 *
 * A move holds a transaction-level advisory lock on the directory and the
 * tenant while it runs, so that a second move (or abort, or cleanup) of the
 * same tenant is refused instead of racing it; the lock goes with the
 * backend, so a killed move never blocks the next one.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <sys/stat.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_foreign_table.h"
#include "commands/defrem.h"
#include "common/hashfn.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/sinvaladt.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "control/move.h"

PG_FUNCTION_INFO_V1(shard_tenant_move);
PG_FUNCTION_INFO_V1(shard_tenant_move_abort);
PG_FUNCTION_INFO_V1(shard_tenant_cleanup);
PG_FUNCTION_INFO_V1(shard_tenant_moves);

/* The replay is left for the locked phase once its backlog is this small. */
#define MOVE_FINAL_BACKLOG 500

/* Replay rounds before the move takes the lock whatever the backlog. */
#define MOVE_MAX_ROUNDS 50

/* Progress is written to tenant_moves at most this often, in ms. */
#define MOVE_PROGRESS_MS 1000

/* For tests: the point at which a move waits until it is killed. */
static char *move_pause_at = NULL;

/* For tests: with move_pause_at, how long to wait there before going on. */
static int	move_pause_ms = 0;

static const char *const moves_schema =
"CREATE TABLE IF NOT EXISTS tenant_moves ("
"  move_id INTEGER PRIMARY KEY,"
"  tenant_id TEXT NOT NULL,"
"  source_shard_id TEXT NOT NULL,"
"  target_shard_id TEXT NOT NULL,"
"  phase TEXT NOT NULL,"
"  rows_copied INTEGER NOT NULL DEFAULT 0,"
"  backlog INTEGER,"
"  lock_ms REAL,"
"  started_at REAL NOT NULL,"
"  finished_at REAL,"
"  cleaned_at REAL,"
"  pid INTEGER,"
"  error TEXT);"
"CREATE INDEX IF NOT EXISTS tenant_moves_tenant ON tenant_moves (tenant_id);";

/* Now, as the directory stores times: seconds since 1970, fractional. */
#define DIR_NOW "((julianday('now') - 2440587.5) * 86400.0)"

/* The move's own handle on the directory. */
typedef struct MoveDir
{
	ShardServerOptions *opts;
	sqlite3    *db;
	bool		has_updated_at;	/* shard_map has the column */
} MoveDir;

/* A tenant's row of shard_map, and its current move, if any. */
typedef struct MoveState
{
	char	   *shard_id;
	char	   *status;
	char	   *target_shard_id;
	int64		move_id;		/* 0: no move row that is not finished */
	char	   *move_source;
	char	   *move_target;
	char	   *move_phase;
	double		move_finished_at;	/* its flip, as the directory stores
									 * times; 0 when unknown */
} MoveState;

/*
 * shard_move_define_gucs
 *		Define the move's settings; called from _PG_init.
 */
void
shard_move_define_gucs(void)
{
	DefineCustomStringVariable("sqlite_shard_fdw.move_pause_at",
							   "For tests: a point of tenant_move() at which it waits until it is cancelled or killed.",
							   "One of start, capture, copy, replay, verified, cutover, fenced, flipped, abort, cleanup.",
							   &move_pause_at,
							   "",
							   PGC_SUSET, GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("sqlite_shard_fdw.move_pause_ms",
							"For tests: how long a move waits at sqlite_shard_fdw.move_pause_at before it goes on.",
							"Zero waits until the move is cancelled or killed.",
							&move_pause_ms,
							0, 0, 3600 * 1000,
							PGC_SUSET, GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL | GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/*
 * move_pause
 *		The test hook: at the point sqlite_shard_fdw.move_pause_at names,
 *		say so and wait until cancelled or killed, so that a test can kill
 *		the backend at a known step; or, with sqlite_shard_fdw.move_pause_ms,
 *		wait that long and go on, so that a test can write meanwhile.
 */
static void
move_pause(const char *tenant, const char *point)
{
	instr_time	start;

	if (move_pause_at == NULL || strcmp(move_pause_at, point) != 0)
		return;
	ereport(NOTICE,
			(errmsg("tenant \"%s\": paused at \"%s\"", tenant, point)));
	INSTR_TIME_SET_CURRENT(start);
	for (;;)
	{
		instr_time	now;

		CHECK_FOR_INTERRUPTS();
		pg_usleep(20000L);
		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, start);
		if (move_pause_ms > 0 && INSTR_TIME_GET_MILLISEC(now) >= move_pause_ms)
			return;
	}
}

/*
 * dir_failed
 *		Raise a failed SQLite call on the move's directory handle: fmt is
 *		the whole message, with the directory's path for its one %s (as for
 *		dir_exec and dir_run).
 */
static void
dir_failed(MoveDir *md, const char *fmt)
{
	shard_directory_error(sqlite3_extended_errcode(md->db),
						  md->opts->directory, sqlite3_errmsg(md->db), fmt,
						  md->opts->directory);
}

/*
 * dir_exec
 *		Run SQL without results on the directory (BEGIN, COMMIT, DDL).
 */
static void
dir_exec(MoveDir *md, const char *sql, const char *fmt)
{
	if (sqlite3_exec(md->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		dir_failed(md, fmt);
}

/*
 * dir_run
 *		Prepare a directory statement, bind vals (NULL text binds NULL) and
 *		ints after them, and step it once.  With out, the statement is left
 *		for the caller (to read its row and finalize); returns the step's
 *		result.
 */
static int
dir_run(MoveDir *md, const char *sql, const char **vals, int nvals,
		const int64 *ints, int nints, sqlite3_stmt **out, const char *fmt)
{
	sqlite3_stmt *stmt;
	int			i;
	int			rc;

	if (sqlite3_prepare_v2(md->db, sql, -1, &stmt, NULL) != SQLITE_OK)
		dir_failed(md, fmt);
	for (i = 0; i < nvals; i++)
		sqlite3_bind_text(stmt, i + 1, vals[i], -1, SQLITE_TRANSIENT);
	for (i = 0; i < nints; i++)
		sqlite3_bind_int64(stmt, nvals + i + 1, ints[i]);
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
	{
		sqlite3_finalize(stmt);
		dir_failed(md, fmt);
	}
	if (out)
		*out = stmt;
	else
		sqlite3_finalize(stmt);
	return rc;
}

/*
 * column_dup
 *		A text column as a palloc'd string, or NULL.
 */
static char *
column_dup(sqlite3_stmt *stmt, int col)
{
	const char *s = (const char *) sqlite3_column_text(stmt, col);

	return s ? pstrdup(s) : NULL;
}

/*
 * dir_open
 *		Open the move's own read-write handle on the directory and create
 *		tenant_moves there if it is missing.  Its writes commit at once,
 *		outside the PostgreSQL transaction.
 */
static void
dir_open(MoveDir *md, ShardServerOptions *opts)
{
	char		errbuf[SHARDIO_ERRLEN];
	sqlite3_stmt *stmt;
	int			rc;

	md->opts = opts;
	rc = shardio_open(opts->directory, SHARDIO_OPEN_READWRITE,
					  opts->busy_timeout_ms, &md->db, errbuf);
	if (rc != SQLITE_OK)
	{
		if (shardio_file_state(opts->directory) == SHARDIO_FILE_MISSING)
			shard_directory_report_missing(opts);
		shard_check_lock_wait(rc, true, opts->directory);
		ereport(ERROR,
				(errcode(shard_sqlite_sqlstate(rc)),
				 errmsg("could not open directory \"%s\" of server \"%s\" for writing",
						opts->directory, opts->servername),
				 errdetail_internal("%s", errbuf)));
	}
	PG_TRY();
	{
		dir_exec(md, "BEGIN IMMEDIATE",
				 gettext_noop("could not record the move in directory \"%s\""));
		dir_exec(md, moves_schema,
				 gettext_noop("could not create table \"tenant_moves\" in directory \"%s\""));
		dir_exec(md, "COMMIT",
				 gettext_noop("could not create table \"tenant_moves\" in directory \"%s\""));
		rc = dir_run(md, "SELECT count(*) FILTER (WHERE name = 'updated_at'), "
					 "count(*) FILTER (WHERE name IN ('status', 'target_shard_id')) "
					 "FROM pragma_table_info('shard_map')",
					 NULL, 0, NULL, 0, &stmt,
					 gettext_noop("could not read the schema in directory \"%s\""));
		md->has_updated_at = sqlite3_column_int(stmt, 0) > 0;
		rc = sqlite3_column_int(stmt, 1);
		sqlite3_finalize(stmt);
		if (rc != 2)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_COLUMN_NAME_NOT_FOUND),
					 errmsg("table \"shard_map\" of directory \"%s\" lacks columns a move needs",
							opts->directory),
					 errdetail("A move needs shard_map(tenant_id, shard_id, status, target_shard_id), and updates updated_at where it exists.")));
	}
	PG_CATCH();
	{
		shardio_close(md->db);
		md->db = NULL;
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/*
 * dir_close
 *		Close the move's directory handle, rolling back what an error left
 *		open.
 */
static void
dir_close(MoveDir *md)
{
	if (md->db != NULL)
	{
		move_rollback(md->db);
		shardio_close(md->db);
		md->db = NULL;
	}
}

/*
 * read_state
 *		The tenant's row of shard_map and its latest move that is neither
 *		aborted nor cleaned up; an error for a tenant the directory lacks.
 */
static MoveState *
read_state(MoveDir *md, const char *tenant)
{
	MoveState  *st;
	sqlite3_stmt *stmt;
	const char *vals[1] = {tenant};

	if (dir_run(md, "SELECT shard_id, status, target_shard_id FROM shard_map "
				"WHERE tenant_id = ?", vals, 1, NULL, 0, &stmt,
				gettext_noop("could not look up a tenant in directory \"%s\"")) != SQLITE_ROW)
	{
		sqlite3_finalize(stmt);
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("tenant \"%s\" does not exist in directory \"%s\"",
						tenant, md->opts->directory)));
	}
	st = palloc0(sizeof(MoveState));
	st->shard_id = column_dup(stmt, 0);
	st->status = column_dup(stmt, 1);
	st->target_shard_id = column_dup(stmt, 2);
	sqlite3_finalize(stmt);
	if (st->status == NULL)
		st->status = pstrdup("ACTIVE");

	if (dir_run(md, "SELECT move_id, source_shard_id, target_shard_id, phase, "
				"coalesce(finished_at, 0) FROM tenant_moves WHERE tenant_id = ? "
				"AND phase NOT IN ('aborted', 'cleaned') "
				"ORDER BY move_id DESC LIMIT 1", vals, 1, NULL, 0, &stmt,
				gettext_noop("could not look up the tenant's moves in directory \"%s\"")) == SQLITE_ROW)
	{
		st->move_id = sqlite3_column_int64(stmt, 0);
		st->move_source = column_dup(stmt, 1);
		st->move_target = column_dup(stmt, 2);
		st->move_phase = column_dup(stmt, 3);
		st->move_finished_at = sqlite3_column_double(stmt, 4);
	}
	sqlite3_finalize(stmt);
	return st;
}

/*
 * set_phase
 *		Record a move's phase (and, with rows >= 0, its rows copied, with
 *		backlog >= 0 its backlog) in tenant_moves, committed at once.
 */
static void
set_phase(MoveDir *md, int64 move_id, const char *phase, int64 rows,
		  int64 backlog)
{
	const char *vals[1] = {phase};
	int64		ints[4] = {rows, backlog, move_id, MyProcPid};

	dir_run(md, "UPDATE tenant_moves SET phase = ?1, "
			"rows_copied = CASE WHEN ?2 >= 0 THEN ?2 ELSE rows_copied END, "
			"backlog = CASE WHEN ?3 >= 0 THEN ?3 ELSE backlog END, "
			"error = NULL, pid = ?5 WHERE move_id = ?4",
			vals, 1, ints, 4, NULL,
			gettext_noop("could not record the move's progress in directory \"%s\""));
}

/*
 * record_error
 *		Keep a failed move's error in tenant_moves, as well as can be: the
 *		original error is what the caller sees, so a failure here is
 *		swallowed.
 */
static void
record_error(MoveDir *md, int64 move_id, const char *message)
{
	sqlite3_stmt *stmt;

	if (md->db == NULL || move_id <= 0)
		return;
	move_rollback(md->db);
	if (sqlite3_prepare_v2(md->db, "UPDATE tenant_moves SET error = ?1 "
						   "WHERE move_id = ?2", -1, &stmt, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_text(stmt, 1, message, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(stmt, 2, move_id);
	(void) sqlite3_step(stmt);
	sqlite3_finalize(stmt);
}

/*
 * map_update_sql
 *		shard_map's UPDATE with "SET <set>" and, where the table has it,
 *		updated_at set to now.
 */
static char *
map_update_sql(MoveDir *md, const char *set, const char *where)
{
	return psprintf("UPDATE shard_map SET %s%s WHERE %s", set,
					md->has_updated_at ?
					", updated_at = CAST(strftime('%s', 'now') AS INTEGER)" : "",
					where);
}

/*
 * tenant_lock_tag
 *		The advisory lock of a tenant of a directory: one per directory file
 *		and tenant in the whole cluster, whatever the database.
 */
static void
tenant_lock_tag(LOCKTAG *tag, ShardServerOptions *opts, const char *tenant)
{
	SET_LOCKTAG_ADVISORY(*tag,
						 hash_bytes((const unsigned char *) opts->directory,
									strlen(opts->directory)),
						 hash_bytes((const unsigned char *) tenant, strlen(tenant)),
						 0, 0x5353);
}

/*
 * lock_tenant
 *		Take the advisory lock that one move, abort or cleanup of a tenant
 *		holds at a time, for the rest of the transaction (the function
 *		call), or refuse at once when another session has it.
 */
static void
lock_tenant(ShardServerOptions *opts, const char *tenant)
{
	LOCKTAG		tag;

	tenant_lock_tag(&tag, opts, tenant);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("tenant \"%s\" is being moved by another session",
						tenant),
				 errdetail("A move, an abort or a cleanup of the tenant is running."),
				 errhint("tenant_moves('%s') shows the moves.", opts->servername)));
}

/*
 * try_lock_tenant
 *		Take the tenant's advisory lock if nobody holds it, for as long as
 *		the caller needs (unlock_tenant releases it).  This is how a move
 *		whose session is gone is told from one that runs: every move, abort
 *		and cleanup holds the lock from before its first change to its end,
 *		and the server releases it when the backend ends, however it ends
 *		(a pid recorded in tenant_moves could be reused, and cannot be
 *		checked from another database).  False when another session holds
 *		it, or this one does (a move of this statement).
 */
static bool
try_lock_tenant(ShardServerOptions *opts, const char *tenant)
{
	LOCKTAG		tag;

	tenant_lock_tag(&tag, opts, tenant);
	if (LockHeldByMe(&tag, ExclusiveLock))
		return false;
	return LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_OK;
}

/*
 * unlock_tenant
 *		Release the lock try_lock_tenant took.
 */
static void
unlock_tenant(ShardServerOptions *opts, const char *tenant)
{
	LOCKTAG		tag;

	tenant_lock_tag(&tag, opts, tenant);
	LockRelease(&tag, ExclusiveLock, false);
}

/*
 * check_call
 *		What every move function (fname) checks first: no null argument,
 *		the file privileges of anything that writes the server's files
 *		(message and detail as shard_require_file_privilege takes them), and
 *		no transaction block, since every step commits at once whatever the
 *		transaction does.
 */
static void
check_call(FunctionCallInfo fcinfo, int nargs, const char *fname,
		   const char *message, const char *detail)
{
	int			i;

	for (i = 0; i < nargs; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("server, tenant and shard must not be null")));
	shard_require_file_privilege(true, message, detail);
	if (IsTransactionBlock())
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 /* translator: %s is the name of an SQL function */
				 errmsg("%s cannot run inside a transaction block", fname),
				 errdetail("Each step commits in the shards and the directory at once, whatever the transaction does.")));
}

/*
 * shard_or_error
 *		A shard of the directory, or an error naming it.  A copy: what the
 *		directory's cache returns lives only until the directory changes,
 *		and a move changes it.
 */
static ShardInfo *
shard_or_error(ShardServerOptions *opts, const char *shard_id)
{
	ShardInfo  *info = shard_directory_shard(shard_directory_get(opts),
											 shard_id);
	ShardInfo  *copy;

	if (info == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("shard \"%s\" does not exist in directory \"%s\"",
						shard_id, opts->directory),
				 errhint("shard_list('%s') shows the shards.",
						 opts->servername)));
	copy = palloc(sizeof(ShardInfo));
	copy->shard_id = pstrdup(info->shard_id);
	copy->path = pstrdup(info->path);
	return copy;
}

/*
 * setup_shards
 *		Fill in a MoveShards for a move of tenant from source to target and
 *		open its handles (closed by move_close_shards on every path).
 */
static void
setup_shards(MoveShards *ms, ShardServerOptions *opts, const char *tenant,
			 int64 move_id, const char *source, const char *target)
{
	memset(ms, 0, sizeof(*ms));
	ms->opts = opts;
	ms->tenant = tenant;
	ms->move_id = move_id;
	ms->source = shard_or_error(opts, source);
	ms->target = shard_or_error(opts, target);
	ms->prefix = psprintf("_ssfdw_move_" INT64_FORMAT "_", move_id);
	move_open_shards(ms);
}

/*
 * elapsed_ms
 *		Milliseconds since start.
 */
static double
elapsed_ms(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/*
 * step_done
 *		Log (DEBUG1) how long a step of a move took since *start, and
 *		restart the clock: where a move spends its time.
 */
static void
step_done(const char *tenant, const char *step, instr_time *start)
{
	elog(DEBUG1, "tenant \"%s\": %s took %.1f ms", tenant, step,
		 elapsed_ms(*start));
	INSTR_TIME_SET_CURRENT(*start);
}

/*
 * copy_tables
 *		Step 3: the bulk copy, table by table, batch by batch, with
 *		progress in NOTICE lines and in tenant_moves.
 */
static int64
copy_tables(MoveShards *ms, MoveDir *md)
{
	int64		total = 0;
	instr_time	last;
	ListCell   *lc;

	INSTR_TIME_SET_CURRENT(last);
	foreach(lc, ms->tables)
	{
		MoveTable  *t = lfirst(lc);
		sqlite3_value **cursor = NULL;
		bool		done = false;

		while (!done)
		{
			CHECK_FOR_INTERRUPTS();
			total += move_copy_batch(ms, t, &cursor, &done);
			move_pause(ms->tenant, "copy");
			if (!done && elapsed_ms(last) >= MOVE_PROGRESS_MS)
			{
				ereport(NOTICE,
						(errmsg("tenant \"%s\": copying table \"%s\" to shard \"%s\": %lld of about %lld rows",
								ms->tenant, t->name, ms->target->shard_id,
								(long long) t->copied, (long long) t->rows)));
				set_phase(md, ms->move_id, "copy", total, -1);
				INSTR_TIME_SET_CURRENT(last);
			}
		}
		ereport(NOTICE,
				(errmsg_plural("tenant \"%s\": copied table \"%s\" to shard \"%s\": %lld row",
							   "tenant \"%s\": copied table \"%s\" to shard \"%s\": %lld rows",
							   t->copied, ms->tenant, t->name,
							   ms->target->shard_id, (long long) t->copied)));
	}
	return total;
}

/*
 * replay_until_small
 *		Step 4: replay the change log in rounds until what is left is small
 *		enough for the locked phase; returns the backlog left.
 */
static int64
replay_until_small(MoveShards *ms, MoveDir *md, int64 copied)
{
	int64		applied = 0;
	int64		backlog;
	int			round;

	for (round = 0;; round++)
	{
		CHECK_FOR_INTERRUPTS();
		applied += move_replay(ms, -1);
		move_pause(ms->tenant, "replay");
		backlog = Max(move_log_top(ms) - ms->replayed, 0);
		if (backlog <= MOVE_FINAL_BACKLOG || round >= MOVE_MAX_ROUNDS)
			break;
	}
	ereport(NOTICE,
			(errmsg_plural("tenant \"%s\": replayed %lld captured change, backlog %lld",
						   "tenant \"%s\": replayed %lld captured changes, backlog %lld",
						   applied, ms->tenant, (long long) applied,
						   (long long) backlog)));
	set_phase(md, ms->move_id, "replay", copied, backlog);
	return backlog;
}

/*
 * cutover
 *		Step 5: under the source's write lock, the last replay, the
 *		verification of every row of the tenant on both shards (the only
 *		check that sees writes the capture triggers missed: the file's
 *		head), and the fence; returns how long the lock was held, in ms.
 */
static double
cutover(MoveShards *ms)
{
	instr_time	start;

	move_set_durable(ms, true);
	move_begin(ms, ms->src, true);
	INSTR_TIME_SET_CURRENT(start);
	move_begin(ms, ms->dst, true);
	(void) move_replay(ms, -1);
	(void) move_verify(ms, ms->replayed, ms->replayed, true);
	move_sync_target(ms);
	move_commit(ms, ms->dst);
	move_pause(ms->tenant, "cutover");
	move_install_fence(ms);
	move_commit(ms, ms->src);
	return elapsed_ms(start);
}

/*
 * flip
 *		Step 6: the directory names the target, in one transaction with the
 *		move's bookkeeping.  If that fails, the fence comes off again, so
 *		that the source, which the directory still names, takes writes.
 */
static void
flip(MoveShards *ms, MoveDir *md, double lock_ms, int64 copied)
{
	const char *vals[2] = {ms->tenant, ms->target->shard_id};

	PG_TRY();
	{
		dir_exec(md, "BEGIN IMMEDIATE",
				 gettext_noop("could not flip the tenant's shard in directory \"%s\""));
		dir_run(md, map_update_sql(md, "status = 'DONE'",
								   "tenant_id = ?1 AND status = 'MIGRATING' "
								   "AND target_shard_id = ?2"),
				vals, 2, NULL, 0, NULL,
				gettext_noop("could not flip the tenant's shard in directory \"%s\""));
		if (sqlite3_changes(md->db) != 1)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("tenant \"%s\" is no longer being moved to shard \"%s\" in directory \"%s\"",
							ms->tenant, ms->target->shard_id,
							md->opts->directory),
					 errdetail("Another process changed the tenant's row of \"shard_map\" during the move.")));
		{
			sqlite3_stmt *stmt;

			if (sqlite3_prepare_v2(md->db,
								   "UPDATE tenant_moves SET phase = 'done', "
								   "rows_copied = ?1, backlog = 0, lock_ms = ?2, "
								   "finished_at = " DIR_NOW ", error = NULL "
								   "WHERE move_id = ?3 AND pid = ?4", -1, &stmt,
								   NULL) != SQLITE_OK)
				dir_failed(md,
						   gettext_noop("could not flip the tenant's shard in directory \"%s\""));
			sqlite3_bind_int64(stmt, 1, copied);
			sqlite3_bind_double(stmt, 2, lock_ms);
			sqlite3_bind_int64(stmt, 3, ms->move_id);
			sqlite3_bind_int64(stmt, 4, MyProcPid);
			if (sqlite3_step(stmt) != SQLITE_DONE)
			{
				sqlite3_finalize(stmt);
				dir_failed(md,
						   gettext_noop("could not flip the tenant's shard in directory \"%s\""));
			}
			sqlite3_finalize(stmt);

			/*
			 * The move's row names this backend unless a session that took
			 * it for gone lifted the fence (lift_dead_fence): then the
			 * source has taken writes since, and the copy is stale.
			 */
			if (sqlite3_changes(md->db) != 1)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("the move of tenant \"%s\" to shard \"%s\" was taken over by another session",
								ms->tenant, ms->target->shard_id),
						 errdetail("Its fence on shard \"%s\" was lifted.",
								   ms->source->shard_id),
						 errhint("Run tenant_move() again to finish the move.")));
		}
		dir_exec(md, "COMMIT",
				 gettext_noop("could not flip the tenant's shard in directory \"%s\""));
	}
	PG_CATCH();
	{
		move_rollback(md->db);
		move_drop_objects(ms, "fence_");
		PG_RE_THROW();
	}
	PG_END_TRY();

	/*
	 * The flip's time, stamped again once it has committed: a transaction
	 * that began after this stamp routed by the flipped directory, which
	 * is what tenant_cleanup's wait relies on (wait_for_older_readers).
	 * Best effort: killed before it, the stamp is the flip's own, taken
	 * an instant before the commit.
	 */
	{
		sqlite3_stmt *stmt;

		if (sqlite3_prepare_v2(md->db, "UPDATE tenant_moves SET finished_at = "
							   DIR_NOW " WHERE move_id = ?1", -1, &stmt,
							   NULL) == SQLITE_OK)
		{
			sqlite3_bind_int64(stmt, 1, ms->move_id);
			(void) sqlite3_step(stmt);
			sqlite3_finalize(stmt);
		}
	}
}

/*
 * run_move
 *		Steps 2 to 6 of a move whose directory state is MIGRATING: a new
 *		one, or one resumed after a crash or an error.  The shards are open.
 */
static void
run_move(MoveShards *ms, MoveDir *md)
{
	int64		copied = 0;
	int64		removed;
	double		lock_ms = 0;
	instr_time	clock;

	INSTR_TIME_SET_CURRENT(clock);
	set_phase(md, ms->move_id, "capture", -1, -1);
	move_install_capture(ms);
	move_create_missing_tables(ms);
	step_done(ms->tenant, "capture", &clock);
	ereport(NOTICE,
			(errmsg("tenant \"%s\": capturing its writes on shard \"%s\" (%d tables)",
					ms->tenant, ms->source->shard_id,
					list_length(ms->tables))));
	move_pause(ms->tenant, "capture");

	if (move_fence_present(ms))
	{
		/* a crash after the fence: the copy was complete; check and flip */
		ms->replayed = move_log_top(ms);
		copied = move_verify(ms, ms->replayed, ms->replayed, false);
		ereport(NOTICE,
				(errmsg("tenant \"%s\": shard \"%s\" is fenced already; verified %lld rows",
						ms->tenant, ms->source->shard_id, (long long) copied)));
	}
	else
	{
		set_phase(md, ms->move_id, "copy", 0, -1);
		move_set_durable(ms, false);
		removed = move_delete_rows(ms, ms->dst, false);
		if (removed > 0)
			ereport(NOTICE,
					(errmsg_plural("tenant \"%s\": deleted %lld row of an earlier copy from shard \"%s\"",
								   "tenant \"%s\": deleted %lld rows of an earlier copy from shard \"%s\"",
								   removed, ms->tenant, (long long) removed,
								   ms->target->shard_id)));
		/* the copy reads every state after this point of the log */
		ms->replayed = move_log_top(ms);
		step_done(ms->tenant, "deleting an earlier copy", &clock);
		copied = copy_tables(ms, md);
		step_done(ms->tenant, "copy", &clock);

		(void) replay_until_small(ms, md, copied);
		step_done(ms->tenant, "replay", &clock);
		copied = move_verify(ms, ms->replayed, -1, false);
		step_done(ms->tenant, "verification", &clock);
		ereport(NOTICE,
				(errmsg("tenant \"%s\": verified %d tables on shard \"%s\"",
						ms->tenant, list_length(ms->tables),
						ms->target->shard_id)));
		move_pause(ms->tenant, "verified");
		(void) replay_until_small(ms, md, copied);

		set_phase(md, ms->move_id, "cutover", copied, -1);
		step_done(ms->tenant, "second replay", &clock);
		lock_ms = cutover(ms);
		step_done(ms->tenant, "cutover", &clock);
	}
	move_pause(ms->tenant, "fenced");
	flip(ms, md, lock_ms, copied);
	step_done(ms->tenant, "flip", &clock);
	shard_directory_changed(shard_directory_get(ms->opts));
	ereport(NOTICE,
			(errmsg("tenant \"%s\": moved to shard \"%s\"; shard \"%s\" is fenced until tenant_cleanup()",
					ms->tenant, ms->target->shard_id, ms->source->shard_id)));
	move_pause(ms->tenant, "flipped");
}

/*
 * error_message
 *		Inside PG_CATCH: the error's message, with the error state kept.
 */
static char *
error_message(MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ErrorData  *edata = CopyErrorData();

	MemoryContextSwitchTo(old);
	return edata->message;
}

/*
 * claim_dead_move
 *		Take over, in the directory, a move whose session is gone, before
 *		its fence is lifted: the move's row goes back to phase "replay"
 *		(resumable, the copy to be made again) with no pid and a note in
 *		"error" (after why, when given: what went wrong before), as long as
 *		shard_map still says MIGRATING to its target.
 *		A session that flips the move afterwards finds its row no longer
 *		names it and gives up (flip).  False when the move has moved on.
 */
static bool
claim_dead_move(MoveDir *md, const char *tenant, int64 move_id,
				const char *source, const char *target, const char *why)
{
	const char *vals[4];
	int64		ints[1] = {move_id};
	bool		claimed;

	vals[0] = tenant;
	vals[1] = source;
	vals[2] = target;
	vals[3] = psprintf("%s%sits session ended between the fence on shard \"%s\" and the flip; "
					   "the fence was lifted so that shard \"%s\" takes the tenant's writes again: "
					   "tenant_move() finishes the move, tenant_move_abort() cancels it",
					   why ? why : "", why ? "; " : "", source, source);
	dir_exec(md, "BEGIN IMMEDIATE",
			 gettext_noop("could not record the move's progress in directory \"%s\""));
	dir_run(md, "UPDATE tenant_moves SET phase = 'replay', pid = NULL, error = ?4 "
			"WHERE move_id = ?5 AND phase <> 'done' AND EXISTS (SELECT 1 "
			"FROM shard_map WHERE tenant_id = ?1 AND shard_id = ?2 "
			"AND status = 'MIGRATING' AND target_shard_id = ?3)",
			vals, 4, ints, 1, NULL,
			gettext_noop("could not record the move's progress in directory \"%s\""));
	claimed = sqlite3_changes(md->db) == 1;
	dir_exec(md, "COMMIT",
			 gettext_noop("could not record the move's progress in directory \"%s\""));
	return claimed;
}

/*
 * lift_dead_fence
 *		The rollback a routed statement may do, the caller holding the
 *		tenant's lock (so no session runs the move): if the tenant's move
 *		from source to target has its fence committed on the source, claim
 *		the move (claim_dead_move) and drop the fence, so that the source,
 *		which the directory still names, takes the tenant's writes again.
 *		Nothing else changes: the tenant stays MIGRATING (readers keep
 *		skipping the copy on the target, the capture triggers keep logging
 *		its writes), and the move can be run again or aborted.  It costs
 *		the move's row read from the directory and a look at the source's
 *		schema; it copies nothing.  Shards are looked up in dir without
 *		changing its cache.  why, when given, is kept in the move's error.
 *		Returns whether the fence was lifted.
 */
static bool
lift_dead_fence(ShardDirectory *dir, ShardServerOptions *opts,
				const char *tenant, const char *source, const char *target,
				const char *why)
{
	sqlite3    *db = shard_directory_handle(dir);
	sqlite3_stmt *stmt;
	MoveShards	ms;
	MoveDir		md;
	int64		move_id = 0;
	bool		lifted = false;

	/* no table tenant_moves, or no move of it: no fence of this extension */
	if (sqlite3_prepare_v2(db, "SELECT move_id FROM tenant_moves "
						   "WHERE tenant_id = ?1 AND source_shard_id = ?2 "
						   "AND target_shard_id = ?3 "
						   "AND phase NOT IN ('aborted', 'cleaned', 'done') "
						   "ORDER BY move_id DESC LIMIT 1", -1, &stmt,
						   NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_text(stmt, 1, tenant, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(stmt, 2, source, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(stmt, 3, target, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		move_id = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	if (move_id == 0)
		return false;

	memset(&ms, 0, sizeof(ms));
	memset(&md, 0, sizeof(md));
	ms.opts = opts;
	ms.tenant = tenant;
	ms.move_id = move_id;
	ms.source = shard_directory_shard(dir, source);
	ms.target = shard_directory_shard(dir, target);
	ms.prefix = psprintf("_ssfdw_move_" INT64_FORMAT "_", move_id);
	if (ms.source == NULL || ms.target == NULL)
		return false;
	PG_TRY();
	{
		move_open_source(&ms);
		if (move_fence_present(&ms))
		{
			dir_open(&md, opts);
			if (claim_dead_move(&md, tenant, move_id, source, target, why))
			{
				move_drop_objects(&ms, "fence_");
				lifted = true;
			}
		}
	}
	PG_CATCH();
	{
		move_close_shards(&ms);
		dir_close(&md);
		PG_RE_THROW();
	}
	PG_END_TRY();
	move_close_shards(&ms);
	dir_close(&md);
	if (lifted)
		ereport(NOTICE,
				(errmsg("tenant \"%s\": its move %lld to shard \"%s\" stopped between the fence and the flip; shard \"%s\" takes its writes again",
						tenant, (long long) move_id, target, source),
				 errhint("Run tenant_move() to finish the move, or tenant_move_abort() to cancel it.")));
	return lifted;
}

/*
 * shard_move_recover_routed
 *		Called by the directory when a statement routes a tenant it has just
 *		read as MIGRATING (so once per change of the directory and backend):
 *		when no session holds the tenant's lock, the move stopped, and a
 *		fence it left is lifted (lift_dead_fence).  While a move runs, its
 *		session holds the lock and this costs one lock table probe.  A
 *		session that cannot have the lock at once (another routing statement
 *		lifting the fence) routes as the directory says.
 */
void
shard_move_recover_routed(ShardDirectory *dir, ShardServerOptions *opts,
						  const char *tenant, const char *source,
						  const char *target)
{
	if (source == NULL || target == NULL || !try_lock_tenant(opts, tenant))
		return;
	(void) lift_dead_fence(dir, opts, tenant, source, target, NULL);
	unlock_tenant(opts, tenant);
}

/* What a move finished by another call says in an error's context. */
typedef struct DeadMoveContext
{
	const char *tenant;
	int64		move_id;
} DeadMoveContext;

/*
 * dead_move_context
 *		Error context callback of finish_dead_move.
 */
static void
dead_move_context(void *arg)
{
	DeadMoveContext *dc = arg;

	errcontext("finishing move %lld of tenant \"%s\", stopped between its fence and its flip",
			   (long long) dc->move_id, dc->tenant);
}

/*
 * finish_dead_move
 *		Finish a move of tenant whose session is gone, when it stopped
 *		between its fence and its flip (the fence is committed on the
 *		source): the copy was complete and checked under the source's lock
 *		when the fence went in, and nothing has written the tenant since, so
 *		the move is verified again and flipped, as tenant_move run again
 *		does.  A move that stopped before its fence is left alone: the
 *		source takes the tenant's writes, and the move is resumed or aborted
 *		by hand.  The caller holds the tenant's lock.
 */
static void
finish_dead_move(ShardServerOptions *opts, MoveDir *md, const char *tenant,
				 ShardTenantSpec *spec)
{
	MoveState  *st = read_state(md, tenant);
	MoveShards	ms;
	MemoryContext cxt = CurrentMemoryContext;
	ErrorContextCallback errcallback;
	DeadMoveContext dc;

	if (strcmp(st->status, "MIGRATING") != 0 || st->target_shard_id == NULL ||
		st->move_id == 0 || strcmp(st->move_target, st->target_shard_id) != 0 ||
		strcmp(st->move_source, st->shard_id) != 0)
		return;
	dc.tenant = tenant;
	dc.move_id = st->move_id;
	errcallback.callback = dead_move_context;
	errcallback.arg = &dc;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;
	memset(&ms, 0, sizeof(ms));
	PG_TRY();
	{
		setup_shards(&ms, opts, tenant, st->move_id, st->shard_id,
					 st->target_shard_id);
		if (move_fence_present(&ms))
		{
			ereport(NOTICE,
					(errmsg("tenant \"%s\": finishing its move %lld to shard \"%s\", stopped between the fence and the flip",
							tenant, (long long) st->move_id,
							st->target_shard_id)));
			move_discover_tables(&ms, spec, true);
			run_move(&ms, md);
		}
	}
	PG_CATCH();
	{
		char	   *message = error_message(cxt);

		move_close_shards(&ms);
		record_error(md, st->move_id, message);
		PG_RE_THROW();
	}
	PG_END_TRY();
	move_close_shards(&ms);
	error_context_stack = errcallback.previous;
}

/*
 * finish_or_lift
 *		finish_dead_move in a subtransaction: when finishing fails (the
 *		copy no longer verifies, a shard cannot be opened), the error
 *		becomes a WARNING, the fence is lifted as a routed statement would
 *		(lift_dead_fence, the error kept in the move's row), and the caller
 *		goes on: a move that cannot be finished never blocks the next call,
 *		nor the tenant's writes.  The caller holds the tenant's lock, taken
 *		outside the subtransaction so that its end does not release it.
 */
static void
finish_or_lift(ShardServerOptions *opts, MoveDir *md, const char *tenant,
			   ShardTenantSpec *spec)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;
	MoveState  *st;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		finish_dead_move(opts, md, tenant, spec);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	CurrentResourceOwner = oldowner;
	if (edata == NULL)
		return;

	ereport(WARNING,
			(errcode(edata->sqlerrcode),
			 errmsg("could not finish the move of tenant \"%s\", stopped between its fence and its flip",
					tenant),
			 errdetail_internal("%s", edata->message)));
	move_rollback(md->db);
	st = read_state(md, tenant);
	if (strcmp(st->status, "MIGRATING") == 0 && st->target_shard_id != NULL)
		(void) lift_dead_fence(shard_directory_get(opts), opts, tenant,
							   st->shard_id, st->target_shard_id,
							   edata->message);
}

/*
 * finish_dead_moves
 *		What every move function that writes does first: finish the moves
 *		of the server's tenants that stopped between their fence and their
 *		flip (finish_or_lift) and whose session is gone: nobody holds the
 *		tenant's lock, or own names the tenant whose lock the caller has
 *		just taken for itself.  Tenants whose lock this session holds for
 *		another reason (an abort's own) are left to the caller.
 */
static void
finish_dead_moves(ShardServerOptions *opts, MoveDir *md, ShardTenantSpec *spec,
				  const char *own)
{
	List	   *tenants = NIL;
	sqlite3_stmt *stmt;
	ListCell   *lc;
	int			rc;

	rc = dir_run(md, "SELECT tenant_id FROM shard_map WHERE status = 'MIGRATING' "
				 "AND target_shard_id IS NOT NULL ORDER BY tenant_id",
				 NULL, 0, NULL, 0, &stmt,
				 gettext_noop("could not list the moving tenants in directory \"%s\""));
	for (; rc == SQLITE_ROW; rc = sqlite3_step(stmt))
		tenants = lappend(tenants, column_dup(stmt, 0));
	sqlite3_finalize(stmt);
	foreach(lc, tenants)
	{
		char	   *tenant = lfirst(lc);

		if (own != NULL && strcmp(tenant, own) == 0)
			finish_or_lift(opts, md, tenant, spec);
		else if (try_lock_tenant(opts, tenant))
		{
			finish_or_lift(opts, md, tenant, spec);
			unlock_tenant(opts, tenant);
		}
	}
	if (tenants != NIL)
		shard_directory_changed(shard_directory_get(opts));
}

/* What tenant_cleanup's wait tells an error's context. */
typedef struct GraceWait
{
	const char *tenant;
	const char *shard_id;		/* the shard the tenant left */
	int			pid;
} GraceWait;

/*
 * grace_wait_context
 *		Error context callback of wait_for_older_readers: whom it waited
 *		for when cancelled or timed out.
 */
static void
grace_wait_context(void *arg)
{
	GraceWait  *gw = arg;

	errcontext("waiting for the transaction of process %d, which began before tenant \"%s\" left shard \"%s\"",
			   gw->pid, gw->tenant, gw->shard_id);
}

/*
 * wait_for_older_readers
 *		The grace rule of tenant_cleanup.  A statement routes by the
 *		directory as it is when the statement starts, so only a statement of
 *		a transaction that began before the flip (flip_at, as the directory
 *		stores times; 0 when unknown: now) can still read the tenant on the
 *		shard it left.  Wait until every such transaction of the cluster's
 *		client backends (every database: another may have a server on the
 *		same directory) has ended, as CREATE INDEX CONCURRENTLY waits for
 *		older transactions: on each one's virtual transaction id, which
 *		shows as wait event "virtualxid" and ends with a cancel,
 *		statement_timeout or lock_timeout.  Without wait, only count them
 *		(and give one's pid).  Returns how many were running.
 */
static int
wait_for_older_readers(const char *tenant, const char *shard_id,
					   double flip_at, bool wait, int *some_pid)
{
	TimestampTz flip;
	VirtualTransactionId *vxids;
	int			nvxids;
	int			nbackends;
	int			older = 0;
	int			i;

	flip = flip_at > 0 ?
		DatumGetTimestampTz(DirectFunctionCall1(float8_timestamptz,
												Float8GetDatum(flip_at))) :
		GetCurrentTimestamp();

	/*
	 * The backends' transaction start times are read before their
	 * transactions are listed: one that ends in between and is followed by
	 * a newer one is then waited for (needlessly), never missed.
	 */
	pgstat_clear_backend_activity_snapshot();
	nbackends = pgstat_fetch_stat_numbackends();
	vxids = GetCurrentVirtualXIDs(InvalidTransactionId, false, true, 0,
								  &nvxids);
	for (i = 0; i < nvxids; i++)
	{
		PGPROC	   *proc = BackendIdGetProc(vxids[i].backendId);
		int			pid;
		int			j;
		bool		newer = false;

		if (proc == NULL)
			continue;			/* ended */
		pid = proc->pid;
		for (j = 1; j <= nbackends; j++)
		{
			LocalPgBackendStatus *be = pgstat_fetch_stat_local_beentry(j);

			if (be == NULL || be->backendStatus.st_procpid != pid)
				continue;

			/*
			 * Only client backends route statements (a parallel worker's
			 * leader is one); a start time of 0 is unknown (track_activities
			 * off), so waited for.
			 */
			newer = be->backendStatus.st_backendType != B_BACKEND ||
				(be->backendStatus.st_xact_start_timestamp != 0 &&
				 be->backendStatus.st_xact_start_timestamp > flip);
			break;
		}
		if (newer || VirtualXactLock(vxids[i], false))
			continue;
		older++;
		if (some_pid != NULL)
			*some_pid = pid;
		if (wait)
		{
			ErrorContextCallback errcallback;
			GraceWait	gw;

			ereport(NOTICE,
					(errmsg("tenant \"%s\": waiting for the transaction of process %d, which began before the tenant left shard \"%s\"",
							tenant, pid, shard_id)));
			gw.tenant = tenant;
			gw.shard_id = shard_id;
			gw.pid = pid;
			errcallback.callback = grace_wait_context;
			errcallback.arg = &gw;
			errcallback.previous = error_context_stack;
			error_context_stack = &errcallback;
			(void) VirtualXactLock(vxids[i], true);
			error_context_stack = errcallback.previous;
		}
	}
	pfree(vxids);
	return older;
}

/*
 * start_move
 *		Step 1 of a new move, after every refusal: the tenant_moves row and
 *		shard_map MIGRATING, in one transaction; returns the move's id.
 */
static int64
start_move(MoveDir *md, const char *tenant, const char *source,
		   const char *target)
{
	const char *vals[3] = {tenant, source, target};
	int64		move_id;

	dir_exec(md, "BEGIN IMMEDIATE",
			 gettext_noop("could not start the move in directory \"%s\""));
	dir_run(md, map_update_sql(md, "status = 'MIGRATING', target_shard_id = ?3",
							   "tenant_id = ?1 AND shard_id = ?2 "
							   "AND coalesce(status, 'ACTIVE') = 'ACTIVE'"),
			vals, 3, NULL, 0, NULL,
			gettext_noop("could not start the move in directory \"%s\""));
	if (sqlite3_changes(md->db) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("tenant \"%s\" changed in directory \"%s\" while the move was checked",
						tenant, md->opts->directory)));
	dir_run(md, "INSERT INTO tenant_moves (tenant_id, source_shard_id, "
			"target_shard_id, phase, started_at) VALUES (?, ?, ?, 'start', "
			DIR_NOW ")", vals, 3, NULL, 0, NULL,
			gettext_noop("could not start the move in directory \"%s\""));
	move_id = sqlite3_last_insert_rowid(md->db);
	dir_exec(md, "COMMIT",
			 gettext_noop("could not start the move in directory \"%s\""));
	return move_id;
}

/*
 * refuse_new_move
 *		Refuse a move that cannot succeed (keys of the tenant's rows that
 *		other tenants' rows already have on the target, a target that would
 *		pass max_shard_bytes) before anything changes, on shards already
 *		opened.
 */
static void
refuse_new_move(MoveShards *ms)
{
	int64		bytes;
	struct stat st;

	move_check_collisions(ms);
	bytes = move_tenant_bytes(ms);
	if (stat(ms->target->path, &st) == 0 &&
		st.st_size + bytes > ms->opts->max_shard_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_DISK_FULL),
				 errmsg("cannot move tenant \"%s\": shard \"%s\" would pass \"max_shard_bytes\"",
						ms->tenant, ms->target->shard_id),
				 errdetail("The shard has %lld bytes and the tenant takes about %lld bytes on shard \"%s\"; the server's limit is %lld bytes.",
						   (long long) st.st_size, (long long) bytes,
						   ms->source->shard_id,
						   (long long) ms->opts->max_shard_bytes)));
}

static int64 cleanup_one(ShardServerOptions *opts, MoveDir *md,
						 const char *tenant, MoveState *st, ShardTenantSpec *spec,
						 bool vacuum);

/*
 * clean_before_move
 *		A tenant moved before and not cleaned up is moved again: its rows on
 *		the shard it left are deleted first, as tenant_cleanup(server,
 *		tenant) does, when that is safe at once: no transaction that began
 *		before that move's flip is still running (wait_for_older_readers).
 *		Otherwise the move is refused, naming what to run.
 */
static void
clean_before_move(ShardServerOptions *opts, MoveDir *md, const char *tenant,
				  MoveState *st, ShardTenantSpec *spec)
{
	int			pid = 0;
	int			older;
	int64		removed;

	older = wait_for_older_readers(tenant, st->shard_id, st->move_finished_at,
								   false, &pid);
	if (older > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("tenant \"%s\" still has rows on shard \"%s\" from its move to shard \"%s\"",
						tenant, st->shard_id, st->target_shard_id),
				 errdetail_plural("%d transaction that began before that move cut over is still running (process %d), and may read those rows.",
								  "%d transactions that began before that move cut over are still running (process %d among them), and may read those rows.",
								  older, older, pid),
				 errhint("Run tenant_cleanup('%s', '%s'), which waits for them, then tenant_move() again.",
						 opts->servername, tenant)));
	ereport(NOTICE,
			(errmsg("tenant \"%s\": deleting its rows on shard \"%s\" left by its move to shard \"%s\" first",
					tenant, st->shard_id, st->target_shard_id)));
	removed = cleanup_one(opts, md, tenant, st, spec, true);
	shard_directory_changed(shard_directory_get(opts));
	ereport(NOTICE,
			(errmsg_plural("tenant \"%s\": deleted %lld row from shard \"%s\"",
						   "tenant \"%s\": deleted %lld rows from shard \"%s\"",
						   removed, tenant, (long long) removed, st->shard_id)));
}

/*
 * shard_tenant_move
 *		tenant_move(server, tenant, target_shard): move a tenant's rows to
 *		another shard while its writers keep going (see the file's head).
 *		Running it again after a crash or an error resumes the move.
 *		Returns the move's id, as tenant_moves() lists it.
 */
Datum
shard_tenant_move(PG_FUNCTION_ARGS)
{
	ShardServerOptions *opts;
	char	   *tenant;
	char	   *target;
	MoveDir		md;
	MoveState  *st;
	MoveShards	ms;
	MemoryContext cxt = CurrentMemoryContext;
	volatile int64 move_id = 0;

	check_call(fcinfo, 3, "tenant_move()",
			   gettext_noop("permission denied to move a tenant"),
			   gettext_noop("Only roles with privileges of the \"%s\" role may move a tenant."));
	opts = shard_admin_server(PG_GETARG_NAME(0));
	tenant = shard_tenant_id_text(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	target = text_to_cstring(PG_GETARG_TEXT_PP(2));
	lock_tenant(opts, tenant);

	memset(&ms, 0, sizeof(ms));
	dir_open(&md, opts);
	PG_TRY();
	{
		ShardTenantSpec *spec = shard_tenant_spec(opts->serverid);

		finish_dead_moves(opts, &md, spec, tenant);
		st = read_state(&md, tenant);
		(void) shard_or_error(opts, target);

		/* moved before and not cleaned up: clean up first, or say how */
		if (strcmp(st->status, "DONE") == 0 && st->target_shard_id != NULL &&
			strcmp(st->target_shard_id, st->shard_id) != 0 &&
			strcmp(st->target_shard_id, target) != 0)
		{
			clean_before_move(opts, &md, tenant, st, spec);
			st = read_state(&md, tenant);
		}

		if (strcmp(st->status, "MIGRATING") == 0)
		{
			if (st->target_shard_id == NULL ||
				strcmp(st->target_shard_id, target) != 0 ||
				st->move_id == 0 || strcmp(st->move_target, target) != 0)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("tenant \"%s\" is being moved to shard \"%s\"",
								tenant, st->target_shard_id ? st->target_shard_id : ""),
						 st->move_id == 0 ?
						 errdetail("Its row of \"shard_map\" says MIGRATING, and no move of this server started it.") : 0,
						 errhint("Run tenant_move() with that shard to resume the move, or tenant_move_abort() to cancel it.")));
			move_id = st->move_id;
			ereport(NOTICE,
					(errmsg("tenant \"%s\": resuming move %lld from shard \"%s\" (phase %s)",
							tenant, (long long) move_id, st->shard_id,
							st->move_phase)));
			setup_shards(&ms, opts, tenant, move_id, st->shard_id, target);
			move_discover_tables(&ms, spec, true);
			run_move(&ms, &md);
		}
		else if (strcmp(st->status, "DONE") == 0 && st->target_shard_id != NULL &&
				 strcmp(st->target_shard_id, target) == 0)
		{
			/* moved already, this move perhaps killed right after its flip */
			ereport(NOTICE,
					(errmsg("tenant \"%s\" has moved to shard \"%s\" already",
							tenant, target)));
			if (st->move_id != 0 && strcmp(st->move_target, target) == 0)
				move_id = st->move_id;
		}
		else
		{
			const char *source = strcmp(st->status, "DONE") == 0 &&
			st->target_shard_id ? st->target_shard_id : st->shard_id;
			instr_time	clock;

			if (strcmp(st->status, "ACTIVE") != 0 && strcmp(st->status, "DONE") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("tenant \"%s\" has status \"%s\" in directory \"%s\"",
								tenant, st->status, opts->directory),
						 errdetail("A move starts from status ACTIVE.")));
			if (strcmp(source, target) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("tenant \"%s\" is already on shard \"%s\"",
								tenant, target)));
			INSTR_TIME_SET_CURRENT(clock);
			setup_shards(&ms, opts, tenant, 0, source, target);
			move_discover_tables(&ms, spec, true);
			step_done(tenant, "discovery", &clock);
			refuse_new_move(&ms);
			step_done(tenant, "checks", &clock);
			move_id = start_move(&md, tenant, source, target);
			ms.move_id = move_id;
			ms.prefix = psprintf("_ssfdw_move_" INT64_FORMAT "_", move_id);
			shard_directory_changed(shard_directory_get(opts));
			move_pause(tenant, "start");
			run_move(&ms, &md);
		}
	}
	PG_CATCH();
	{
		char	   *message = error_message(cxt);

		move_close_shards(&ms);
		record_error(&md, move_id, message);
		dir_close(&md);
		PG_RE_THROW();
	}
	PG_END_TRY();
	move_close_shards(&ms);
	dir_close(&md);
	PG_RETURN_INT64(move_id);
}

/*
 * finish_in_directory
 *		The last step of an abort or a cleanup: shard_map set by set_sql
 *		(where where_sql holds), the move's row set to phase, in one
 *		transaction.
 */
static void
finish_in_directory(MoveDir *md, const char *tenant, int64 move_id,
					const char *set_sql, const char *where_sql,
					const char *phase, const char *stamp_col)
{
	const char *vals[1] = {tenant};

	dir_exec(md, "BEGIN IMMEDIATE",
			 gettext_noop("could not update the tenant in directory \"%s\""));
	dir_run(md, map_update_sql(md, set_sql, where_sql), vals, 1, NULL, 0,
			NULL,
			gettext_noop("could not update the tenant in directory \"%s\""));
	if (move_id > 0)
	{
		const char *pvals[1] = {phase};
		int64		ints[1] = {move_id};

		dir_run(md, psprintf("UPDATE tenant_moves SET phase = ?1, %s = " DIR_NOW
							 ", error = NULL WHERE move_id = ?2", stamp_col),
				pvals, 1, ints, 1, NULL,
				gettext_noop("could not update the tenant in directory \"%s\""));
	}
	dir_exec(md, "COMMIT",
			 gettext_noop("could not update the tenant in directory \"%s\""));
}

/*
 * shard_tenant_move_abort
 *		tenant_move_abort(server, tenant): cancel a move that has not cut
 *		over, whether it failed, was killed or is resumable: the partial
 *		copy is deleted from the target, the triggers, log and fence from
 *		the source, and shard_map is ACTIVE on the source again, last, so
 *		that readers skip the copy until it is gone.  Returns false when
 *		there is no move to abort.
 */
Datum
shard_tenant_move_abort(PG_FUNCTION_ARGS)
{
	ShardServerOptions *opts;
	char	   *tenant;
	MoveDir		md;
	MoveState  *st;
	MoveShards	ms;
	bool		aborted = false;

	check_call(fcinfo, 2, "tenant_move_abort()",
			   gettext_noop("permission denied to abort a move"),
			   gettext_noop("Only roles with privileges of the \"%s\" role may abort a move."));
	opts = shard_admin_server(PG_GETARG_NAME(0));
	tenant = shard_tenant_id_text(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	lock_tenant(opts, tenant);

	memset(&ms, 0, sizeof(ms));
	dir_open(&md, opts);
	PG_TRY();
	{
		finish_dead_moves(opts, &md, shard_tenant_spec(opts->serverid),
						  NULL);
		st = read_state(&md, tenant);
		if (strcmp(st->status, "DONE") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the move of tenant \"%s\" to shard \"%s\" has cut over",
							tenant, st->target_shard_id ? st->target_shard_id : ""),
					 errhint("tenant_cleanup() removes what is left on shard \"%s\"; tenant_move() can move the tenant back after it.",
							 st->shard_id)));
		if (strcmp(st->status, "MIGRATING") == 0 && st->target_shard_id != NULL)
		{
			int64		removed;

			setup_shards(&ms, opts, tenant, st->move_id, st->shard_id,
						 st->target_shard_id);
			move_discover_tables(&ms, shard_tenant_spec(opts->serverid),
								 false);
			removed = move_delete_rows(&ms, ms.dst, false);
			move_drop_objects(&ms, "");
			move_pause(tenant, "abort");
			finish_in_directory(&md, tenant, st->move_id,
								"status = 'ACTIVE', target_shard_id = NULL",
								"tenant_id = ?1 AND status = 'MIGRATING'",
								"aborted", "finished_at");
			shard_directory_changed(shard_directory_get(opts));
			ereport(NOTICE,
					(errmsg_plural("tenant \"%s\": move to shard \"%s\" aborted; deleted %lld copied row there",
								   "tenant \"%s\": move to shard \"%s\" aborted; deleted %lld copied rows there",
								   removed, tenant, st->target_shard_id,
								   (long long) removed)));
			aborted = true;
		}
		else
			ereport(NOTICE,
					(errmsg("tenant \"%s\" is not being moved", tenant)));
	}
	PG_CATCH();
	{
		move_close_shards(&ms);
		dir_close(&md);
		PG_RE_THROW();
	}
	PG_END_TRY();
	move_close_shards(&ms);
	dir_close(&md);
	PG_RETURN_BOOL(aborted);
}

/*
 * cleanup_one
 *		tenant_cleanup of one tenant whose move has cut over: once every
 *		transaction that began before the flip has ended, the source's
 *		capture triggers go, its rows of the tenant are deleted in batches
 *		(through the fence), then the fence and log go, space is reclaimed,
 *		and last shard_map names the new shard alone.  Returns the rows
 *		deleted.
 */
static int64
cleanup_one(ShardServerOptions *opts, MoveDir *md, const char *tenant,
			MoveState *st, ShardTenantSpec *spec, bool vacuum)
{
	MoveShards	ms;
	int64		removed = 0;

	(void) wait_for_older_readers(tenant, st->shard_id, st->move_finished_at,
								  true, NULL);
	memset(&ms, 0, sizeof(ms));
	PG_TRY();
	{
		setup_shards(&ms, opts, tenant, st->move_id, st->shard_id,
					 st->target_shard_id);
		move_discover_tables(&ms, spec, false);
		move_drop_objects(&ms, "cap_");
		removed = move_delete_rows(&ms, ms.src, true);
		move_drop_objects(&ms, "");
		if (vacuum)
			move_reclaim_space(&ms, ms.src, ms.source->shard_id);
		move_pause(tenant, "cleanup");
		finish_in_directory(md, tenant, st->move_id,
							"shard_id = target_shard_id, status = 'ACTIVE', target_shard_id = NULL",
							"tenant_id = ?1 AND status = 'DONE' AND target_shard_id IS NOT NULL",
							"cleaned", "cleaned_at");
	}
	PG_CATCH();
	{
		move_close_shards(&ms);
		PG_RE_THROW();
	}
	PG_END_TRY();
	move_close_shards(&ms);
	return removed;
}

/*
 * shard_tenant_cleanup
 *		tenant_cleanup(server [, tenant [, vacuum]]): remove from the old
 *		shard what moves that cut over left there: the tenant's rows, the
 *		capture triggers, the log and the fence, and reclaim the space
 *		(vacuum), each tenant once no transaction that began before its
 *		flip is running (wait_for_older_readers).  Moves stopped between
 *		their fence and their flip are finished first.  Without a tenant,
 *		every tenant with status DONE.  One row per tenant cleaned up.
 */
Datum
shard_tenant_cleanup(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardServerOptions *opts;
	MoveDir		md;
	List	   *tenants = NIL;
	bool		vacuum = PG_ARGISNULL(2) ? true : PG_GETARG_BOOL(2);
	ListCell   *lc;

	check_call(fcinfo, 1, "tenant_cleanup()",
			   gettext_noop("permission denied to clean up after a move"),
			   gettext_noop("Only roles with privileges of the \"%s\" role may clean up after a move."));
	opts = shard_admin_server(PG_GETARG_NAME(0));
	InitMaterializedSRF(fcinfo, 0);
	dir_open(&md, opts);
	PG_TRY();
	{
		ShardTenantSpec *spec = shard_tenant_spec(opts->serverid);

		finish_dead_moves(opts, &md, spec, NULL);
		if (!PG_ARGISNULL(1))
			tenants = list_make1(shard_tenant_id_text(text_to_cstring(PG_GETARG_TEXT_PP(1))));
		else
		{
			sqlite3_stmt *stmt;
			int			rc;

			rc = dir_run(&md, "SELECT tenant_id FROM shard_map WHERE status = 'DONE' "
						 "AND target_shard_id IS NOT NULL ORDER BY tenant_id",
						 NULL, 0, NULL, 0, &stmt,
						 gettext_noop("could not list the moved tenants in directory \"%s\""));
			for (; rc == SQLITE_ROW; rc = sqlite3_step(stmt))
				tenants = lappend(tenants, column_dup(stmt, 0));
			sqlite3_finalize(stmt);
		}
		foreach(lc, tenants)
		{
			char	   *tenant = lfirst(lc);
			MoveState  *st;
			Datum		values[3];
			bool		nulls[3] = {false, false, false};

			lock_tenant(opts, tenant);
			st = read_state(&md, tenant);
			if (strcmp(st->status, "MIGRATING") == 0)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("tenant \"%s\" is being moved to shard \"%s\"",
								tenant, st->target_shard_id ? st->target_shard_id : ""),
						 errhint("Finish the move with tenant_move(), or cancel it with tenant_move_abort().")));
			if (strcmp(st->status, "DONE") != 0 || st->target_shard_id == NULL ||
				strcmp(st->target_shard_id, st->shard_id) == 0)
			{
				ereport(NOTICE,
						(errmsg("tenant \"%s\" has nothing to clean up", tenant)));
				continue;
			}
			values[0] = CStringGetTextDatum(tenant);
			values[1] = CStringGetTextDatum(st->shard_id);
			values[2] = Int64GetDatum(cleanup_one(opts, &md, tenant, st,
												  spec, vacuum));
			shard_directory_changed(shard_directory_get(opts));
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values,
								 nulls);
		}
	}
	PG_CATCH();
	{
		dir_close(&md);
		PG_RE_THROW();
	}
	PG_END_TRY();
	dir_close(&md);
	return (Datum) 0;
}

/*
 * time_datum
 *		A time the directory stores (seconds since 1970) as timestamptz.
 */
static Datum
time_datum(sqlite3_stmt *stmt, int col, bool *isnull)
{
	*isnull = (sqlite3_column_type(stmt, col) == SQLITE_NULL);
	if (*isnull)
		return (Datum) 0;
	return DirectFunctionCall1(float8_timestamptz,
							   Float8GetDatum(sqlite3_column_double(stmt, col)));
}

/*
 * lift_dead_fences
 *		What tenant_moves() does first: for every moving tenant of the
 *		server whose move stopped between its fence and its flip, what a
 *		statement routed to it would do (shard_move_recover_routed).  A
 *		listing needs only USAGE, so it lifts the fence rather than run the
 *		move; not while this transaction writes the directory.
 */
static void
lift_dead_fences(ShardServerOptions *opts)
{
	ShardDirectory *dir = shard_directory_get(opts);
	sqlite3    *db = shard_directory_handle(dir);
	sqlite3_stmt *stmt;
	uint64		generation;
	List	   *moving = NIL;
	ListCell   *lc;

	if (shard_conn_directory_writer(opts->directory, &generation) != NULL ||
		sqlite3_prepare_v2(db, "SELECT tenant_id, shard_id, target_shard_id "
						   "FROM shard_map WHERE status = 'MIGRATING' "
						   "AND target_shard_id IS NOT NULL ORDER BY tenant_id",
						   -1, &stmt, NULL) != SQLITE_OK)
		return;
	while (sqlite3_step(stmt) == SQLITE_ROW)
		moving = lappend(moving, list_make3(column_dup(stmt, 0),
											column_dup(stmt, 1),
											column_dup(stmt, 2)));
	sqlite3_finalize(stmt);
	foreach(lc, moving)
	{
		List	   *row = lfirst(lc);

		shard_move_recover_routed(dir, opts, linitial(row), lsecond(row),
								  lthird(row));
	}
}

/*
 * shard_tenant_moves
 *		tenant_moves(server): every move the directory records, running or
 *		finished, oldest first: phase, rows copied, backlog, how long the
 *		source's write lock was held, times and the last error.  Empty for
 *		a directory where no move ever ran.  A move stopped between its
 *		fence and its flip has its fence lifted first (lift_dead_fences).
 */
Datum
shard_tenant_moves(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardServerOptions *opts = shard_admin_server(PG_GETARG_NAME(0));
	sqlite3    *db;
	sqlite3_stmt *stmt;
	int			rc;

	lift_dead_fences(opts);
	db = shard_directory_handle(shard_directory_get(opts));
	InitMaterializedSRF(fcinfo, 0);
	rc = sqlite3_prepare_v2(db, "SELECT move_id, tenant_id, source_shard_id, "
							"target_shard_id, phase, rows_copied, backlog, lock_ms, "
							"started_at, finished_at, cleaned_at, error "
							"FROM tenant_moves ORDER BY move_id", -1, &stmt, NULL);
	if (rc != SQLITE_OK)
	{
		/* no table: no move has ever run on this directory */
		if (strstr(sqlite3_errmsg(db), "no such table") != NULL)
			return (Datum) 0;
		shard_check_lock_wait(sqlite3_extended_errcode(db), true,
							  opts->directory);
		ereport(ERROR,
				(errcode(shard_sqlite_sqlstate(sqlite3_extended_errcode(db))),
				 errmsg("could not list the moves in directory \"%s\"",
						opts->directory),
				 errdetail_internal("%s", sqlite3_errmsg(db))));
	}
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		Datum		values[12];
		bool		nulls[12];
		int			i;

		memset(nulls, 0, sizeof(nulls));
		values[0] = Int64GetDatum(sqlite3_column_int64(stmt, 0));
		for (i = 1; i <= 4; i++)
			values[i] = CStringGetTextDatum((const char *) sqlite3_column_text(stmt, i));
		for (i = 5; i <= 6; i++)
		{
			nulls[i] = sqlite3_column_type(stmt, i) == SQLITE_NULL;
			values[i] = Int64GetDatum(sqlite3_column_int64(stmt, i));
		}
		nulls[7] = sqlite3_column_type(stmt, 7) == SQLITE_NULL;
		values[7] = Float8GetDatum(sqlite3_column_double(stmt, 7));
		for (i = 8; i <= 10; i++)
			values[i] = time_datum(stmt, i, &nulls[i]);
		nulls[11] = sqlite3_column_type(stmt, 11) == SQLITE_NULL;
		if (!nulls[11])
			values[11] = CStringGetTextDatum((const char *) sqlite3_column_text(stmt, 11));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		ereport(ERROR,
				(errcode(shard_sqlite_sqlstate(rc)),
				 errmsg("could not list the moves in directory \"%s\"",
						opts->directory),
				 errdetail_internal("%s", sqlite3_errmsg(db))));
	return (Datum) 0;
}
