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
 * What a reader of times read last: the canonical text of a time and its
 * value, the date in it and its day number, and the calendar date of a
 * day number.  The rows of a time range, or of a table written in time
 * order, come date by date, and one row's time is often read twice (its
 * exact check, then its bucket), so most reads find their answer here.
 * One per reader (the SQL functions of one handle, which its mutex gives
 * to one thread at a time; a thread aggregation).
 */
typedef struct ShardDateCache
{
	char		text[19];		/* YYYY-MM-DD HH:MM:SS, as stored ... */
	int			text_valid;
	long long	usecs;			/* ... and its time, since 2000-01-01 */
	int			date_valid;		/* text's first ten bytes ... */
	long long	days;			/* ... and their day, since 1970-01-01 */
	int			civil_valid;
	long long	civil_days;		/* a day since 1970-01-01 ... */
	int			y,				/* ... and its year, month and day */
				m,
				d;
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
