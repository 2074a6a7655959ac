/*-------------------------------------------------------------------------
 *
 * timepush.c
 *		  Time values on the backend side: what is pushed, and what is bound
 *
 * Every date and time the shards compare or group by passes through here;
 * what SQLite computes of them on the thread side is shardtime.c's.
 *
 * A condition on a date or time column is sent twice over (deparse.c calls
 * shard_time_deparse_comparison):
 *
 * - the exact check, ssfdw_usecs(col, p) or ssfdw_days(col, of_ts) (the
 *   value the wrapper reads from any stored form) compared with a bound
 *   number.  A value of another time type than the column's (timestamp
 *   against timestamptz, a date against a time, now() - interval '30
 *   days' against a timestamp column) is turned, when the scan starts,
 *   into the first and the last value of the column's type that compare
 *   at least and at most equal to it, found with PostgreSQL's own
 *   cross-type comparison in the session's TimeZone (time_bound).  That
 *   comparison is monotonic in the column's value, so "col >= v" is
 *   exactly "col >= first", "col <= v" is "col <= last", and so on.
 *
 * - a range on the stored column that contains every row that can match,
 *   which SQLite can search an index for.  Stored values are numbers (Unix
 *   seconds, integer or real), which SQLite orders before all text, or
 *   text 'YYYY-MM-DD[ |T]HH:MM...' with an optional offset of up to 14:59,
 *   which orders as its local time to the minute (the space before 'T').
 *   So the range is two: numbers between the bound's seconds less and plus
 *   two, and text between the local minutes of the bound less and plus 15
 *   hours and a minute ("(c >= n1 AND c <= n2) OR (c >= t1 AND c < t2)").
 *   Text that starts with no digit, and blobs, can be no time: two more
 *   arms keep them in, so that the exact check raises their error as
 *   before.  The values are bound bare, so that SQLite applies the
 *   column's own affinity to them (a TEXT column turns the numbers into
 *   text, which then match nothing).  shard_join_conditions merges the
 *   ranges of one column into one, and puts them first, where SQLite looks
 *   for index terms; the exact checks keep the answer.  A shard that
 *   declares the column TEXT holds no numbers: there the range is one
 *   range of text (shard_time_ranges_for_shard), which a covering index
 *   answers without reading the table.
 *
 * A row outside the range is not read, as a row any other pushed condition
 * drops: a number out of PostgreSQL's range there, or text that starts
 * with a digit but is no time, raises nothing.
 *
 * Time buckets (upper.c asks shard_time_deparse_bucket) group on one number
 * per row: ssfdw_bucket(col, is_date, unit) for date_trunc, extract,
 * date_part and CAST(ts AS date) of timestamp and date columns (the bucket's
 * start in Unix seconds, or the field), ssfdw_tz_grid for those of a
 * timestamptz column in a time zone, whose grid shard_time_bind computes
 * when the scan starts (bind_tz_grid); the merge computes PostgreSQL's
 * function of each group's time.  The keys BI tools build around these
 * (casts, Sunday weeks, epoch grids, minute grains, report time zones,
 * numeric bins) are bucket forms: the shards group by a stand-in of the
 * column and the merge computes the whole key of it (bucketform.c).
 * CAST(extract(epoch FROM col) AS bigint) compared with an integer, and
 * extract(epoch FROM col) compared with a numeric, are compared as their
 * column, with the first and last times of the value (shard_time_epoch_of,
 * cross_time_cmp).
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"
#include "shardtime.h"

#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "nodes/nodeFuncs.h"
#include "parser/scansup.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/fmgroids.h"
#include "utils/formatting.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/selfuncs.h"
#include "utils/timestamp.h"

/* What a time kind binds (the "form" of SHARD_TIME_KIND). */
enum
{
	TIME_FORM_EXACT,			/* the bound, in the column's units */
	TIME_FORM_NUM_LOWER,		/* Unix seconds at or below the range */
	TIME_FORM_NUM_UPPER,		/* Unix seconds at or above it */
	TIME_FORM_TEXT_LOWER,		/* text at or below the range */
	TIME_FORM_TEXT_UPPER,		/* text above it */
	TIME_NFORMS
};

/*
 * The type of a value compared (the "valtype" of SHARD_TIME_KIND): a time
 * (time_code), the integer compared with CAST(extract(epoch FROM col) AS
 * bigint), or the numeric compared with extract(epoch FROM col) itself
 * (epoch_code).
 */
#define TIME_VAL_EPOCH_INT2	3
#define TIME_VAL_EPOCH_INT4	4
#define TIME_VAL_EPOCH_INT8	5
#define TIME_VAL_EPOCH_NUMERIC	6
#define TIME_NVALTYPES		7

/* Which bound of a value (the "which" of SHARD_TIME_KIND). */
#define TIME_FIRST	0			/* the first column value >= the value */
#define TIME_LAST	1			/* the last column value <= the value */

/*
 * A time kind: the parameter kind of a value compared with a date or time
 * column, SHARD_PARAM_TIME and above, with what to bind packed in.
 */
#define SHARD_TIME_KIND(array, form, coltype, valtype, which) \
	(SHARD_PARAM_TIME + \
	 (((((array) * TIME_NFORMS + (form)) * 3 + (coltype)) * TIME_NVALTYPES + \
	   (valtype)) * 2 + \
	  (which)))

/* Slack of the ranges: more than rounding and the largest offset move. */
#define RANGE_SLACK_SECS	2
#define RANGE_SLACK_USECS	((15 * SECS_PER_HOUR + SECS_PER_MINUTE) * USECS_PER_SEC)

/* Microseconds since 2000-01-01 of 0000-01-01 and of 10000-01-01. */
#define USECS_YEAR_0		(-730485 * USECS_PER_DAY)
#define USECS_YEAR_10000	(2921940 * USECS_PER_DAY)

/* Seconds from 1970-01-01 to 2000-01-01. */
#define UNIX_EPOCH_DIFF_SECS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)

/* Days a date bound is clamped to before it becomes microseconds. */
#define DAYS_CLAMP			100000000

/*
 * time_code
 *		0, 1, 2 for timestamp, timestamptz, date; -1 for other types.
 */
static int
time_code(Oid typid)
{
	switch (typid)
	{
		case TIMESTAMPOID:
			return 0;
		case TIMESTAMPTZOID:
			return 1;
		case DATEOID:
			return 2;
		default:
			return -1;
	}
}

/*
 * epoch_code
 *		The valtype of an integer or a numeric compared with a time's epoch
 *		seconds, or -1 for other types.
 */
static int
epoch_code(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
			return TIME_VAL_EPOCH_INT2;
		case INT4OID:
			return TIME_VAL_EPOCH_INT4;
		case INT8OID:
			return TIME_VAL_EPOCH_INT8;
		case NUMERICOID:
			return TIME_VAL_EPOCH_NUMERIC;
		default:
			return -1;
	}
}

/*
 * shard_time_date_of_timestamp
 *		The timestamp column of this table whose date expr is (CAST(ts AS
 *		date), which BI tools filter days by), or NULL.  Not of timestamp(p)
 *		with p < 6, which rounds the time, perhaps into the next day, first.
 */
Var *
shard_time_date_of_timestamp(Expr *expr, RelOptInfo *baserel)
{
	FuncExpr   *f = (FuncExpr *) expr;
	Var		   *var;

	if (expr == NULL || !IsA(expr, FuncExpr) ||
		f->funcid != F_DATE_TIMESTAMP || list_length(f->args) != 1)
		return NULL;
	var = shard_own_column(linitial(f->args), baserel);
	if (var == NULL || var->vartype != TIMESTAMPOID ||
		(var->vartypmod >= 0 && var->vartypmod < 6))
		return NULL;
	return var;
}

/*
 * shard_time_deparse_column_value
 *		Write a date or time column as the number the wrapper reads in any
 *		stored form, for SQLite to compare, order and take extremes of:
 *		ssfdw_usecs(col, p), microseconds rounded as timestamp(p) rounds,
 *		or ssfdw_days(col, 0); false for a column of any other type.
 */
