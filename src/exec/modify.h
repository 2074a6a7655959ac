/*-------------------------------------------------------------------------
 *
 * modify.h
 *		  The state of an INSERT, COPY or row-by-row UPDATE and DELETE
 *		  (modify.c), shared with COPY's per-shard batches (copybatch.c)
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARD_MODIFY_H
#define SHARD_MODIFY_H

#include "commands/copyfrom_internal.h"

/* The statement of one shard, prepared at its first row. */
typedef struct ModifyTarget
{
	char	   *shard_id;
	ShardConn  *conn;
	sqlite3_stmt *stmt;
	List	   *keys;			/* primary key columns an UPDATE or DELETE
								 * finds rows by, or NIL: the rowid */
	char	   *affinity;		/* per target attr, as the shard declares */
	char	  **colnames;		/* and its SQLite name */

	/* a COPY's rows waiting for their batch (see buffer_row) */
	ShardValue *buffered;		/* nbuffered rows of the target attrs */
	char	  **buffered_tenants;
	uint64	   *buffered_lines; /* their COPY lines */
	int			nbuffered;
	int			maxbuffered;	/* room for this many, grown as needed */
	int			nvalues;		/* per buffered row */
	int		   *sort_cols;		/* target attrs of the shard's primary key */
	int			nsort_cols;
	MemoryContext buffer_cxt;	/* their text and blob bytes */
} ModifyTarget;

/* Execution state of an INSERT or COPY into one foreign table. */
typedef struct ShardModifyState
{
	Relation	rel;
	ShardTableOptions *topts;
	ShardServerOptions *opts;
	ShardDirectory *dir;
	char	   *sql;			/* the INSERT, the same for every shard */
	List	   *target_attrs;	/* attnums of the values bound, in order */
	ShardStoreConv *stores;		/* one per target attr */
	ShardValue *values;
	List	   *returning_attrs;	/* attnums RETURNING reads, in order */
	ShardColumnConv *returning;	/* one per returning attr */
	bool		on_conflict_nothing;
	CmdType		operation;
	AttrNumber	ctid_junk;		/* row identity in the plan's rows: the
								 * shard read and the rowid, or the number
								 * of a row_keys key */
	AttrNumber	tenant_junk;	/* and tenant (UPDATE and DELETE) */
	bool		check_tenant;	/* a BEFORE ROW UPDATE trigger may change
								 * the tenant of the new row */
	int64		last_identity;	/* the ctid of the row changed last, or -1 */
	ShardRowKeys *row_keys;		/* the shards the scan read, and the keys of
								 * rows read from WITHOUT ROWID tables */
	Oid			tenant_type;
	ShardTenantIdConv tenant_id;	/* its values as tenant ids */
	List	   *allowed;		/* the user mapping's tenants, or NIL */
	List	   *targets;		/* ModifyTarget per shard written */
	int			batch_size;
	bool		buffer_rows;	/* a COPY: rows go in batches per shard */
	int			copy_batch;		/* rows per shard batch */
	int			nbuffered;		/* rows buffered over every shard */
	CopyFromState copy;			/* the COPY, for the lines of its rows */
	ShardInfo  *ref_shard;		/* a reference table: the copy the row
								 * being inserted goes to */
	TupleTableSlot *ref_slot;	/* ... and the row for the other copies */
	TupleTableSlot **inserted;	/* a batch's rows that were inserted */
	int			ninserted_max;
	MemoryContext row_cxt;		/* reset per row */

	/* for the error context */
	const char *shard_id;
	const char *tenant;
	int			col;			/* returning column being read, or -1 */
	uint64		copy_line;		/* of a buffered row being inserted, or 0 */
} ShardModifyState;

/*
 * A COPY's rows per shard batch: batch_size, up to COPY_BATCH_MAX; a fleet
 * of many shards flushes every batch when BUFFERED_ROWS_MAX(that) rows are
 * waiting, so that memory stays bounded however many shards a COPY writes.
 */
#define COPY_BATCH_MAX 10000
#define BUFFERED_ROWS_MAX(copy_batch) ((copy_batch) * 16)

/* in modify.c */
extern void shard_modify_error_callback(void *arg);

/* in copybatch.c */
extern void shard_copy_init_buffer(ShardModifyState *ms, ModifyTarget *t);
extern void shard_copy_buffer_row(ShardModifyState *ms, ModifyTarget *t);
extern void shard_copy_flush(ShardModifyState *ms);

#endif							/* SHARD_MODIFY_H */
