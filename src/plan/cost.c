/*-------------------------------------------------------------------------
 *
 * cost.c
 *		  The cost of a shard query: the one rule every path is costed by
 *
 * Every path this wrapper offers is a query the shards run: a scan, a
 * scan sorted and limited, a grouping, a join, a routed restart for the
 * next row of a join.  PostgreSQL weighs them against each other and
 * against its own work over the rows they return, so they are all costed
 * by the same rule, here:
 *
 * - A fixed cost per statement (SHARD_QUERY_COST): the shard's cached
 *   handle checked, the statement prepared and bound, a read transaction,
 *   the executor's set-up.  A routed statement started again for the next
 *   outer row of a join costs less (SHARD_RESCAN_COST): its handle and
 *   statement are cached by then and no thread starts.
 * - A fan-out runs the statement in every shard it reads, the shards
 *   fanout_parallelism at a time on the worker threads: each shard past
 *   the first adds SHARD_FANOUT_COST, shared among the threads.
 * - The shards' work: the rows they look at (an operator each) and what
 *   is pushed (a grouping, a sort) per row it handles.  The shards of a
 *   fan-out work at the same time, so this too is shared among the
 *   threads, never more of them than shards.
 * - The backend's work: each row that comes back (a tuple, and a
 *   hundredth of a page for its transfer), each group of each shard it
 *   merges (an operator), and the conditions it evaluates itself.
 *
 * A query that sorts or groups in the shards returns nothing before they
 * are done, so all their work is start-up cost; a plain scan returns its
 * first rows after the fixed cost.  The number of shards a relation's
 * query reads comes from its tenant condition: one for "tenant = value"
 * (and for a join routed by one, or of reference tables only), the
 * array's elements for "tenant = ANY (array)", otherwise the fleet's
 * shards.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"

/* Cost of opening a shard and starting its query, in page-fetch units. */
#define SHARD_QUERY_COST 25.0

/*
 * Cost of starting a routed query again, for the next row of a join: the
 * shards' handles and statements are cached by then, and a fan-out's
 * threads are not started.
 */
#define SHARD_RESCAN_COST 5.0

/* What each shard of a fan-out past the first adds, before the threads. */
#define SHARD_FANOUT_COST 10.0

/*
 * The files a fan-out over a file per tenant is costed as reading: they are
 * listed when the scan starts, a walk of the tenants' folders that planning
 * does not repeat.
 */
#define TENANT_FILES_FANOUT 16

/*
 * fleet_shards
 *		The shards of a relation's fleet, as the fan-out lists them.
 */
static int
fleet_shards(RelOptInfo *rel)
{
	ShardServerOptions *opts = shard_server_options(rel->serverid);
	ShardDirectory *dir;

	if (opts->file_per_tenant)
		return TENANT_FILES_FANOUT;
	dir = shard_directory_get(opts);
	return Max(list_length(shard_directory_shards(dir)), 1);
}

/*
 * shard_cost_shards
 *		How many shards a query of this relation (a scan of a foreign table
 *		or a join pushed to the shards) runs in.  The fleet is listed only
 *		for a query that reads more than one shard, which lists it anyway:
 *		a routed query must not fail on a shard it does not read.
 */
int
shard_cost_shards(PlannerInfo *root, RelOptInfo *rel)
{
	ShardPruneKind kind;
	Expr	   *value;

	if (rel->reloptkind != RELOPT_BASEREL)
		return shard_join_one_shard(root, rel) ? 1 : fleet_shards(rel);

	/* a reference table is read from one shard's copy */
	if (shard_rel_options(rel)->reference)
		return 1;
	value = shard_find_tenant_condition(rel, shard_rel_tenant_attnum(rel),
										&kind);
	if (value == NULL || kind == PRUNE_NONE)
		return fleet_shards(rel);
	if (kind == PRUNE_EQ)
		return 1;
	/* tenant = ANY (array): at most one shard per element */
	value = (Expr *) estimate_expression_value(root, (Node *) value);
	if (IsA(value, Const) && !((Const *) value)->constisnull)
	{
		ArrayType  *arr = DatumGetArrayTypeP(((Const *) value)->constvalue);

		return Max(ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr)), 1);
	}
	return fleet_shards(rel);
}

/*
 * shard_cost_scanned
 *		The rows a query of this relation looks at in the shards: a scan's
 *		(planner.c), or a join's (join.c).
 */
double
shard_cost_scanned(RelOptInfo *rel)
{
	if (rel->reloptkind == RELOPT_BASEREL)
		return shard_rel_scanned(rel);
	return shard_join_scanned(rel);
}

/*
 * shard_cost_scale
 *		How many rows a row of this relation stands for in costs: more than
 *		one for a table ANALYZE never measured, which is costed as holding
 *		at least a minimum of rows (planner.c), so that the rows it returns
 *		are costed as the same share of them as estimated.  Pushing work
 *		to the shards then stays cheaper than fetching even a few rows.
 */
double
shard_cost_scale(RelOptInfo *rel)
{
	if (rel->reloptkind == RELOPT_BASEREL)
		return shard_rel_cost_scale(rel);
	return shard_join_cost_scale(rel);
}

/*
 * shard_cost_scan
 *		The cost of a plain scan of a foreign table of this wrapper: its
 *		rows, filtered in the shards, returned as they are.
 */
void
shard_cost_scan(PlannerInfo *root, RelOptInfo *baserel, Cost *startup,
				Cost *total)
{
	ShardQueryCost q = {0};

	q.nshards = shard_cost_shards(root, baserel);
	q.scanned = shard_rel_scanned(baserel);
	q.returned = baserel->rows * shard_rel_cost_scale(baserel);
	shard_cost_query(&q, startup, total);
}

/*
 * shard_cost_query
 *		The start-up and total cost of a shard query (see the file header).
 */
void
shard_cost_query(const ShardQueryCost *q, Cost *startup, Cost *total)
{
	int			nshards = Max(q->nshards, 1);
	int			threads = Max(Min(shard_fanout_parallelism, nshards), 1);
	Cost		fixed;
	Cost		shards_work;
	Cost		backend_work;

	if (q->rescan)
		fixed = SHARD_RESCAN_COST;
	else
		fixed = SHARD_QUERY_COST +
			SHARD_FANOUT_COST * (nshards - 1) / threads;
	shards_work = (q->scanned * cpu_operator_cost +
				   q->pushed_rows * q->pushed_per_row * cpu_operator_cost) /
		threads;
	backend_work = q->merged * cpu_operator_cost +
		q->returned * (cpu_tuple_cost + seq_page_cost * 0.01 +
					   q->local_per_row);

	*startup = fixed + q->local_startup;
	if (q->pushed_per_row > 0)
		*startup += shards_work + q->merged * cpu_operator_cost;
	*total = fixed + q->local_startup + shards_work + backend_work;
}