bool
shard_time_deparse_column_value(StringInfo buf, PlannerInfo *root, Var *var)
{
	if (var->vartype == TIMESTAMPOID || var->vartype == TIMESTAMPTZOID)
	{
		appendStringInfoString(buf, "ssfdw_usecs(");
		shard_deparse_column_ref(buf, root, var);
		appendStringInfo(buf, ", %d)", var->vartypmod);
		return true;
	}
	if (var->vartype == DATEOID)
	{
		appendStringInfoString(buf, "ssfdw_days(");
		shard_deparse_column_ref(buf, root, var);
		appendStringInfoString(buf, ", 0)");
		return true;
	}
	return false;
}

/*
 * shard_time_comparable
 *		May a time column (or the date of a timestamp column) be compared
 *		with a value of valtype in the shards?  Any of timestamp,
 *		timestamptz and date against any: the value becomes the column's
 *		bounds when the scan starts.
 */
bool
shard_time_comparable(Expr *col, Oid valtype)
{
	/* extract's own numeric against a numeric, its bigint an integer */
	if (shard_time_epoch_of(col, NULL) != NULL)
		return epoch_code(valtype) >= 0 &&
			(exprType((Node *) shard_strip_relabel(col)) == NUMERICOID) ==
			(epoch_code(valtype) == TIME_VAL_EPOCH_NUMERIC);
	return time_code(exprType((Node *) shard_strip_relabel(col))) >= 0 &&
		time_code(valtype) >= 0;
}

/*
 * shard_time_epoch_of
 *		The timestamp or timestamptz column of this table (of any table
 *		with baserel NULL) whose epoch expr is: CAST(extract(epoch FROM
 *		col) AS bigint), which a filter in Unix seconds such as Grafana's
 *		$__unixEpochFilter compares with integers, or extract(epoch FROM
 *		col) itself, a numeric (the microseconds a fraction) that the same
 *		filter on a subquery's epoch column compares with numerics; or
 *		NULL.  It is compared as its column, with the first and last times
 *		of the integer or the numeric.
 */
Var *
shard_time_epoch_of(Expr *expr, RelOptInfo *baserel)
{
	FuncExpr   *f = (FuncExpr *) shard_strip_relabel(expr);
	FuncExpr   *ex;
	char	   *field;
	Var		   *var;

	if (f == NULL || !IsA(f, FuncExpr))
		return NULL;
	if (f->funcid == F_INT8_NUMERIC && list_length(f->args) == 1)
		ex = (FuncExpr *) shard_strip_relabel(linitial(f->args));
	else
		ex = f;
	if (ex == NULL || !IsA(ex, FuncExpr) || list_length(ex->args) != 2 ||
		(ex->funcid != F_EXTRACT_TEXT_TIMESTAMP &&
		 ex->funcid != F_EXTRACT_TEXT_TIMESTAMPTZ) ||
		(field = shard_const_text(linitial(ex->args))) == NULL ||
		pg_strcasecmp(field, "epoch") != 0)
		return NULL;
	var = (Var *) shard_strip_relabel(lsecond(ex->args));
	if (baserel != NULL)
		var = shard_own_column((Expr *) var, baserel);
	if (var == NULL || !IsA(var, Var) || var->varlevelsup != 0 ||
		var->varattno <= 0 ||
		(var->vartype != TIMESTAMPOID && var->vartype != TIMESTAMPTZOID))
		return NULL;
	return var;
}

/*
 * shard_const_text
 *		The value of a text constant, or NULL.
 */
char *
shard_const_text(Expr *expr)
{
	Const	   *c = (Const *) expr;

	if (expr == NULL || !IsA(expr, Const) || c->constisnull ||
		c->consttype != TEXTOID)
		return NULL;
	return TextDatumGetCString(c->constvalue);
}

/*
 * zone_column
 *		Does a time bucket read a timestamptz column in a zone given by a
 *		constant: date_trunc, extract, date_part or the date of
 *		timezone('zone', tz) (tz AT TIME ZONE 'zone'), or date_trunc(unit,
 *		tz, 'zone')?  Sets *var, and *zone when zone is not NULL.
 */
static bool
zone_column(FuncExpr *func, RelOptInfo *baserel, char **zone, Var **var)
{
	Expr	   *arg;
	char	   *z;

	*var = NULL;
	if (func->funcid == F_DATE_TRUNC_TEXT_TIMESTAMPTZ_TEXT &&
		list_length(func->args) == 3)
	{
		arg = lsecond(func->args);
		z = shard_const_text(lthird(func->args));
	}
	else if ((func->funcid == F_DATE_TRUNC_TEXT_TIMESTAMP ||
			  func->funcid == F_EXTRACT_TEXT_TIMESTAMP ||
			  func->funcid == F_DATE_PART_TEXT_TIMESTAMP ||
			  func->funcid == F_DATE_TIMESTAMP) &&
			 IsA(llast(func->args), FuncExpr) &&
			 ((FuncExpr *) llast(func->args))->funcid == F_TIMEZONE_TEXT_TIMESTAMPTZ &&
			 list_length(((FuncExpr *) llast(func->args))->args) == 2)
	{
		FuncExpr   *tzf = (FuncExpr *) llast(func->args);

		arg = lsecond(tzf->args);
		z = shard_const_text(linitial(tzf->args));
	}
	else
		return false;
	*var = shard_own_column(arg, baserel);
	/* an empty zone is PostgreSQL's error, raised on the rows */
	if (z == NULL || z[0] == '\0' || *var == NULL ||
		(*var)->vartype != TIMESTAMPTZOID)
	{
		*var = NULL;
		return false;
	}
	if (zone)
		*zone = z;
	return true;
}

/*
 * shard_time_bucket_column
 *		The column a time bucket reads: a timestamp or date column, or a
 *		date column cast to timestamp (as date_part('year', d) resolves) or,
 *		for date_trunc, to timestamptz (as date_trunc('month', d) resolves),
 *		or, for date_trunc, extract, date_part and the date in the
 *		TimeZone or in a given zone (zone_column), a timestamptz column;
 *		NULL for anything else.
 */
Var *
shard_time_bucket_column(FuncExpr *func, RelOptInfo *baserel)
{
	Expr	   *arg;
	Var		   *var;

	if (func->args == NIL)
		return NULL;
	if (zone_column(func, baserel, NULL, &var))
		return var;
	arg = llast(func->args);
	if (IsA(arg, FuncExpr) &&
		(((FuncExpr *) arg)->funcid == F_TIMESTAMP_DATE ||
		 (((FuncExpr *) arg)->funcid == F_TIMESTAMPTZ_DATE &&
		  func->funcid == F_DATE_TRUNC_TEXT_TIMESTAMPTZ)) &&
		list_length(((FuncExpr *) arg)->args) == 1)
	{
		var = shard_own_column(linitial(((FuncExpr *) arg)->args), baserel);
		return (var && var->vartype == DATEOID) ? var : NULL;
	}
	var = shard_own_column(arg, baserel);
	if (var == NULL ||
		(var->vartype != TIMESTAMPOID && var->vartype != DATEOID &&
		 (var->vartype != TIMESTAMPTZOID ||
		  (func->funcid != F_DATE_TRUNC_TEXT_TIMESTAMPTZ &&
		   func->funcid != F_EXTRACT_TEXT_TIMESTAMPTZ &&
		   func->funcid != F_DATE_PART_TEXT_TIMESTAMPTZ &&
		   func->funcid != F_DATE_TIMESTAMPTZ))))
		return NULL;
	return var;
}

/*
 * shard_time_key_unit
 *		The unit or field of a grouping key date_trunc(unit, x), or
 *		extract/date_part(field, x), in the session's TimeZone (the
 *		timestamptz versions), or "" for CAST(x AS date), which SQLite
 *		cannot compute but the merge can, from a time that stands for each
 *		group; NULL when the key is not one.
 *
 * For x a date column (cast to timestamptz, as PostgreSQL resolves
 * date_trunc('month', d)) the shards group by the unit's first day, the same
 * bucket of every date in it: a day, a week, a month or a year; *grid is 0.
 * For x a timestamptz column, by the time rounded down to a grid on which
 * every local boundary of the unit falls (ssfdw_tz_grid, bind_tz_grid below), at most one day: *grid is the unit's longest such step in
 * seconds, and the merge adds up the groups that fall into one bucket.
 */
