/*-------------------------------------------------------------------------
 *
 * shardtime.c
 *		  What SQLite computes of dates and times: reading and SQL functions
 *
 * The thread side of time handling (the backend's side is
 * src/plan/timepush.c): the one reader of the stored forms the wrapper
 * accepts (ISO text with a space or 'T', fractions, 'Z' and offsets; Unix
 * seconds as integers and reals), which the reading threads, the backend's
 * conversion (convert.c) and the SQL functions below share, so that a
 * condition, a bucket and a fetched value read a stored time alike.
 *
 * The SQL functions give pushed-down SQL the times as numbers: ssfdw_usecs
 * and ssfdw_days for conditions and extremes, ssfdw_bucket for time
 * buckets (one call per row that reads the value and does integer
 * arithmetic, never text formatting), ssfdw_tz_grid for buckets in a time
 * zone.  A value the wrapper cannot read is the function's error, with the
 * wrapper's own result code (shardio.h), which the backend maps to
 * PostgreSQL's SQLSTATE.
 *
 * Like everything under src/sqlite/, this file must not include postgres.h.
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "shardio.h"
#include "shardtime.h"

static void civil_from_days(long long z, int *y, int *m, int *d);
static long long days_from_civil(int y, int m, int d);

/*
 * parse_digits
 *		Read exactly n decimal digits at *p (not past end), advancing *p.
 */
static int
parse_digits(const char **p, const char *end, int n, int *value)
{
	int			result = 0;
	int			i;

	if (end - *p < n)
		return 0;
	for (i = 0; i < n; i++)
	{
		char		c = (*p)[i];

		if (c < '0' || c > '9')
			return 0;
		result = result * 10 + (c - '0');
	}
	*p += n;
	*value = result;
	return 1;
}

/*
 * shardio_parse_datetime
 *		Read a date and time in exactly the text forms the wrapper accepts:
 *
 *		YYYY-MM-DD
 *		YYYY-MM-DD HH:MM[Z|[+-]HH:MM]
 *		YYYY-MM-DD HH:MM:SS[Z|[+-]HH:MM]
 *		YYYY-MM-DD HH:MM:SS.S...[Z|[+-]HH:MM]
 *
 * with 'T' allowed instead of the space, fractions of any length rounded
 * half up to microseconds, and offsets up to 14:59.  SQLite's own reader is
 * laxer (spaces, hour 24, February 30); those are refused, so that every
 * value read, and every time bucket computed in a shard, is one PostgreSQL
 * can represent.
 */
