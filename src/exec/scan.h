/*-------------------------------------------------------------------------
 *
 * scan.h
 *		  The state of a foreign scan, shared by the files that run one: the
 *		  scan itself (scan.c, shardsql.c, scanread.c, scanmerge.c,
 *		  scanexplain.c),
 *		  UPDATE and DELETE run inside the shards (directmodify.c) and the
 *		  identity of the rows a row-by-row UPDATE or DELETE reads
 *		  (rowidentity.c)
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARD_SCAN_H
#define SHARD_SCAN_H

#include "sqlite_shard_fdw.h"

#include "commands/explain.h"
#include "portability/instr_time.h"
#include "utils/tuplesort.h"
#include "utils/tuplestore.h"

#include "fanout.h"
#include "merge.h"

/* Rows fetched from SQLite at a time. */
#define SCAN_BATCH_ROWS 512

/* The in-order merge of the shards' rows (scanmerge.c). */
typedef struct ShardRowMerge ShardRowMerge;

/*
 * Groups a shard may have before its thread aggregation gives up and lets
 * SQLite group instead: bounds a worker's memory.
 */
#define THREAD_AGG_MAX_GROUPS 50000

/*
 * A shard whose table is WITHOUT ROWID, as the scan below a row-by-row
 * UPDATE or DELETE read it: the rows it returned are found again by the
 * primary key columns named here.
 */
typedef struct ShardKeyedShard
{
	char	   *shard_id;
	List	   *keys;			/* SQLite names of the key's columns */
	List	   *collations;		/* the key's collation of each, or NULL */
} ShardKeyedShard;


/* One shard a scan reads. */
/* What shard_scan_schema_drift found of a shard that rejected its query. */
#define SHARD_DRIFT_NONE		0	/* nothing it may read around */
#define SHARD_DRIFT_COLUMNS		1	/* columns to read as NULL */
#define SHARD_DRIFT_NO_TABLE	2	/* no table: read as empty */

typedef struct ShardTarget
{
	ShardInfo	info;
	List	   *excluded;		/* tenants (char *) whose rows here are stale */
	List	   *tenants;		/* when restricted: the tenants it is read
								 * for, those of the statement it owns */
	ShardTenantRule tenant_rule;	/* how its tenant filters read rows */
	bool		tenant_is_text; /* filters compare the column itself */
	bool		tenant_noindex; /* read the table NOT INDEXED (a large
								 * tenant of a shard without statistics) */
	const char *time_index;		/* the time column whose index finds its
								 * rows instead of the tenant's index, or
								 * NULL (timeindex.c) */
	char	   *time_where;		/* ... and then the WHERE clause it runs,
								 * for EXPLAIN */

	/* While the shard is read. */
	ShardConn  *conn;
	sqlite3_stmt *stmt;
	int			nkeys;			/* leading key columns of the query: its
								 * rowid, or its primary key (keyed); 0
								 * when it reads no key */
	ShardKeyedShard *keyed;		/* a WITHOUT ROWID table's key, or NULL */
	bool		no_rowid;		/* the table has no rowid */
	List	   *missing_cols;	/* columns its table lacks, read as NULL
								 * (missing_column = null), or NIL */
	bool		no_table;		/* lacks the table, read as empty
								 * (missing_table = empty) */
	bool		degraded;		/* conditions evaluated by PostgreSQL */
	bool		unbounded;		/* returns all its groups: it does not
								 * declare columns as the bound needs */
	bool		no_sql_groups;	/* thread aggregation may not fall back to
								 * SQLite's GROUP BY (UTF-16 text extrema) */
	bool		merge_sorted;	/* a merged scan with ties reads it whole
								 * into the merge's sort: no index gives
								 * its first key's order (scanmerge.c) */
	FanoutJob	job;			/* what the reader runs */
	char	   *sql;			/* its statement, built once per resolution
								 * (a rescan with the same values reuses it) */
	char	   *fallback_sql;	/* thread aggregation's GROUP BY fallback */
	ShardValue *binds;			/* the values bound, planned and run-time */
	int			nbinds;
	ShardReader *reader;		/* serial reading */
	bool		done;			/* the statement returned all its rows */
	instr_time	started;

	/* For EXPLAIN ANALYZE. */
	bool		read;			/* opened by this run of the scan */
	int64		rows;			/* rows the backend took from it */
	double		elapsed_ms;		/* a direct modification's time; a read's:
								 * what filling the batches the backend
								 * took cost (ShardBatch.fill_ms) */
	int			reader_began;	/* a reader began its statement */
} ShardTarget;