char *
shard_time_key_unit(FuncExpr *func, RelOptInfo *baserel, int *grid, char **zone)
{
	static const struct
	{
		const char *unit;
		int			grid;		/* the longest step, for timestamptz */
		bool		trunc;		/* a unit of date_trunc */
		bool		field;		/* a field of extract and date_part */
		bool		dates;		/* date_trunc of dates too */
	}			units[] =
	{
		{"minute", SECS_PER_MINUTE, true, true, false},
		{"hour", SECS_PER_HOUR, true, true, false},
		{"day", SECS_PER_DAY, true, true, true},
		{"week", SECS_PER_DAY, true, true, true},
		{"month", SECS_PER_DAY, true, true, true},
		{"quarter", SECS_PER_DAY, true, true, false},
		{"year", SECS_PER_DAY, true, true, true},
		{"dow", SECS_PER_DAY, false, true, false},
		{"isodow", SECS_PER_DAY, false, true, false},
		{"doy", SECS_PER_DAY, false, true, false},
		{"isoyear", SECS_PER_DAY, false, true, false}
	};
	bool		trunc;
	bool		in_zone;
	Var		   *var;
	char	   *unit;
	char	   *z = NULL;
	int			i;

	in_zone = zone_column(func, baserel, &z, &var);
	if (zone)
		*zone = z;

	/* the date in the TimeZone or the zone: no unit */
	if ((func->funcid == F_DATE_TIMESTAMPTZ ||
		 (func->funcid == F_DATE_TIMESTAMP && in_zone)) &&
		list_length(func->args) == 1)
	{
		var = shard_time_bucket_column(func, baserel);
		if (var == NULL || var->vartype != TIMESTAMPTZOID)
			return NULL;
		if (grid)
			*grid = SECS_PER_DAY;
		return "";
	}
	trunc = (func->funcid == F_DATE_TRUNC_TEXT_TIMESTAMPTZ ||
			 func->funcid == F_DATE_TRUNC_TEXT_TIMESTAMPTZ_TEXT ||
			 (func->funcid == F_DATE_TRUNC_TEXT_TIMESTAMP && in_zone));
	if (!trunc && func->funcid != F_EXTRACT_TEXT_TIMESTAMPTZ &&
		func->funcid != F_DATE_PART_TEXT_TIMESTAMPTZ &&
		!(in_zone && (func->funcid == F_EXTRACT_TEXT_TIMESTAMP ||
					  func->funcid == F_DATE_PART_TEXT_TIMESTAMP)))
		return NULL;
	if (list_length(func->args) != (func->funcid == F_DATE_TRUNC_TEXT_TIMESTAMPTZ_TEXT ? 3 : 2))
		return NULL;
	var = shard_time_bucket_column(func, baserel);
	unit = shard_const_text(linitial(func->args));
	if (var == NULL || unit == NULL)
		return NULL;
	unit = asc_tolower(unit, strlen(unit));
	for (i = 0; i < lengthof(units); i++)
	{
		if (strcmp(unit, units[i].unit) != 0)
			continue;
		if (trunc ? !units[i].trunc : !units[i].field)
			return NULL;
		if (var->vartype == DATEOID && !units[i].dates)
			return NULL;
		if (grid)
			*grid = (var->vartype == DATEOID) ? 0 : units[i].grid;
		return unit;
	}
	return NULL;
}

/*
 * shard_time_deparse_bucket
 *		The SQLite expression for date_trunc, extract/date_part or the date
 *		of a timestamp column, or for the buckets of days of a date column;
 *		false when the unit or field is not supported.  With buf NULL, only
 *		checks.  A number per row: ssfdw_bucket (shardtime.c), or on a
 *		timestamptz column ssfdw_tz_grid with its grid's three parameters
 *		from tz_param on.
 */
bool
shard_time_deparse_bucket(StringInfo buf, PlannerInfo *root, FuncExpr *func,
						  RelOptInfo *baserel, int tz_param)
{
	static const struct
	{
		const char *unit;
		int			trunc;		/* SHARDTIME_TRUNC_, or 0 */
		int			field;		/* SHARDTIME_FIELD_, or 0 */
		bool		dates;		/* of dates too (a day or longer) */
	}			units[] =
	{
		{"minute", SHARDTIME_TRUNC_MINUTE, SHARDTIME_FIELD_MINUTE, false},
		{"hour", SHARDTIME_TRUNC_HOUR, SHARDTIME_FIELD_HOUR, false},
		{"day", SHARDTIME_TRUNC_DAY, SHARDTIME_FIELD_DAY, true},
		{"week", SHARDTIME_TRUNC_WEEK, 0, true},
		{"month", SHARDTIME_TRUNC_MONTH, SHARDTIME_FIELD_MONTH, true},
		{"quarter", SHARDTIME_TRUNC_QUARTER, SHARDTIME_FIELD_QUARTER, true},
		{"year", SHARDTIME_TRUNC_YEAR, SHARDTIME_FIELD_YEAR, true},
		{"dow", 0, SHARDTIME_FIELD_DOW, true},
		{"isodow", 0, SHARDTIME_FIELD_ISODOW, true},
		{"doy", 0, SHARDTIME_FIELD_DOY, true}
	};
	Var		   *var = shard_time_bucket_column(func, baserel);
	bool		days;
	bool		trunc;
	char	   *unit;
	int			code = 0;
	int			i;

	if (var == NULL)
		return false;
	/* timestamp(p) rounds to p digits first, into the next day perhaps */
	if ((var->vartype == TIMESTAMPOID || var->vartype == TIMESTAMPTZOID) &&
		var->vartypmod >= 0 && var->vartypmod < 6)
		return false;

	/* the time on the session TimeZone's grid (shard_time_key_unit) */
	if (var->vartype == TIMESTAMPTZOID)
	{
		if (shard_time_key_unit(func, baserel, NULL, NULL) == NULL)
			return false;
		if (buf)
		{
			if (tz_param <= 0)
				elog(ERROR, "time zone grid of a grouping key has no parameters");
			appendStringInfoString(buf, "ssfdw_tz_grid(");
			shard_deparse_column_ref(buf, root, var);
			appendStringInfo(buf, ", ?%d, ?%d, ?%d)", tz_param, tz_param + 1,
							 tz_param + 2);
		}
		return true;
	}

	/*
	 * A date is the day of the time the wrapper reads: units of a day or
	 * more only, as its time of day is not the date's midnight.
	 */
	days = (var->vartype == DATEOID);
	if (days && func->funcid != F_EXTRACT_TEXT_DATE &&
		func->funcid != F_DATE_TRUNC_TEXT_TIMESTAMP &&
		func->funcid != F_DATE_TRUNC_TEXT_TIMESTAMPTZ &&
		func->funcid != F_EXTRACT_TEXT_TIMESTAMP &&
		func->funcid != F_DATE_PART_TEXT_TIMESTAMP)
		return false;

	/*
	 * date_trunc of a date as timestamptz is a time in the session's
	 * TimeZone, which the shards do not know; but it depends on the date
	 * only, so the shards group by the start of the unit, and the merge
	 * computes PostgreSQL's value from its date (shard_time_key_unit).
	 */
	trunc = (func->funcid == F_DATE_TRUNC_TEXT_TIMESTAMP ||
			 (func->funcid == F_DATE_TRUNC_TEXT_TIMESTAMPTZ &&
			  shard_time_key_unit(func, baserel, NULL, NULL) != NULL));

	/* CAST(ts AS date), the day BI tools group by */
	if (func->funcid == F_DATE_TIMESTAMP && list_length(func->args) == 1)
		code = SHARDTIME_TRUNC_DAY;
	else if (list_length(func->args) == 2 &&
			 (trunc || func->funcid == F_EXTRACT_TEXT_TIMESTAMP ||
			  func->funcid == F_DATE_PART_TEXT_TIMESTAMP ||
			  func->funcid == F_EXTRACT_TEXT_DATE) &&
			 (unit = shard_const_text(linitial(func->args))) != NULL)
	{
		unit = asc_tolower(unit, strlen(unit));
		for (i = 0; i < lengthof(units); i++)
			if (strcmp(unit, units[i].unit) == 0 && (!days || units[i].dates))
				code = trunc ? units[i].trunc : units[i].field;
	}
	if (code == 0)
		return false;
	if (buf)
	{
		appendStringInfoString(buf, "ssfdw_bucket(");
		shard_deparse_column_ref(buf, root, var);
		appendStringInfo(buf, ", %d, %d)", days ? 1 : 0, code);
	}
	return true;
}