int
shardio_parse_datetime(const char *str, int len, ShardDatetime *dt)
{
	static const int mdays[2][12] = {
		{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31},
		{31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	};
	const char *p = str;
	const char *end = str + len;
	int			bad_field = 0;
	int			leap;

	memset(dt, 0, sizeof(*dt));
	if (!parse_digits(&p, end, 4, &dt->year) ||
		p >= end || *p++ != '-' ||
		!parse_digits(&p, end, 2, &dt->month) ||
		p >= end || *p++ != '-' ||
		!parse_digits(&p, end, 2, &dt->day))
		return SHARDIO_DT_BAD_FORMAT;

	if (p < end)
	{
		/* a time of day; SQLite takes offsets only after one */
		if (*p != ' ' && *p != 'T')
			return SHARDIO_DT_BAD_FORMAT;
		p++;
		dt->has_time = 1;
		if (!parse_digits(&p, end, 2, &dt->hour) ||
			p >= end || *p++ != ':' ||
			!parse_digits(&p, end, 2, &dt->minute))
			return SHARDIO_DT_BAD_FORMAT;

		if (p < end && *p == ':')
		{
			p++;
			if (!parse_digits(&p, end, 2, &dt->second))
				return SHARDIO_DT_BAD_FORMAT;
			if (p < end && *p == '.')
			{
				int			ndigits = 0;

				p++;
				while (p < end && *p >= '0' && *p <= '9')
				{
					if (ndigits < 6)
						dt->fraction = dt->fraction * 10 + (*p - '0');
					else if (ndigits == 6 && *p >= '5')
						dt->fraction++;
					ndigits++;
					p++;
				}
				if (ndigits == 0)
					return SHARDIO_DT_BAD_FORMAT;
				for (; ndigits < 6; ndigits++)
					dt->fraction *= 10;
			}
		}

		if (p < end && *p == 'Z')
		{
			p++;
			dt->has_offset = 1;
		}
		else if (p < end && (*p == '+' || *p == '-'))
		{
			int			sign = (*p == '-') ? -1 : 1;
			int			off_hour,
						off_minute;

			p++;
			dt->has_offset = 1;
			if (!parse_digits(&p, end, 2, &off_hour) ||
				p >= end || *p++ != ':' ||
				!parse_digits(&p, end, 2, &off_minute))
				return SHARDIO_DT_BAD_FORMAT;
			if (off_hour > 14 || off_minute > 59)
				bad_field = 1;
			dt->offset = sign * (off_hour * 3600 + off_minute * 60);
		}
		if (dt->hour > 23 || dt->minute > 59 || dt->second > 59)
			bad_field = 1;
	}
	if (p != end)
		return SHARDIO_DT_BAD_FORMAT;

	leap = (dt->year % 4 == 0 && (dt->year % 100 != 0 || dt->year % 400 == 0));
	if (dt->month < 1 || dt->month > 12 ||
		dt->day < 1 || dt->day > mdays[leap][dt->month - 1])
		bad_field = 1;
	return bad_field ? SHARDIO_DT_BAD_FIELD : SHARDIO_DT_OK;
}

/* Seconds from 1970-01-01 to 2000-01-01, and microseconds in a day. */
#define UNIX_TO_2000_SECS	946684800LL
#define USECS_PER_DAY_LL	86400000000LL

/*
 * shardio_unix_time
 *		Unix seconds stored as an integer (type SQLITE_INTEGER: i) or a real
 *		(d), as the wrapper reads them in timestamp columns: microseconds
 *		since 2000-01-01, reals rounded to the microsecond; with as_date,
 *		the days since then of that time.  Returns 0 when the result does
 *		not fit in 64 bits (NaN and infinities included).  The one reading
 *		of numbers as times, for convert.c and the SQL functions here.
 */
int
shardio_unix_time(int type, long long i, double d, int as_date,
				  long long *out)
{
	if (type == SQLITE_INTEGER)
	{
		long long	secs;

		if (as_date)
		{
			/* floor division: times before 1970 are on the day before */
			*out = i / 86400 - (i % 86400 < 0 ? 1 : 0) - 10957;
			return 1;
		}
		return !__builtin_sub_overflow(i, UNIX_TO_2000_SECS, &secs) &&
			!__builtin_mul_overflow(secs, 1000000LL, out);
	}
	else
	{
		double		us = rint((d - (double) UNIX_TO_2000_SECS) * 1000000.0);

		if (as_date)
			us = floor(us / (double) USECS_PER_DAY_LL);
		/* what fits in int64, as PostgreSQL's FLOAT8_FITS_IN_INT64 */
		if (!(us >= -9223372036854775808.0 && us < 9223372036854775808.0))
			return 0;
		*out = (long long) us;
		return 1;
	}
}

/*
 * shardio_usecs_days
 *		The day, counted from 2000-01-01, that a time in microseconds since
 *		then falls on.
 */
long long
shardio_usecs_days(long long usecs)
{
	return usecs / USECS_PER_DAY_LL - (usecs % USECS_PER_DAY_LL < 0 ? 1 : 0);
}

/*
 * PostgreSQL's timestamp range, in microseconds since 2000-01-01, and its
 * date range, in days since then.
 */
#define PG_MIN_TIMESTAMP	(-211813488000000000LL)	/* 4714-11-24 BC */
#define PG_END_TIMESTAMP	9223371331200000000LL	/* 294277-01-01 */
#define PG_MIN_DATE			(-2451545LL)	/* 4714-11-24 BC */
#define PG_END_DATE			(2147483494LL - 2451545LL)	/* 5874898-01-01 */

/*
 * utf8_prefix
 *		The first characters of valid UTF-8 text that fit in buf (size at
 *		least 5), for a message: cut between characters, never inside one.
 */
static const char *
utf8_prefix(const char *str, int len, char *buf, int size)
{
	int			n = len < size - 1 ? len : size - 1;

	while (n > 0 && n < len && (((unsigned char) str[n]) & 0xC0) == 0x80)
		n--;
	memcpy(buf, str, n);
	buf[n] = '\0';
	return buf;
}

/*
 * canonical_usecs
 *		The most common stored form, YYYY-MM-DD HH:MM:SS (or with 'T'), read
 *		without the general reader's steps: 1 with the time in *usecs, or 0
 *		when text is in any other form or has an impossible field, for the
 *		general reader to read or report (shardtime_value_time).  Digits and
 *		separators are ASCII, so such text needs no UTF-8 check.  Text, or
 *		a date, the same bytes as cache's last (cache may be NULL) was
 *		checked and counted then.
 */
static int
canonical_usecs(const char *p, int len, long long *usecs,
				ShardDateCache *cache)
{
	static const int mdays[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	long long	days;
	int			h,
				mi,
				sec;

	if (len != 19)
		return 0;
	if (cache != NULL && cache->text_valid && memcmp(p, cache->text, 19) == 0)
	{
		*usecs = cache->usecs;
		return 1;
	}
	/* every position at once, without a branch per character */
#define NOT_DIGIT(k) ((unsigned) (p[k] - '0') > 9)
#define D2(k) ((p[k] - '0') * 10 + (p[k + 1] - '0'))
	if (NOT_DIGIT(11) | NOT_DIGIT(12) | (p[13] != ':') |
		NOT_DIGIT(14) | NOT_DIGIT(15) | (p[16] != ':') |
		NOT_DIGIT(17) | NOT_DIGIT(18) | ((p[10] != ' ') & (p[10] != 'T')))
		return 0;
	h = D2(11);
	mi = D2(14);
	sec = D2(17);
	if (h > 23 || mi > 59 || sec > 59)
		return 0;
	if (cache != NULL && cache->date_valid && memcmp(p, cache->text, 10) == 0)
		days = cache->days;
	else
	{
		int			y,
					mo,
					d;

		if (NOT_DIGIT(0) | NOT_DIGIT(1) | NOT_DIGIT(2) | NOT_DIGIT(3) |
			(p[4] != '-') | NOT_DIGIT(5) | NOT_DIGIT(6) | (p[7] != '-') |
			NOT_DIGIT(8) | NOT_DIGIT(9))
			return 0;
		y = D2(0) * 100 + D2(2);
		mo = D2(5);
		d = D2(8);
		if (mo < 1 || mo > 12 || d < 1 ||
			(d > mdays[mo] &&
			 !(mo == 2 && d == 29 &&
			   y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))))
			return 0;
		days = days_from_civil(y, mo, d);
		if (cache != NULL)
		{
			cache->days = days;
			cache->date_valid = 1;
		}
	}
#undef D2
#undef NOT_DIGIT
	*usecs = (days - 10957) * 86400000000LL +
		((long long) (h * 60 + mi) * 60 + sec) * 1000000LL;
	if (cache != NULL)
	{
		memcpy(cache->text, p, 19);
		cache->usecs = *usecs;
		cache->text_valid = 1;
	}
	return 1;
}

/*
 * shardtime_value_time
 *		The timestamp the wrapper reads in a stored value v (convert.c's
 *		to_datetime), in microseconds since 2000-01-01 UTC in *usecs, or
 *		with as_date the date it falls on, in days since 2000-01-01 in
 *		*usecs.  Returns SQLITE_OK, or the wrapper's error with its whole
 *		message in msg (SHARDIO_ERRLEN bytes): SHARDIO_ERR_NOT_UTF8 for
 *		text that is not UTF-8, SHARDIO_ERR_TIME_FORMAT for text in no date
 *		and time form, SHARDIO_ERR_TIME_RANGE for impossible fields and
 *		values out of PostgreSQL's range, SHARDIO_ERR_TIME_TYPE for a blob.
 *		v must not be NULL; cache is the reader's (shardtime.h), or NULL.
 *		The one reading of a stored time for the SQL
 *		functions below and for the extremes the reading threads take
 *		(threadagg.c), so that both read every value alike.
 */
int
shardtime_value_time(const ShardValue *v, int as_date, long long *usecs,
					 char *msg, ShardDateCache *cache)
{
	int			ok = 1;

	switch (v->type)
	{
		case SQLITE_INTEGER:
		case SQLITE_FLOAT:
			ok = shardio_unix_time(v->type, v->u.i, v->u.d, as_date, usecs);
			break;
		case SQLITE_TEXT:
			{
				ShardDatetime dt;
				char		shown[44];

				if (canonical_usecs(v->u.p, v->len, usecs, cache))
				{
					if (as_date)
						*usecs = shardio_usecs_days(*usecs);
					break;
				}
				if (!shardio_utf8_ok((const unsigned char *) v->u.p, v->len))
				{
					snprintf(msg, SHARDIO_ERRLEN,
							 "invalid byte sequence for encoding \"UTF8\"");
					return SHARDIO_ERR_NOT_UTF8;
				}
				switch (shardio_parse_datetime(v->u.p, v->len, &dt))
				{
					case SHARDIO_DT_BAD_FORMAT:
						snprintf(msg, SHARDIO_ERRLEN,
								 "text \"%s\" is not a date and time of SQLite",
								 utf8_prefix(v->u.p, v->len, shown, sizeof(shown)));
						return SHARDIO_ERR_TIME_FORMAT;
					case SHARDIO_DT_BAD_FIELD:
						snprintf(msg, SHARDIO_ERRLEN,
								 "date/time field value out of range: \"%s\"",
								 utf8_prefix(v->u.p, v->len, shown, sizeof(shown)));
						return SHARDIO_ERR_TIME_RANGE;
					default:
						*usecs = shardio_datetime_usecs(&dt);
						if (as_date)
							*usecs = shardio_usecs_days(*usecs);
						break;
				}
				break;
			}
		default:
			snprintf(msg, SHARDIO_ERRLEN,
					 "cannot convert SQLite blob to a date or timestamp");
			return SHARDIO_ERR_TIME_TYPE;
	}

	if (ok && as_date)
		ok = (*usecs >= PG_MIN_DATE && *usecs < PG_END_DATE);
	else if (ok)
		ok = (*usecs >= PG_MIN_TIMESTAMP && *usecs < PG_END_TIMESTAMP);
	if (!ok)
	{
		snprintf(msg, SHARDIO_ERRLEN, "%s",
				 as_date ? "date out of range" : "timestamp out of range");
		return SHARDIO_ERR_TIME_RANGE;
	}
	return SQLITE_OK;
}

/*
 * shardtime_round_usecs
 *		A time in microseconds rounded to p fractional digits as
 *		timestamp(p) rounds it: half away from zero; p < 0 or p >= 6: not.
 */
long long
shardtime_round_usecs(long long usecs, int p)
{
	static const long long scales[] = {1000000, 100000, 10000, 1000, 100, 10};

	if (p < 0 || p >= 6)
		return usecs;
	if (usecs >= 0)
		return ((usecs + scales[p] / 2) / scales[p]) * scales[p];
	return -(((-usecs + scales[p] / 2) / scales[p]) * scales[p]);
}

/*
 * wrapper_time
 *		shardtime_value_time of an SQL function's argument v, with the
 *		handle's cache of times read (the user data shardio.c gives the
 *		functions that read times): 1, or 0 after failing the function
 *		with the wrapper's error.  v must not be NULL.
 */
static int
wrapper_time(sqlite3_context *ctx, sqlite3_value *v, int as_date,
			 long long *usecs)
{
	ShardValue	sv;
	char		msg[SHARDIO_ERRLEN];
	int			rc;

	memset(&sv, 0, sizeof(sv));
	sv.type = sqlite3_value_type(v);
	if (sv.type == SQLITE_INTEGER)
		sv.u.i = sqlite3_value_int64(v);
	else if (sv.type == SQLITE_FLOAT)
		sv.u.d = sqlite3_value_double(v);
	else if (sv.type == SQLITE_TEXT)
	{
		sv.u.p = (const char *) sqlite3_value_text(v);
		sv.len = sqlite3_value_bytes(v);
		if (sv.u.p == NULL)
		{
			sqlite3_result_error_nomem(ctx);
			return 0;
		}
	}
	rc = shardtime_value_time(&sv, as_date, usecs, msg,
							  (ShardDateCache *) sqlite3_user_data(ctx));
	if (rc != SQLITE_OK)
	{
		shardio_function_error(ctx, rc, msg);
		return 0;
	}
	return 1;
}

/*
 * arg_usecs
 *		The time the wrapper reads in a function's argument, in
 *		microseconds since 2000-01-01; 0 after setting the result to NULL
 *		for NULL, or failing the function for what the wrapper cannot read.
 */
static int
arg_usecs(sqlite3_context *ctx, sqlite3_value *v, long long *usecs)
{
	if (sqlite3_value_type(v) == SQLITE_NULL)
	{
		sqlite3_result_null(ctx);
		return 0;
	}
	return wrapper_time(ctx, v, 0, usecs);
}

/*
 * shardtime_usecs_func
 *		SQL function ssfdw_usecs(x, p): the timestamp the wrapper reads in x,
 *		as microseconds since 2000-01-01 UTC, rounded to p fractional digits
 *		as timestamp(p) rounds (p < 0: not; like PostgreSQL 15, the rounded
 *		value is not range-checked again), so that pushed-down comparisons
 *		compare what PostgreSQL would; NULL for NULL, and the wrapper's error
 *		for what it cannot read (wrapper_time).
 */
void
shardtime_usecs_func(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	long long	usecs;

	if (!arg_usecs(ctx, argv[0], &usecs))
		return;
	sqlite3_result_int64(ctx, shardtime_round_usecs(usecs, sqlite3_value_int(argv[1])));
}

/*
 * shardtime_days_func
 *		SQL function ssfdw_days(x, of_timestamp): the date the wrapper reads
 *		in x, as days since 2000-01-01, for pushed-down comparisons of date
 *		columns; with of_timestamp 1, the date of the timestamp it reads
 *		(CAST(ts AS date)), which must be a valid timestamp first.
 */
void
shardtime_days_func(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	long long	days;

	if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
		sqlite3_result_null(ctx);
	else if (sqlite3_value_int(argv[1]) == 0)
	{
		if (wrapper_time(ctx, argv[0], 1, &days))
			sqlite3_result_int64(ctx, days);
	}
	else if (wrapper_time(ctx, argv[0], 0, &days))
		sqlite3_result_int64(ctx, shardio_usecs_days(days));
}

/*
 * shardtime_tz_grid_func
 *		SQL function ssfdw_tz_grid(x, cut, n, phase): the time the wrapper
 *		reads in x, as Unix seconds rounded down to phase plus a multiple of
 *		n (but not below cut), or to the second before cut.  The backend
 *		chooses the grid (scan.c, bind_tz_grid) so that a date_trunc,
 *		extract or date_part key, in the session's TimeZone or a named
 *		zone, has one value all through each of its spans: shards group
 *		rows by it, and PostgreSQL computes the key of each group's time.
 */
void
shardtime_tz_grid_func(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	long long	cut = sqlite3_value_int64(argv[1]);
	long long	n = sqlite3_value_int64(argv[2]);
	long long	phase = sqlite3_value_int64(argv[3]);
	long long	usecs;
	long long	secs;

	if (!arg_usecs(ctx, argv[0], &usecs))
		return;
	secs = usecs / 1000000 - (usecs % 1000000 < 0 ? 1 : 0) + UNIX_TO_2000_SECS;
	if (secs >= cut && n > 1)
	{
		secs -= (((secs - phase) % n) + n) % n;
		if (secs < cut)
			secs = cut;
	}
	sqlite3_result_int64(ctx, secs);
}

/*
 * shardtime_canon_func
 *		SQL function ssfdw_time_canon(x, is_date): 1 when x is text in the
 *		canonical form, whose text order is its time order: YYYY-MM-DD
 *		HH:MM:SS, or that followed by '.' and digits whose last is not 0;
 *		with is_date, YYYY-MM-DD; else 0 (NULL too).  The shards' ORDER BY
 *		of a time key returns its first rows among these (order.c, shardsql.c):
 *		one test of the bytes per row, where two GLOB patterns read the
 *		text character by character.
 */
void
shardtime_canon_func(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const char *p;
	int			len;
	int			ok;

	if (sqlite3_value_type(argv[0]) != SQLITE_TEXT)
	{
		sqlite3_result_int(ctx, 0);
		return;
	}
	p = (const char *) sqlite3_value_text(argv[0]);
	len = sqlite3_value_bytes(argv[0]);
	if (p == NULL)
	{
		sqlite3_result_error_nomem(ctx);
		return;
	}
#define NOT_DIGIT(k) ((unsigned) (p[k] - '0') > 9)
	ok = len >= 10 &&
		!(NOT_DIGIT(0) | NOT_DIGIT(1) | NOT_DIGIT(2) | NOT_DIGIT(3) |
		  (p[4] != '-') | NOT_DIGIT(5) | NOT_DIGIT(6) | (p[7] != '-') |
		  NOT_DIGIT(8) | NOT_DIGIT(9));
	if (ok && sqlite3_value_int(argv[1]))
		ok = (len == 10);
	else if (ok)
	{
		ok = len >= 19 &&
			!((p[10] != ' ') | NOT_DIGIT(11) | NOT_DIGIT(12) | (p[13] != ':') |
			  NOT_DIGIT(14) | NOT_DIGIT(15) | (p[16] != ':') |
			  NOT_DIGIT(17) | NOT_DIGIT(18));
		if (ok && len > 19)
		{
			int			i;

			/* a fraction: digits, the last not 0 */
			ok = p[19] == '.' && len > 20 && p[len - 1] != '0';
			for (i = 20; ok && i < len; i++)
				ok = !NOT_DIGIT(i);
		}
	}
#undef NOT_DIGIT
	sqlite3_result_int(ctx, ok);
}

/*
 * days_from_civil
 *		Days from 1970-01-01 to a date of the proleptic Gregorian calendar.
 */
static long long
days_from_civil(int y, int m, int d)
{
	long long	era;
	long long	yoe;
	long long	doy;
	long long	doe;

	y -= (m <= 2);
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/*
 * civil_from_days
 *		The proleptic Gregorian date of a day counted from 1970-01-01.
 */
static void
civil_from_days(long long z, int *y, int *m, int *d)
{
	long long	era;
	long long	doe;
	long long	yoe;
	long long	doy;
	long long	mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int) (doy - (153 * mp + 2) / 5 + 1);
	*m = (int) (mp < 10 ? mp + 3 : mp - 9);
	*y = (int) (yoe + era * 400 + (*m <= 2));
}

/*
 * shardio_datetime_usecs
 *		A date and time read by shardio_parse_datetime, as microseconds
 *		since 2000-01-01 UTC (PostgreSQL's timestamp).  Four-digit years
 *		keep every result far inside the int64 range.
 */
long long
shardio_datetime_usecs(const ShardDatetime *dt)
{
	/* days since 2000-01-01, the PostgreSQL epoch */
	long long	days = days_from_civil(dt->year, dt->month, dt->day) - 10957;

	return days * 86400000000LL +
		((long long) (dt->hour * 60 + dt->minute) * 60 + dt->second -
		 dt->offset) * 1000000LL + dt->fraction;
}


/* Unix seconds of 0001-01-01 and of 10000-01-01. */
#define UNIX_SECS_YEAR_1		(-62135596800LL)
#define UNIX_SECS_YEAR_10000	(253402300800LL)

/*
 * floor_div
 *		a / b rounded down, b > 0.
 */
static long long
floor_div(long long a, long long b)
{
	return a / b - (a % b < 0 ? 1 : 0);
}

/*
 * shardtime_bucket_func
 *		SQL function ssfdw_bucket(x, is_date, code): the time bucket (code,
 *		SHARDTIME_ in shardtime.h) of the timestamp the wrapper reads in x,
 *		or with is_date of the date it reads: the Unix seconds of the
 *		bucket's start for a unit of date_trunc (CAST(ts AS date) is the
 *		day's), the field's value for extract and date_part, as PostgreSQL
 *		computes them on the value read (microseconds cut, not rounded).
 *		Integer arithmetic on the value, so that grouping formats no text
 *		per row.  NULL for NULL; the wrapper's error for what it cannot
 *		read, and for years outside 1 to 9999, where PostgreSQL numbers
 *		years otherwise (1 BC is year 0 here) and SQLite's date functions
 *		stop.
 */
void
shardtime_bucket_func(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	int			is_date = sqlite3_value_int(argv[1]);
	int			code = sqlite3_value_int(argv[2]);
	long long	t;
	long long	secs;
	long long	days;
	long long	sod;			/* second of the day */
	long long	result;
	int			y,
				m,
				d;
	ShardDateCache *cache;

	if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
	{
		sqlite3_result_null(ctx);
		return;
	}
	if (!wrapper_time(ctx, argv[0], is_date, &t))
		return;
	cache = (ShardDateCache *) sqlite3_user_data(ctx);
	/* Unix seconds, rounded down */
	if (is_date)
		secs = (t + 10957) * 86400;
	else
		secs = floor_div(t, 1000000) + UNIX_TO_2000_SECS;
	if (secs < UNIX_SECS_YEAR_1 || secs >= UNIX_SECS_YEAR_10000)
	{
		shardio_function_error(ctx, SHARDIO_ERR_TIME_RANGE,
							   "cannot compute a time bucket of a time outside the years 1 to 9999");
		return;
	}
	days = floor_div(secs, 86400);
	sod = secs - days * 86400;
	if (cache != NULL && cache->civil_valid && cache->civil_days == days)
	{
		y = cache->y;
		m = cache->m;
		d = cache->d;
	}
	else
	{
		civil_from_days(days, &y, &m, &d);
		if (cache != NULL)
		{
			cache->civil_days = days;
			cache->y = y;
			cache->m = m;
			cache->d = d;
			cache->civil_valid = 1;
		}
	}

	switch (code)
	{
		case SHARDTIME_TRUNC_MINUTE:
			result = secs - sod % 60;
			break;
		case SHARDTIME_TRUNC_HOUR:
			result = secs - sod % 3600;
			break;
		case SHARDTIME_TRUNC_DAY:
			result = days * 86400;
			break;
		case SHARDTIME_TRUNC_WEEK:
			/* the Monday on or before; 1970-01-01 was a Thursday */
			result = (days - (days + 3 - floor_div(days + 3, 7) * 7)) * 86400;
			break;
		case SHARDTIME_TRUNC_MONTH:
			result = days_from_civil(y, m, 1) * 86400;
			break;
		case SHARDTIME_TRUNC_QUARTER:
			result = days_from_civil(y, (m - 1) / 3 * 3 + 1, 1) * 86400;
			break;
		case SHARDTIME_TRUNC_YEAR:
			result = days_from_civil(y, 1, 1) * 86400;
			break;
		case SHARDTIME_FIELD_YEAR:
			result = y;
			break;
		case SHARDTIME_FIELD_QUARTER:
			result = (m + 2) / 3;
			break;
		case SHARDTIME_FIELD_MONTH:
			result = m;
			break;
		case SHARDTIME_FIELD_DAY:
			result = d;
			break;
		case SHARDTIME_FIELD_HOUR:
			result = sod / 3600;
			break;
		case SHARDTIME_FIELD_MINUTE:
			result = sod / 60 % 60;
			break;
		case SHARDTIME_FIELD_DOW:
		case SHARDTIME_FIELD_ISODOW:
			result = days + 4 - floor_div(days + 4, 7) * 7;	/* 0: Sunday */
			if (code == SHARDTIME_FIELD_ISODOW && result == 0)
				result = 7;
			break;
		case SHARDTIME_FIELD_DOY:
			result = days - days_from_civil(y, 1, 1) + 1;
			break;
		default:
			sqlite3_result_error(ctx, "unknown time bucket", -1);
			return;
	}
	sqlite3_result_int64(ctx, result);
}
