/*-------------------------------------------------------------------------
 *
 * movecleanup.c
 *		  What tenant moves leave behind: the fence of a move whose session
 *		  died, and the old shard's rows after a cutover
 *
 * A move (move.c) commits its fence on the source before it flips the
 * directory to the target: a crash between them leaves a fenced source
 * that the directory still names, so the tenant's writes fail (they are
 * not lost) until the move is finished or the fence lifted, which nobody
 * has to do by hand: the next statement routed to the tenant lifts the
 * fence (cheap: the move becomes resumable, lift_dead_fence; the directory
 * calls shard_move_recover_routed through shard_migrating_hook), and the
 * next call of a move function that writes finishes the move
 * (finish_dead_move) as the move run again does: it sees the fence, and
 * only verifies and flips.  A move's session is known to be gone when
 * nobody holds the tenant's advisory lock (move_try_lock_tenant).
 *
 * tenant_cleanup deletes the old shard's rows only once every transaction
 * that began before the flip has ended (wait_for_older_readers): a
 * statement routes by the directory as it was when it started.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/xact.h"
#include "funcapi.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/sinvaladt.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "control/move.h"

PG_FUNCTION_INFO_V1(shard_tenant_cleanup);

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
	move_dir_exec(md, "BEGIN IMMEDIATE",
				  gettext_noop("could not record the move's progress in directory \"%s\""));
	move_dir_run(md, "UPDATE tenant_moves SET phase = 'replay', pid = NULL, error = ?4 "
				 "WHERE move_id = ?5 AND phase <> 'done' AND EXISTS (SELECT 1 "
				 "FROM shard_map WHERE tenant_id = ?1 AND shard_id = ?2 "
				 "AND status = 'MIGRATING' AND target_shard_id = ?3)",
				 vals, 4, ints, 1, NULL,
				 gettext_noop("could not record the move's progress in directory \"%s\""));
	claimed = sqlite3_changes(md->db) == 1;
	move_dir_exec(md, "COMMIT",
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
			move_dir_open(&md, opts);
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
		move_dir_close(&md);
		PG_RE_THROW();
	}
	PG_END_TRY();
	move_close_shards(&ms);
	move_dir_close(&md);
	if (lifted)
		ereport(NOTICE,
				(errmsg("tenant \"%s\": its move %lld to shard \"%s\" stopped between the fence and the flip; shard \"%s\" takes its writes again",
						tenant, (long long) move_id, target, source),
				 errhint("Run tenant_move() to finish the move, or tenant_move_abort() to cancel it.")));
	return lifted;
}

/*
 * shard_move_recover_routed
 *		Called by the directory, as its shard_migrating_hook, when a
 *		statement routes a tenant it has just read as MIGRATING (so once
 *		per change of the directory and backend): when no session holds the
 *		tenant's lock, the move stopped, and a fence it left is lifted
 *		(lift_dead_fence).  While a move runs, its session holds the lock
 *		and this costs one lock table probe.  A session that cannot have
 *		the lock at once (another routing statement lifting the fence)
 *		routes as the directory says.
 */
void
shard_move_recover_routed(ShardDirectory *dir, ShardServerOptions *opts,
						  const char *tenant, const char *source,
						  const char *target)
{
	if (source == NULL || target == NULL ||
		!move_try_lock_tenant(opts, tenant))
		return;
	(void) lift_dead_fence(dir, opts, tenant, source, target, NULL);
	move_unlock_tenant(opts, tenant);
}

/*
 * move_lift_dead_fences
 *		What tenant_moves() does first: for every moving tenant of the
 *		server whose move stopped between its fence and its flip, what a
 *		statement routed to it would do (shard_move_recover_routed).  A
 *		listing needs only USAGE, so it lifts the fence rather than run the
 *		move; not while this transaction writes the directory.
 */
void
move_lift_dead_fences(ShardServerOptions *opts)
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
		moving = lappend(moving, list_make3(move_column_dup(stmt, 0),
											move_column_dup(stmt, 1),
											move_column_dup(stmt, 2)));
	sqlite3_finalize(stmt);
	foreach(lc, moving)
	{
		List	   *row = lfirst(lc);

		shard_move_recover_routed(dir, opts, linitial(row), lsecond(row),
								  lthird(row));
	}
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
	MoveState  *st = move_read_state(md, tenant);
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
		move_setup_shards(&ms, opts, tenant, st->move_id, st->shard_id,
						  st->target_shard_id);
		if (move_fence_present(&ms))
		{
			ereport(NOTICE,
					(errmsg("tenant \"%s\": finishing its move %lld to shard \"%s\", stopped between the fence and the flip",
							tenant, (long long) st->move_id,
							st->target_shard_id)));
			move_discover_tables(&ms, spec, true);
			move_run(&ms, md);
		}
	}
	PG_CATCH();
	{
		char	   *message = move_error_message(cxt);

		move_close_shards(&ms);
		move_record_error(md, st->move_id, message);
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
	st = move_read_state(md, tenant);
	if (strcmp(st->status, "MIGRATING") == 0 && st->target_shard_id != NULL)
		(void) lift_dead_fence(shard_directory_get(opts), opts, tenant,
							   st->shard_id, st->target_shard_id,
							   edata->message);
}