/*
 * shard_time_column_span
 *		The seconds between the least and the greatest value of a date or
 *		time column that its statistics know (histogram bounds and most
 *		common values), or the difference of an integer column's; false
 *		without statistics.
 */
bool
shard_time_column_span(PlannerInfo *root, Var *var, double *secs)
{
	static const int kinds[] = {STATISTIC_KIND_HISTOGRAM, STATISTIC_KIND_MCV};
	VariableStatData vardata;
	bool		found = false;
	double		lo = 0,
				hi = 0;
	int			k;

	examine_variable(root, (Node *) var, 0, &vardata);
	for (k = 0; k < lengthof(kinds) && HeapTupleIsValid(vardata.statsTuple); k++)
	{
		AttStatsSlot sslot;
		int			i;

		if (!get_attstatsslot(&sslot, vardata.statsTuple, kinds[k], InvalidOid,
							  ATTSTATSSLOT_VALUES))
			continue;
		for (i = 0; i < sslot.nvalues; i++)
		{
			double		t;

			if (var->vartype == INT2OID)
				t = DatumGetInt16(sslot.values[i]);
			else if (var->vartype == INT4OID)
				t = DatumGetInt32(sslot.values[i]);
			else if (var->vartype == INT8OID)
				t = (double) DatumGetInt64(sslot.values[i]);
			else if (var->vartype == DATEOID)
			{
				DateADT		d = DatumGetDateADT(sslot.values[i]);

				if (DATE_NOT_FINITE(d))
					continue;
				t = (double) d * SECS_PER_DAY;
			}
			else
			{
				Timestamp	ts = DatumGetTimestamp(sslot.values[i]);

				if (TIMESTAMP_NOT_FINITE(ts))
					continue;
				t = (double) ts / USECS_PER_SEC;
			}
			lo = found ? Min(lo, t) : t;
			hi = found ? Max(hi, t) : t;
			found = true;
		}
		free_attstatsslot(&sslot);
	}
	ReleaseVariableStats(vardata);
	*secs = hi - lo;
	return found;
}

/*
 * shard_time_bucket_groups
 *		The number of groups a time bucket key (date_trunc, extract or
 *		date_part of a time, the date of a time, a bucket form) makes, or
 *		-1 for any other key.  PostgreSQL takes an expression's distinct values to be its
 *		column's, while a bucket holds many of them: a field has at most its
 *		range of values, a unit at most one per unit of the span of the
 *		column's values.
 */
double
shard_time_bucket_groups(PlannerInfo *root, Expr *expr, RelOptInfo *baserel,
			  double input_rows)
{
	static const struct
	{
		const char *unit;
		double		secs;		/* shortest length of the unit */
		double		values;		/* values of the field, or 0: no bound */
	}			units[] =
	{
		{"minute", SECS_PER_MINUTE, 60},
		{"hour", SECS_PER_HOUR, 24},
		{"day", SECS_PER_DAY, 31},
		{"week", 7 * SECS_PER_DAY, 53},
		{"month", 28 * SECS_PER_DAY, 12},
		{"quarter", 89 * SECS_PER_DAY, 4},
		{"year", 365 * SECS_PER_DAY, 0},
		{"isoyear", 364 * SECS_PER_DAY, 0},
		{"dow", 0, 7},
		{"isodow", 0, 7},
		{"doy", 0, 366}
	};
	FuncExpr   *func = (FuncExpr *) expr;
	Var		   *var;
	char	   *unit;
	bool		field;
	double		column_groups;
	double		span;
	int			i;

	if (!IsA(expr, FuncExpr) ||
		(var = shard_time_bucket_column(func, baserel)) == NULL)
		return shard_time_key_form_groups(root, expr, baserel, input_rows);
	field = (func->funcid == F_EXTRACT_TEXT_TIMESTAMP ||
			 func->funcid == F_EXTRACT_TEXT_TIMESTAMPTZ ||
			 func->funcid == F_EXTRACT_TEXT_DATE ||
			 func->funcid == F_DATE_PART_TEXT_TIMESTAMP ||
			 func->funcid == F_DATE_PART_TEXT_TIMESTAMPTZ);
	/* the date of a time: days */
	unit = list_length(func->args) == 1 ? "day" :
		shard_const_text(linitial(func->args));
	if (unit == NULL)
		return -1;
	unit = asc_tolower(unit, strlen(unit));
	column_groups = estimate_num_groups(root, list_make1(var), input_rows,
										NULL, NULL);
	for (i = 0; i < lengthof(units); i++)
	{
		if (strcmp(unit, units[i].unit) != 0)
			continue;
		if (field && units[i].values > 0)
			return Min(units[i].values, column_groups);
		if (units[i].secs == 0 || !shard_time_column_span(root, var, &span))
			break;
		return Min(floor(span / units[i].secs) + 2, column_groups);
	}
	return column_groups;
}

/*
 * add_time_param
 *		Collect a value to bind with a time kind; returns its number.
 */
static int
add_time_param(Expr *val, int kind, List **params, List **param_kinds)
{
	*params = lappend(*params, val);
	*param_kinds = lappend_int(*param_kinds, kind);
	return list_length(*params);
}

/*
 * deparse_range
 *		Write into range the marker of a range on the stored column colsql
 *		for shard_join_conditions: the parameters of its numeric and text
 *		lower bounds (lower) and upper bounds (upper), each "" when absent.
 */
static void
deparse_range(StringInfo range, const char *colsql, Expr *val, int coltype,
			  int valtype, bool array, int lower, int upper,
			  List **params, List **param_kinds)
{
	int			forms[2][2] = {{TIME_FORM_NUM_LOWER, TIME_FORM_TEXT_LOWER},
	{TIME_FORM_NUM_UPPER, TIME_FORM_TEXT_UPPER}};
	int			which[2] = {lower, upper};
	int			side,
				i;

	appendStringInfo(range, "%c%s", SHARD_TIME_RANGE_MARK, colsql);
	for (side = 0; side < 2; side++)
		for (i = 0; i < 2; i++)
		{
			appendStringInfoChar(range, SHARD_TIME_RANGE_MARK);
			if (which[side] >= 0)
				appendStringInfo(range, "?%d",
								 add_time_param(val,
												SHARD_TIME_KIND(array, forms[side][i],
																coltype, valtype,
																which[side]),
												params, param_kinds));
		}
}

/*
 * shard_time_deparse_comparison
 *		Write "colexpr op value" of a time column (colexpr: ssfdw_usecs or
 *		ssfdw_days of it, colvar the column whose stored values are read)
 *		into buf, the value bound as a number of the column's units; and,
 *		with range not NULL (a condition at the top of the WHERE), a range
 *		of the stored column that holds every row that can match (see the
 *		file header).  op is the comparison's SQL spelling, column first.
 */
