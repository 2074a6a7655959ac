/*-------------------------------------------------------------------------
 *
 * convert.c
 *		  Conversion between SQLite values and PostgreSQL Datums
 *
 * SQLite stores a value, not a column type: any row may hold an integer, a
 * real, text, a blob or NULL in any column, whatever the table declares.
 * A foreign table column, on the other hand, has one PostgreSQL type, so
 * every value read from a shard is checked against that type here, one
 * value at a time.  The rules are deliberately strict (pushdown never
 * changes an answer, and bad input gets a clear error, not a guess): a
 * value is converted only when the conversion cannot change its meaning
 * (an integral real into an integer column, an integer into a numeric
 * column), and anything else is an error with its own SQLSTATE, never a
 * silently rounded, truncated or reinterpreted value.
 *
 *	- A storage class the column's type cannot take at all (a blob in an
 *	  integer column) is HV004, fdw_invalid_data_type.
 *	- Text that the type's input function rejects raises that function's
 *	  own error (22P02 and friends), exactly as if the text had been cast.
 *	- Numbers outside the type's range are 22003; dates and times outside
 *	  it, or with impossible fields, 22008.
 *	- Dates and times follow SQLite's conventions, not PostgreSQL's input
 *	  rules: text in the few forms SQLite's date and time functions write
 *	  (offsets applied, UTC otherwise), integers and reals as Unix time.
 *	  The parser for those forms is ours and strict, because timestamp_in
 *	  depends on DateStyle and ignores offsets for timestamp without time
 *	  zone, both of which would make an answer depend on session settings.
 *	- Text is UTF-8 in SQLite; it is verified, and converted to the server
 *	  encoding, before it becomes a PostgreSQL string, so that invalid byte
 *	  sequences and NUL bytes stop at the door (22021).
 *
 * Everything here runs in the backend; messages need not name the shard,
 * table, column or row, because the scan's error context callback adds
 * them.  The common cases (integers, reals, text, blobs into the matching
 * types) are fast paths that do not go through an input function.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "common/shortest_dec.h"
#include "datatype/timestamp.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

/* Longest piece of a stored value quoted in an error message, in bytes. */
#define MAX_QUOTED_VALUE	64

/* Results of parse_sqlite_datetime. */
typedef enum SqliteDatetimeResult
{
	SQLITE_DT_OK,
	SQLITE_DT_BAD_FORMAT,		/* not one of the accepted forms */
	SQLITE_DT_BAD_FIELD			/* right form, impossible field value */
} SqliteDatetimeResult;

/*
 * Cached state of domain_check() for one domain type.  See
 * check_domain_value.
 */
typedef struct DomainCheckEntry
{
	Oid			domain;			/* hash key */
	bool		busy;			/* a check of this domain is running */
	void	   *extra;			/* domain_check()'s cache */
} DomainCheckEntry;

static HTAB *domain_checks = NULL;
static MemoryContext domain_check_cxt = NULL;

static Datum convert_value(ShardColumnConv *conv, const ShardValue *v);
static Datum to_integer(ShardColumnConv *conv, const ShardValue *v);
static Datum to_float(ShardColumnConv *conv, const ShardValue *v);
static Datum to_numeric(ShardColumnConv *conv, const ShardValue *v);
static Datum to_boolean(ShardColumnConv *conv, const ShardValue *v);
static Datum to_bytea(ShardColumnConv *conv, const ShardValue *v);
static Datum to_uuid(ShardColumnConv *conv, const ShardValue *v);
static Datum to_datetime(ShardColumnConv *conv, const ShardValue *v);
static Datum to_other(ShardColumnConv *conv, const ShardValue *v);
static SqliteDatetimeResult parse_sqlite_datetime(const char *str, int len,
												  int64 *usecs);
static char *server_text(const ShardValue *v, int *len);
static char *number_text(const ShardValue *v, char *buf);
static Datum call_input(ShardColumnConv *conv, char *str);
static char *quoted_value(const char *str, int len);
static const char *storage_class_name(int type);
static void storage_class_error(ShardColumnConv *conv,
								const ShardValue *v) pg_attribute_noreturn();
