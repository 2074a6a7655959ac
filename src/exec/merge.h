/*-------------------------------------------------------------------------
 *
 * merge.h
 *		  Merging partial aggregates from shards (merge.c)
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARD_MERGE_H
#define SHARD_MERGE_H

typedef struct ShardMerge ShardMerge;

extern ShardMerge *shard_merge_create(PlanState *ps, List *ops, List *cols,
									  List *types, List *eqops, List *colls,
									  List *distinct, List *key_truncs,
									  int guard_col, const char *table);
extern void shard_merge_add_batch(ShardMerge *m, ShardBatch *batch,
								  const char *shard_id, bool bounded);
extern void shard_merge_reset(ShardMerge *m);
extern bool shard_merge_next(ShardMerge *m, TupleTableSlot *slot);
extern void shard_merge_set_order(ShardMerge *m, List *keys,
								  int keycheck_col);
extern void shard_merge_set_limit(ShardMerge *m, int64 offset, int64 count);
extern void shard_merge_end(ShardMerge *m);
extern Size shard_merge_group_bytes(int nout, int data_width);
extern void shard_merge_explain(ShardMerge *m, struct ExplainState *es);

#endif							/* SHARD_MERGE_H */
