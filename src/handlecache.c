/*-------------------------------------------------------------------------
 *
 * handlecache.c
 *		  The bounds of the cache of SQLite shard handles: which idle handle
 *		  closes, and the descriptors the handles count
 *
 * The cache itself, the handles' transactions and their statements are
 * connection.c's; this file keeps the list of open handles in order of use
 * and the three bounds on the idle ones (see connection.c's header):
 * sqlite_shard_fdw.max_open_shards handles, open_shards_memory, and
 * PostgreSQL's budget of descriptors outside its own file layer
 * (AcquireExternalFD, as postgres_fdw counts its connections), of which
 * FDS_LEFT are left to others.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/xact.h"
#include "lib/ilist.h"
#include "storage/fd.h"
#include "utils/guc.h"

#include "connection_int.h"

/*
 * What a handle costs beyond what SQLite's counters report: the connection,
 * its pager and its lookaside buffer.
 */
#define CONN_BASE_BYTES		(16 * 1024)

/*
 * How many handles in use an eviction passes over, from the least recently
 * used on, before it gives up: under REPEATABLE READ every handle the
 * transaction read keeps its snapshot and may not close.
 */
#define EVICT_SCAN_MAX		1024

/* The handles kept once a statement reads more files than the cache holds. */
#define SCAN_KEEP			64

/*
 * Descriptors of PostgreSQL's budget outside its file layer (a third of
 * max_safe_fds, AcquireExternalFD) that idle handles leave to others.
 */
#define FDS_LEFT			16

/* Every open handle, the least recently used first. */
static dlist_head lru_list = DLIST_STATIC_INIT(lru_list);
static int64 open_mem = 0;		/* sum of the handles' mem */
static int	open_fds = 0;		/* sum of the handles' nfds */

/* GUC: kilobytes the idle handles may hold. */
int			shard_open_shards_memory = 64 * 1024;

/* The statement that reads more files than the cache holds, if any. */
static bool overflow_set = false;
static TimestampTz overflow_stmt;
static int	open_count = 0;

/* Descriptors of the handles scans hold (refcount > 0): never closed. */
static int	held_fds = 0;

/*
 * The most descriptors one handle counts: a database in WAL mode, with its
 * "-wal" and "-shm" files.
 */
#define HANDLE_MAX_FDS		3

/*
 * shard_conn_define_gucs
 *		Define sqlite_shard_fdw.open_shards_memory (from _PG_init).
 */
