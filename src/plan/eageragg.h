/*-------------------------------------------------------------------------
 *
 * eageragg.h
 *		  Eager aggregation of a foreign table before a join (eageragg.c)
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARD_EAGERAGG_H
#define SHARD_EAGERAGG_H

#include "optimizer/planner.h"

/* sqlite_shard_fdw.eager_aggregate */
typedef enum EagerAggregateMode
{
	EAGER_AGGREGATE_OFF,
	EAGER_AGGREGATE_ON,			/* where the plan is cheaper */
	EAGER_AGGREGATE_ALWAYS		/* wherever it is exact */
} EagerAggregateMode;

extern int	shard_eager_aggregate;

extern Query *shard_eager_aggregate_query(Query *parse, bool need_stats);
extern PlannedStmt *shard_eager_aggregate_plan(Query *parse,
											   const char *query_string,
											   int cursorOptions,
											   ParamListInfo boundParams,
											   planner_hook_type plan);
extern void shard_eageragg_init(void);

#endif							/* SHARD_EAGERAGG_H */