void
shard_time_deparse_comparison(StringInfo buf, StringInfo range,
							  PlannerInfo *root, const char *colexpr,
							  Var *colvar, Oid coltypid, const char *op,
							  Expr *val, List **params, List **param_kinds)
{
	Oid			valtypid = exprType((Node *) shard_strip_relabel(val));
	int			coltype = time_code(coltypid);
	int			valtype = time_code(valtypid) >= 0 ? time_code(valtypid) :
		epoch_code(valtypid);
	bool		same = (coltype == valtype);
	int			lower = -1;
	int			upper = -1;

#define EXACT(which) \
	add_time_param(val, same ? SHARD_PARAM_SCALAR : \
				   SHARD_TIME_KIND(0, TIME_FORM_EXACT, coltype, valtype, which), \
				   params, param_kinds)

	if (strcmp(op, "=") == 0 || strcmp(op, "<>") == 0)
	{
		int			first = EXACT(TIME_FIRST);
		int			last = same ? first : EXACT(TIME_LAST);

		appendStringInfo(buf, "%s %sBETWEEN CAST(?%d AS INTEGER) AND CAST(?%d AS INTEGER)",
						 colexpr, op[0] == '=' ? "" : "NOT ", first, last);
		if (op[0] == '=')
			lower = TIME_FIRST, upper = TIME_LAST;
	}
	else
	{
		/* "> v" is "> last", "< v" is "< first"; "<=" and ">=" likewise */
		int			which = (strcmp(op, ">") == 0 || strcmp(op, "<=") == 0) ?
			TIME_LAST : TIME_FIRST;

		appendStringInfo(buf, "%s %s CAST(?%d AS INTEGER)", colexpr, op,
						 EXACT(which));
		if (op[0] == '>')
			lower = which;
		else
			upper = which;
	}
#undef EXACT

	if (range != NULL && (lower >= 0 || upper >= 0))
	{
		StringInfoData colsql;

		initStringInfo(&colsql);
		shard_deparse_column_ref(&colsql, root, colvar);
		deparse_range(range, colsql.data, val,
					  coltype, valtype, false, lower, upper,
					  params, param_kinds);
	}
}

/*
 * shard_time_deparse_in_range
 *		For "col IN (array)" at the top of the WHERE: a range of the stored
 *		column from the array's least value to its greatest.
 */
void
shard_time_deparse_in_range(StringInfo range, PlannerInfo *root, Var *colvar,
							Oid coltypid, Expr *arr, List **params,
							List **param_kinds)
{
	StringInfoData colsql;
	int			coltype = time_code(coltypid);

	initStringInfo(&colsql);
	shard_deparse_column_ref(&colsql, root, colvar);
	deparse_range(range, colsql.data, arr, coltype, coltype, true,
				  TIME_FIRST, TIME_LAST, params, param_kinds);
}

/*
 * shard_time_range_append
 *		Write the index range of every column that range markers
 *		(SHARD_TIME_RANGE_MARK ...) name, one per column, into *safe as
 *		String nodes: the lower bounds of one column combined with max(),
 *		the upper ones with min().
 */
List *
shard_time_range_append(List *safe, List *marks)
{
	List	   *cols = NIL;
	ListCell   *lc;

	foreach(lc, marks)
	{
		char	   *col = pstrdup(strVal(lfirst(lc)));
		char	   *p = strchr(col + 1, SHARD_TIME_RANGE_MARK);
		ListCell   *lc2;
		bool		seen = false;

		*p = '\0';
		foreach(lc2, cols)
			if (strcmp(strVal(lfirst(lc2)), col) == 0)
				seen = true;
		if (!seen)
			cols = lappend(cols, makeString(col));
	}

	foreach(lc, cols)
	{
		/* the first character: the mark, or the mark of a TEXT column */
		bool		text_only = (strVal(lfirst(lc))[0] == SHARD_TIME_TEXT_RANGE_MARK);
		const char *col = strVal(lfirst(lc)) + 1;
		List	   *bounds[4] = {NIL, NIL, NIL, NIL};
		const char *fn[4] = {"max", "max", "min", "min"};
		char	   *b[4];
		ListCell   *lc2;
		StringInfoData sql;
		int			i;

		/* marker: mark col mark numlo mark textlo mark numhi mark texthi */
		foreach(lc2, marks)
		{
			char	   *m = pstrdup(strVal(lfirst(lc2)) + 1);
			char	   *parts[5];

			if (strVal(lfirst(lc2))[0] != strVal(lfirst(lc))[0])
				continue;
			parts[0] = m;
			for (i = 1; i < 5; i++)
			{
				parts[i] = strchr(parts[i - 1], SHARD_TIME_RANGE_MARK);
				*parts[i]++ = '\0';
			}
			if (strcmp(parts[0], col) != 0)
				continue;
			for (i = 0; i < 4; i++)
				if (parts[i + 1][0] != '\0')
					bounds[i] = lappend(bounds[i], parts[i + 1]);
		}
		for (i = 0; i < 4; i++)
		{
			StringInfoData one;
			ListCell   *lc3;

			b[i] = NULL;
			if (bounds[i] == NIL)
				continue;
			if (list_length(bounds[i]) == 1)
			{
				b[i] = linitial(bounds[i]);
				continue;
			}
			initStringInfo(&one);
			appendStringInfo(&one, "%s(", fn[i]);
			foreach(lc3, bounds[i])
				appendStringInfo(&one, "%s%s",
								 foreach_current_index(lc3) ? ", " : "",
								 (char *) lfirst(lc3));
			appendStringInfoChar(&one, ')');
			b[i] = one.data;
		}

		/*
		 * A TEXT column holds no numbers (SQLite turns them into text): one
		 * range, which a covering index answers without reading the table.
		 * What no time is beyond it (blobs, text that starts with no digit)
		 * is not read there.
		 */
		if (text_only)
		{
			initStringInfo(&sql);
			appendStringInfoChar(&sql, '(');
			if (b[1])
				appendStringInfo(&sql, "%s >= %s AND ", col, b[1]);
			appendStringInfo(&sql, "%s < %s)", col, b[3] ? b[3] : "':'");
			safe = lappend(safe, makeString(sql.data));
			continue;
		}

		/*
		 * Numbers sort before text, text before blobs.  Text that starts
		 * with no digit, and blobs, are no time: they stay in, so that
		 * the exact check raises their error as before.
		 */
		initStringInfo(&sql);
		appendStringInfoString(&sql, "((");
		if (b[0])
			appendStringInfo(&sql, "%s >= %s AND ", col, b[0]);
		if (b[2])
			appendStringInfo(&sql, "%s <= %s", col, b[2]);
		else
			appendStringInfo(&sql, "%s < ''", col);
		appendStringInfo(&sql, ") OR (%s >= %s AND %s < %s) OR (%s >= '' AND %s < '0') OR %s >= ':')",
						 col, b[1] ? b[1] : "'0'", col, b[3] ? b[3] : "':'",
						 col, col, col);
		safe = lappend(safe, makeString(sql.data));
	}
	return safe;
}

/*
 * parse_time_check
 *		Read an exact check as shard_time_deparse_comparison writes it at
 *		the top of a WHERE clause, "(colexpr op CAST(?n AS INTEGER))" with
 *		op one of >=, >, <, <= and colexpr a call of ssfdw_usecs or
 *		ssfdw_days: true with the parts, false for any other condition.
 *		Read from the end, which is the wrapper's own text whatever the
 *		column's name.
 */
static bool
parse_time_check(const char *sql, char **colexpr, char **op, int *param)
{
	static const char *const ops[] = {">=", ">", "<=", "<"};
	size_t		len = strlen(sql);
	const char *tail = " AS INTEGER))";
	const char *cast;
	const char *p;
	int			i;

	if ((strncmp(sql, "(ssfdw_usecs(", 13) != 0 &&
		 strncmp(sql, "(ssfdw_days(", 12) != 0) ||
		len < strlen(tail) || strcmp(sql + len - strlen(tail), tail) != 0)
		return false;
	/* the last " CAST(?", then its digits up to the tail */
	for (cast = sql + len - strlen(tail); cast > sql; cast--)
		if (strncmp(cast, " CAST(?", 7) == 0)
			break;
	if (cast == sql)
		return false;
	for (p = cast + 7; *p >= '0' && *p <= '9'; p++)
		;
	if (p == cast + 7 || p != sql + len - strlen(tail))
		return false;
	*param = atoi(cast + 7);
	for (i = 0; i < lengthof(ops); i++)
	{
		size_t		oplen = strlen(ops[i]);

		if ((size_t) (cast - sql) > oplen + 2 &&
			strncmp(cast - oplen, ops[i], oplen) == 0 &&
			cast[-(int) oplen - 1] == ' ')
		{
			*op = (char *) ops[i];
			*colexpr = pnstrdup(sql + 1, cast - oplen - 1 - (sql + 1));
			return true;
		}
	}
	return false;
}

