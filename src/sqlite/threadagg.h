/*-------------------------------------------------------------------------
 *
 * threadagg.h
 *		  Plain-C aggregation of shard rows (threadagg.c)
 *
 *-------------------------------------------------------------------------
 */
#ifndef THREADAGG_H
#define THREADAGG_H

#include "shardio.h"

/* How one column of a partial-aggregate row is computed from raw rows. */
typedef enum ThreadAggOp
{
	TA_KEY,						/* a grouping value: raw column */
	TA_COUNT_STAR,				/* count(*) */
	TA_COUNT,					/* count(raw) */
	TA_SUM,						/* sum(raw) of integers */
	TA_SUM_HI,					/* sum(raw >> 32) */
	TA_SUM_LO,					/* sum(raw & 4294967295) */
	TA_TOTAL,					/* total(raw) */
	TA_MIN,						/* min(raw), BINARY for text */
	TA_MAX,						/* max(raw) */
	TA_COUNT_DIFF,				/* count(raw) - count(arg) */
	TA_COUNT_INF,				/* sum(raw IN (9e999, -9e999)): infinite
								 * inputs */
	TA_GUARD,					/* values of a storage class not allowed */
	TA_KEYCHECK,				/* the same, of key columns (keycheck
								 * guards): keeps the group under a bound;
								 * the merge decides if it is an error */
	TA_TIME_MIN,				/* min of the times the wrapper reads in raw
								 * (a stored column), as ssfdw_usecs(raw,
								 * arg) or, with arg TA_TIME_DAYS,
								 * ssfdw_days(raw, 0) read them, errors
								 * included */
	TA_TIME_MAX,				/* max of the same */
	TA_SUMSQ					/* ssfdw_sumsq(raw): the exact sum of the
								 * squares of integers, as decimal text */
} ThreadAggOp;

/* Storage classes a guarded column may hold (bits of ThreadAggGuard.ok). */
#define TA_OK_INTEGER	0x01
#define TA_OK_FLOAT		0x02
#define TA_OK_TEXT		0x04
#define TA_OK_TRUE		0x08	/* the raw column is a check: 1 is good */

/* arg of TA_TIME_MIN and TA_TIME_MAX: dates, as days */
#define TA_TIME_DAYS	(-100)

typedef struct ThreadAggColumn
{
	int			op;				/* ThreadAggOp */
	int			raw;			/* raw column it reads, or -1 */
	int			arg;			/* TA_COUNT_DIFF: the second raw column;
								 * TA_TIME_MIN, TA_TIME_MAX: the precision
								 * of a timestamp (-1: none), or
								 * TA_TIME_DAYS */
} ThreadAggColumn;

typedef struct ThreadAggGuard
{
	int			raw;
	int			ok;				/* TA_OK_ bits */
	long long	lo;				/* integers must lie in [lo, hi] ... */
	long long	hi;				/* ... unless lo > hi */
	int			keycheck;		/* counted by TA_KEYCHECK, not TA_GUARD */
} ThreadAggGuard;

/*
 * One key of the order in which a bounded aggregation keeps its groups:
 * a partial column, or a bigint sum's two halves taken as one number.
 */
typedef struct ThreadAggSort
{
	int			col;			/* partial column */
	int			lo;				/* col is TA_SUM_HI: the TA_SUM_LO column;
								 * else -1 */
	int			desc;			/* descending */
	int			nulls_first;
} ThreadAggSort;

/* What the partial rows are and how to compute them; shared read-only. */
typedef struct ThreadAggSpec
{
	int			ncols;
	ThreadAggColumn *cols;
	int			nguards;
	ThreadAggGuard *guards;
	long		max_groups;		/* more than this: give up (SQLITE_FULL) */
	int			nsorts;			/* the order of a bounded aggregation */
	ThreadAggSort *sorts;
} ThreadAggSpec;

typedef struct ThreadAgg ThreadAgg;

extern ThreadAgg *threadagg_create(const ThreadAggSpec *spec,
								   long long bound);
extern int	threadagg_register(sqlite3 *db);
extern int	threadagg_consume(ThreadAgg *ta, sqlite3_stmt *stmt,
							  char *errbuf);
extern int	threadagg_emit(ThreadAgg *ta, ShardBatch *batch, char *errbuf);
extern void threadagg_free(ThreadAgg *ta);

#endif							/* THREADAGG_H */
