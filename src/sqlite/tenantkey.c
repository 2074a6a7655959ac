/*-------------------------------------------------------------------------
 *
 * tenantkey.c
 *		  The SQL function ssfdw_tenant: a stored tenant value as its tenant id
 *
 * A row belongs to the tenant whose directory id equals the canonical text
 * of its stored tenant value, and the filters that keep a statement to its
 * tenants (the routed tenants, a user mapping's "tenants", the stale copy
 * of a moving tenant) run inside SQLite, so that another tenant's row is
 * never fetched, converted, counted or named in an error.  Where the shard
 * stores the column as text and the tenant column is text-like, the filter
 * compares the column itself (and SQLite can use an index); everywhere else
 * it compares ssfdw_tenant(column, kind), which computes the id as the
 * wrapper reads the value, or NULL when the value belongs to no tenant:
 *
 *	kind 0, text-like columns (and any type other than the ones below): text
 *	as stored, byte for byte (trailing spaces included), and an integer as
 *	its decimal form; reals and blobs belong to no tenant.
 *	kind 16, 32, 64, integer columns of that many bits: the integer
 *	PostgreSQL's input reads (surrounding white space, a sign and leading
 *	zeros allowed: '+01' is tenant 1), an integral real, or an integer, in
 *	the column type's range.
 *	kind 128, uuid: text as uuid_in reads it, or a blob of 16 bytes; the id
 *	is the lower-case hyphenated form.
 *
 * This file must not include postgres.h: it runs on fan-out threads.
 *
 *-------------------------------------------------------------------------
 */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "shardio.h"

#define UUID_BYTES 16

/*
 * integer_key
 *		The decimal form of text PostgreSQL's integer input reads as a value
 *		of the given bits, written into buf; false when it reads none.
 */
static int
integer_key(const unsigned char *p, int len, int bits, char *buf, size_t size)
{
	const unsigned char *end = p + len;
	unsigned long long magnitude = 0;
	unsigned long long limit;
	int			neg = 0;
	int			digits = 0;

	while (p < end && isspace(*p))
		p++;
	if (p < end && (*p == '-' || *p == '+'))
		neg = (*p++ == '-');
	limit = (bits == 64 ? (unsigned long long) LLONG_MAX :
			 (1ULL << (bits - 1)) - 1) + (neg ? 1 : 0);
	while (p < end && isdigit(*p))
	{
		unsigned int digit = *p++ - '0';

		/* checked before the step, which could wrap around otherwise */
		if (magnitude > (limit - digit) / 10)
			return 0;
		magnitude = magnitude * 10 + digit;
		digits++;
	}
	if (digits == 0)
		return 0;
	while (p < end && isspace(*p))
		p++;
	if (p != end)
		return 0;				/* other text, or a NUL byte */
	if (neg && magnitude != 0)
		snprintf(buf, size, "-%llu", magnitude);
	else
		snprintf(buf, size, "%llu", magnitude);
	return 1;
}

/*
 * integer_in_range
 *		Does v fit an integer column of the given bits?
 */
static int
integer_in_range(long long v, int bits)
{
	if (bits == 64)
		return 1;
	return v >= -(1LL << (bits - 1)) && v <= (1LL << (bits - 1)) - 1;
}

/*
 * uuid_key
 *		The canonical form of text uuid_in reads (an optional pair of braces,
 *		32 hex digits, a hyphen allowed after any group of four), written
 *		into buf; false when it reads none.
 */
