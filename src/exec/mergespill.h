/*-------------------------------------------------------------------------
 *
 * mergespill.h
 *		  Shard rows the merge sets aside on disk (mergespill.c)
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARD_MERGESPILL_H
#define SHARD_MERGESPILL_H

#include "lib/stringinfo.h"
#include "storage/buffile.h"

/* The rows of one partition, written and waiting to be merged. */
typedef struct MergeSpillBatch
{
	BufFile    *file;
	int			used_bits;		/* hash bits its rows have in common */
	int64		rows;
	int64		bytes;
} MergeSpillBatch;

/* The partitions that one pass over rows writes. */
typedef struct MergeSpill
{
	int			npartitions;	/* a power of two */
	int			shift;			/* partition = (hash >> shift) & mask */
	int			used_bits;		/* bits of each partition's rows in common */
	MergeSpillBatch *parts;
} MergeSpill;

/* Where read rows are kept, reused from row to row. */
typedef struct MergeSpillReader
{
	StringInfoData buf;
	ShardValue *values;
	int			maxcols;
} MergeSpillReader;

extern int	merge_spill_partitions(Size hash_mem, int used_bits);
extern MergeSpill *merge_spill_begin(int npartitions, int used_bits);
extern int64 merge_spill_row(MergeSpill *sp, uint32 hash,
							 const ShardValue *row, int ncols,
							 const char *shard_id);
extern List *merge_spill_finish(MergeSpill *sp, List *batches);
extern bool merge_spill_read(MergeSpillBatch *b, MergeSpillReader *rd,
							 const ShardValue **row, int *ncols,
							 const char **shard_id);
extern void merge_spill_close(MergeSpillBatch *b);

#endif							/* SHARD_MERGESPILL_H */
