/*-------------------------------------------------------------------------
 *
 * aggpush.h
 *		  Aggregates the shards compute, and their per-shard SQL (aggpush.c)
 *
 *-------------------------------------------------------------------------
 */
#ifndef AGGPUSH_H
#define AGGPUSH_H

#include "sqlite_shard_fdw.h"

/*
 * The shard query's select list, each expression once, and the same
 * columns as thread aggregation computes them (threadagg.c): a raw query of
 * the inputs, and per column an operation on raw columns.
 */
typedef struct SelectList
{
	List	   *exprs;			/* SQL text of each column */
	List	   *ta;				/* per column: ThreadAggOp, raw, arg */
	List	   *raws;			/* SQL text of each raw column */
	List	   *guards;			/* storage-class checks, each once */
	List	   *keychecks;		/* the same, of keys, counted apart */
	List	   *ta_guards;		/* per check: raw column, TA_OK_ mask, low,
								 * high, key check */
	List	  **params;			/* the values FILTER and CASE conditions */
	List	  **param_kinds;	/* bind, and their kinds */
} SelectList;

extern bool shard_agg_time_type(Oid typid);
extern bool shard_agg_groupable_type(Oid typid, int32 typmod, Oid collid);
extern Expr *shard_agg_input(Aggref *agg);
extern Oid	shard_agg_input_type(Aggref *agg, RelOptInfo *baserel);
extern Var *shard_agg_arg(Aggref *agg, RelOptInfo *baserel);
extern int	shard_agg_classify(PlannerInfo *root, Aggref *agg,
							   RelOptInfo *baserel);
extern int	shard_agg_select_col(SelectList *sl, char *expr, int op,
								 const char *input, const char *arg);
extern void shard_agg_guard_column(SelectList *sl, const char *c, Oid type,
								   bool keycheck);
extern List *shard_agg_partial_cols(SelectList *sl, PlannerInfo *root,
									Aggref *agg, int op, RelOptInfo *baserel);

#endif							/* AGGPUSH_H */