static int
uuid_key(const unsigned char *p, int len, unsigned char *bytes)
{
	const unsigned char *end = p + len;
	int			braces = 0;
	int			i;

	if (p < end && *p == '{')
	{
		braces = 1;
		p++;
	}
	for (i = 0; i < UUID_BYTES; i++)
	{
		int			hi,
					lo;

		if (end - p < 2 || !isxdigit(p[0]) || !isxdigit(p[1]))
			return 0;
		hi = isdigit(p[0]) ? p[0] - '0' : (tolower(p[0]) - 'a' + 10);
		lo = isdigit(p[1]) ? p[1] - '0' : (tolower(p[1]) - 'a' + 10);
		bytes[i] = (unsigned char) (hi * 16 + lo);
		p += 2;
		if (p < end && *p == '-' && i % 2 == 1 && i < UUID_BYTES - 1)
			p++;
	}
	if (braces)
	{
		if (p >= end || *p != '}')
			return 0;
		p++;
	}
	return p == end;
}

/*
 * uuid_text
 *		16 bytes as the lower-case hyphenated text of a uuid.
 */
static void
uuid_text(const unsigned char *bytes, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	int			i;
	char	   *out = buf;

	for (i = 0; i < UUID_BYTES; i++)
	{
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*out++ = '-';
		*out++ = hex[bytes[i] >> 4];
		*out++ = hex[bytes[i] & 0x0F];
	}
	*out = '\0';
}

/*
 * shardio_tenant_func
 *		SQL function ssfdw_tenant(value, kind): the tenant id of a stored
 *		tenant value, or NULL when it belongs to no tenant (see the file
 *		header).  Never an error: a value the wrapper could not read is
 *		simply no tenant's, so no filter ever fails on another tenant's row.
 */
void
shardio_tenant_func(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	int			kind = sqlite3_value_int(argv[1]);
	int			type = sqlite3_value_type(argv[0]);
	char		buf[48];

	(void) argc;
	if (kind == SHARDIO_TENANT_TEXT)
	{
		if (type == SQLITE_TEXT)
			sqlite3_result_value(ctx, argv[0]);
		else if (type == SQLITE_INTEGER)
		{
			snprintf(buf, sizeof(buf), "%lld",
					 (long long) sqlite3_value_int64(argv[0]));
			sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
		}
		else
			sqlite3_result_null(ctx);
		return;
	}

	if (kind == SHARDIO_TENANT_UUID)
	{
		unsigned char bytes[UUID_BYTES];
		const unsigned char *p;

		if (type == SQLITE_BLOB && sqlite3_value_bytes(argv[0]) == UUID_BYTES)
		{
			p = sqlite3_value_blob(argv[0]);
			memcpy(bytes, p, UUID_BYTES);
		}
		else if (type != SQLITE_TEXT ||
				 (p = sqlite3_value_text(argv[0])) == NULL ||
				 !uuid_key(p, sqlite3_value_bytes(argv[0]), bytes))
		{
			sqlite3_result_null(ctx);
			return;
		}
		uuid_text(bytes, buf);
		sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
		return;
	}

	/* integers of kind bits */
	if (kind != 16 && kind != 32 && kind != 64)
	{
		sqlite3_result_error(ctx, "ssfdw_tenant: invalid kind", -1);
		return;
	}
	switch (type)
	{
		case SQLITE_INTEGER:
			{
				long long	v = sqlite3_value_int64(argv[0]);

				if (!integer_in_range(v, kind))
					break;
				snprintf(buf, sizeof(buf), "%lld", v);
				sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
				return;
			}
		case SQLITE_FLOAT:
			{
				double		d = sqlite3_value_double(argv[0]);

				/* integral, and within int64 as to_integer requires */
				if (isnan(d) || isinf(d) || rint(d) != d ||
					d < -9223372036854775808.0 || d >= 9223372036854775808.0 ||
					!integer_in_range((long long) d, kind))
					break;
				snprintf(buf, sizeof(buf), "%lld", (long long) d);
				sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
				return;
			}
		case SQLITE_TEXT:
			{
				const unsigned char *p = sqlite3_value_text(argv[0]);

				if (p != NULL &&
					integer_key(p, sqlite3_value_bytes(argv[0]), kind,
								buf, sizeof(buf)))
				{
					sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
					return;
				}
				break;
			}
		default:
			break;
	}
	sqlite3_result_null(ctx);
}
