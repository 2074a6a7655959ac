/*-------------------------------------------------------------------------
 *
 * progress.c
 *		  Progress of long fan-outs, visible to other sessions
 *
 * A fan-out over thousands of tenant files can run for minutes.  Each
 * backend publishes the fan-out it is reading (server, foreign table,
 * files done of the total, when it began) in a slot of shared memory, and
 * the function fanout_progress() shows every slot in use, as
 * pg_stat_progress_vacuum shows vacuums.
 *
 * PostgreSQL 15 has no progress command an extension may define, and
 * shared memory can only be reserved while the server starts: the slots
 * exist only when the library is in shared_preload_libraries.  Without
 * that, fan-outs publish nothing (and cost nothing) and fanout_progress()
 * says what is missing.
 *
 * One slot per backend (by its backend id), written only by its backend,
 * read by others without a lock: the writer bumps a change count to an odd
 * value before it writes and to an even value after, and a reader copies a
 * slot until it sees the same even count before and after the copy, as
 * PostgreSQL's own backend status array is read.  A fan-out reports its
 * total when its first file opens, one file done as each file's statement
 * ends, and clears the slot when the scan ends or its transaction aborts.
 * Where a statement reads two fan-outs at once (a join), the slot shows the
 * one begun last.
 *
 * A row shows only to the role that runs the fan-out, to members of
 * pg_read_all_stats, and to superusers: the count of files a scan reads
 * is not another tenant's business.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

/* One backend's fan-out. */
typedef struct ProgressSlot
{
	pg_atomic_uint32 changecount;	/* odd while the backend writes */
	int			pid;			/* 0: no fan-out */
	Oid			dbid;
	Oid			userid;
	Oid			serverid;
	Oid			relid;
	int64		done;
	int64		total;
	TimestampTz started;
} ProgressSlot;

typedef struct ProgressShared
{
	int			nslots;
	ProgressSlot slots[FLEXIBLE_ARRAY_MEMBER];
} ProgressShared;

static ProgressShared *progress_shared = NULL;
static const void *progress_owner = NULL;	/* the scan reported now */
static bool progress_callback_set = false;

#if PG_VERSION_NUM >= 150000
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

PG_FUNCTION_INFO_V1(shard_fanout_progress);

/*
 * progress_size
 *		The bytes of the slots: one per backend.
 */
static Size
progress_size(void)
{
	return add_size(offsetof(ProgressShared, slots),
					mul_size(MaxBackends, sizeof(ProgressSlot)));
}

#if PG_VERSION_NUM >= 150000
/*
 * progress_shmem_request
 *		Reserve the slots while the server starts.
 */
static void
progress_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(progress_size());
}
#endif

/*
 * progress_shmem_startup
 *		Create (or attach to) the slots.
 */
static void
progress_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	progress_shared = ShmemInitStruct("sqlite_shard_fdw fan-out progress",
									  progress_size(), &found);
	if (!found)
	{
		int			i;

		memset(progress_shared, 0, progress_size());
		progress_shared->nslots = MaxBackends;
		for (i = 0; i < MaxBackends; i++)
			pg_atomic_init_u32(&progress_shared->slots[i].changecount, 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * shard_progress_init
 *		From _PG_init: when the library is preloaded, ask for the slots.
 */
void
shard_progress_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
#if PG_VERSION_NUM >= 150000
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = progress_shmem_request;
#else
	RequestAddinShmemSpace(progress_size());
#endif
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = progress_shmem_startup;
}

/*
 * my_slot
 *		This backend's slot, or NULL without shared memory.
 */
static ProgressSlot *
my_slot(void)
{
	if (progress_shared == NULL || MyBackendId < 1 ||
		MyBackendId > progress_shared->nslots)
		return NULL;
	return &progress_shared->slots[MyBackendId - 1];
}

/* Writing a slot: between these two, readers retry. */
static inline void
slot_write_begin(ProgressSlot *slot)
{
	pg_atomic_fetch_add_u32(&slot->changecount, 1);
	pg_write_barrier();
}

static inline void
slot_write_end(ProgressSlot *slot)
{
	pg_write_barrier();
	pg_atomic_fetch_add_u32(&slot->changecount, 1);
}

/*
 * clear_slot
 *		Show no fan-out for this backend.
 */
static void
clear_slot(void)
{
	ProgressSlot *slot = my_slot();

	progress_owner = NULL;
	if (slot == NULL || slot->pid == 0)
		return;
	slot_write_begin(slot);
	slot->pid = 0;
	slot_write_end(slot);
}

/*
 * progress_xact_callback
 *		A transaction that ends clears the slot (an error skipped the end of
 *		the scan).
 */
static void
progress_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT)
		clear_slot();
}