typedef struct ShardScanState
{
	/* What planning decided. */
	ShardServerOptions *opts;
	ShardTableOptions *topts;
	char	   *table_name;		/* foreign table, for messages */
	char	   *select_sql;
	List	   *where_sqls;		/* pushed conditions (String) */
	List	   *safe_where_sqls;	/* those on no text column */
	List	   *retrieved_attrs;
	int			nretrieved;
	char	  **colnames;		/* SQLite names of the retrieved columns */
	char	  **coltables;		/* of a join, each one's SQLite table */
	ShardJoinScan *join;		/* a join the shards run (joinscan.c), or
								 * NULL */
	ShardColumnConv *convs;
	int			tenant_pos;		/* tenant column among retrieved, 0-based */
	Oid			tenant_type;
	int			tenant_kind;	/* how ssfdw_tenant reads it */
	List	   *param_exprs;	/* ExprStates of the values to bind */
	List	   *param_types;
	List	   *param_kinds;
	int			nparams;
	ExprState  *prune_state;
	Oid			prune_type;
	ShardPruneKind prune_kind;
	bool		prune_needs_run;	/* depends on values known only at run time */
	List	   *allowed;		/* user mapping tenants (UTF-8 ids), or NIL */
	char	   *modify_sql;		/* a direct UPDATE or DELETE, or NULL */
	List	   *modify_set_attnums;	/* columns of its new values, which are
									 * the last values bound */
	ShardStoreConv *modify_set_convs;
	List	   *modify_bigint_bounds;	/* bigint columns the shards
										 * compute, and their bounds'
										 * parameters, in pairs */
	bool		modify_set_processed;	/* count rows in es_processed */
	bool		materialize;	/* each shard read whole before its rows */
	bool		read_all_first; /* ... and every shard before the first
								 * row, kept for rescans: the statement
								 * writes the table (check_statement_writes) */
	bool		written;		/* the statement writes the table */
	uint64		writes_at_start;	/* shard_writes_begun then */
	ShardRowKeys *row_keys;		/* the scan of a row-by-row UPDATE or
								 * DELETE: the keys of its keyed rows */
	bool		tenant_only;	/* the pushed conditions read only the
								 * tenant column */
	double		tenant_rows;	/* the routed tenants' estimated rows, or
								 * -1 */
	List	   *tenant_sqls;	/* the pushed SQL of the condition the scan
								 * is routed by */
	bool		counts_only;	/* an aggregate scan of counts alone, which
								 * the tenant's index covers */
	Tuplestorestate *mat_store; /* the rows read whole, converted, each
								 * with its ctid as a last column: one
								 * shard's (read_all_first: every shard's,
								 * read again by a rescan), within work_mem */
	TupleTableSlot *mat_slot;	/* reads mat_store */
	Datum	   *mat_values;		/* a row for mat_store */
	bool	   *mat_isnull;
	bool		mat_complete;	/* read_all_first: every shard's rows are
								 * in mat_store */
	List	   *modify_returning;	/* attnums its RETURNING reads */
	char	   *modify_returning_sql;	/* " RETURNING cols", or "" */
	ShardColumnConv *modify_convs;	/* and their converters */
	ShardTarget *modify_cur;	/* the shard whose statement runs */
	CmdType		modify_op;		/* CMD_UPDATE or CMD_DELETE */
	int64		modified;		/* rows it changed */

	/* Where it reads, decided when the scan starts. */
	MemoryContext resolve_cxt;
	MemoryContext plan_cxt;		/* a shard's planning, reset per shard
								 * (shardsql.c), or NULL */
	HTAB	   *sql_texts;		/* one copy of each shard statement's text
								 * (shardsql.c), or NULL */
	bool		resolved;
	bool		params_ready;	/* param_values computed for this run */
	List	   *targets;
	bool		restricted;		/* routed, or a user mapping's tenants */
	int			next_target;
	int			end_target;		/* the backend reads targets up to here;
								 * those after went to the fan-out; -1:
								 * all of them (target_end) */
	ShardValue *param_values;
	ShardDirectory *dir;

	/* Reading: one shard at a time, or several through a fan-out. */
	bool		with_rowid;		/* false once a shard had no rowid */
	ShardTarget *serial;		/* the shard read serially now */
	ShardBatch *own_batch;		/* the serial reader's batch */
	Fanout	   *fanout;
	int			inflight;		/* shards submitted to the fan-out */
	bool		quick;			/* read shards in the backend while each
								 * is quick (quick_shard_ms) */
	int			quick_reads;	/* shards read so, for EXPLAIN ANALYZE */

	/* The batch being converted, and the shard it came from. */
	ShardTarget *cur;
	ShardBatch *batch;
	int			batch_row;

	int			batch_cols;		/* columns of a shard row */
	unsigned char *prep;		/* SHARDIO_PREP_ of rowid and each fetched
								 * column, or NULL */
	Relation	rel;			/* the foreign table */
	char	   *raw_sql;		/* thread aggregation's input query, or NULL */
	ThreadAggSpec *agg_spec;	/* and how it computes the shard columns */
	List	   *needs;			/* what the query assumes of shard columns */
	List	   *needs_but_extrema;	/* the same, without text min/max */
	List	   *recheck_quals;	/* the pushed conditions, for degraded shards */
	ExprState  *recheck;		/* ... compiled when first needed */

	/* Aggregate scans: partial rows merged by group. */
	ShardScanMode mode;
	char	   *group_sql;
	ShardMerge *merge;
	int			guard_col;
	bool		merged;			/* every shard's rows are in the merge */

	/* A scan that also does ORDER BY and LIMIT (FdwScanPrivateOrder). */
	List	   *order;			/* the plan's list, or NIL */
	char	   *order_sql;		/* ORDER BY terms for each shard */
	List	   *limit_exprs;	/* OFFSET and LIMIT (NULL when absent) */
	List	   *limit_states;	/* OFFSET, LIMIT: ExprStates or NULL */
	bool		limit_ready;	/* evaluated */
	bool		limit_zero;		/* LIMIT 0: nothing to read */
	int64		shard_bound;	/* OFFSET + LIMIT for each shard; -1: none */
	int64		limit_offset;	/* OFFSET, 0 when absent */
	int64		limit_count;	/* LIMIT, -1 when absent */

	/* A row scan that sorts and limits (order.c). */
	bool		row_order;		/* the scan's rows are ordered or limited */
	bool		row_direct;		/* one shard runs ORDER BY, OFFSET and
								 * LIMIT; its rows pass through */
	List	   *window;			/* FdwScanOrderWindow, or NIL */
	List	   *ties;			/* FdwScanOrderTies, or NIL: the shards
								 * sort by a prefix and keep ties, the scan
								 * merges, PostgreSQL sorts and limits */
	int			nsort;			/* sort keys */
	AttrNumber *sort_attnos;
	Oid		   *sort_ops;
	Oid		   *sort_colls;
	bool	   *sort_nulls;
	Tuplesortstate *sort;		/* the rows of every shard, once read */
	TupleTableSlot *sortslot;
	bool		sorted;			/* every shard's rows are in the sort */
	bool		order_started;	/* the first row was read */
	bool		pending_first;	/* ... and is still in the slot */
	bool		stream;			/* the shards' rows arrive in order and are
								 * merged as they come (scanmerge.c) */
	ShardRowMerge *rmerge;		/* ... the merge, once started */
	int64		skipped;		/* rows skipped for OFFSET */
	int64		returned;		/* rows returned for LIMIT */

	MemoryContext row_cxt;		/* converted rows, reset every
								 * ROW_MEMORY_LIMIT bytes */
	int			cur_col;		/* column being converted, for errors */
	sqlite3_int64 cur_rowid;
} ShardScanState;

