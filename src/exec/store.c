/*-------------------------------------------------------------------------
 *
 * store.c
 *		  The forms PostgreSQL values are written to a shard in
 *
 * A value written through a foreign table must read back unchanged (what
 * an INSERT stores, a SELECT returns), and must be what the application
 * and SQLite's own functions expect to find in the shard.  So each type is
 * stored in the form convert.c reads exactly and SQLite's conventions use:
 *
 *	- integers as INTEGER, booleans as INTEGER 0 or 1;
 *	- double precision and real as REAL (NaN, which SQLite would turn into
 *	  NULL, and -0, whose sign it would drop, as the text 'NaN' and '-0',
 *	  which reading takes);
 *	- numeric as its text, so that no digit is lost to a double;
 *	- bytea as a BLOB;
 *	- date as 'YYYY-MM-DD', timestamp as 'YYYY-MM-DD HH:MM:SS[.ffffff]',
 *	  timestamptz as the same in UTC (a time without an offset is UTC to
 *	  both SQLite and the reader); only years 1 to 9999, the years those
 *	  forms can write, and no infinities;
 *	- everything else (text, varchar, char, uuid, json, ...) as the text of
 *	  the type's output function, in UTF-8.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <ctype.h>
#include <math.h>

#include "catalog/pg_type.h"
#include "common/shortest_dec.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

/*
 * shard_store_init
 *		Prepare to store values of typid.
 */
void
shard_store_init(ShardStoreConv *conv, Oid typid)
{
	Oid			typoutput;
	bool		typvarlena;

	conv->typid = typid;
	conv->basetype = getBaseType(typid);
	getTypeOutputInfo(typid, &typoutput, &typvarlena);
	fmgr_info(typoutput, &conv->outfunc);
}

/*
 * store_text
 *		A palloc'd C string in the server encoding as a TEXT value in UTF-8;
 *		the value may point into the string.
 */
static void
store_text(const char *str, ShardValue *out)
{
	char	   *utf8 = pg_server_to_any(str, strlen(str), PG_UTF8);

	out->type = SQLITE_TEXT;
	out->u.p = utf8;
	out->len = strlen(utf8);
}

/*
 * store_time
 *		A date or a time (usecs since 2000 UTC, or a date's midnight) as
 *		the text SQLite's date functions write.
 */
static void
store_time(ShardStoreConv *conv, Timestamp ts, bool is_date, ShardValue *out)
{
	struct pg_tm tm;
	fsec_t		fsec;
	char		buf[64];

	if (TIMESTAMP_NOT_FINITE(ts) ||
		timestamp2tm(ts, NULL, &tm, &fsec, NULL, NULL) != 0 ||
		tm.tm_year < 1 || tm.tm_year > 9999)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("%s value out of range for a shard",
						format_type_be(conv->typid)),
				 errdetail("A shard stores dates and times of the years 1 to 9999 as text, which has no infinity.")));
	if (is_date)
		snprintf(buf, sizeof(buf), "%04d-%02d-%02d",
				 tm.tm_year, tm.tm_mon, tm.tm_mday);
	else
	{
		int			n = snprintf(buf, sizeof(buf),
								 "%04d-%02d-%02d %02d:%02d:%02d",
								 tm.tm_year, tm.tm_mon, tm.tm_mday,
								 tm.tm_hour, tm.tm_min, tm.tm_sec);

		if (fsec != 0)
		{
			/* six digits, trailing zeros dropped */
			n += snprintf(buf + n, sizeof(buf) - n, ".%06d", (int) fsec);
			while (buf[n - 1] == '0')
				buf[--n] = '\0';
		}
	}
	store_text(pstrdup(buf), out);
}

/*
 * shard_store_value
 *		The SQLite value a column's PostgreSQL value is written as.  Text
 *		and blobs point into palloc'd memory of the current context.
 */
void
shard_store_value(ShardStoreConv *conv, Datum value, bool isnull,
				  ShardValue *out)
{
	memset(out, 0, sizeof(*out));
	if (isnull)
	{
		out->type = SQLITE_NULL;
		return;
	}

	switch (conv->basetype)
	{
		case INT2OID:
			out->type = SQLITE_INTEGER;
			out->u.i = DatumGetInt16(value);
			return;
		case INT4OID:
			out->type = SQLITE_INTEGER;
			out->u.i = DatumGetInt32(value);
			return;
		case INT8OID:
			out->type = SQLITE_INTEGER;
			out->u.i = DatumGetInt64(value);
			return;
		case BOOLOID:
			out->type = SQLITE_INTEGER;
			out->u.i = DatumGetBool(value) ? 1 : 0;
			return;
		case FLOAT4OID:
		case FLOAT8OID:
			{
				double		d = conv->basetype == FLOAT4OID ?
					(double) DatumGetFloat4(value) : DatumGetFloat8(value);

				if (isnan(d))
					store_text(pstrdup("NaN"), out);
				else if (d == 0 && signbit(d))
					store_text(pstrdup("-0"), out);	/* SQLite drops the sign */
				else
				{
					out->type = SQLITE_FLOAT;
					out->u.d = d;
				}
				return;
			}
		case BYTEAOID:
			{
				bytea	   *b = DatumGetByteaPP(value);

				out->type = SQLITE_BLOB;
				out->len = VARSIZE_ANY_EXHDR(b);
				out->u.p = VARDATA_ANY(b);
				return;
			}
		case DATEOID:
			{
				DateADT		d = DatumGetDateADT(value);

				/* a date of the years 1 to 9999 has a midnight in range */
				if (DATE_NOT_FINITE(d) || d < -730119 || d > 2921939)
					store_time(conv, DT_NOEND, true, out);
				store_time(conv, (Timestamp) d * USECS_PER_DAY, true, out);
				return;
			}
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			store_time(conv, DatumGetTimestamp(value), false, out);
			return;
		default:
			store_text(OutputFunctionCall(&conv->outfunc, value), out);
			return;
	}
}

