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

#include <math.h>

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/lsyscache.h"
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
 *		A C string in the server encoding as a TEXT value in UTF-8.
 */
static void
store_text(const char *str, ShardValue *out)
{
	char	   *utf8 = pg_server_to_any(str, strlen(str), PG_UTF8);

	/* the value must outlive a caller's buffer */
	if (utf8 == str)
		utf8 = pstrdup(str);

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
	store_text(buf, out);
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
					store_text("NaN", out);
				else if (d == 0 && signbit(d))
					store_text("-0", out);	/* SQLite drops the sign */
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