/*
 * shard_time_merge_checks
 *		The exact checks of conditions, with a lower and an upper bound of
 *		one column (ts >= a AND ts < b) made one BETWEEN, which SQLite reads
 *		the column's time for once per row instead of twice; the others as
 *		they are.  Times are integers, so "> a" is ">= a + 1" and "< b" is
 *		"<= b - 1"; at the ends of the integers SQLite's sum becomes a
 *		real at or beyond those ends, past every value ssfdw_usecs and
 *		ssfdw_days return (they refuse what lies outside PostgreSQL's
 *		range), which keeps the answer.
 */
List *
shard_time_merge_checks(List *sqls)
{
	List	   *out = NIL;
	int			n = list_length(sqls);
	bool	   *used = palloc0(sizeof(bool) * (n + 1));
	int			i,
				j;

	for (i = 0; i < n; i++)
	{
		const char *a = strVal(list_nth(sqls, i));
		char	   *col_a,
				   *op_a;
		int			param_a;

		if (used[i])
			continue;
		used[i] = true;
		if (!parse_time_check(a, &col_a, &op_a, &param_a))
		{
			out = lappend(out, list_nth(sqls, i));
			continue;
		}
		for (j = i + 1; j < n; j++)
		{
			char	   *col_b,
					   *op_b;
			int			param_b;
			int			lo,
						hi;
			const char *lo_op,
					   *hi_op;
			StringInfoData sql;

			if (used[j] ||
				!parse_time_check(strVal(list_nth(sqls, j)), &col_b, &op_b,
								  &param_b) ||
				strcmp(col_a, col_b) != 0 || op_a[0] == op_b[0])
				continue;
			used[j] = true;
			lo = op_a[0] == '>' ? param_a : param_b;
			lo_op = op_a[0] == '>' ? op_a : op_b;
			hi = op_a[0] == '<' ? param_a : param_b;
			hi_op = op_a[0] == '<' ? op_a : op_b;
			initStringInfo(&sql);
			appendStringInfo(&sql, "(%s BETWEEN CAST(?%d AS INTEGER)%s AND CAST(?%d AS INTEGER)%s)",
							 col_a, lo, lo_op[1] == '=' ? "" : " + 1",
							 hi, hi_op[1] == '=' ? "" : " - 1");
			out = lappend(out, makeString(sql.data));
			break;
		}
		if (j == n)
			out = lappend(out, list_nth(sqls, i));
	}
	return out;
}

/*
 * text_range_marker
 *		A copy of range marker c marked as a range of text alone, which
 *		shard_time_range_append writes as one range of text.
 */
static Node *
text_range_marker(const char *c)
{
	char	   *t = pstrdup(c);

	t[0] = SHARD_TIME_TEXT_RANGE_MARK;
	return (Node *) makeString(t);
}

/*
 * shard_time_ranges_for_shard
 *		The conditions of one shard's statement: the range markers of time
 *		columns that the shard declares TEXT marked as such, so that
 *		shard_time_range_append writes one range of text for them.
 */
List *
shard_time_ranges_for_shard(List *conds, ShardConn *conn, const char *table)
{
	List	   *out = NIL;
	ListCell   *lc;

	foreach(lc, conds)
	{
		char	   *c = strVal(lfirst(lc));

		const char *end;
		char	   *name = (c[0] == SHARD_TIME_RANGE_MARK) ?
			shard_unquote_identifier(c + 1, &end) : NULL;

		if (name != NULL)
		{
			char		aff = shard_conn_column_affinity(conn, table, name);

			if (aff == 'T' || aff == 'U')
			{
				out = lappend(out, text_range_marker(c));
				continue;
			}
		}
		out = lappend(out, lfirst(lc));
	}
	return out;
}

/*
 * shard_time_ranges_text_only
 *		The conditions with the range markers of column (quoted, as the
 *		markers name it) marked as text, so that shard_time_range_append
 *		writes one range of text for it: for the first rows of a time key
 *		in its canonical text (shardsql.c, append_window_sql), which no
 *		number and no other text outside that range can be.  One range,
 *		where the ranges of every stored form would be an OR, lets SQLite
 *		read an index on the tenant and the time from the range's end in
 *		the order asked, rather than every entry of the tenant.
 */
List *
shard_time_ranges_text_only(List *conds, const char *column)
{
	size_t		len = strlen(column);
	List	   *out = NIL;
	ListCell   *lc;

	foreach(lc, conds)
	{
		char	   *c = strVal(lfirst(lc));

		if (c[0] == SHARD_TIME_RANGE_MARK && strncmp(c + 1, column, len) == 0 &&
			c[len + 1] == SHARD_TIME_RANGE_MARK)
		{
			out = lappend(out, text_range_marker(c));
			continue;
		}
		out = lappend(out, lfirst(lc));
	}
	return out;
}

/*
 * bound_seconds
 *		The value of a range bound's parameter ("?n", the Unix seconds of
 *		a numeric bound) among binds, into *secs; false when it has none.
 */
static bool
bound_seconds(const char *param, const ShardValue *binds, int nbinds,
			  double *secs)
{
	int			n;

	if (param[0] != '?')
		return false;
	n = atoi(param + 1);
	if (n < 1 || n > nbinds || binds[n - 1].type != SQLITE_INTEGER)
		return false;
	*secs = (double) binds[n - 1].u.i;
	return true;
}

/*
 * shard_time_range_seconds
 *		The time ranges that the range markers among a shard's conditions
 *		give, once their values are bound (binds, nbinds): one
 *		ShardTimeRange per column, its bounds the Unix seconds of the
 *		numeric arms (a little wider than the condition), -inf or +inf
 *		where it has none.  What a time index would read (timeindex.c).
 */
List *
shard_time_range_seconds(List *conds, const ShardValue *binds, int nbinds)
{
	List	   *ranges = NIL;
	ListCell   *lc;

	foreach(lc, conds)
	{
		const char *c = strVal(lfirst(lc));
		char	   *m;
		char	   *parts[5];
		ShardTimeRange *r = NULL;
		const char *end;
		char	   *name;
		ListCell   *lc2;
		double		secs;
		int			i;

		if (c[0] != SHARD_TIME_RANGE_MARK && c[0] != SHARD_TIME_TEXT_RANGE_MARK)
			continue;
		/* marker: mark col mark numlo mark textlo mark numhi mark texthi */
		m = pstrdup(c + 1);
		parts[0] = m;
		for (i = 1; i < 5; i++)
		{
			parts[i] = strchr(parts[i - 1], SHARD_TIME_RANGE_MARK);
			if (parts[i] == NULL)
				break;
			*parts[i]++ = '\0';
		}
		name = shard_unquote_identifier(parts[0], &end);
		if (i < 5 || name == NULL || *end != '\0')
			continue;
		foreach(lc2, ranges)
			if (strcmp(((ShardTimeRange *) lfirst(lc2))->column, name) == 0)
				r = lfirst(lc2);
		if (r == NULL)
		{
			r = palloc(sizeof(ShardTimeRange));
			r->column = name;
			r->lo = -get_float8_infinity();
			r->hi = get_float8_infinity();
			ranges = lappend(ranges, r);
		}
		/* several conditions on one column: the narrowest */
		if (bound_seconds(parts[1], binds, nbinds, &secs))
			r->lo = Max(r->lo, secs);
		if (bound_seconds(parts[3], binds, nbinds, &secs))
			r->hi = Min(r->hi, secs);
	}
	return ranges;
}

/*
 * cross_time_cmp
 *		PostgreSQL's comparison of a value of the column's type (column
 *		units: microseconds or days) with a value of another time type.
 */