static void check_domain_value(ShardColumnConv *conv, Datum value,
							   bool isnull);

/*
 * shard_conv_init
 *		Prepare what converting values for one column of type typid needs.
 *
 * Domains are converted as their base type and checked afterwards, so the
 * input function looked up here is the base type's, and conv->typmod is the
 * modifier applied to the base type: the column's own, or for a domain
 * (whose columns never carry one) the domain's declared modifier, as in
 * domain_in.  The FmgrInfo lives in the caller's current memory context,
 * which must last as long as conv is used.
 */
void
shard_conv_init(ShardColumnConv *conv, Oid typid, int32 typmod)
{
	Oid			infuncid;
	int32		basetypmod = -1;

	conv->typid = typid;
	conv->basetype = getBaseTypeAndTypmod(typid, &basetypmod);
	conv->typmod = (conv->basetype == typid) ? typmod : basetypmod;

	getTypeInputInfo(conv->basetype, &infuncid, &conv->ioparam);
	fmgr_info(infuncid, &conv->infunc);
}

/*
 * shard_value_to_datum
 *		Convert one value read from a shard into a Datum of conv's type.
 *
 * This is the per-value hot path of every scan.  The result is allocated in
 * CurrentMemoryContext; an unconvertible value raises an error (see the
 * file header for which).
 */
Datum
shard_value_to_datum(ShardColumnConv *conv, const ShardValue *v, bool *isnull)
{
	Datum		result;

	if (v->type == SQLITE_NULL)
	{
		*isnull = true;
		result = (Datum) 0;
	}
	else
	{
		*isnull = false;
		result = convert_value(conv, v);
	}

	/* A domain may forbid NULL as well as values; check both. */
	if (conv->typid != conv->basetype)
		check_domain_value(conv, result, *isnull);

	return result;
}

/*
 * convert_value
 *		Convert a non-NULL value to conv's base type.
 */
static Datum
convert_value(ShardColumnConv *conv, const ShardValue *v)
{
	switch (conv->basetype)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			return to_integer(conv, v);
		case FLOAT4OID:
		case FLOAT8OID:
			return to_float(conv, v);
		case NUMERICOID:
			return to_numeric(conv, v);
		case BOOLOID:
			return to_boolean(conv, v);
		case BYTEAOID:
			return to_bytea(conv, v);
		case UUIDOID:
			return to_uuid(conv, v);
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return to_datetime(conv, v);
		case TEXTOID:
			if (v->type == SQLITE_TEXT)
			{
				char	   *str;
				int			len;

				str = server_text(v, &len);
				return PointerGetDatum(cstring_to_text_with_len(str, len));
			}
			break;
		case VARCHAROID:
			/* Without a length limit varchar is text: skip varcharin. */
			if (v->type == SQLITE_TEXT && conv->typmod < 0)
			{
				char	   *str;
				int			len;

				str = server_text(v, &len);
				return PointerGetDatum(cstring_to_text_with_len(str, len));
			}
			break;
		default:
			break;
	}

	return to_other(conv, v);
}

/*
 * to_integer
 *		Convert to int2, int4 or int8.
 *
 * A real is taken only when it is integral, because rounding it (as the
 * float-to-integer casts do) would invent a value that SQLite never stored.
 */
