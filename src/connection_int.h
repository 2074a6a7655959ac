/*-------------------------------------------------------------------------
 *
 * connection_int.h
 *		  A shard handle as the files that keep it see it: the handle cache
 *		  and its transactions (connection.c), its bounds (handlecache.c),
 *		  what a shard's tables look like (shardschema.c) and the commit of
 *		  written files (shardcommit.c).  Other files know ShardConn only by name.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARD_CONNECTION_INT_H
#define SHARD_CONNECTION_INT_H

#include "sqlite_shard_fdw.h"

#include <sys/types.h>

#include "lib/ilist.h"

struct ShardConn
{
	char		path[MAXPGPATH];	/* hash key */
	char		shard_id[NAMEDATALEN * 2];	/* for messages */
	sqlite3    *db;
	int			refcount;		/* scans using the handle now */
	bool		in_xact;		/* a read transaction is open */
	bool		xact_scoped;	/* ... and lasts for the transaction */
	int			utf8;			/* the database is UTF-8: 1, 0, or -1 not
								 * asked yet */
	TimestampTz xact_stmt;		/* start of the statement that began it */
	int			open_stmts;		/* statements of live scans: never close */
	dev_t		dev;			/* the file opened, to notice a replacement */
	ino_t		ino;
	uint64		last_used;
	dlist_node	lru;			/* in lru_list */
	int64		mem;			/* bytes SQLite held for it when last idle */
	int64		fixed_mem;		/* ... of them its schema and statements, and
								 * CONN_BASE_BYTES (0: not measured yet) */
	int			measured_stmts; /* its idle statements then */
	List	   *checked;		/* "table.column=affinity" already looked up */
	List	   *stmts;			/* CachedStmt: idle prepared statements */
	sqlite3_stmt *begin_stmt;	/* BEGIN, ROLLBACK, BEGIN IMMEDIATE and */
	sqlite3_stmt *rollback_stmt;	/* COMMIT, prepared once: a routed
									 * write runs them every time */
	sqlite3_stmt *immediate_stmt;
	sqlite3_stmt *commit_stmt;
	bool		writable;		/* query_only is off: a write needed it */
	bool		write_xact;		/* the transaction wrote to the shard */
	bool		write_lost;		/* ... and SQLite rolled that back after an
								 * error (an interrupt, a full disk) */
	int			savepoints;		/* PostgreSQL nesting level its savepoints
								 * reach (1: none) */
	bool		is_directory;	/* the server's directory, not a shard */
	bool		brief;			/* the read transaction is a planning read's,
								 * to end when it gives the handle back */
	int			nfds;			/* descriptors counted for the handle */
	char		directory[MAXPGPATH];	/* its server's directory file */
	char	   *file_tenant;	/* the tenant whose file it is (layout
								 * 'file_per_tenant'), or NULL */
};

/* What a handle's own statements do, naming the message of a failure. */
typedef enum ConnExecOp
{
	CONN_LOCK,
	CONN_ALLOW_WRITES,
	CONN_SAVEPOINT,
	CONN_RELEASE,
	CONN_COMMIT_LOCK
} ConnExecOp;

/* in connection.c */
extern int	shard_conn_run(ShardConn *conn, sqlite3_stmt *stmt, char *errbuf);
extern void shard_conn_failed(ShardConn *conn, int rc, const char *errbuf,
							  ConnExecOp op);
extern char *shard_conn_label(ShardConn *conn);
extern void shard_conn_report_write_lost(ShardConn *conn);
extern void shard_conn_end_read_xact(ShardConn *conn);
extern List *shard_conn_written(void);
extern bool shard_conn_stale_read(ShardConn *conn);
extern void shard_conn_close(ShardConn *conn);

/* in handlecache.c */
extern int	shard_cache_keep(void);
extern void shard_cache_measure(ShardConn *conn);
extern void shard_cache_evict_idle(int keep);
extern void shard_cache_release_fds(int n);
extern int	shard_cache_reserve_fds(ShardInfo *shard, int kind);
extern void shard_cache_add(ShardConn *conn);
extern void shard_cache_forget(ShardConn *conn);
extern void shard_cache_touch(ShardConn *conn);
extern void shard_cache_hold(ShardConn *conn);
extern void shard_cache_unhold(ShardConn *conn);
extern void shard_cache_unhold_all(void);

/* in shardcommit.c */
extern void shard_commit_writes(bool parallel);

#endif							/* SHARD_CONNECTION_INT_H */