/*
 * text_is_number
 *		Would SQLite read this text as a number when it stores it in a
 *		column of numeric affinity: an integer or real literal, blanks
 *		around it allowed?
 */
static bool
text_is_number(const char *p, int len)
{
	const char *end = p + len;
	int			digits = 0;

	while (p < end && isspace((unsigned char) *p))
		p++;
	if (p < end && (*p == '+' || *p == '-'))
		p++;
	while (p < end && isdigit((unsigned char) *p))
		p++, digits++;
	if (p < end && *p == '.')
	{
		p++;
		while (p < end && isdigit((unsigned char) *p))
			p++, digits++;
	}
	if (digits == 0)
		return false;
	if (p < end && (*p == 'e' || *p == 'E'))
	{
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || !isdigit((unsigned char) *p))
			return false;
		while (p < end && isdigit((unsigned char) *p))
			p++;
	}
	while (p < end && isspace((unsigned char) *p))
		p++;
	return p == end;
}

/*
 * text_is_canonical_integer
 *		Is the text an integer of 64 bits written as SQLite writes one back
 *		(no blanks, no plus sign, no leading zero)?  SQLite stores it as an
 *		integer, whose text is the same.
 */
static bool
text_is_canonical_integer(const char *text)
{
	char		buf[32];
	char	   *end;
	long long	i;

	errno = 0;
	i = strtoll(text, &end, 10);
	if (errno != 0 || *end != '\0' || end == text)
		return false;
	snprintf(buf, sizeof(buf), "%lld", i);
	return strcmp(buf, text) == 0;
}

/*
 * store_numeric_as_number
 *		A numeric for a column of numeric affinity: as INTEGER when it is an
 *		integer of 64 bits, as REAL when the double reads back as the same
 *		number; false when neither holds it exactly.
 */
static bool
store_numeric_as_number(Datum value, ShardValue *v)
{
	const char *text = v->u.p;
	char	   *end;
	long long	i;
	double		d;
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN + 1];
	Datum		back;

	if (strpbrk(text, ".eE") == NULL)
	{
		errno = 0;
		i = strtoll(text, &end, 10);
		if (errno == 0 && *end == '\0')
		{
			v->type = SQLITE_INTEGER;
			v->u.i = i;
			v->len = 0;
			return true;
		}
	}
	d = DatumGetFloat8(DirectFunctionCall1(numeric_float8, value));
	if (isinf(d) || isnan(d))
		return false;
	double_to_shortest_decimal_buf(d, buf);
	back = DirectFunctionCall3(numeric_in, CStringGetDatum(buf),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	if (!DatumGetBool(DirectFunctionCall2(numeric_eq, value, back)))
		return false;
	v->type = SQLITE_FLOAT;
	v->u.d = d;
	v->len = 0;
	return true;
}

/*
 * shard_store_fit
 *		Fit a value to the affinity the shard declares its column with, so
 *		that it is stored as it reads back: SQLite converts values to a
 *		column's affinity (text that looks like a number becomes a number
 *		in an INTEGER, REAL or NUMERIC column, a real becomes 15 digits of
 *		text in a TEXT column).  A value no form fits is refused, naming
 *		the column, table and shard.
 */
void
shard_store_fit(ShardStoreConv *conv, Datum value, char affinity,
				ShardValue *v, const char *column, const char *table,
				const char *shard_id)
{
	const char *affname;

	switch (affinity)
	{
		case 'T':
		case 'U':
			/* a real as its shortest exact text, not SQLite's 15 digits */
			if (v->type == SQLITE_FLOAT)
			{
				char		buf[DOUBLE_SHORTEST_DECIMAL_LEN + 1];

				double_to_shortest_decimal_buf(v->u.d, buf);
				store_text(pstrdup(buf), v);
			}
			return;
		case 'I':
			affname = "INTEGER";
			break;
		case 'R':
			affname = "REAL";
			break;
		case 'N':
			affname = "NUMERIC";
			break;
		default:
			return;				/* no affinity: stored as it is */
	}

	if (v->type == SQLITE_INTEGER && affinity == 'R' &&
		(v->u.i > (INT64CONST(1) << 53) || v->u.i < -(INT64CONST(1) << 53)))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("cannot store value " INT64_FORMAT " exactly in column \"%s\" of table \"%s\" on shard \"%s\"",
						(int64) v->u.i, column, table, shard_id),
				 errdetail("The shard declares the column with REAL affinity, which would store the integer as a double.")));
	if (v->type != SQLITE_TEXT || !text_is_number(v->u.p, v->len) ||
		text_is_canonical_integer(v->u.p))
		return;
	if (conv->basetype == NUMERICOID && store_numeric_as_number(value, v))
		return;
	ereport(ERROR,
			(errcode(conv->basetype == NUMERICOID ?
					 ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE :
					 ERRCODE_FDW_INVALID_DATA_TYPE),
			 errmsg("cannot store value \"%s\" of type %s in column \"%s\" of table \"%s\" on shard \"%s\"",
					v->u.p, format_type_be(conv->typid), column, table,
					shard_id),
			 errdetail("The shard declares the column with %s affinity, under which SQLite would store the value as a number that reads back otherwise.",
					   affname),
			 errhint("Declare the column in the shard without a type, or with one of TEXT affinity.")));
}
