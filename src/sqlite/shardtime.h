/*-------------------------------------------------------------------------
 *
 * shardtime.h
 *		  Plain-C interface to what SQLite computes of dates and times
 *
 * The SQL functions of shardtime.c, registered on every shard handle by
 * shardio.c, and the codes of ssfdw_bucket, which the planner's side
 * (src/plan/timepush.c) writes into the SQL it sends.  No PostgreSQL
 * header: the functions run on fan-out worker threads.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDTIME_H
#define SHARDTIME_H

#include <sqlite3.h>

#include "shardio.h"

/*
 * ssfdw_bucket(x, is_date, code): what a time bucket groups by.  Units of
 * date_trunc give the Unix seconds of the bucket's start (which the backend
 * reads back as a timestamp or a date); fields of extract and date_part
 * give the field's value.
 */
#define SHARDTIME_TRUNC_MINUTE		1
#define SHARDTIME_TRUNC_HOUR		2
#define SHARDTIME_TRUNC_DAY			3	/* also CAST(ts AS date) */
#define SHARDTIME_TRUNC_WEEK		4
#define SHARDTIME_TRUNC_MONTH		5
#define SHARDTIME_TRUNC_QUARTER		6
#define SHARDTIME_TRUNC_YEAR		7
#define SHARDTIME_FIELD_YEAR		11
#define SHARDTIME_FIELD_QUARTER		12
#define SHARDTIME_FIELD_MONTH		13
#define SHARDTIME_FIELD_DAY			14
#define SHARDTIME_FIELD_HOUR		15
#define SHARDTIME_FIELD_MINUTE		16
#define SHARDTIME_FIELD_DOW			17
#define SHARDTIME_FIELD_ISODOW		18
#define SHARDTIME_FIELD_DOY			19

/*
 * The last date a reader of times saw in the canonical form, and its day
 * number: the rows of a time range, or of a table written in time order,
 * come date by date, so most rows find their date here and skip reading
 * it again.  One per reader (an SQL function of one handle, a thread
 * aggregation), used by one thread at a time.
 */
typedef struct ShardDateCache
{
	char		date[10];		/* YYYY-MM-DD, as stored */
	int			valid;
	long long	days;			/* since 1970-01-01 */
} ShardDateCache;

extern int	shardtime_value_time(const ShardValue *v, int as_date,
								 long long *usecs, char *msg,
								 ShardDateCache *cache);
extern long long shardtime_round_usecs(long long usecs, int p);

extern void shardtime_usecs_func(sqlite3_context *ctx, int argc,
								 sqlite3_value **argv);
extern void shardtime_days_func(sqlite3_context *ctx, int argc,
								sqlite3_value **argv);
extern void shardtime_tz_grid_func(sqlite3_context *ctx, int argc,
								   sqlite3_value **argv);
extern void shardtime_canon_func(sqlite3_context *ctx, int argc,
								 sqlite3_value **argv);
extern void shardtime_bucket_func(sqlite3_context *ctx, int argc,
								  sqlite3_value **argv);

#endif							/* SHARDTIME_H */