static Datum
to_integer(ShardColumnConv *conv, const ShardValue *v)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN + 1];
	int64		i;

	switch (v->type)
	{
		case SQLITE_INTEGER:
			i = v->u.i;
			break;
		case SQLITE_FLOAT:
			if (isnan(v->u.d) || (!isinf(v->u.d) && rint(v->u.d) != v->u.d))
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
						 errmsg("cannot convert SQLite real %s to type %s",
								number_text(v, buf),
								format_type_be(conv->typid)),
						 errdetail("A real is read into an integer column only when it has no fractional part.")));
			if (!FLOAT8_FITS_IN_INT64(v->u.d))
				goto out_of_range;
			i = (int64) v->u.d;
			break;
		case SQLITE_TEXT:
			return to_other(conv, v);
		default:
			storage_class_error(conv, v);
	}

	switch (conv->basetype)
	{
		case INT2OID:
			if (i < PG_INT16_MIN || i > PG_INT16_MAX)
				goto out_of_range;
			return Int16GetDatum((int16) i);
		case INT4OID:
			if (i < PG_INT32_MIN || i > PG_INT32_MAX)
				goto out_of_range;
			return Int32GetDatum((int32) i);
		default:
			return Int64GetDatum(i);
	}

out_of_range:
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("value %s is out of range for type %s",
					number_text(v, buf), format_type_be(conv->basetype))));
	pg_unreachable();
}

/*
 * to_float
 *		Convert to float4 or float8.
 *
 * A real too large or too small for float4 is an error, as in the float8 to
 * float4 cast, rather than an infinity or a zero.
 */
static Datum
to_float(ShardColumnConv *conv, const ShardValue *v)
{
	float4		f;

	switch (v->type)
	{
		case SQLITE_INTEGER:
			if (conv->basetype == FLOAT4OID)
				return Float4GetDatum((float4) v->u.i);
			return Float8GetDatum((float8) v->u.i);
		case SQLITE_FLOAT:
			if (conv->basetype == FLOAT8OID)
				return Float8GetDatum(v->u.d);
			f = (float4) v->u.d;
			if (unlikely(isinf(f)) && !isinf(v->u.d))
				float_overflow_error();
			if (unlikely(f == 0.0f) && v->u.d != 0.0)
				float_underflow_error();
			return Float4GetDatum(f);
		case SQLITE_TEXT:
			return to_other(conv, v);
		default:
			storage_class_error(conv, v);
	}
}

/*
 * to_numeric
 *		Convert to numeric, applying the column's precision and scale.
 *
 * A real goes through its shortest text form that reads back as the same
 * double: that is the decimal SQLite's value stands for, without the noise
 * digits of its exact binary expansion, and independent of
 * extra_float_digits (which float8out would obey).
 */
static Datum
to_numeric(ShardColumnConv *conv, const ShardValue *v)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN + 1];
	Datum		result;

	switch (v->type)
	{
		case SQLITE_INTEGER:
			result = NumericGetDatum(int64_to_numeric(v->u.i));
			if (conv->typmod >= 0)
				result = DirectFunctionCall2(numeric, result,
											 Int32GetDatum(conv->typmod));
			return result;
		case SQLITE_FLOAT:
			return call_input(conv, number_text(v, buf));
		case SQLITE_TEXT:
			return to_other(conv, v);
		default:
			storage_class_error(conv, v);
	}
}

/*
 * to_boolean
 *		Convert to boolean.
 *
 * SQLite has no boolean storage class: its own TRUE and FALSE are the
 * integers 1 and 0, so those (and the reals 1.0 and 0.0) are the only
 * numbers taken.  Text goes through boolin.
 */
static Datum
to_boolean(ShardColumnConv *conv, const ShardValue *v)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN + 1];

	switch (v->type)
	{
		case SQLITE_INTEGER:
			if (v->u.i == 0 || v->u.i == 1)
				return BoolGetDatum(v->u.i == 1);
			break;
		case SQLITE_FLOAT:
			if (v->u.d == 0.0 || v->u.d == 1.0)
				return BoolGetDatum(v->u.d == 1.0);
			break;
		case SQLITE_TEXT:
			return to_other(conv, v);
		default:
			storage_class_error(conv, v);
	}

	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid input syntax for type %s: \"%s\"",
					format_type_be(conv->basetype), number_text(v, buf)),
			 errdetail("A number is read as a boolean only when it is 0 or 1.")));
	pg_unreachable();
}