/*
 * move_finish_dead_moves
 *		What every move function that writes does first: finish the moves
 *		of the server's tenants that stopped between their fence and their
 *		flip (finish_or_lift) and whose session is gone: nobody holds the
 *		tenant's lock, or own names the tenant whose lock the caller has
 *		just taken for itself.  Tenants whose lock this session holds for
 *		another reason (an abort's own) are left to the caller.
 */
void
move_finish_dead_moves(ShardServerOptions *opts, MoveDir *md,
					   ShardTenantSpec *spec, const char *own)
{
	List	   *tenants = NIL;
	sqlite3_stmt *stmt;
	ListCell   *lc;
	int			rc;

	rc = move_dir_run(md, "SELECT tenant_id FROM shard_map WHERE status = 'MIGRATING' "
					  "AND target_shard_id IS NOT NULL ORDER BY tenant_id",
					  NULL, 0, NULL, 0, &stmt,
					  gettext_noop("could not list the moving tenants in directory \"%s\""));
	for (; rc == SQLITE_ROW; rc = sqlite3_step(stmt))
		tenants = lappend(tenants, move_column_dup(stmt, 0));
	sqlite3_finalize(stmt);
	foreach(lc, tenants)
	{
		char	   *tenant = lfirst(lc);

		if (own != NULL && strcmp(tenant, own) == 0)
			finish_or_lift(opts, md, tenant, spec);
		else if (move_try_lock_tenant(opts, tenant))
		{
			finish_or_lift(opts, md, tenant, spec);
			move_unlock_tenant(opts, tenant);
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
		move_setup_shards(&ms, opts, tenant, st->move_id, st->shard_id,
						  st->target_shard_id);
		move_discover_tables(&ms, spec, false);
		move_drop_objects(&ms, "cap_");
		removed = move_delete_rows(&ms, ms.src, true);
		move_drop_objects(&ms, "");
		if (vacuum)
			move_reclaim_space(&ms, ms.src, ms.source->shard_id);
		move_pause(tenant, "cleanup");
		move_finish_in_directory(md, tenant, st->move_id,
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
 * move_clean_before_move
 *		A tenant moved before and not cleaned up is moved again: its rows on
 *		the shard it left are deleted first, as tenant_cleanup(server,
 *		tenant) does, when that is safe at once: no transaction that began
 *		before that move's flip is still running (wait_for_older_readers).
 *		Otherwise the move is refused, naming what to run.
 */
void
move_clean_before_move(ShardServerOptions *opts, MoveDir *md,
					   const char *tenant, MoveState *st,
					   ShardTenantSpec *spec)
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

	move_check_call(fcinfo, 1, "tenant_cleanup()",
					gettext_noop("permission denied to clean up after a move"),
					gettext_noop("Only roles with privileges of the \"%s\" role may clean up after a move."));
	opts = shard_admin_server(PG_GETARG_NAME(0));
	shard_move_refuse_file_per_tenant(opts, PG_ARGISNULL(1) ? NULL :
									  text_to_cstring(PG_GETARG_TEXT_PP(1)));
	InitMaterializedSRF(fcinfo, 0);
	move_dir_open(&md, opts);
	PG_TRY();
	{
		ShardTenantSpec *spec = shard_tenant_spec(opts->serverid);

		move_finish_dead_moves(opts, &md, spec, NULL);
		if (!PG_ARGISNULL(1))
			tenants = list_make1(shard_tenant_id_text(text_to_cstring(PG_GETARG_TEXT_PP(1))));
		else
		{
			sqlite3_stmt *stmt;
			int			rc;

			rc = move_dir_run(&md, "SELECT tenant_id FROM shard_map WHERE status = 'DONE' "
							  "AND target_shard_id IS NOT NULL ORDER BY tenant_id",
							  NULL, 0, NULL, 0, &stmt,
							  gettext_noop("could not list the moved tenants in directory \"%s\""));
			for (; rc == SQLITE_ROW; rc = sqlite3_step(stmt))
				tenants = lappend(tenants, move_column_dup(stmt, 0));
			sqlite3_finalize(stmt);
		}
		foreach(lc, tenants)
		{
			char	   *tenant = lfirst(lc);
			MoveState  *st;
			Datum		values[3];
			bool		nulls[3] = {false, false, false};

			move_lock_tenant(opts, tenant);
			st = move_read_state(&md, tenant);
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
		move_dir_close(&md);
		PG_RE_THROW();
	}
	PG_END_TRY();
	move_dir_close(&md);
	return (Datum) 0;
}
