/*-------------------------------------------------------------------------
 *
 * mergecost.h
 *		  The size and cost of the backend's merge of the shards' groups
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARD_MERGECOST_H
#define SHARD_MERGECOST_H

#include "nodes/pathnodes.h"

extern double shard_merge_groups(PlannerInfo *root, RelOptInfo *baserel,
								 List *keys, double input_rows);
extern double shard_merged_rows(PlannerInfo *root, RelOptInfo *input_rel,
								List *keys, AttrNumber tenant_attnum,
								double groups, int nshards,
								double input_rows);
extern void shard_merge_spill_cost(double groups, double bytes,
								   double merged, int width,
								   Cost *startup, Cost *total);

#endif							/* SHARD_MERGECOST_H */
