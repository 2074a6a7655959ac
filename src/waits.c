/*-------------------------------------------------------------------------
 *
 * waits.c
 *		  Wait events the backend reports while shards keep it waiting
 *
 * pg_stat_activity shows what a backend waits for.  This wrapper's backend
 * waits in two places PostgreSQL does not know of: for the fan-out's
 * worker threads to hand over rows, and for another process's lock on a
 * shard or directory file (SQLite's busy handler, which sleeps in steps).
 * Both are reported as wait events of type "Extension": from PostgreSQL
 * 17 on with names of their own, SqliteShardFanout and SqliteShardLock,
 * which the server registers on first use (WaitEventExtensionNew); before
 * 17, PostgreSQL has one event for every extension, named "Extension".
 *
 * Only the backend thread reports.  A worker thread that waits for a lock
 * raises a counter of its fan-out instead (shardio.c), and the backend,
 * waiting for that fan-out, reports SqliteShardLock while the counter is
 * up.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "pgstat.h"
#include "utils/wait_event.h"

#include "compat.h"

/* The events' numbers, once the server gave them (17 on); 0 before. */
static uint32 fanout_event = 0;
static uint32 lock_event = 0;

/*
 * shard_wait_event_fanout
 *		The wait event of a backend waiting for its fan-out's workers.
 */
uint32
shard_wait_event_fanout(void)
{
	return wait_event_extension_compat(fanout_event, "SqliteShardFanout");
}

/*
 * shard_wait_event_lock
 *		The wait event of a backend waiting for another process's lock on
 *		a shard or the directory, itself or through its workers.
 */
uint32
shard_wait_event_lock(void)
{
	return wait_event_extension_compat(lock_event, "SqliteShardLock");
}

/*
 * shard_report_lock_wait
 *		SQLite's busy handler on the backend thread sleeps (waiting 1) or
 *		has slept (0) in a wait for another process's lock (registered
 *		with shardio_set_wait_report by _PG_init).
 *
 * It runs inside SQLite, so it may do nothing that could fail: setting
 * and clearing the wait event only stores a number in shared memory.  The
 * event's number is looked up the first time outside of it, by
 * shard_waits_init, since registering a name can fail.
 */
void
shard_report_lock_wait(int waiting)
{
	if (waiting)
		pgstat_report_wait_start(lock_event != 0 ? lock_event :
								 PG_WAIT_EXTENSION);
	else
		pgstat_report_wait_end();
}

/*
 * shard_waits_init
 *		Look the events' numbers up before the first shard opens, so that
 *		the busy handler finds them ready (a no-op before PostgreSQL 17).
 */
void
shard_waits_init(void)
{
	(void) shard_wait_event_lock();
	(void) shard_wait_event_fanout();
}