/*
 * to_bytea
 *		Convert to bytea: a blob's bytes, or text's bytes as they are.
 *
 * Numbers are refused: their bytes would be a text form chosen by us.
 */
static Datum
to_bytea(ShardColumnConv *conv, const ShardValue *v)
{
	bytea	   *result;

	if (v->type != SQLITE_BLOB && v->type != SQLITE_TEXT)
		storage_class_error(conv, v);

	result = (bytea *) palloc(VARHDRSZ + v->len);
	SET_VARSIZE(result, VARHDRSZ + v->len);
	if (v->len > 0)
		memcpy(VARDATA(result), v->u.p, v->len);
	return PointerGetDatum(result);
}

/*
 * to_uuid
 *		Convert to uuid: text through uuid_in, or a blob of exactly 16 bytes.
 */
static Datum
to_uuid(ShardColumnConv *conv, const ShardValue *v)
{
	pg_uuid_t  *result;

	switch (v->type)
	{
		case SQLITE_TEXT:
			return to_other(conv, v);
		case SQLITE_BLOB:
			if (v->len != UUID_LEN)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
						 errmsg("cannot convert SQLite blob of %d bytes to type %s",
								v->len, format_type_be(conv->typid)),
						 errdetail("A uuid stored as a blob must be exactly %d bytes long.",
								   UUID_LEN)));
			result = (pg_uuid_t *) palloc(sizeof(pg_uuid_t));
			memcpy(result->data, v->u.p, UUID_LEN);
			return UUIDPGetDatum(result);
		default:
			storage_class_error(conv, v);
	}
}

/*
 * to_datetime
 *		Convert to date, timestamp or timestamptz, the way SQLite reads time.
 *
 * Integers and reals are Unix time in seconds (SQLite's 'unixepoch'), reals
 * rounded to microseconds as float8_timestamptz rounds them; text is read
 * by parse_sqlite_datetime.  All of them denote UTC unless the text carries
 * an offset, so a timestamptz does not depend on the session's TimeZone,
 * and a timestamp gets the UTC time SQLite's datetime() would print.
 *
 * For date, the time of day is dropped: a datetime becomes the date it
 * falls on in UTC, which is what SQLite's date() returns for it.
 */
static Datum
to_datetime(ShardColumnConv *conv, const ShardValue *v)
{
	bool		is_date = (conv->basetype == DATEOID);
	bool		overflow = false;
	int64		usecs = 0;		/* timestamps: since 2000-01-01 UTC */
	int64		days = 0;		/* dates: since 2000-01-01 */
	char	   *str = NULL;
	int			len = 0;

	switch (v->type)
	{
		case SQLITE_INTEGER:
		case SQLITE_FLOAT:
			{
				long long	t;

				/* Unix seconds, read as the SQL functions read them too */
				overflow = !shardio_unix_time(v->type, v->u.i, v->u.d,
											  is_date, &t);
				if (is_date)
					days = t;
				else
					usecs = t;
				break;
			}
		case SHARDIO_TIME:
			/* text the reading thread read as parse_sqlite_datetime does */
			usecs = v->u.i;
			if (is_date)
				days = shardio_usecs_days(usecs);
			break;
		case SQLITE_TEXT:
			str = server_text(v, &len);
			switch (parse_sqlite_datetime(str, len, &usecs))
			{
				case SQLITE_DT_OK:
					break;
				case SQLITE_DT_BAD_FIELD:
					ereport(ERROR,
							(errcode(ERRCODE_DATETIME_FIELD_OVERFLOW),
							 errmsg("date/time field value out of range: \"%s\"",
									quoted_value(str, len))));
					break;
				case SQLITE_DT_BAD_FORMAT:
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_DATETIME_FORMAT),
							 errmsg("cannot convert SQLite text to type %s",
									format_type_be(conv->typid)),
							 errdetail("Text \"%s\" is not in a date and time format of SQLite: YYYY-MM-DD, optionally followed by a space or \"T\" and HH:MM, HH:MM:SS or HH:MM:SS.SSS, and those by \"Z\" or an offset [+-]HH:MM.",
									   quoted_value(str, len))));
					break;
			}
			if (is_date)
				days = shardio_usecs_days(usecs);
			break;
		default:
			storage_class_error(conv, v);
	}

	/*
	 * Four-digit years keep text inside both ranges; numbers are Unix time,
	 * which is what the detail says.
	 */
	if (overflow ||
		(is_date && !IS_VALID_DATE(days)) ||
		(!is_date && !IS_VALID_TIMESTAMP(usecs)))
	{
		char		buf[DOUBLE_SHORTEST_DECIMAL_LEN + 1];

		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("value %s is out of range for type %s",
						str ? quoted_value(str, len) : number_text(v, buf),
						format_type_be(conv->basetype)),
				 errdetail("SQLite numbers in date and time columns are read as Unix time in seconds.")));
	}

	if (is_date)
		return DateADTGetDatum((DateADT) days);

	/* timestamp(p): round to the declared precision, as timestamp_in does */
	if (conv->typmod >= 0)
		return DirectFunctionCall2(conv->basetype == TIMESTAMPOID ?
								   timestamp_scale : timestamptz_scale,
								   TimestampGetDatum(usecs),
								   Int32GetDatum(conv->typmod));
	return TimestampGetDatum(usecs);
}

