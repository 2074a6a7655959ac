/*-------------------------------------------------------------------------
 *
 * aggcombine.h
 *		  Aggregates computed again from groups' partial aggregates
 *		  (aggcombine.c)
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARD_AGGCOMBINE_H
#define SHARD_AGGCOMBINE_H

#include "nodes/parsenodes.h"

extern List *shard_aggregate_parts(Aggref *a);
extern Expr *shard_combine_aggregate(Aggref *a, List *parts, Index varno);
extern void shard_rte_read_groups(RangeTblEntry *rte, Query *groups,
								  const char *alias, List *colnames);

#endif							/* SHARD_AGGCOMBINE_H */