/*
 * shard_progress_begin
 *		A scan (owner) starts reading a fan-out of total files of foreign
 *		table relid on server serverid; nothing when it already did.
 */
void
shard_progress_begin(const void *owner, Oid serverid, Oid relid, int total)
{
	ProgressSlot *slot = my_slot();

	if (slot == NULL || progress_owner == owner)
		return;
	if (!progress_callback_set)
	{
		RegisterXactCallback(progress_xact_callback, NULL);
		progress_callback_set = true;
	}
	progress_owner = owner;
	slot_write_begin(slot);
	slot->pid = MyProcPid;
	slot->dbid = MyDatabaseId;
	slot->userid = GetUserId();
	slot->serverid = serverid;
	slot->relid = relid;
	slot->done = 0;
	slot->total = total;
	slot->started = GetCurrentTimestamp();
	slot_write_end(slot);
}

/*
 * shard_progress_file_done
 *		A file of the fan-out reported now was read to its end.
 */
void
shard_progress_file_done(void)
{
	ProgressSlot *slot = my_slot();

	if (slot == NULL || progress_owner == NULL)
		return;
	slot_write_begin(slot);
	slot->done++;
	slot_write_end(slot);
}

/*
 * shard_progress_end
 *		A scan ends: clear the slot if it shows that scan.
 */
void
shard_progress_end(const void *owner)
{
	if (progress_owner == owner && owner != NULL)
		clear_slot();
}

/*
 * shard_fanout_progress
 *		SQL function fanout_progress(): the fan-outs running now in this
 *		database that the caller may see: pid, server, foreign table, files
 *		done, files in all, when it began.
 */
Datum
shard_fanout_progress(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		all_stats;
	int			i;

	if (progress_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("fan-out progress is not available"),
				 errdetail("The progress of fan-outs is kept in shared memory, which sqlite_shard_fdw can reserve only when the server loads it at start."),
				 errhint("Add sqlite_shard_fdw to \"shared_preload_libraries\" and restart the server.")));

	InitMaterializedSRF(fcinfo, 0);
	all_stats = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	for (i = 0; i < progress_shared->nslots; i++)
	{
		ProgressSlot *slot = &progress_shared->slots[i];
		ProgressSlot copy;
		Datum		values[6];
		bool		nulls[6];
		ForeignServer *server;
		int			tries;

		/* a consistent copy: the same even count before and after */
		for (tries = 0;; tries++)
		{
			uint32		before = pg_atomic_read_u32(&slot->changecount);

			pg_read_barrier();
			memcpy(&copy, slot, sizeof(copy));
			pg_read_barrier();
			if ((before & 1) == 0 &&
				before == pg_atomic_read_u32(&slot->changecount))
				break;
			if (tries > 1000)
			{
				copy.pid = 0;
				break;
			}
			CHECK_FOR_INTERRUPTS();
		}
		if (copy.pid == 0 || copy.dbid != MyDatabaseId)
			continue;
		if (!all_stats && !has_privs_of_role(GetUserId(), copy.userid))
			continue;
		memset(nulls, 0, sizeof(nulls));
		values[0] = Int32GetDatum(copy.pid);
		server = GetForeignServerExtended(copy.serverid, FSV_MISSING_OK);
		if (server != NULL)
			values[1] = CStringGetTextDatum(server->servername);
		else
			nulls[1] = true;
		values[2] = ObjectIdGetDatum(copy.relid);
		values[3] = Int64GetDatum(copy.done);
		values[4] = Int64GetDatum(copy.total);
		values[5] = TimestampTzGetDatum(copy.started);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values,
							 nulls);
	}
	return (Datum) 0;
}