static int
cross_time_cmp(int coltype, int valtype, int64 c, Datum val)
{
	static PGFunction const cmps[3][3] = {
		{NULL, timestamp_cmp_timestamptz, timestamp_cmp_date},
		{timestamptz_cmp_timestamp, NULL, timestamptz_cmp_date},
		{date_cmp_timestamp, date_cmp_timestamptz, NULL}
	};
	Datum		cd = (coltype == 2) ? DateADTGetDatum((DateADT) c) :
		TimestampGetDatum((Timestamp) c);

	/*
	 * extract(epoch FROM c) against a numeric, or CAST(extract(epoch FROM
	 * c) AS bigint) against an integer, as PostgreSQL computes them
	 */
	if (valtype >= TIME_VAL_EPOCH_INT2)
	{
		Datum		epoch = DirectFunctionCall2(coltype == 0 ? extract_timestamp :
												extract_timestamptz,
												CStringGetTextDatum("epoch"), cd);
		int64		e;
		int64		v;

		if (valtype == TIME_VAL_EPOCH_NUMERIC)
			return DatumGetInt32(DirectFunctionCall2(numeric_cmp, epoch, val));
		e = DatumGetInt64(DirectFunctionCall1(numeric_int8, epoch));
		v = (valtype == TIME_VAL_EPOCH_INT2) ? DatumGetInt16(val) :
			(valtype == TIME_VAL_EPOCH_INT4) ? DatumGetInt32(val) :
			DatumGetInt64(val);
		return (e > v) - (e < v);
	}
	return DatumGetInt32(DirectFunctionCall2(cmps[coltype][valtype], cd, val));
}

/*
 * time_bound
 *		The first value of the column's type that compares at least equal
 *		to val (TIME_FIRST), or the last that compares at most equal
 *		(TIME_LAST), in column units; PG_INT64_MAX (PG_INT64_MIN) when none
 *		does.  The comparison is monotonic within the type's valid range,
 *		so a binary search finds it there; beyond it, where a stored time
 *		rounded by timestamp(p) may land, PostgreSQL compares as with
 *		infinities, and so do the sentinels.
 */