/*
 * parse_sqlite_datetime
 *		Read text in one of the forms SQLite's date and time functions use.
 *
 * Accepted, and nothing else (no surrounding spaces, no other separators):
 *
 *		YYYY-MM-DD
 *		YYYY-MM-DD HH:MM[Z|[+-]HH:MM]
 *		YYYY-MM-DD HH:MM:SS[Z|[+-]HH:MM]
 *		YYYY-MM-DD HH:MM:SS.S...[Z|[+-]HH:MM]
 *
 * with 'T' allowed instead of the space.  Fractions may have any number of
 * digits and are rounded (half up) to microseconds.  A time with an offset
 * is converted to UTC, as SQLite does; one without denotes UTC.
 *
 * These are the forms SQLite's functions write and applications write for
 * them.  SQLite's reader is laxer (extra spaces, a lower-case 'z', hour 24,
 * February 30, which it echoes back unnormalized); those are refused here,
 * the impossible fields with PostgreSQL's own "field value out of range",
 * because they have no PostgreSQL value to map to.  Offsets go up to 14:59,
 * SQLite's limit.
 *
 * On success *usecs is the time in microseconds since the PostgreSQL epoch.
 */
static SqliteDatetimeResult
parse_sqlite_datetime(const char *str, int len, int64 *usecs)
{
	ShardDatetime dt;

	switch (shardio_parse_datetime(str, len, &dt))
	{
		case SHARDIO_DT_BAD_FORMAT:
			return SQLITE_DT_BAD_FORMAT;
		case SHARDIO_DT_BAD_FIELD:
			return SQLITE_DT_BAD_FIELD;
		default:
			break;
	}

	/* the same arithmetic as the reading threads' (shardio.c) */
	*usecs = shardio_datetime_usecs(&dt);
	return SQLITE_DT_OK;
}

/*
 * to_other
 *		Convert through the type's input function.
 *
 * This serves text for every type without a fast path (and the text cases
 * of those with one), and numbers for types whose text input can take
 * them: an integer as its decimal form, a real as its shortest round-trip
 * form.  Blobs are refused; only bytea and uuid take those.
 */
static Datum
to_other(ShardColumnConv *conv, const ShardValue *v)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN + 1];
	int			len;

	switch (v->type)
	{
		case SQLITE_TEXT:
			return call_input(conv, server_text(v, &len));
		case SQLITE_INTEGER:
		case SQLITE_FLOAT:
			return call_input(conv, number_text(v, buf));
		default:
			storage_class_error(conv, v);
	}
}

