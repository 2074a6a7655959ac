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
 *	6. directory: shard_map DONE.  tenant_cleanup (movecleanup.c) later
 *	   deletes the leftovers, the triggers, the log and the fence.
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
 * source that the directory still names, which nobody has to repair by
 * hand (movecleanup.c: the fence is lifted or the move finished).  A crash
 * anywhere before the fence leaves the source complete and named by the
 * directory, with a partial copy that readers skip; running the move
 * again restarts the copy (the triggers and the log stay), and
 * tenant_move_abort removes the copy, the triggers and the log.
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

#include "access/xact.h"
#include "common/hashfn.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "control/move.h"

PG_FUNCTION_INFO_V1(shard_tenant_move);
PG_FUNCTION_INFO_V1(shard_tenant_move_abort);
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

/*
 * shard_move_define_gucs
 *		Define the move's settings and install its recovery of routed
 *		tenants into the directory (shard_migrating_hook); called from
 *		_PG_init.
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
	shard_migrating_hook = shard_move_recover_routed;
}

/*
 * move_pause
 *		The test hook: at the point sqlite_shard_fdw.move_pause_at names,
 *		say so and wait until cancelled or killed, so that a test can kill
 *		the backend at a known step; or, with sqlite_shard_fdw.move_pause_ms,
 *		wait that long and go on, so that a test can write meanwhile.
 */
void
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
 *		move_dir_exec and move_dir_run).
 */
static void
dir_failed(MoveDir *md, const char *fmt)
{
	shard_directory_error(sqlite3_extended_errcode(md->db),
						  md->opts->directory, sqlite3_errmsg(md->db), fmt,
						  md->opts->directory);
}

/*
 * move_dir_exec
 *		Run SQL without results on the directory (BEGIN, COMMIT, DDL).
 */
