/*-------------------------------------------------------------------------
 *
 * mergecost.c
 *		  The size and cost of the backend's merge of the shards' groups
 *
 * A grouping pushed to the shards returns rows the backend merges
 * (exec/merge.c): how many groups the keys make, how many rows the shards
 * return for them, and what the merge costs to set rows aside on disk when
 * its groups do not fit in hash_mem (exec/mergespill.c).  The planner of
 * pushed aggregates (upper.c) and eager aggregation, which plans through
 * it, cost the merge with these.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <math.h>

#include "access/htup_details.h"
#include "executor/nodeAgg.h"
#include "nodes/makefuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

#include "mergecost.h"

/*
 * shard_merge_groups
 *		The number of groups that keys make of input_rows rows, as
 *		estimate_num_groups estimates them but for time buckets
 *		(shard_time_bucket_groups, timepush.c).
 */
double
shard_merge_groups(PlannerInfo *root, RelOptInfo *baserel, List *keys,
			 double input_rows)
{
	List	   *others = NIL;
	double		groups = 1;
	ListCell   *lc;

	foreach(lc, keys)
	{
		double		b = shard_time_bucket_groups(root, lfirst(lc), baserel, input_rows);

		if (b < 0)
			others = lappend(others, lfirst(lc));
		else
			groups *= b;
	}
	if (others != NIL)
		groups *= estimate_num_groups(root, others, input_rows, NULL, NULL);
	return clamp_row_est(Min(groups, input_rows));
}

/*
 * shard_merged_rows
 *		The rows the shards return to the merge of a grouping: one per group
 *		and shard it has rows in, so at most each group in every shard (and
 *		no more than the rows).  A tenant's rows being in one shard, there
 *		are no more than the groups of the keys and the tenant, which the
 *		planner counts better than their product where statistics say how
 *		the columns go together (CREATE STATISTICS (ndistinct) on the tenant
 *		column and the keys): most keys of a tenant-sharded schema, such as
 *		a customer's id, belong to one tenant.
 */
double
shard_merged_rows(PlannerInfo *root, RelOptInfo *input_rel, List *keys,
			AttrNumber tenant_attnum, double groups, int nshards,
			double input_rows)
{
	double		merged = Min(groups * nshards, Max(input_rows, groups));
	RangeTblEntry *rte;
	Oid			type;
	int32		typmod;
	Oid			coll;
	Var		   *tenant;

	if (tenant_attnum <= 0 || keys == NIL ||
		input_rel->reloptkind != RELOPT_BASEREL)
		return merged;
	rte = planner_rt_fetch(input_rel->relid, root);
	get_atttypetypmodcoll(rte->relid, tenant_attnum, &type, &typmod, &coll);
	tenant = makeVar(input_rel->relid, tenant_attnum, type, typmod, coll, 0);
	return Max(groups,
			   Min(merged,
				   estimate_num_groups(root, lappend(list_copy(keys), tenant),
									   input_rows, NULL, NULL)));
}

/*
 * shard_merge_spill_cost
 *		Add to a pushed grouping's costs what its merge costs to set rows
 *		aside on disk when its groups (bytes in all) would not fit in
 *		hash_mem, as cost_agg costs PostgreSQL's hash aggregation's spill:
 *		the batches the groups need, the depth of partitions that makes,
 *		and each merged row (of width bytes) written and read back at each
 *		level, with the same penalty on its I/O.
 */
void
shard_merge_spill_cost(double groups, double bytes, double merged, int width,
				 Cost *startup, Cost *total)
{
	double		entry = bytes / Max(groups, 1.0);
	Size		mem_limit;
	uint64		ngroups_limit;
	int			partitions;
	double		batches;
	double		depth;
	double		pages;
	double		written;
	double		read;
	double		cpu;

	hash_agg_set_limits(entry, groups, 0, &mem_limit, &ngroups_limit,
						&partitions);
	batches = Max(bytes / (double) mem_limit,
				  groups / (double) ngroups_limit);
	batches = Max(ceil(batches), 1.0);
	if (batches <= 1.0)
		return;
	partitions = Max(partitions, 2);
	depth = ceil(log(batches) / log(partitions));
	pages = ceil(merged * (MAXALIGN(width) + MAXALIGN(SizeofHeapTupleHeader)) /
				 BLCKSZ);
	written = pages * depth * 2.0;
	read = pages * depth * 2.0;
	cpu = depth * merged * 2.0 * cpu_tuple_cost;
	*startup += written * random_page_cost + cpu;
	*total += written * random_page_cost + read * seq_page_cost + cpu;
}