/*
 * server_text
 *		A text value as a NUL-terminated string in the server encoding.
 *
 * SQLite hands out text as UTF-8 without checking it, so a shard may hold
 * invalid sequences or NUL bytes; pg_any_to_server verifies (and raises
 * 22021) as well as converts.  Returns the value's own bytes when they
 * need no conversion.
 */
static char *
server_text(const ShardValue *v, int *len)
{
	char	   *str;

	if (v->len == 0)
	{
		*len = 0;
		return "";
	}

	/* The reading thread checked it already (shardio.c, prepare_value). */
	if ((v->flags & SHARDIO_VALUE_UTF8) && GetDatabaseEncoding() == PG_UTF8)
	{
		*len = v->len;
		return (char *) v->u.p;
	}

	str = pg_any_to_server(v->u.p, v->len, PG_UTF8);
	*len = (str == v->u.p) ? v->len : (int) strlen(str);
	return str;
}

/*
 * number_text
 *		The text form of an integer or real value, written into buf (at least
 *		DOUBLE_SHORTEST_DECIMAL_LEN + 1 bytes) and returned.
 *
 * Reals get the shortest form that reads back as the same double, whatever
 * extra_float_digits says, so a conversion never depends on a setting.
 */
static char *
number_text(const ShardValue *v, char *buf)
{
	if (v->type == SQLITE_INTEGER)
		snprintf(buf, DOUBLE_SHORTEST_DECIMAL_LEN + 1, "%lld",
				 (long long) v->u.i);
	else
		double_to_shortest_decimal_buf(v->u.d, buf);
	return buf;
}

/*
 * call_input
 *		Run conv's input function on str with the column's type modifier.
 */
static Datum
call_input(ShardColumnConv *conv, char *str)
{
	return InputFunctionCall(&conv->infunc, str, conv->ioparam,
							 conv->typmod);
}

/*
 * quoted_value
 *		str (server encoding), clipped to a length fit for an error message.
 */
static char *
quoted_value(const char *str, int len)
{
	int			cliplen;

	if (len <= MAX_QUOTED_VALUE)
		return pnstrdup(str, len);
	cliplen = pg_mbcliplen(str, len, MAX_QUOTED_VALUE);
	return psprintf("%.*s...", cliplen, str);
}

/*
 * storage_class_name
 *		SQLite's name for a storage class, as typeof() spells it.
 */
static const char *
storage_class_name(int type)
{
	switch (type)
	{
		case SQLITE_INTEGER:
			return "integer";
		case SQLITE_FLOAT:
			return "real";
		case SQLITE_TEXT:
			return "text";
		case SQLITE_BLOB:
			return "blob";
		case SQLITE_NULL:
			return "null";
	}
	elog(ERROR, "unrecognized SQLite storage class: %d", type);
	return NULL;				/* keep compiler quiet */
}

/*
 * storage_class_error
 *		Report a value whose storage class conv's type cannot take.
 */
static void
storage_class_error(ShardColumnConv *conv, const ShardValue *v)
{
	const char *accepted;

	switch (conv->basetype)
	{
		case BYTEAOID:
			accepted = "blob and text values";
			break;
		case UUIDOID:
			accepted = "text values and blobs of 16 bytes";
			break;
		default:
			accepted = "integer, real and text values";
			break;
	}

	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
			 errmsg("cannot convert SQLite %s to type %s",
					storage_class_name(v->type),
					format_type_be(conv->typid)),
			 errdetail("Columns of type %s take SQLite %s.",
					   format_type_be(conv->basetype), accepted)));
	pg_unreachable();
}

/*
 * check_domain_value
 *		Apply the constraints of conv's domain to a converted value.
 *
 * domain_check() needs a cache to be cheap; ShardColumnConv has no field
 * for it, so the caches live in a backend-lifetime table keyed by domain
 * type.  The cache also holds an ExprContext that one check at a time may
 * use; should a CHECK expression reach back into a scan of the same domain
 * (say through a function that reads a foreign table), the inner check
 * takes a private setup instead of trampling on the outer one's.
 */
