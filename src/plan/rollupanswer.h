/*-------------------------------------------------------------------------
 *
 * rollupanswer.h
 *		  Answering aggregate queries from rollups: the planning
 *		  (rollupanswer.c) and the decision of which tenants are read live
 *		  (exec/rollupscan.c)
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARD_ROLLUPANSWER_H
#define SHARD_ROLLUPANSWER_H

#include "datatype/timestamp.h"
#include "nodes/pathnodes.h"

/* sqlite_shard_fdw.rollup_answer */
typedef enum RollupAnswerMode
{
	ROLLUP_ANSWER_OFF,
	ROLLUP_ANSWER_LIVE,			/* rollup, and changed tenants read live */
	ROLLUP_ANSWER_STALE			/* rollup alone within the staleness bound */
} RollupAnswerMode;

/* What one execution decided: the tenants read live, and the rest's age. */
typedef struct RollupLiveDecision
{
	char	   *relname;		/* the rollup table */
	Datum		ids;			/* text[] of the tenants read live */
	int			nlive;			/* how many */
	int			ntenants;		/* tenants the rollup holds (in scope) */
	bool		all_live;		/* every tenant read live, and why */
	const char *why_all;
	bool		stale;			/* pending tenants answered from the rollup */
	bool		has_as_of;
	TimestampTz as_of;			/* oldest refresh of a tenant answered from
								 * the rollup */
	int64		staleness_us;	/* at most this old, for those tenants */
	int			nshards;		/* shards whose change logs were looked at */
	int			nopened;		/* ... of which opened, their files changed */
} RollupLiveDecision;

extern int	shard_rollup_answer;
extern int	shard_rollup_max_staleness;

/* in plan/rollupanswer.c */
extern void shard_rollupanswer_init(void);

/* in exec/rollupscan.c */
extern RollupLiveDecision *rollup_live_decide(Oid rollup, int64 bound_us);
extern bool rollup_live_is_marker(Oid funcid);
extern void rollup_live_add_path(PlannerInfo *root, RelOptInfo *rel,
								 RangeTblEntry *rte);
extern void rollup_live_init(void);

#endif							/* SHARD_ROLLUPANSWER_H */