void
shard_conn_define_gucs(void)
{
	DefineCustomIntVariable("sqlite_shard_fdw.open_shards_memory",
							"Memory the idle SQLite shard handles of a backend may hold.",
							"Beyond it the least recently used idle handles are closed.",
							&shard_open_shards_memory,
							64 * 1024, 1024, INT_MAX,
							PGC_USERSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
}

/*
 * cache_capacity
 *		How many handles the bounds let the cache keep, by the memory the
 *		open handles hold on average (32 kB before any was measured).
 */
static int
cache_capacity(void)
{
	int			cap = Min(shard_max_open_shards, max_safe_fds / 3 - FDS_LEFT);
	int64		per = 32 * 1024;

	if (open_count > 0 && open_mem / open_count > CONN_BASE_BYTES)
		per = open_mem / open_count;
	return (int) Max(1, Min(cap, (int64) shard_open_shards_memory * 1024 / per));
}

/*
 * shard_cache_keep
 *		The handles to keep open: max_open_shards, or SCAN_KEEP in a
 *		statement that reads more files than the cache can hold
 *		(shard_conn_note_fanout).
 */
int
shard_cache_keep(void)
{
	if (overflow_set && overflow_stmt == GetCurrentStatementStartTimestamp())
		return Min(shard_max_open_shards, SCAN_KEEP);
	return shard_max_open_shards;
}

/*
 * shard_conn_note_fanout
 *		A scan of the current statement will read nfiles files.  When the
 *		cache cannot hold them all, the statement reads them through a
 *		cache of SCAN_KEEP handles instead, first closing the least
 *		recently used handles beyond that: every file it opens afresh costs
 *		SQLite a walk of every file the process has open (see shard_cache_evict_idle),
 *		and the files it would keep would only push out each other.  A
 *		fleet the cache holds whole is read with its handles kept.
 */
void
shard_conn_note_fanout(int nfiles)
{
	TimestampTz stmt = GetCurrentStatementStartTimestamp();

	if (open_count == 0 || nfiles <= cache_capacity() ||
		(overflow_set && overflow_stmt == stmt))
		return;
	overflow_set = true;
	overflow_stmt = stmt;
	shard_cache_evict_idle(shard_cache_keep());
}

/*
 * shard_cache_measure
 *		Note what SQLite holds for a handle that has become idle: its page
 *		cache, its schema and its prepared statements, plus CONN_BASE_BYTES.
 *
 * SQLite measures a schema and statements by walking them as though it
 * freed them (several microseconds, more than a routed lookup's read), so
 * they are measured again only when the handle's idle statements are
 * more or fewer than when they last were (a statement prepared, one let
 * go); the page cache, counted cheaply, every time.
 */
void
shard_cache_measure(ShardConn *conn)
{
	int			cur = 0;
	int			high = 0;
	int64		mem;

	if (conn->fixed_mem == 0 ||
		conn->measured_stmts != list_length(conn->stmts))
	{
		static const int ops[] = {SQLITE_DBSTATUS_SCHEMA_USED,
		SQLITE_DBSTATUS_STMT_USED};
		int			i;

		conn->fixed_mem = CONN_BASE_BYTES;
		for (i = 0; i < lengthof(ops); i++)
		{
			cur = 0;
			if (sqlite3_db_status(conn->db, ops[i], &cur, &high, 0) == SQLITE_OK)
				conn->fixed_mem += cur;
		}
		conn->measured_stmts = list_length(conn->stmts);
	}
	mem = conn->fixed_mem;
	cur = 0;
	if (sqlite3_db_status(conn->db, SQLITE_DBSTATUS_CACHE_USED, &cur, &high,
						  0) == SQLITE_OK)
		mem += cur;
	open_mem += mem - conn->mem;
	conn->mem = mem;
}

/*
 * over_bounds
 *		Do the open handles pass the memory or the descriptor bound (see the
 *		file header)?
 */
static bool
over_bounds(void)
{
	return open_mem > (int64) shard_open_shards_memory * 1024 ||
		open_fds > max_safe_fds / 3 - FDS_LEFT;
}

/*
 * may_close
 *		Is nothing using the handle: no scan holds it, no transaction of
 *		the backend keeps it, no statement of it is open?
 */
static bool
may_close(ShardConn *conn)
{
	return conn->refcount == 0 && !conn->xact_scoped &&
		conn->open_stmts == 0;
}

/*
 * shard_cache_evict_idle
 *		Close least recently used idle handles until at most "keep" remain
 *		open and the memory and descriptor bounds hold (handles in use do
 *		not count against them).
 */
void
shard_cache_evict_idle(int keep)
{
	while (open_count > keep || over_bounds())
	{
		dlist_iter	iter;
		ShardConn  *victim = NULL;
		ShardConn  *fallback = NULL;
		int			passed = 0;

		dlist_foreach(iter, &lru_list)
		{
			ShardConn  *conn = dlist_container(ShardConn, lru, iter.cur);

			if (++passed > EVICT_SCAN_MAX)
				break;
			if (!may_close(conn))
				continue;
			if (!conn->in_xact || shard_conn_stale_read(conn))
			{
				victim = conn;
				break;
			}
		}

		/*
		 * Only handles the current statement read are left: the one it
		 * read last goes.  A fan-out over more files than the cache holds
		 * thus keeps the files it read first, for the next fan-out to find
		 * open, rather than closing each file just before it is read again
		 * (least recently used would keep none of them).
		 */
		if (victim == NULL)
		{
			passed = 0;
			dlist_reverse_foreach(iter, &lru_list)
			{
				ShardConn  *conn = dlist_container(ShardConn, lru, iter.cur);

				if (++passed > EVICT_SCAN_MAX)
					break;
				if (!may_close(conn))
					continue;
				fallback = conn;
				break;
			}
		}

		/*
		 * Past the bounds, a handle the current statement has finished with
		 * goes too: they win over reading that shard twice in one statement
		 * at one state.  The statement then reads more files than the
		 * cache holds, and the rest of them will be opened afresh: keep no
		 * more than SCAN_KEEP handles from then on.  SQLite finds an opened
		 * file's locks by walking a list of every file the process has
		 * open, twice per open, so with thousands of handles kept each open
		 * costs several times what it costs with a few (10,000 files read
		 * with 6,600 handles kept: 5 s; with 64: 1.5 s).  A fleet the cache
		 * holds whole is read with no open at all.
		 */
		if (victim == NULL)
		{
			victim = fallback;
			keep = Min(keep, SCAN_KEEP);
		}
		if (victim == NULL)
			return;
		shard_conn_end_read_xact(victim);
		shard_conn_close(victim);
	}
}

/*
 * shard_cache_release_fds
 *		Give back n descriptors counted with AcquireExternalFD.
 */
void
shard_cache_release_fds(int n)
{
	while (n-- > 0)
		ReleaseExternalFD();
}

/*
 * shard_cache_reserve_fds
 *		Count the descriptors a handle on a shard (or the directory) will
 *		keep open against PostgreSQL's budget for descriptors outside its
 *		own file layer, as postgres_fdw counts each connection's socket:
 *		the database file, and in WAL mode its "-wal" and "-shm" files too.
 *		When none is left, idle handles are closed, least recently used
 *		first; with none to close the open is refused.  Returns how many
 *		were counted, for shard_cache_release_fds when the handle closes.
 */
int
shard_cache_reserve_fds(ShardInfo *shard, int kind)
{
	int			n = (kind == SHARD_FILE_WAL) ? 3 : 1;

	/* the bound first, so that the budget is not the first to run out */
	open_fds += n;
	shard_cache_evict_idle(open_count);
	open_fds -= n;

	for (;;)
	{
		int			got = 0;
		int			before = open_count;

		while (got < n && AcquireExternalFD())
			got++;
		if (got == n)
			return n;
		shard_cache_release_fds(got);
		shard_cache_evict_idle(open_count - 1);
		if (open_count == before)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
					 errmsg("could not open shard \"%s\": too many files are open",
							shard->shard_id),
					 errdetail("The backend has no file descriptor left for another SQLite handle, and every open handle is in use."),
					 errhint("Raise the server's \"max_files_per_process\" and the operating system's limit (ulimit -n), or read fewer shards in one statement.")));
	}
}