static void
check_domain_value(ShardColumnConv *conv, Datum value, bool isnull)
{
	DomainCheckEntry *entry;
	bool		found;

	if (domain_checks == NULL)
	{
		HASHCTL		ctl;

		domain_check_cxt = AllocSetContextCreate(TopMemoryContext,
												 "sqlite_shard_fdw domain checks",
												 ALLOCSET_SMALL_SIZES);
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(DomainCheckEntry);
		ctl.hcxt = domain_check_cxt;
		domain_checks = hash_create("sqlite_shard_fdw domain checks", 16,
									&ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}

	entry = (DomainCheckEntry *) hash_search(domain_checks, &conv->typid,
											 HASH_ENTER, &found);
	if (!found)
	{
		entry->busy = false;
		entry->extra = NULL;
	}

	if (entry->busy)
	{
		domain_check(value, isnull, conv->typid, NULL, NULL);
		return;
	}

	entry->busy = true;
	PG_TRY();
	{
		domain_check(value, isnull, conv->typid, &entry->extra,
					 domain_check_cxt);
	}
	PG_FINALLY();
	{
		entry->busy = false;
	}
	PG_END_TRY();
}

/*
 * shard_datum_to_value
 *		Turn a pushed-down parameter's value into a value to bind.
 *
 * Only types whose SQLite counterparts compare the way PostgreSQL's do are
 * handled (see shard_type_is_bindable); for any other type this returns
 * false and the caller keeps the condition in PostgreSQL.  Text is copied,
 * converted to UTF-8, into CurrentMemoryContext.
 */
bool
shard_datum_to_value(Datum value, Oid typid, ShardValue *out)
{
	switch (typid)
	{
		case INT2OID:
			out->type = SQLITE_INTEGER;
			out->u.i = DatumGetInt16(value);
			break;
		case INT4OID:
			out->type = SQLITE_INTEGER;
			out->u.i = DatumGetInt32(value);
			break;
		case INT8OID:
			out->type = SQLITE_INTEGER;
			out->u.i = DatumGetInt64(value);
			break;
		case FLOAT4OID:
			out->type = SQLITE_FLOAT;
			out->u.d = DatumGetFloat4(value);
			break;
		case FLOAT8OID:
			out->type = SQLITE_FLOAT;
			out->u.d = DatumGetFloat8(value);
			break;
		case BOOLOID:
			out->type = SQLITE_INTEGER;
			out->u.i = DatumGetBool(value) ? 1 : 0;
			break;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			/* compared with ssfdw_usecs(): microseconds since 2000 */
			out->type = SQLITE_INTEGER;
			out->u.i = DatumGetTimestamp(value);
			break;
		case DATEOID:
			/* compared with ssfdw_days(): days since 2000 */
			out->type = SQLITE_INTEGER;
			out->u.i = DatumGetDateADT(value);
			break;
		case TEXTOID:
		case VARCHAROID:
			{
				text	   *t = DatumGetTextPP(value);
				int			len = VARSIZE_ANY_EXHDR(t);
				char	   *str;

				str = pg_server_to_any(VARDATA_ANY(t), len, PG_UTF8);
				if (str == VARDATA_ANY(t))
					str = pnstrdup(str, len);
				else
					len = strlen(str);
				out->type = SQLITE_TEXT;
				out->len = len;
				out->u.p = str;
				return true;
			}
		default:
			{
				Oid			basetype = getBaseType(typid);

				if (basetype == typid)
					return false;
				return shard_datum_to_value(value, basetype, out);
			}
	}

	out->len = 0;
	return true;
}

/*
 * shard_type_is_bindable
 *		Whether shard_datum_to_value can bind values of typid.
 */
bool
shard_type_is_bindable(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case BOOLOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case DATEOID:
		case TEXTOID:
		case VARCHAROID:
			return true;
		default:
			{
				Oid			basetype = getBaseType(typid);

				return basetype != typid && shard_type_is_bindable(basetype);
			}
	}
}