void
move_dir_exec(MoveDir *md, const char *sql, const char *fmt)
{
	if (sqlite3_exec(md->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		dir_failed(md, fmt);
}

/*
 * move_dir_run
 *		Prepare a directory statement, bind vals (NULL text binds NULL) and
 *		ints after them, and step it once.  With out, the statement is left
 *		for the caller (to read its row and finalize); returns the step's
 *		result.
 */
int
move_dir_run(MoveDir *md, const char *sql, const char **vals, int nvals,
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
 * move_column_dup
 *		A text column as a palloc'd string, or NULL.
 */
char *
move_column_dup(sqlite3_stmt *stmt, int col)
{
	const char *s = (const char *) sqlite3_column_text(stmt, col);

	return s ? pstrdup(s) : NULL;
}

/*
 * move_dir_open
 *		Open the move's own read-write handle on the directory and create
 *		tenant_moves there if it is missing.  Its writes commit at once,
 *		outside the PostgreSQL transaction.
 */
void
move_dir_open(MoveDir *md, ShardServerOptions *opts)
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
				(errcode(shard_write_access_sqlstate(opts->directory, rc,
												 shard_sqlite_sqlstate(rc))),
				 errmsg("could not open directory \"%s\" of server \"%s\" for writing",
						opts->directory, opts->servername),
				 errdetail_internal("%s", errbuf),
				 shard_errhint_write_access(opts->directory, rc)));
	}
	PG_TRY();
	{
		move_dir_exec(md, "BEGIN IMMEDIATE",
					  gettext_noop("could not record the move in directory \"%s\""));
		move_dir_exec(md, moves_schema,
					  gettext_noop("could not create table \"tenant_moves\" in directory \"%s\""));
		move_dir_exec(md, "COMMIT",
					  gettext_noop("could not create table \"tenant_moves\" in directory \"%s\""));
		rc = move_dir_run(md, "SELECT count(*) FILTER (WHERE name = 'updated_at'), "
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
 * move_dir_close
 *		Close the move's directory handle, rolling back what an error left
 *		open.
 */
void
move_dir_close(MoveDir *md)
{
	if (md->db != NULL)
	{
		move_rollback(md->db);
		shardio_close(md->db);
		md->db = NULL;
	}
}

/*
 * move_read_state
 *		The tenant's row of shard_map and its latest move that is neither
 *		aborted nor cleaned up; an error for a tenant the directory lacks.
 */
MoveState *
move_read_state(MoveDir *md, const char *tenant)
{
	MoveState  *st;
	sqlite3_stmt *stmt;
	const char *vals[1] = {tenant};

	if (move_dir_run(md, "SELECT shard_id, status, target_shard_id FROM shard_map "
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
	st->shard_id = move_column_dup(stmt, 0);
	st->status = move_column_dup(stmt, 1);
	st->target_shard_id = move_column_dup(stmt, 2);
	sqlite3_finalize(stmt);
	if (st->status == NULL)
		st->status = pstrdup("ACTIVE");

	if (move_dir_run(md, "SELECT move_id, source_shard_id, target_shard_id, phase, "
					 "coalesce(finished_at, 0) FROM tenant_moves WHERE tenant_id = ? "
					 "AND phase NOT IN ('aborted', 'cleaned') "
					 "ORDER BY move_id DESC LIMIT 1", vals, 1, NULL, 0, &stmt,
					 gettext_noop("could not look up the tenant's moves in directory \"%s\"")) == SQLITE_ROW)
	{
		st->move_id = sqlite3_column_int64(stmt, 0);
		st->move_source = move_column_dup(stmt, 1);
		st->move_target = move_column_dup(stmt, 2);
		st->move_phase = move_column_dup(stmt, 3);
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

	move_dir_run(md, "UPDATE tenant_moves SET phase = ?1, "
				 "rows_copied = CASE WHEN ?2 >= 0 THEN ?2 ELSE rows_copied END, "
				 "backlog = CASE WHEN ?3 >= 0 THEN ?3 ELSE backlog END, "
				 "error = NULL, pid = ?5 WHERE move_id = ?4",
				 vals, 1, ints, 4, NULL,
				 gettext_noop("could not record the move's progress in directory \"%s\""));
}

/*
 * move_record_error
 *		Keep a failed move's error in tenant_moves, as well as can be: the
 *		original error is what the caller sees, so a failure here is
 *		swallowed.
 */
void
move_record_error(MoveDir *md, int64 move_id, const char *message)
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
 * move_lock_tenant
 *		Take the advisory lock that one move, abort or cleanup of a tenant
 *		holds at a time, for the rest of the transaction (the function
 *		call), or refuse at once when another session has it.
 */
void
move_lock_tenant(ShardServerOptions *opts, const char *tenant)
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
 * move_try_lock_tenant
 *		Take the tenant's advisory lock if nobody holds it, for as long as
 *		the caller needs (move_unlock_tenant releases it).  This is how a move
 *		whose session is gone is told from one that runs: every move, abort
 *		and cleanup holds the lock from before its first change to its end,
 *		and the server releases it when the backend ends, however it ends
 *		(a pid recorded in tenant_moves could be reused, and cannot be
 *		checked from another database).  False when another session holds
 *		it, or this one does (a move of this statement).
 */
bool
move_try_lock_tenant(ShardServerOptions *opts, const char *tenant)
{
	LOCKTAG		tag;

	tenant_lock_tag(&tag, opts, tenant);
	if (LockHeldByMe(&tag, ExclusiveLock))
		return false;
	return LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_OK;
}

/*
 * move_unlock_tenant
 *		Release the lock move_try_lock_tenant took.
 */
void
move_unlock_tenant(ShardServerOptions *opts, const char *tenant)
{
	LOCKTAG		tag;

	tenant_lock_tag(&tag, opts, tenant);
	LockRelease(&tag, ExclusiveLock, false);
}

/*
 * move_check_call
 *		What every move function (fname) checks first: no null argument,
 *		the file privileges of anything that writes the server's files
 *		(message and detail as shard_require_file_privilege takes them), and
 *		no transaction block, since every step commits at once whatever the
 *		transaction does.
 */
void
move_check_call(FunctionCallInfo fcinfo, int nargs, const char *fname,
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
 * move_setup_shards
 *		Fill in a MoveShards for a move of tenant from source to target and
 *		open its handles (closed by move_close_shards on every path).
 */
void
move_setup_shards(MoveShards *ms, ShardServerOptions *opts, const char *tenant,
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
		move_dir_exec(md, "BEGIN IMMEDIATE",
					  gettext_noop("could not flip the tenant's shard in directory \"%s\""));
		move_dir_run(md, map_update_sql(md, "status = 'DONE'",
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
		move_dir_exec(md, "COMMIT",
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
 * move_run
 *		Steps 2 to 6 of a move whose directory state is MIGRATING: a new
 *		one, or one resumed after a crash or an error.  The shards are open.
 */
void
move_run(MoveShards *ms, MoveDir *md)
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
 * move_error_message
 *		Inside PG_CATCH: the error's message, with the error state kept.
 */
char *
move_error_message(MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ErrorData  *edata = CopyErrorData();

	MemoryContextSwitchTo(old);
	return edata->message;
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

	move_dir_exec(md, "BEGIN IMMEDIATE",
				  gettext_noop("could not start the move in directory \"%s\""));
	move_dir_run(md, map_update_sql(md, "status = 'MIGRATING', target_shard_id = ?3",
									"tenant_id = ?1 AND shard_id = ?2 "
									"AND coalesce(status, 'ACTIVE') = 'ACTIVE'"),
				 vals, 3, NULL, 0, NULL,
				 gettext_noop("could not start the move in directory \"%s\""));
	if (sqlite3_changes(md->db) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("tenant \"%s\" changed in directory \"%s\" while the move was checked",
						tenant, md->opts->directory)));
	move_dir_run(md, "INSERT INTO tenant_moves (tenant_id, source_shard_id, "
				 "target_shard_id, phase, started_at) VALUES (?, ?, ?, 'start', "
				 DIR_NOW ")", vals, 3, NULL, 0, NULL,
				 gettext_noop("could not start the move in directory \"%s\""));
	move_id = sqlite3_last_insert_rowid(md->db);
	move_dir_exec(md, "COMMIT",
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

/*
 * shard_move_refuse_file_per_tenant
 *		Refuse a move of tenant (NULL: of any tenant, a rebalancing or a
 *		cleanup) on a server of layout 'file_per_tenant', where each file
 *		is one tenant's: there is no shard to move a tenant to, and a move
 *		would map two tenants to one file.
 */
void
shard_move_refuse_file_per_tenant(ShardServerOptions *opts,
								  const char *tenant)
{
	if (!opts->file_per_tenant)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 tenant ?
			 errmsg("cannot move tenant \"%s\": server \"%s\" keeps one file per tenant",
					tenant, opts->servername) :
			 errmsg("cannot move tenants of server \"%s\": it keeps one file per tenant",
					opts->servername),
			 errdetail("A tenant's file is the tenant; there is no shard to move it to."),
			 errhint("Moves, their cleanup and rebalancing apply to servers whose shards hold many tenants.")));
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

	move_check_call(fcinfo, 3, "tenant_move()",
					gettext_noop("permission denied to move a tenant"),
					gettext_noop("Only roles with privileges of the \"%s\" role may move a tenant."));
	opts = shard_admin_server(PG_GETARG_NAME(0));
	tenant = shard_tenant_id_text(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	target = text_to_cstring(PG_GETARG_TEXT_PP(2));
	shard_move_refuse_file_per_tenant(opts, tenant);
	move_lock_tenant(opts, tenant);

	memset(&ms, 0, sizeof(ms));
	move_dir_open(&md, opts);
	PG_TRY();
	{
		ShardTenantSpec *spec = shard_tenant_spec(opts->serverid);

		move_finish_dead_moves(opts, &md, spec, tenant);
		st = move_read_state(&md, tenant);
		(void) shard_or_error(opts, target);

		/* moved before and not cleaned up: clean up first, or say how */
		if (strcmp(st->status, "DONE") == 0 && st->target_shard_id != NULL &&
			strcmp(st->target_shard_id, st->shard_id) != 0 &&
			strcmp(st->target_shard_id, target) != 0)
		{
			move_clean_before_move(opts, &md, tenant, st, spec);
			st = move_read_state(&md, tenant);
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
			move_setup_shards(&ms, opts, tenant, move_id, st->shard_id, target);
			move_discover_tables(&ms, spec, true);
			move_run(&ms, &md);
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
			move_setup_shards(&ms, opts, tenant, 0, source, target);
			move_discover_tables(&ms, spec, true);
			step_done(tenant, "discovery", &clock);
			refuse_new_move(&ms);
			step_done(tenant, "checks", &clock);
			move_id = start_move(&md, tenant, source, target);
			ms.move_id = move_id;
			ms.prefix = psprintf("_ssfdw_move_" INT64_FORMAT "_", move_id);
			shard_directory_changed(shard_directory_get(opts));
			move_pause(tenant, "start");
			move_run(&ms, &md);
		}
	}
	PG_CATCH();
	{
		char	   *message = move_error_message(cxt);

		move_close_shards(&ms);
		move_record_error(&md, move_id, message);
		move_dir_close(&md);
		PG_RE_THROW();
	}
	PG_END_TRY();
	move_close_shards(&ms);
	move_dir_close(&md);
	PG_RETURN_INT64(move_id);
}

/*
 * move_finish_in_directory
 *		The last step of an abort or a cleanup: shard_map set by set_sql
 *		(where where_sql holds), the move's row set to phase, in one
 *		transaction.
 */
void
move_finish_in_directory(MoveDir *md, const char *tenant, int64 move_id,
						 const char *set_sql, const char *where_sql,
						 const char *phase, const char *stamp_col)
{
	const char *vals[1] = {tenant};

	move_dir_exec(md, "BEGIN IMMEDIATE",
				  gettext_noop("could not update the tenant in directory \"%s\""));
	move_dir_run(md, map_update_sql(md, set_sql, where_sql), vals, 1, NULL, 0,
				 NULL,
				 gettext_noop("could not update the tenant in directory \"%s\""));
	if (move_id > 0)
	{
		const char *pvals[1] = {phase};
		int64		ints[1] = {move_id};

		move_dir_run(md, psprintf("UPDATE tenant_moves SET phase = ?1, %s = " DIR_NOW
								  ", error = NULL WHERE move_id = ?2", stamp_col),
					 pvals, 1, ints, 1, NULL,
					 gettext_noop("could not update the tenant in directory \"%s\""));
	}
	move_dir_exec(md, "COMMIT",
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

	move_check_call(fcinfo, 2, "tenant_move_abort()",
					gettext_noop("permission denied to abort a move"),
					gettext_noop("Only roles with privileges of the \"%s\" role may abort a move."));
	opts = shard_admin_server(PG_GETARG_NAME(0));
	tenant = shard_tenant_id_text(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	shard_move_refuse_file_per_tenant(opts, tenant);
	move_lock_tenant(opts, tenant);

	memset(&ms, 0, sizeof(ms));
	move_dir_open(&md, opts);
	PG_TRY();
	{
		move_finish_dead_moves(opts, &md, shard_tenant_spec(opts->serverid),
							   NULL);
		st = move_read_state(&md, tenant);
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

			move_setup_shards(&ms, opts, tenant, st->move_id, st->shard_id,
							  st->target_shard_id);
			move_discover_tables(&ms, shard_tenant_spec(opts->serverid),
								 false);
			removed = move_delete_rows(&ms, ms.dst, false);
			move_drop_objects(&ms, "");
			move_pause(tenant, "abort");
			move_finish_in_directory(&md, tenant, st->move_id,
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
		move_dir_close(&md);
		PG_RE_THROW();
	}
	PG_END_TRY();
	move_close_shards(&ms);
	move_dir_close(&md);
	PG_RETURN_BOOL(aborted);
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
 * shard_tenant_moves
 *		tenant_moves(server): every move the directory records, running or
 *		finished, oldest first: phase, rows copied, backlog, how long the
 *		source's write lock was held, times and the last error.  Empty for
 *		a directory where no move ever ran.  A move stopped between its
 *		fence and its flip has its fence lifted first (move_lift_dead_fences).
 */
Datum
shard_tenant_moves(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardServerOptions *opts = shard_admin_server(PG_GETARG_NAME(0));
	sqlite3    *db;
	sqlite3_stmt *stmt;
	int			rc;

	move_lift_dead_fences(opts);
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
