/*-------------------------------------------------------------------------
 *
 * move.h
 *		  What the tenant move's state machine (move.c) shares with the
 *		  SQL it runs inside the shards (movecopy.c)
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARD_MOVE_H
#define SHARD_MOVE_H

#include "sqlite_shard_fdw.h"

/* One table of the source shard that has the tenant column. */
typedef struct MoveTable
{
	char	   *name;			/* as the source's schema spells it */
	char	   *tenant_col;
	ShardTenantRule rule;		/* which of its rows are the tenant's */
	List	   *cols;			/* column names, in the source's order */
	List	   *pk;				/* primary key columns, in key order */
	char	   *create_sql;		/* the target lacks the table: its DDL */
	List	   *index_names;	/* ... its indexes' names */
	List	   *index_sqls;		/* ... and their DDL */
	int64		rows;			/* the tenant's rows on the source */
	int64		total_rows;		/* every row of the table there */
	int64		copied;			/* rows copied by this run */
} MoveTable;

/*
 * A move's view of its two shards.  The handles are the move's own, never
 * the connection cache's: each batch commits on its own, whatever the
 * PostgreSQL transaction does.  dst has the source attached as "src", so
 * that a batch reads the source and writes the target in one statement.
 */
typedef struct MoveShards
{
	ShardServerOptions *opts;
	const char *tenant;
	int64		move_id;
	ShardInfo  *source;
	ShardInfo  *target;
	sqlite3    *src;
	sqlite3    *dst;
	List	   *tables;			/* MoveTable */
	int			nkeys;			/* key columns of the change log */
	char	   *prefix;			/* "_ssfdw_move_<id>_": what the move
								 * creates inside the source */
	int64		replayed;		/* log entries up to here are applied */
} MoveShards;

/* Rows per copy or delete batch: each is one short transaction. */
#define MOVE_BATCH_ROWS 25000

/* in movecopy.c */
extern void move_open_shards(MoveShards *ms);
extern void move_open_source(MoveShards *ms);
extern void move_close_shards(MoveShards *ms);
extern void move_set_durable(MoveShards *ms, bool durable);
extern void move_sync_target(MoveShards *ms);
extern void move_discover_tables(MoveShards *ms, ShardTenantSpec *spec,
								 bool for_copy);
extern void move_check_collisions(MoveShards *ms);
extern int64 move_tenant_bytes(MoveShards *ms);
extern void move_begin(MoveShards *ms, sqlite3 *db, bool immediate);
extern void move_commit(MoveShards *ms, sqlite3 *db);
extern void move_rollback(sqlite3 *db);
extern void move_install_capture(MoveShards *ms);
extern void move_create_missing_tables(MoveShards *ms);
extern int64 move_delete_rows(MoveShards *ms, sqlite3 *db, bool unfence);
extern int64 move_log_top(MoveShards *ms);
extern int64 move_copy_batch(MoveShards *ms, MoveTable *t,
							 sqlite3_value ***cursor, bool *done);
extern int64 move_replay(MoveShards *ms, int64 upto);
extern int64 move_verify(MoveShards *ms, int64 since, int64 upto,
						 bool locked);
extern void move_install_fence(MoveShards *ms);
extern bool move_fence_present(MoveShards *ms);
extern void move_drop_objects(MoveShards *ms, const char *kind);
extern void move_reclaim_space(MoveShards *ms, sqlite3 *db,
							   const char *shard_id);

#endif							/* SHARD_MOVE_H */
