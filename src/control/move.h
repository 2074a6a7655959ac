/*-------------------------------------------------------------------------
 *
 * move.h
 *		  What the tenant move's state machine (move.c), the recovery and
 *		  cleanup after it (movecleanup.c), the SQL it runs inside the
 *		  shards (movecopy.c) and its tables (movetables.c) share
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

/* in move.c */
extern void move_pause(const char *tenant, const char *point);
extern void move_dir_open(MoveDir *md, ShardServerOptions *opts);
extern void move_dir_close(MoveDir *md);
extern void move_dir_exec(MoveDir *md, const char *sql, const char *fmt);
extern int	move_dir_run(MoveDir *md, const char *sql, const char **vals,
						 int nvals, const int64 *ints, int nints,
						 sqlite3_stmt **out, const char *fmt);
extern char *move_column_dup(sqlite3_stmt *stmt, int col);
extern MoveState *move_read_state(MoveDir *md, const char *tenant);
extern void move_record_error(MoveDir *md, int64 move_id,
							  const char *message);
extern void move_finish_in_directory(MoveDir *md, const char *tenant,
									 int64 move_id, const char *set_sql,
									 const char *where_sql, const char *phase,
									 const char *stamp_col);
extern void move_lock_tenant(ShardServerOptions *opts, const char *tenant);
extern bool move_try_lock_tenant(ShardServerOptions *opts,
								 const char *tenant);
extern void move_unlock_tenant(ShardServerOptions *opts, const char *tenant);
extern void move_check_call(FunctionCallInfo fcinfo, int nargs,
							const char *fname, const char *message,
							const char *detail);
extern void move_setup_shards(MoveShards *ms, ShardServerOptions *opts,
							  const char *tenant, int64 move_id,
							  const char *source, const char *target);
extern void move_run(MoveShards *ms, MoveDir *md);
extern char *move_error_message(MemoryContext cxt);

/* in movecleanup.c */
extern void shard_move_recover_routed(ShardDirectory *dir,
									  ShardServerOptions *opts,
									  const char *tenant, const char *source,
									  const char *target);
extern void move_lift_dead_fences(ShardServerOptions *opts);
extern void move_finish_dead_moves(ShardServerOptions *opts, MoveDir *md,
								   ShardTenantSpec *spec, const char *own);
extern void move_clean_before_move(ShardServerOptions *opts, MoveDir *md,
								   const char *tenant, MoveState *st,
								   ShardTenantSpec *spec);

/* in movecopy.c */
extern void move_error(MoveShards *ms, sqlite3 *db, const char *shard_id,
					   const char *table, const char *fmt);
extern const char *move_shard_of(MoveShards *ms, sqlite3 *db);
extern void move_append_key(StringInfo buf, MoveTable *t, const char *qual);
extern void move_append_tenant(StringInfo buf, MoveTable *t,
							   const char *qual);
extern void move_append_tenant_rows(StringInfo buf, MoveTable *t,
									const char *schema);
extern sqlite3_stmt *move_prepare_bound(MoveShards *ms, sqlite3 *db,
										const char *sql, MoveTable *t,
										int64 lo, int64 hi, const char *fmt);
extern int64 move_query_int(MoveShards *ms, sqlite3 *db, const char *sql,
							MoveTable *t, const char *fmt);
extern void move_open_shards(MoveShards *ms);
extern void move_open_source(MoveShards *ms);
extern void move_close_shards(MoveShards *ms);
extern void move_set_durable(MoveShards *ms, bool durable);
extern void move_sync_target(MoveShards *ms);
extern void move_begin(MoveShards *ms, sqlite3 *db, bool immediate);
extern void move_commit(MoveShards *ms, sqlite3 *db);
extern void move_rollback(sqlite3 *db);
extern void move_install_capture(MoveShards *ms);
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

/* in movetables.c */
extern void move_discover_tables(MoveShards *ms, ShardTenantSpec *spec,
								 bool for_copy);
extern void move_check_collisions(MoveShards *ms);
extern int64 move_tenant_bytes(MoveShards *ms);
extern void move_create_missing_tables(MoveShards *ms);

#endif							/* SHARD_MOVE_H */