/*
 * in scan.c; EXPLAIN (scanexplain.c) also stops the reads and fixes
 * OFFSET and LIMIT
 */
extern void shard_scan_resolve(ForeignScanState *node);
extern void shard_scan_eval_params(ShardScanState *s, ExprContext *econtext);
extern void shard_scan_stop_reading(ShardScanState *s, bool release);
extern void shard_scan_eval_limit(ForeignScanState *node);

/*
 * in shardsql.c; EXPLAIN also builds the WHERE clause, ties and grouping
 * and chooses the time index
 */
extern void shard_scan_plan_shard(ShardScanState *s, ShardTarget *t);
extern int	shard_scan_schema_drift(ShardScanState *s, ShardTarget *t,
									Relation rel);
extern void shard_scan_prepare_failed(ShardScanState *s, ShardTarget *t,
									  int rc, const char *errbuf,
									  Relation rel);
extern void shard_scan_build_where_sql(StringInfo where, ShardScanState *s,
									   ShardTarget *t, List **extra);
extern void shard_scan_append_ties_sql(StringInfo sql, ShardScanState *s,
									   const char *select, const char *where);
extern void shard_scan_append_group_sql(StringInfo sql, ShardScanState *s,
										ShardTarget *t);
extern const char *shard_scan_choose_time_index(ShardScanState *s,
												ShardTarget *t);