static int64
time_bound(int coltype, int valtype, Datum val, int which)
{
	int64		lo = (coltype == 2) ?
		(int64) DATETIME_MIN_JULIAN - POSTGRES_EPOCH_JDATE : MIN_TIMESTAMP;
	int64		hi = (coltype == 2) ?
		(int64) DATE_END_JULIAN - POSTGRES_EPOCH_JDATE - 1 : END_TIMESTAMP - 1;
	bool		epoch = (valtype >= TIME_VAL_EPOCH_INT2);
	bool		noend = epoch ? false : (valtype == 2) ?
		DATE_IS_NOEND(DatumGetDateADT(val)) :
		TIMESTAMP_IS_NOEND(DatumGetTimestamp(val));
	bool		nobegin = epoch ? false : (valtype == 2) ?
		DATE_IS_NOBEGIN(DatumGetDateADT(val)) :
		TIMESTAMP_IS_NOBEGIN(DatumGetTimestamp(val));

	/* a numeric's infinities (and NaN, above them) compare as a time's */
	if (valtype == TIME_VAL_EPOCH_NUMERIC)
	{
		Numeric		n = DatumGetNumeric(val);
		bool		inf = numeric_is_inf(n);
		bool		above = inf &&
			DatumGetInt32(DirectFunctionCall2(numeric_cmp, val,
											  NumericGetDatum(int64_to_numeric(0)))) > 0;

		noend = numeric_is_nan(n) || above;
		nobegin = inf && !above;
	}

	if (noend)
		return which == TIME_FIRST ? PG_INT64_MAX : PG_INT64_MAX - 1;
	if (nobegin)
		return which == TIME_FIRST ? PG_INT64_MIN + 1 : PG_INT64_MIN;

	if (which == TIME_FIRST)
	{
		if (cross_time_cmp(coltype, valtype, hi, val) < 0)
			return PG_INT64_MAX;
		/* the first c in [lo, hi] with cmp >= 0 */
		while (lo < hi)
		{
			int64		mid = (lo & hi) + ((lo ^ hi) >> 1);	/* floor */

			if (cross_time_cmp(coltype, valtype, mid, val) >= 0)
				hi = mid;
			else
				lo = mid + 1;
		}
		return lo;
	}
	if (cross_time_cmp(coltype, valtype, lo, val) > 0)
		return PG_INT64_MIN;
	/* the last c in [lo, hi] with cmp <= 0 */
	while (lo < hi)
	{
		int64		mid = (lo | hi) - ((lo ^ hi) >> 1);	/* ceiling */

		if (cross_time_cmp(coltype, valtype, mid, val) <= 0)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/*
 * array_extreme
 *		The least (TIME_FIRST) or greatest (TIME_LAST) non-null element of
 *		an array of the column's type, in column units; false when there is
 *		none.
 */
static bool
array_extreme(Datum arr, int which, int64 *out)
{
	ArrayType  *a = DatumGetArrayTypeP(arr);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			n,
				i;
	bool		found = false;

	get_typlenbyvalalign(ARR_ELEMTYPE(a), &typlen, &typbyval, &typalign);
	deconstruct_array(a, ARR_ELEMTYPE(a), typlen, typbyval, typalign,
					  &elems, &nulls, &n);
	for (i = 0; i < n; i++)
	{
		int64		v;

		if (nulls[i])
			continue;
		v = (ARR_ELEMTYPE(a) == DATEOID) ? DatumGetDateADT(elems[i]) :
			DatumGetTimestamp(elems[i]);
		if (!found || (which == TIME_FIRST ? v < *out : v > *out))
			*out = v;
		found = true;
	}
	return found;
}

/*
 * range_text
 *		The text bound of a range: the minute of t (microseconds since
 *		2000-01-01) as 'YYYY-MM-DD HH:MM' (sep ' ') or 'YYYY-MM-DDTHH:MM';
 *		"" before every four-digit year, ":" (after every digit) after.
 */
static char *
range_text(int64 t, char sep)
{
	int			y,
				m,
				d;
	int64		days;
	int64		rem;

	if (t < USECS_YEAR_0)
		return "";
	if (t >= USECS_YEAR_10000)
		return ":";
	days = t / USECS_PER_DAY;
	rem = t % USECS_PER_DAY;
	if (rem < 0)
	{
		days--;
		rem += USECS_PER_DAY;
	}
	j2date((int) (days + POSTGRES_EPOCH_JDATE), &y, &m, &d);
	return psprintf("%04d-%02d-%02d%c%02d:%02d", y, m, d, sep,
					(int) (rem / USECS_PER_HOUR),
					(int) (rem / USECS_PER_MINUTE % 60));
}

/*
 * range_value
 *		A range bound (form) from the column-unit bound b of a column of
 *		type coltype: see the file header.
 */
static void
range_value(int form, int coltype, int64 b, ShardValue *out)
{
	bool		upper = (form == TIME_FORM_NUM_UPPER ||
						 form == TIME_FORM_TEXT_UPPER);
	int64		us;

	/* the microseconds the bound stands for: a day spans the whole day */
	if (coltype == 2)
	{
		b = Max(Min(b, DAYS_CLAMP), -DAYS_CLAMP);
		us = b * USECS_PER_DAY + (upper ? USECS_PER_DAY - 1 : 0);
	}
	else
		us = b;

	out->len = 0;
	switch (form)
	{
		case TIME_FORM_NUM_LOWER:
			out->type = SQLITE_INTEGER;
			out->u.i = us / USECS_PER_SEC - 1 + UNIX_EPOCH_DIFF_SECS - RANGE_SLACK_SECS;
			break;
		case TIME_FORM_NUM_UPPER:
			out->type = SQLITE_INTEGER;
			out->u.i = us / USECS_PER_SEC + 1 + UNIX_EPOCH_DIFF_SECS + RANGE_SLACK_SECS;
			break;
		default:
			{
				int64		t;
				char	   *text;

				if (upper)
				{
					/* every minute before t's next is below the text */
					if (pg_add_s64_overflow(us, RANGE_SLACK_USECS + USECS_PER_MINUTE, &t))
						t = PG_INT64_MAX;
					text = range_text(t, 'T');
				}
				else
				{
					if (pg_sub_s64_overflow(us, RANGE_SLACK_USECS, &t))
						t = PG_INT64_MIN;
					text = range_text(t, ' ');
				}
				out->type = SQLITE_TEXT;
				out->u.p = text;
				out->len = strlen(text);
			}
	}
}

/* Times before 1800 and after 2300 (Unix seconds): see bind_tz_grid. */
#define TZ_GRID_START	INT64CONST(-5364662400)
#define TZ_GRID_END		INT64CONST(10413792000)
/* The second day of PostgreSQL's timestamps (4714-11-25 BC, Unix seconds). */
#define TZ_GRID_FIRST_DAY \
	(((int64) 0 - UNIX_EPOCH_JDATE + 1) * SECS_PER_DAY)

/*
 * shard_time_gcd
 *		The greatest common divisor of a and |b|, a > 0.
 */
int64
shard_time_gcd(int64 a, int64 b)
{
	if (b < 0)
		b = -b;
	while (b != 0)
	{
		int64		r = a % b;

		a = b;
		b = r;
	}
	return a;
}

/*
 * bind_tz_grid
 *		The grid that ssfdw_tz_grid rounds times down to for a date_trunc
 *		key in zone tz (upper.c, key_trunc_unit): from
 *		grid[0] (Unix seconds) on, every local boundary of a unit of
 *		unit_secs seconds (a minute, an hour, or a day for the longer
 *		units) falls on grid[2] plus a multiple of grid[1] seconds, so that
 *		date_trunc has one value between two such times; times before
 *		grid[0] are taken to the second.
 *
 * A local boundary is a multiple of unit_secs in local time, so in UTC that
 * multiple less the offset in force, or the moment a transition skips it:
 * the step divides unit_secs, the differences between the offsets, and
 * the transitions' distances from the first.  Offsets of no whole quarter
 * hour (local mean time, before standard time), and transitions off the
 * quarter hours (off the minutes for a unit of a minute), would bring it
 * down to minutes or seconds, so the grid starts after the last of them,
 * and after 1800.  Transitions are followed to the end of the zone's table, or to
 * 2300 for a zone whose rules go on; both repeat every 400 years.
 */
static void
bind_tz_grid(int unit_secs, pg_tz *tz, int64 grid[3])
{
	static pg_tz *cached_tz = NULL;
	static int	cached_unit = 0;
	static int64 cached[3];
	pg_time_t	t = TZ_GRID_START;
	int64		cut = TZ_GRID_START;
	int64		step = unit_secs;
	int64		phase = 0;
	bool		have_phase = false;
	bool		complete = false;
	int			i;

	if (cached_tz == tz && cached_unit == unit_secs)
	{
		memcpy(grid, cached, sizeof(cached));
		return;
	}
	for (i = 0; i < 100000 && !complete; i++)
	{
		long		before_off;
		long		after_off;
		int			before_dst;
		int			after_dst;
		pg_time_t	boundary;
		int			rc;

		rc = pg_next_dst_boundary(&t, &before_off, &before_dst, &boundary,
								  &after_off, &after_dst, tz);
		if (rc < 0)
			break;
		if (before_off % 900 != 0)
		{
			if (rc == 0)
				break;			/* for ever */
			cut = boundary;		/* the grid starts after this period */
			step = unit_secs;
			have_phase = false;
		}
		else if (!have_phase)
		{
			phase = -(int64) before_off;
			have_phase = true;
		}
		else
			step = shard_time_gcd(step, -(int64) before_off - phase);
		if (rc == 0)
			complete = true;
		else
		{
			if (have_phase &&
				shard_time_gcd(step, boundary - phase) < Min(unit_secs, 900))
			{
				/*
				 * A transition off the quarter hours (Los Angeles at 2:01 in
				 * 1948) would take the grid down to minutes or seconds for
				 * every time: the grid starts after it instead.
				 */
				cut = boundary;
				step = unit_secs;
				have_phase = false;
			}
			else if (have_phase)
				step = shard_time_gcd(step, boundary - phase);
			complete = (boundary > TZ_GRID_END);
			t = boundary;
		}
	}
	if (!complete || !have_phase)
	{
		cut = PG_INT64_MAX;		/* no grid: every time to the second */
		step = 1;
		phase = 0;
	}
	grid[0] = cut;
	grid[1] = step;
	grid[2] = phase % step;
	cached_tz = tz;
	cached_unit = unit_secs;
	memcpy(cached, grid, sizeof(cached));
}

/*
 * bind_zone_grid
 *		The grid of a key's parameter "<longest step>[ <zone>]" (upper.c):
 *		in the session's TimeZone, or in the zone, found as timezone(zone,
 *		tz) finds it: an abbreviation of a fixed offset first, then a zone
 *		name.  Where the grid is not known (an abbreviation whose offset
 *		depends on the date, a zone that does not exist, for which the
 *		merge raises PostgreSQL's error), every time is taken to the second.
 */
static void
bind_zone_grid(const char *spec, int64 grid[3])
{
	char	   *rest;
	long		unit_secs = strtol(spec, &rest, 10);
	char	   *lowzone;
	int			offset;
	pg_tz	   *tz = NULL;
	int			type;

	if (*rest == '\0')
	{
		bind_tz_grid(unit_secs, session_timezone, grid);
		return;
	}
	rest++;
	lowzone = downcase_truncate_identifier(rest, strlen(rest), false);
	type = DecodeTimezoneAbbrev(0, lowzone, &offset, &tz);
	if (type == TZ || type == DTZ)
	{
		/*
		 * A fixed offset east of UTC: local boundaries less the offset;
		 * but not in the first day, where a time rounded down could fall
		 * before the first timestamp.
		 */
		grid[0] = TZ_GRID_FIRST_DAY;
		grid[1] = unit_secs;
		grid[2] = -(int64) offset % unit_secs;
		return;
	}
	tz = (type == DYNTZ || strlen(rest) > TZ_STRLEN_MAX) ? NULL : pg_tzset(rest);
	if (tz == NULL)
	{
		grid[0] = PG_INT64_MAX;
		grid[1] = 1;
		grid[2] = 0;
		return;
	}
	bind_tz_grid(unit_secs, tz, grid);
}

/*
 * shard_time_bind
 *		Compute the value of a time parameter (kind, value not NULL) when
 *		the scan starts; false when kind is not a time kind.
 *		grid carries a time zone grid from its first parameter to the two
 *		after it.
 */
bool
shard_time_bind(int kind, Datum value, ShardValue *out, int64 grid[3])
{
	out->len = 0;
	if (kind >= SHARD_PARAM_TZ_GRID_CUT && kind <= SHARD_PARAM_TZ_GRID_PHASE)
	{
		/* a key's three come in order: work the grid out once */
		if (kind == SHARD_PARAM_TZ_GRID_CUT)
			bind_zone_grid(TextDatumGetCString(value), grid);
		out->type = SQLITE_INTEGER;
		out->u.i = grid[kind - SHARD_PARAM_TZ_GRID_CUT];
		return true;
	}
	if (kind >= SHARD_PARAM_TIME)
	{
		int			code = kind - SHARD_PARAM_TIME;
		int			which = code % 2;
		int			valtype = (code / 2) % TIME_NVALTYPES;
		int			coltype = (code / (2 * TIME_NVALTYPES)) % 3;
		int			form = (code / (6 * TIME_NVALTYPES)) % TIME_NFORMS;
		bool		array = (code / (6 * TIME_NVALTYPES * TIME_NFORMS)) != 0;
		int64		b;

		if (array)
		{
			if (!array_extreme(value, which, &b))
			{
				out->type = SQLITE_NULL;	/* matches nothing, as IN () */
				return true;
			}
		}
		else if (coltype == valtype)
			b = (coltype == 2) ? DatumGetDateADT(value) :
				DatumGetTimestamp(value);
		else
			b = time_bound(coltype, valtype, value, which);

		if (form == TIME_FORM_EXACT)
		{
			out->type = SQLITE_INTEGER;
			out->u.i = b;
		}
		else
			range_value(form, coltype, b, out);
		return true;
	}
	return false;
}