/*
 * shard_cache_add
 *		Count a handle just opened (its nfds set), as the most recently
 *		used.
 */
void
shard_cache_add(ShardConn *conn)
{
	open_fds += conn->nfds;
	dlist_push_tail(&lru_list, &conn->lru);
	open_count++;
}

/*
 * shard_cache_forget
 *		A handle closes: give back its descriptors and forget it.
 */
void
shard_cache_forget(ShardConn *conn)
{
	if (conn->refcount > 0)
		held_fds -= conn->nfds;
	shard_cache_release_fds(conn->nfds);
	open_fds -= conn->nfds;
	conn->nfds = 0;
	open_mem -= conn->mem;
	conn->mem = 0;
	dlist_delete(&conn->lru);
	open_count--;
}

/*
 * shard_cache_touch
 *		A handle is used: it becomes the most recently used.
 */
void
shard_cache_touch(ShardConn *conn)
{
	dlist_move_tail(&lru_list, &conn->lru);
}

/*
 * shard_cache_hold
 *		A scan takes a handle, which may not close until it gives it back.
 */
void
shard_cache_hold(ShardConn *conn)
{
	if (conn->refcount++ == 0)
		held_fds += conn->nfds;
}

/*
 * shard_cache_unhold
 *		A scan gives a handle back.
 */
void
shard_cache_unhold(ShardConn *conn)
{
	if (conn->refcount > 0 && --conn->refcount == 0)
		held_fds -= conn->nfds;
}

/*
 * shard_cache_unhold_all
 *		The transaction ended: no scan holds a handle any more (their
 *		counts were set to zero).
 */
void
shard_cache_unhold_all(void)
{
	held_fds = 0;
}

/*
 * shard_conn_room_to_hold
 *		May a scan take one more handle and hold it while it takes others?
 *		Only while the handles held leave room in the descriptor budget
 *		(but FDS_LEFT) for one more of the largest kind.  A scan that would
 *		hold many files at once (the in-order merge of a sorted fan-out,
 *		the shards queued for the workers) asks before each, and reads a
 *		file it may not hold to its end at once instead, so that it never
 *		fails for want of descriptors, whatever the number of files: a
 *		handle read and given back at once needs but the one open at a
 *		time, which the FDS_LEFT descriptors above the bound always leave.
 */
bool
shard_conn_room_to_hold(void)
{
	return held_fds + HANDLE_MAX_FDS <= max_safe_fds / 3 - FDS_LEFT;
}