/*
 * in scanread.c; shardIterateForeignScan, shardReScanForeignScan and
 * shardEndForeignScan (scan.c) drive the reads
 */
extern bool shard_scan_start_shard(ForeignScanState *node, ShardTarget *t);
extern bool shard_scan_convert_row(ForeignScanState *node,
								   const ShardValue *row,
								   TupleTableSlot *slot);
extern void shard_scan_report_read_error(ShardScanState *s, ShardTarget *t,
										 int rc, const char *errbuf);
extern void shard_scan_finish_shard(ShardTarget *t);
extern void shard_scan_next_event(ShardScanState *s, FanoutEvent *ev);
extern bool shard_scan_use_fanout(ShardScanState *s);
extern bool shard_scan_next_batch_serial(ForeignScanState *node);
extern bool shard_scan_next_batch_parallel(ForeignScanState *node);
extern bool shard_scan_next_row(ForeignScanState *node, TupleTableSlot *slot);
extern bool shard_scan_next_ordered_row(ForeignScanState *node,
										TupleTableSlot *slot);
extern void shard_scan_end_row_sort(ShardScanState *s);

/* in scanmerge.c */
extern bool shard_scan_stream_ok(ShardScanState *s);
extern bool shard_scan_merge_next(ForeignScanState *node,
								  TupleTableSlot *slot);
extern void shard_scan_merge_end(ShardScanState *s, bool release);
extern int	shard_scan_merge_batch_rows(ShardScanState *s);

/* in scanexplain.c */
extern char *shard_scan_shard_names(ShardScanState *s);
extern void shard_scan_explain_times(ShardScanState *s, ExplainState *es);

/* in refwrite.c */
extern bool shard_reference_counts(ShardScanState *s, ShardTarget *t);
extern void shard_reference_direct_end(ShardScanState *s);

/* in rowidentity.c */
extern ShardRowKeys *shard_row_keys_create(MemoryContext parent);
extern void shard_row_keys_end(ShardRowKeys *rk);
extern ShardKeyedShard *shard_row_key_shard(ShardScanState *s,
											ShardTarget *t);
extern void shard_row_set_identity(ShardScanState *s, ShardTarget *t,
								   const ShardValue *row, ItemPointer tid);

#endif							/* SHARD_SCAN_H */
