/*-------------------------------------------------------------------------
 *
 * shardio.c
 *		  SQLite side of sqlite_shard_fdw: open shard files, run queries
 *
 * This file must not include postgres.h: its functions run on fan-out
 * worker threads as well as in the backend, so they may use only SQLite and
 * the C library.  Errors come back as SQLite result codes with a message in
 * a buffer of SHARDIO_ERRLEN bytes; the caller decides how to report them.
 *
 * Shard files are not trusted: every handle is opened in defensive mode,
 * with untrusted schema and without extension loading, so a crafted shard
 * cannot run functions through views or triggers, or corrupt itself
 * through writable_schema.  Double-quoted string literals are off, so a
 * quoted identifier is always an identifier.
 *
 * Waits: no handle waits for another process's lock, or runs a statement,
 * past the moment its reader is told to stop.  Each handle gets one busy
 * handler, which sleeps in steps of a few milliseconds up to the busy
 * timeout, and one progress handler, for as long as it is open; both ask
 * the thread they run on whether to stop (see stop_requested).
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shardio.h"
#include "shardtime.h"
#include "threadagg.h"

/*
 * set_error
 *		Copy an error message into the caller's buffer.
 */
static void
set_error(char *errbuf, const char *msg)
{
	if (errbuf == NULL)
		return;
	snprintf(errbuf, SHARDIO_ERRLEN, "%s", msg ? msg : "unknown SQLite error");
}

/*
 * shardio_utf8_ok
 *		Is text valid UTF-8 without NUL bytes, as PostgreSQL requires of a
 *		text value?
 */
int
shardio_utf8_ok(const unsigned char *p, int len)
{
	int			i = 0;

	while (i < len)
	{
		unsigned char c = p[i];
		int			n;
		unsigned int cp;
		int			k;

		if (c == 0)
			return 0;
		if (c < 0x80)
		{
			i++;
			continue;
		}
		if ((c & 0xE0) == 0xC0)
			n = 1, cp = c & 0x1F;
		else if ((c & 0xF0) == 0xE0)
			n = 2, cp = c & 0x0F;
		else if ((c & 0xF8) == 0xF0)
			n = 3, cp = c & 0x07;
		else
			return 0;
		for (k = 1; k <= n; k++)
		{
			if (i + k >= len || (p[i + k] & 0xC0) != 0x80)
				return 0;
			cp = (cp << 6) | (p[i + k] & 0x3F);
		}
		/* overlong forms, surrogates, beyond U+10FFFF */
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
			(n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
			(cp >= 0xD800 && cp <= 0xDFFF))
			return 0;
		i += n + 1;
	}
	return 1;
}

/*
 * utf8_ok_func
 *		SQL function ssfdw_utf8_ok(x): 0 for text PostgreSQL would refuse
 *		(invalid UTF-8, NUL bytes), 1 otherwise.
 */
static void
utf8_ok_func(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	int			ok = 1;

	if (sqlite3_value_type(argv[0]) == SQLITE_TEXT)
		ok = shardio_utf8_ok(sqlite3_value_text(argv[0]),
							 sqlite3_value_bytes(argv[0]));
	sqlite3_result_int(ctx, ok);
}

/*
 * shardio_function_error
 *		Fail an SQL function of the wrapper's with one of its own result
 *		codes (SHARDIO_ERR_*, shardio.h), which the backend maps to
 *		PostgreSQL's SQLSTATE, and a whole message.
 */
void
shardio_function_error(sqlite3_context *ctx, int code, const char *msg)
{
	sqlite3_result_error(ctx, msg, -1);
	sqlite3_result_error_code(ctx, code);
}

/*
 * varchar_func
 *		SQL function ssfdw_varchar(x, n): text x as PostgreSQL's varchar(n)
 *		reads it, so that pushed-down conditions compare what PostgreSQL
 *		would: text of at most n characters as it is, longer text cut to n
 *		characters when only spaces follow, and otherwise PostgreSQL's
 *		error (SHARDIO_ERR_TOO_LONG).  Other values pass unchanged.
 */
static void
varchar_func(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const unsigned char *p;
	int			len;
	sqlite3_int64 n = sqlite3_value_int64(argv[1]);
	sqlite3_int64 chars = 0;
	int			cut = -1;
	int			i;

	if (sqlite3_value_type(argv[0]) != SQLITE_TEXT)
	{
		sqlite3_result_value(ctx, argv[0]);
		return;
	}
	p = sqlite3_value_text(argv[0]);
	len = sqlite3_value_bytes(argv[0]);
	if (p == NULL)
	{
		sqlite3_result_error_nomem(ctx);
		return;
	}

	/* characters are counted by their lead bytes, as for valid UTF-8 */
	for (i = 0; i < len; i++)
	{
		if ((p[i] & 0xC0) == 0x80)
			continue;
		if (chars == n)
		{
			cut = i;
			break;
		}
		chars++;
	}
	if (cut < 0)
	{
		sqlite3_result_value(ctx, argv[0]);
		return;
	}
	for (i = cut; i < len; i++)
	{
		if (p[i] != ' ')
		{
			char		msg[80];

			snprintf(msg, sizeof(msg),
					 "value too long for type character varying(%lld)",
					 (long long) n);
			shardio_function_error(ctx, SHARDIO_ERR_TOO_LONG, msg);
			return;
		}
	}
	sqlite3_result_text(ctx, (const char *) p, cut, SQLITE_TRANSIENT);
}

/*
 * int_type_name
 *		PostgreSQL's name of the integer type of so many bits.
 */
static const char *
int_type_name(sqlite3_int64 bits)
{
	return bits == 16 ? "smallint" : bits == 32 ? "integer" : "bigint";
}

/*
 * int_fits
 *		Does i fit an integer of so many bits (16, 32 or 64)?
 */
static int
int_fits(sqlite3_int64 i, sqlite3_int64 bits)
{
	if (bits == 16)
		return i >= INT16_MIN && i <= INT16_MAX;
	if (bits == 32)
		return i >= INT32_MIN && i <= INT32_MAX;
	if (bits == 53)
		return i >= -((sqlite3_int64) 1 << 53) && i <= ((sqlite3_int64) 1 << 53);
	return 1;
}

/*
 * is_pg_space
 *		The blanks PostgreSQL's integer input skips: isspace() of the C
 *		library, which takes no byte beyond ASCII in a UTF-8 locale.
 */
static int
is_pg_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
		c == '\v' || c == '\f';
}

/*
 * parse_pg_int
 *		Read text as PostgreSQL 15's input function of the integer type of
 *		so many bits does (pg_strtoint16/32/64): blanks around, a sign,
 *		decimal digits.  Returns 0 with *out set, 1 for text it refuses
 *		(22P02), 2 for a number beyond the type (22003).
 */
static int
parse_pg_int(const unsigned char *p, int len, sqlite3_int64 bits,
			 sqlite3_int64 *out)
{
	const unsigned char *end = p + len;
	sqlite3_int64 min = bits == 16 ? INT16_MIN :
		bits == 32 ? INT32_MIN : INT64_MIN;
	sqlite3_int64 tmp = 0;
	int			neg = 0;

	while (p < end && is_pg_space(*p))
		p++;
	if (p < end && *p == '-')
	{
		p++;
		neg = 1;
	}
	else if (p < end && *p == '+')
		p++;
	if (p >= end || *p < '0' || *p > '9')
		return 1;
	/* accumulated as a negative number, whose range reaches the minimum */
	while (p < end && *p >= '0' && *p <= '9')
	{
		int			digit = *p++ - '0';

		/* as PostgreSQL's, the first digit beyond the range ends it */
		if (__builtin_mul_overflow(tmp, 10, &tmp) ||
			__builtin_sub_overflow(tmp, digit, &tmp) || tmp < min)
			return 2;
	}
	while (p < end && is_pg_space(*p))
		p++;
	if (p != end)
		return 1;
	if (!neg)
	{
		if (tmp == min)
			return 2;
		tmp = -tmp;
	}
	*out = tmp;
	return 0;
}

/*
 * shortest_real
 *		The shortest text that reads back as d, as PostgreSQL writes a
 *		double into a message, in buf of at least 32 bytes.
 */
static void
shortest_real(double d, char *buf)
{
	int			p;

	for (p = 1; p <= 17; p++)
	{
		snprintf(buf, 32, "%.*g", p, d);
		if (strtod(buf, NULL) == d)
			return;
	}
}

/*
 * int_read_func
 *		SQL function ssfdw_int_read(x, bits, column): the stored value x of
 *		an integer column of so many bits as the wrapper reads it
 *		(convert.c, to_integer), so that an UPDATE computing a new value in
 *		the shard starts from the value PostgreSQL would: NULL, an integer
 *		of the type's range, a real without fractional part, or text the
 *		type's input function takes; anything else fails with the error the
 *		read would raise.
 */
static void
int_read_func(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	sqlite3_int64 bits = sqlite3_value_int64(argv[1]);
	const char *column = (const char *) sqlite3_value_text(argv[2]);
	const char *type = int_type_name(bits);
	char		msg[SHARDIO_ERRLEN];
	char		real[32];
	sqlite3_int64 i;
	double		d;

	if (column == NULL)
		column = "?";
	switch (sqlite3_value_type(argv[0]))
	{
		case SQLITE_NULL:
			sqlite3_result_null(ctx);
			return;
		case SQLITE_INTEGER:
			i = sqlite3_value_int64(argv[0]);
			if (!int_fits(i, bits))
			{
				snprintf(msg, sizeof(msg),
						 "value %lld of column \"%s\" is out of range for type %s",
						 (long long) i, column, type);
				shardio_function_error(ctx, SHARDIO_ERR_INT_RANGE, msg);
				return;
			}
			break;
		case SQLITE_FLOAT:
			d = sqlite3_value_double(argv[0]);
			shortest_real(d, real);
			if (isnan(d) || (!isinf(d) && rint(d) != d))
			{
				snprintf(msg, sizeof(msg),
						 "cannot convert SQLite real %s of column \"%s\" to type %s",
						 real, column, type);
				shardio_function_error(ctx, SHARDIO_ERR_INT_TYPE, msg);
				return;
			}
			if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) ||
				!int_fits((sqlite3_int64) d, bits))
			{
				snprintf(msg, sizeof(msg),
						 "value %s of column \"%s\" is out of range for type %s",
						 real, column, type);
				shardio_function_error(ctx, SHARDIO_ERR_INT_RANGE, msg);
				return;
			}
			i = (sqlite3_int64) d;
			break;
		case SQLITE_TEXT:
			{
				const unsigned char *p = sqlite3_value_text(argv[0]);
				int			len = sqlite3_value_bytes(argv[0]);
				int			rc;

				if (p == NULL)
				{
					sqlite3_result_error_nomem(ctx);
					return;
				}
				if (!shardio_utf8_ok(p, len))
				{
					snprintf(msg, sizeof(msg),
							 "invalid byte sequence for encoding \"UTF8\" in column \"%s\"",
							 column);
					shardio_function_error(ctx, SHARDIO_ERR_NOT_UTF8, msg);
					return;
				}
				rc = parse_pg_int(p, len, bits, &i);
				if (rc != 0)
				{
					/* the text, cut short for the message */
					if (rc == 1)
						snprintf(msg, sizeof(msg),
								 "invalid input syntax for type %s: \"%.*s\" in column \"%s\"",
								 type, len > 100 ? 100 : len, p, column);
					else
						snprintf(msg, sizeof(msg),
								 "value \"%.*s\" is out of range for type %s in column \"%s\"",
								 len > 100 ? 100 : len, p, type, column);
					shardio_function_error(ctx, rc == 1 ?
										   SHARDIO_ERR_INT_SYNTAX :
										   SHARDIO_ERR_INT_RANGE, msg);
					return;
				}
				break;
			}
		default:
			snprintf(msg, sizeof(msg),
					 "cannot convert SQLite blob of column \"%s\" to type %s",
					 column, type);
			shardio_function_error(ctx, SHARDIO_ERR_INT_TYPE, msg);
			return;
	}
	sqlite3_result_int64(ctx, i);
}

/*
 * int_op_func
 *		SQL function ssfdw_int(op, bits, a, b, column): PostgreSQL's integer
 *		operator op ('+', '-', '*', '/') of a and b, or with op 'c' the cast
 *		of a, into the integer type of so many bits (or, with 53, a bigint
 *		a shard's REAL column holds exactly), for the new value of column: NULL when an operand is NULL, PostgreSQL's error (22003
 *		naming the type, 22012) where SQLite would turn the result into a
 *		real or NULL.  The operands are integers: values bound by the
 *		backend, ssfdw_int_read's or this function's results.
 */
static void
int_op_func(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const unsigned char *opstr = sqlite3_value_text(argv[0]);
	char		op = opstr ? (char) opstr[0] : '?';
	sqlite3_int64 bits = sqlite3_value_int64(argv[1]);
	const char *column = (const char *) sqlite3_value_text(argv[4]);
	char		msg[SHARDIO_ERRLEN];
	sqlite3_int64 a,
				b = 0,
				r = 0;
	int			overflow = 0;

	if (column == NULL)
		column = "?";
	if (sqlite3_value_type(argv[2]) == SQLITE_NULL ||
		(op != 'c' && sqlite3_value_type(argv[3]) == SQLITE_NULL))
	{
		sqlite3_result_null(ctx);
		return;
	}
	if (sqlite3_value_type(argv[2]) != SQLITE_INTEGER ||
		(op != 'c' && sqlite3_value_type(argv[3]) != SQLITE_INTEGER))
	{
		snprintf(msg, sizeof(msg),
				 "ssfdw_int: operand of the new value of column \"%s\" is not an integer",
				 column);
		shardio_function_error(ctx, SHARDIO_ERR_INT_TYPE, msg);
		return;
	}
	a = sqlite3_value_int64(argv[2]);
	if (op != 'c')
		b = sqlite3_value_int64(argv[3]);
	switch (op)
	{
		case '+':
			overflow = __builtin_add_overflow(a, b, &r);
			break;
		case '-':
			overflow = __builtin_sub_overflow(a, b, &r);
			break;
		case '*':
			overflow = __builtin_mul_overflow(a, b, &r);
			break;
		case '/':
			if (b == 0)
			{
				snprintf(msg, sizeof(msg),
						 "division by zero in the new value of column \"%s\"",
						 column);
				shardio_function_error(ctx, SHARDIO_ERR_DIV_ZERO, msg);
				return;
			}
			/* C's division truncates toward zero, as PostgreSQL's does */
			if (a == INT64_MIN && b == -1)
				overflow = 1;
			else
				r = a / b;
			break;
		case 'c':
			r = a;
			break;
		default:
			shardio_function_error(ctx, SHARDIO_ERR_INT_TYPE,
								   "ssfdw_int: unknown operator");
			return;
	}
	if (bits == 53 && !int_fits(r, bits))
	{
		snprintf(msg, sizeof(msg),
				 "cannot store value %lld exactly in column \"%s\", which the shard declares with REAL affinity",
				 (long long) r, column);
		shardio_function_error(ctx, SHARDIO_ERR_INT_RANGE, msg);
		return;
	}
	if (overflow || !int_fits(r, bits))
	{
		snprintf(msg, sizeof(msg),
				 "%s out of range in the new value of column \"%s\"",
				 int_type_name(bits), column);
		shardio_function_error(ctx, SHARDIO_ERR_INT_RANGE, msg);
		return;
	}
	sqlite3_result_int64(ctx, r);
}

/*
 * The SQL functions every handle gets: aggregates check text with
 * ssfdw_utf8_ok; conditions, aggregates and time buckets read times with
 * ssfdw_usecs, ssfdw_days, ssfdw_bucket and ssfdw_tz_grid, and the
 * shards' ORDER BY of times tells canonical text by ssfdw_time_canon
 * (shardtime.c);
 * varchar(n) columns with ssfdw_varchar; tenant filters read the tenant
 * column with ssfdw_tenant (tenantkey.c); an UPDATE's new integer values
 * are computed with ssfdw_int_read and ssfdw_int.
 */
static const struct
{
	const char *name;
	int			nargs;
	void		(*func) (sqlite3_context *, int, sqlite3_value **);
	int			reads_times;	/* shares the handle's ShardDateCache */
}			sql_functions[] =
{
	{"ssfdw_utf8_ok", 1, utf8_ok_func, 0},
	{"ssfdw_usecs", 2, shardtime_usecs_func, 1},
	{"ssfdw_days", 2, shardtime_days_func, 1},
	{"ssfdw_varchar", 2, varchar_func, 0},
	{"ssfdw_tz_grid", 4, shardtime_tz_grid_func, 1},
	{"ssfdw_bucket", 3, shardtime_bucket_func, 1},
	{"ssfdw_time_canon", 2, shardtime_canon_func, 0},
	{"ssfdw_tenant", 2, shardio_tenant_func, 0},
	{"ssfdw_int_read", 3, int_read_func, 0},
	{"ssfdw_int", 5, int_op_func, 0},
};

#define NUM_SQL_FUNCTIONS ((int) (sizeof(sql_functions) / sizeof(sql_functions[0])))

/*
 * Who may stop a wait.  A fan-out worker keeps its fan-out's stop flag
 * under stop_flag_key; the backend thread has none there and asks
 * backend_check instead.  Keying on the thread, not the handle, is what
 * lets two scans read one handle at once: a statement stops when the scan
 * that runs it stops, never because another scan of the handle did.
 */
static pthread_key_t stop_flag_key;
static pthread_once_t stop_flag_once = PTHREAD_ONCE_INIT;
static int	stop_flag_key_made = 0;
static ShardioInterruptCheck backend_check = NULL;

/* Who hears of lock waits: a worker's counter, or the backend's report. */
static pthread_key_t lock_waits_key;
static int	lock_waits_key_made = 0;
static ShardioWaitReport backend_wait_report = NULL;

/* Progress handler period, in SQLite virtual machine instructions. */
#define PROGRESS_OPS		1000

/* Longest single sleep of a lock wait, in milliseconds. */
#define BUSY_STEP_MS		10

/*
 * make_stop_flag_key
 *		Create the thread-specific key once per process.
 */
static void
make_stop_flag_key(void)
{
	stop_flag_key_made = (pthread_key_create(&stop_flag_key, NULL) == 0);
	lock_waits_key_made = (pthread_key_create(&lock_waits_key, NULL) == 0);
}

/*
 * shardio_set_interrupt_check
 *		Register the backend's check, once, before any handle opens.
 */
void
shardio_set_interrupt_check(ShardioInterruptCheck check)
{
	pthread_once(&stop_flag_once, make_stop_flag_key);
	backend_check = check;
}

/*
 * shardio_thread_stop_flag
 *		On a worker thread: stop this thread's waits and statements once
 *		*flag is nonzero.
 */
void
shardio_thread_stop_flag(volatile int *flag)
{
	pthread_once(&stop_flag_once, make_stop_flag_key);
	if (stop_flag_key_made)
		pthread_setspecific(stop_flag_key, (void *) flag);
}

/*
 * shardio_set_wait_report
 *		Register the backend's report of its lock waits, once, before any
 *		handle opens.
 */
void
shardio_set_wait_report(ShardioWaitReport report)
{
	pthread_once(&stop_flag_once, make_stop_flag_key);
	backend_wait_report = report;
}

/*
 * shardio_thread_lock_waits
 *		On a worker thread: count this thread's lock waits in *counter while
 *		they sleep.
 */
void
shardio_thread_lock_waits(int *counter)
{
	pthread_once(&stop_flag_once, make_stop_flag_key);
	if (lock_waits_key_made)
		pthread_setspecific(lock_waits_key, (void *) counter);
}

/*
 * lock_wait_sleep
 *		Sleep ms milliseconds of a wait for a lock, letting whoever watches
 *		this thread know: a worker's counter, or the backend's report (a
 *		worker has a stop flag, the backend none).
 */
static void
lock_wait_sleep(long long ms)
{
	int		   *counter = NULL;
	int			backend = 0;
	struct timespec ts;

	if (lock_waits_key_made)
		counter = (int *) pthread_getspecific(lock_waits_key);
	if (counter != NULL)
		__atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
	else if (backend_wait_report != NULL &&
			 (!stop_flag_key_made || pthread_getspecific(stop_flag_key) == NULL))
	{
		backend = 1;
		backend_wait_report(1);
	}
	ts.tv_sec = 0;
	ts.tv_nsec = (long) ms * 1000000L;
	nanosleep(&ts, NULL);
	if (counter != NULL)
		__atomic_sub_fetch(counter, 1, __ATOMIC_RELAXED);
	else if (backend)
		backend_wait_report(0);
}

/*
 * stop_requested
 *		Should whatever SQLite does on this thread stop now?
 */
static int
stop_requested(void)
{
	volatile int *flag = NULL;

	if (stop_flag_key_made)
		flag = (volatile int *) pthread_getspecific(stop_flag_key);
	if (flag != NULL)
		return *flag != 0;
	return backend_check != NULL && backend_check() != 0;
}

/*
 * progress_handler
 *		Every PROGRESS_OPS instructions of a statement: a nonzero result
 *		interrupts it (SQLITE_INTERRUPT).
 */
static int
progress_handler(void *arg)
{
	return stop_requested();
}

/*
 * busy_handler
 *		SQLite found the file locked by another connection: sleep a little
 *		and let it try again (nonzero), until busy timeout milliseconds
 *		(arg) have passed or the thread is told to stop; then the call
 *		fails with SQLITE_BUSY, and the caller tells the two apart.
 *
 * The first retries come quickly, since most locks are held for a commit's
 * few milliseconds; then every BUSY_STEP_MS, which bounds how late a stop
 * is seen.  count is how many times SQLite has called this for the same
 * lock, so the time waited is the sum of the earlier sleeps, as SQLite's
 * own busy handler counts it.
 */
static int
busy_handler(void *arg, int count)
{
	static const int ramp[] = {1, 2, 5};
	static const int ramp_total[] = {0, 1, 3};
	long long	timeout_ms = (long long) (intptr_t) arg;
	long long	waited_ms;
	long long	sleep_ms;

	if (count < 3)
	{
		sleep_ms = ramp[count];
		waited_ms = ramp_total[count];
	}
	else
	{
		sleep_ms = BUSY_STEP_MS;
		waited_ms = ramp_total[2] + ramp[2] +
			(long long) (count - 3) * BUSY_STEP_MS;
	}
	if (waited_ms >= timeout_ms || stop_requested())
		return 0;
	if (sleep_ms > timeout_ms - waited_ms)
		sleep_ms = timeout_ms - waited_ms;
	lock_wait_sleep(sleep_ms);
	return 1;
}

/*
 * The settings that make an untrusted file safe to open, each checked
 * after it is made: a library that ignored one would otherwise open the
 * file without it, silently.
 */
static const struct
{
	int			op;
	int			value;
	const char *name;
}			hardening[] =
{
	{SQLITE_DBCONFIG_DEFENSIVE, 1, "SQLITE_DBCONFIG_DEFENSIVE"},
	{SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, "SQLITE_DBCONFIG_TRUSTED_SCHEMA"},
	{SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0,
	"SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION"},

	/*
	 * A double-quoted name that matches no column must be an error, not a
	 * string literal: otherwise a column missing from a shard would read
	 * back as its own name.
	 */
	{SQLITE_DBCONFIG_DQS_DML, 0, "SQLITE_DBCONFIG_DQS_DML"},
	{SQLITE_DBCONFIG_DQS_DDL, 0, "SQLITE_DBCONFIG_DQS_DDL"},
};

#define NUM_HARDENING ((int) (sizeof(hardening) / sizeof(hardening[0])))

/*
 * open_failed
 *		Close a handle that could not be set up, keeping the message.
 */
static int
open_failed(sqlite3 **db, int rc, const char *msg, char *errbuf)
{
	set_error(errbuf, msg);
	sqlite3_close_v2(*db);
	*db = NULL;
	return rc;
}

/*
 * shardio_open
 *		Open an SQLite file with the hardening every shard gets.
 *
 * Handles are serialized (SQLITE_OPEN_FULLMUTEX): a shard read by a fan-out
 * worker may be read at the same time by another scan of the same statement
 * in the backend (a nested loop over two scans of one table).  Readers hold
 * the handle's mutex for a whole batch, so the per-call locking costs
 * little.  A library whose threading mode leaves handles without a mutex
 * is refused, as is one too old for what the wrapper's SQL uses.
 *
 * Read-only opens never create the file, so a mistyped path is reported as
 * missing instead of leaving an empty database behind.
 */
int
shardio_open(const char *path, int flags, int busy_timeout_ms,
			 sqlite3 **db, char *errbuf)
{
	int			oflags = SQLITE_OPEN_FULLMUTEX;
	int			rc;
	int			i;
	ShardDateCache *times;
	int			times_owned = 0;

	*db = NULL;
	if (sqlite3_libversion_number() < SHARDIO_MIN_SQLITE_VERSION)
	{
		set_error(errbuf, "the SQLite library is older than 3.34.0");
		return SQLITE_ERROR;
	}
	if (flags & SHARDIO_OPEN_READWRITE)
		oflags |= SQLITE_OPEN_READWRITE;
	else
		oflags |= SQLITE_OPEN_READONLY;
	if (flags & SHARDIO_OPEN_CREATE)
		oflags |= SQLITE_OPEN_CREATE;

	rc = sqlite3_open_v2(path, db, oflags, NULL);
	if (rc != SQLITE_OK)
		return open_failed(db, rc,
						   *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc),
						   errbuf);
	if (sqlite3_db_mutex(*db) == NULL)
		return open_failed(db, SQLITE_ERROR,
						   "the SQLite library does not serialize handles (single-thread or multi-thread mode)",
						   errbuf);

	sqlite3_extended_result_codes(*db, 1);

	/*
	 * SQLite gives each handle a lookaside buffer of 120 kB, most of what a
	 * handle on a small file holds; SHARDIO_OPEN_SMALL asks for 8 kB.  It
	 * must be set before anything is allocated from it.
	 */
	if (flags & SHARDIO_OPEN_SMALL)
		(void) sqlite3_db_config(*db, SQLITE_DBCONFIG_LOOKASIDE, NULL,
								 SHARDIO_SMALL_LOOKASIDE_SLOT,
								 SHARDIO_SMALL_LOOKASIDE_SLOTS);
	for (i = 0; i < NUM_HARDENING; i++)
	{
		int			now = -1;

		rc = sqlite3_db_config(*db, hardening[i].op, hardening[i].value, &now);
		if (rc != SQLITE_OK || now != hardening[i].value)
		{
			char		msg[SHARDIO_ERRLEN];

			snprintf(msg, sizeof(msg), "SQLite did not take the setting %s",
					 hardening[i].name);
			return open_failed(db, rc != SQLITE_OK ? rc : SQLITE_ERROR, msg,
							   errbuf);
		}
	}

	/*
	 * The functions pushed-down SQL reads values with.  Those that read
	 * times share the handle's cache of what was read last (shardtime.h),
	 * which the handle's mutex, held while a statement steps, gives to one
	 * thread at a time; the first of them frees it when the handle closes.
	 */
	times = sqlite3_malloc(sizeof(ShardDateCache));
	if (times == NULL)
		return open_failed(db, SQLITE_NOMEM, "out of memory", errbuf);
	memset(times, 0, sizeof(ShardDateCache));
	for (i = 0; i < NUM_SQL_FUNCTIONS; i++)
	{
		int			first_time = (sql_functions[i].reads_times && !times_owned);

		rc = sqlite3_create_function_v2(*db, sql_functions[i].name,
										sql_functions[i].nargs,
										SQLITE_UTF8 | SQLITE_DETERMINISTIC |
										SQLITE_INNOCUOUS,
										sql_functions[i].reads_times ? times : NULL,
										sql_functions[i].func,
										NULL, NULL,
										first_time ? sqlite3_free : NULL);
		times_owned |= first_time;
		if (rc != SQLITE_OK)
		{
			/* a function not made frees its user data itself */
			if (!times_owned)
				sqlite3_free(times);
			return open_failed(db, rc, sqlite3_errmsg(*db), errbuf);
		}
	}

	/* Thread aggregation's input, grouped as SQLite reads it. */
	rc = threadagg_register(*db);
	if (rc != SQLITE_OK)
		return open_failed(db, rc, sqlite3_errmsg(*db), errbuf);

	/* Waits and statements that stop when their reader is told to. */
	rc = sqlite3_busy_handler(*db, busy_handler,
							  (void *) (intptr_t) (busy_timeout_ms > 0 ?
												   busy_timeout_ms : 0));
	if (rc != SQLITE_OK)
		return open_failed(db, rc, sqlite3_errmsg(*db), errbuf);
	sqlite3_progress_handler(*db, PROGRESS_OPS, progress_handler, NULL);

	/*
	 * Reading the schema proves the file is an SQLite database; without this
	 * a non-database file would only fail at the first query, with a less
	 * helpful message.
	 */
	rc = sqlite3_exec(*db, "SELECT count(*) FROM sqlite_schema", NULL, NULL,
					  NULL);
	if (rc != SQLITE_OK)
		return open_failed(db, rc, sqlite3_errmsg(*db), errbuf);
	return SQLITE_OK;
}

/*
 * shardio_close
 *		Close a handle; statements still open make it a zombie that SQLite
 *		frees when the last one is finalized.
 */
void
shardio_close(sqlite3 *db)
{
	if (db != NULL)
		sqlite3_close_v2(db);
}

/*
 * shardio_exec
 *		Run SQL that returns no rows of interest (BEGIN, COMMIT, DDL).
 */
int
shardio_exec(sqlite3 *db, const char *sql, char *errbuf)
{
	char	   *msg = NULL;
	int			rc;

	rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK)
		set_error(errbuf, msg ? msg : sqlite3_errmsg(db));
	sqlite3_free(msg);
	return rc;
}

/*
 * shardio_prepare
 *		Compile one statement; "persistent" hints that it will be cached.
 */
int
shardio_prepare(sqlite3 *db, const char *sql, int persistent,
				sqlite3_stmt **stmt, char *errbuf)
{
	int			rc;

	rc = sqlite3_prepare_v3(db, sql, -1,
							persistent ? SQLITE_PREPARE_PERSISTENT : 0,
							stmt, NULL);
	if (rc != SQLITE_OK)
	{
		set_error(errbuf, sqlite3_errmsg(db));
		*stmt = NULL;
	}
	return rc;
}

/*
 * shardio_bind
 *		Bind values to parameters first .. first + nvals - 1 (1-based).
 *
 * Text and blobs are bound SQLITE_TRANSIENT: the caller's memory may be
 * released before the statement runs on another thread.
 */
int
shardio_bind(sqlite3_stmt *stmt, int first, const ShardValue *vals, int nvals,
			 char *errbuf)
{
	int			i;

	for (i = 0; i < nvals; i++)
	{
		const ShardValue *v = &vals[i];
		int			idx = first + i;
		int			rc;

		switch (v->type)
		{
			case SQLITE_INTEGER:
				rc = sqlite3_bind_int64(stmt, idx, v->u.i);
				break;
			case SQLITE_FLOAT:
				rc = sqlite3_bind_double(stmt, idx, v->u.d);
				break;
			case SQLITE_TEXT:
				rc = sqlite3_bind_text(stmt, idx, v->u.p, v->len,
									   SQLITE_TRANSIENT);
				break;
			case SQLITE_BLOB:
				rc = sqlite3_bind_blob(stmt, idx, v->u.p, v->len,
									   SQLITE_TRANSIENT);
				break;
			default:
				rc = sqlite3_bind_null(stmt, idx);
				break;
		}
		if (rc != SQLITE_OK)
		{
			set_error(errbuf, sqlite3_errmsg(sqlite3_db_handle(stmt)));
			return rc;
		}
	}
	return SQLITE_OK;
}

/*
 * shardio_batch_create
 *		Allocate an empty batch for ncols columns and up to maxrows rows.
 */
ShardBatch *
shardio_batch_create(int ncols, int maxrows)
{
	ShardBatch *batch = calloc(1, sizeof(ShardBatch));

	if (batch == NULL)
		return NULL;
	batch->ncols = ncols;
	batch->maxcols = ncols;
	batch->maxrows = maxrows;
	/* Filled before read, so no need to zero: it may be large. */
	batch->values = malloc((size_t) (ncols > 0 ? ncols : 1) * maxrows *
						   sizeof(ShardValue));
	batch->arena_size = 8192;
	batch->arena = malloc(batch->arena_size);
	if (batch->values == NULL || batch->arena == NULL)
	{
		shardio_batch_free(batch);
		return NULL;
	}
	return batch;
}

/*
 * shardio_batch_reset
 *		Empty a batch for reuse, keeping its memory.
 */
void
shardio_batch_reset(ShardBatch *batch)
{
	batch->nrows = 0;
	batch->arena_used = 0;
}

/*
 * shardio_batch_free
 *		Release a batch and everything it holds.
 */
void
shardio_batch_free(ShardBatch *batch)
{
	if (batch == NULL)
		return;
	free(batch->values);
	free(batch->arena);
	free(batch);
}

/*
 * shardio_arena_store
 *		Copy bytes into the batch arena, returning their offset or -1 when
 *		memory runs out.  Offsets, not pointers, are kept while filling
 *		because the arena may move when it grows.
 */
long
shardio_arena_store(ShardBatch *batch, const void *src, size_t len)
{
	size_t		need = batch->arena_used + len + 1;
	long		off;

	if (need > batch->arena_size)
	{
		size_t		newsize = batch->arena_size * 2;
		char	   *p;

		while (newsize < need)
			newsize *= 2;
		p = realloc(batch->arena, newsize);
		if (p == NULL)
			return -1;
		batch->arena = p;
		batch->arena_size = newsize;
	}
	off = (long) batch->arena_used;
	if (len > 0)
		memcpy(batch->arena + off, src, len);
	batch->arena[off + len] = '\0';
	batch->arena_used = need;
	return off;
}

/*
 * shardio_column
 *		A column of the current row, text and blobs pointing into SQLite's
 *		memory (valid until the statement steps on).
 *
 * The caller holds the handle's mutex, which is what makes the column's
 * value safe to read through sqlite3_value_*: each sqlite3_column_* call
 * would take and release that mutex again, a cost paid per value on the
 * hot path of every fan-out.  Returns 0 when SQLite ran out of memory
 * producing the text.
 */
int
shardio_column(sqlite3_stmt *stmt, int c, ShardValue *v)
{
	return shardio_value(sqlite3_column_value(stmt, c), v);
}

/*
 * shardio_value
 *		An SQLite value as a ShardValue, text and blobs pointing into it:
 *		0 when SQLite could not give its bytes (out of memory).
 */
int
shardio_value(sqlite3_value *val, ShardValue *v)
{
	v->type = sqlite3_value_type(val);
	v->flags = 0;
	v->len = 0;
	switch (v->type)
	{
		case SQLITE_INTEGER:
			v->u.i = sqlite3_value_int64(val);
			break;
		case SQLITE_FLOAT:
			v->u.d = sqlite3_value_double(val);
			break;
		case SQLITE_TEXT:
			v->u.p = (const char *) sqlite3_value_text(val);
			v->len = sqlite3_value_bytes(val);
			return v->u.p != NULL;
		case SQLITE_BLOB:
			v->u.p = sqlite3_value_blob(val);
			v->len = sqlite3_value_bytes(val);
			return v->u.p != NULL || v->len == 0;
		default:
			v->type = SQLITE_NULL;
			break;
	}
	return 1;
}

/*
 * prepare_value
 *		Do on the reading thread the checks and parsing the backend would do
 *		to a fetched value (convert.c), so that it only takes the result:
 *		verify text as UTF-8, or read a date and time into SHARDIO_TIME.
 *		Values that fail are left as they are, for the backend to report.
 */
static void
prepare_value(ShardValue *v, int prep)
{
	ShardDatetime dt;

	if (v->type != SQLITE_TEXT)
		return;
	if (prep == SHARDIO_PREP_TIME &&
		shardio_parse_datetime(v->u.p, v->len, &dt) == SHARDIO_DT_OK)
	{
		v->type = SHARDIO_TIME;
		v->len = 0;
		v->u.i = shardio_datetime_usecs(&dt);
		return;
	}
	if (shardio_utf8_ok((const unsigned char *) v->u.p, v->len))
		v->flags |= SHARDIO_VALUE_UTF8;
}

/*
 * shardio_fetch
 *		Step a statement, copying rows into the batch until it is full.
 *
 * The batch takes the statement's column count, which must fit.  Returns
 * SQLITE_ROW when the batch filled up (more rows may follow), SQLITE_DONE
 * when the statement is exhausted, or an error code.  The batch holds the
 * rows fetched before an error too, but callers discard them.
 */
int
shardio_fetch(sqlite3_stmt *stmt, ShardBatch *batch, char *errbuf)
{
	int			ncols = sqlite3_column_count(stmt);
	sqlite3_mutex *mutex = sqlite3_db_mutex(sqlite3_db_handle(stmt));
	int			rc = SQLITE_ROW;
	int			c;

	shardio_batch_reset(batch);
	if (ncols > batch->maxcols)
	{
		set_error(errbuf, "statement returns more columns than the batch holds");
		return SQLITE_MISUSE;
	}
	batch->ncols = ncols;
	sqlite3_mutex_enter(mutex);
	while (batch->nrows < batch->maxrows)
	{
		ShardValue *row;

		rc = sqlite3_step(stmt);
		if (rc == SQLITE_DONE)
			break;
		if (rc != SQLITE_ROW)
		{
			set_error(errbuf, sqlite3_errmsg(sqlite3_db_handle(stmt)));
			sqlite3_mutex_leave(mutex);
			return rc;
		}
		row = &batch->values[(size_t) batch->nrows * ncols];
		for (c = 0; c < ncols; c++)
		{
			ShardValue *v = &row[c];

			if (!shardio_column(stmt, c, v))
			{
				set_error(errbuf, "out of memory");
				sqlite3_mutex_leave(mutex);
				return SQLITE_NOMEM;
			}
			if (c < batch->nprep && batch->prep[c] != SHARDIO_PREP_NONE)
				prepare_value(v, batch->prep[c]);
			if (v->type == SQLITE_TEXT || v->type == SQLITE_BLOB)
			{
				long		off = shardio_arena_store(batch, v->u.p,
													  (size_t) v->len);

				if (off < 0)
				{
					set_error(errbuf, "out of memory");
					sqlite3_mutex_leave(mutex);
					return SQLITE_NOMEM;
				}
				v->u.i = off;
			}
		}
		batch->nrows++;
	}

	sqlite3_mutex_leave(mutex);
	shardio_batch_fix_pointers(batch);
	return (rc == SQLITE_DONE) ? SQLITE_DONE : SQLITE_ROW;
}

/*
 * shardio_batch_fix_pointers
 *		Once a batch is full and its arena no longer moves, turn the arena
 *		offsets of its text and blob values into pointers.
 */
void
shardio_batch_fix_pointers(ShardBatch *batch)
{
	int			r,
				c;

	for (r = 0; r < batch->nrows; r++)
	{
		ShardValue *row = &batch->values[(size_t) r * batch->ncols];

		for (c = 0; c < batch->ncols; c++)
			if (row[c].type == SQLITE_TEXT || row[c].type == SQLITE_BLOB)
				row[c].u.p = batch->arena + row[c].u.i;
	}
}

/*
 * shardio_file_state
 *		Tell a missing or unreadable shard file from one SQLite rejects, so
 *		the error a user sees names the real problem.
 */
int
shardio_file_state(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return (errno == ENOENT || errno == ENOTDIR) ?
			SHARDIO_FILE_MISSING : SHARDIO_FILE_UNREADABLE;
	if (!S_ISREG(st.st_mode))
		return SHARDIO_FILE_NOT_REGULAR;
	if (access(path, R_OK) != 0)
		return SHARDIO_FILE_UNREADABLE;
	return SHARDIO_FILE_OK;
}

/*
 * shardio_read_header
 *		Read the first len bytes of a database file into buf, through
 *		SQLite's own file layer, without a lock; returns how many bytes the
 *		file has of them (0 for an empty file), or -1 when it cannot be
 *		opened or read.
 *
 * Not with open() and close(): closing any descriptor of a file drops
 * every POSIX lock the process holds on it, the locks of the SQLite
 * handles this process has open on the same file included.  Another
 * process could then take the file for unused and, in WAL mode, delete the
 * -wal and -shm files under those handles, whose later writes would be
 * lost.  SQLite's unix layer keeps one record per file for all its handles
 * in a process and defers such a close while a lock is held.
 */
int
shardio_read_header(const char *path, unsigned char *buf, int len)
{
	sqlite3_vfs *vfs = sqlite3_vfs_find(NULL);
	sqlite3_file *file;
	sqlite3_int64 size = 0;
	int			outflags = 0;
	int			rc;

	if (vfs == NULL)
		return -1;
	file = calloc(1, vfs->szOsFile);
	if (file == NULL)
		return -1;
	rc = vfs->xOpen(vfs, path, file,
					SQLITE_OPEN_READONLY | SQLITE_OPEN_MAIN_DB, &outflags);
	if (rc != SQLITE_OK)
	{
		if (file->pMethods)
			file->pMethods->xClose(file);
		free(file);
		return -1;
	}
	rc = file->pMethods->xFileSize(file, &size);
	if (rc == SQLITE_OK && size > 0)
	{
		if (size < len)
			len = (int) size;
		rc = file->pMethods->xRead(file, buf, len, 0);
	}
	else
		len = 0;
	file->pMethods->xClose(file);
	free(file);
	return rc == SQLITE_OK ? len : -1;
}

/*
 * shardio_in_wal_mode
 *		1 when the main database of a handle is in WAL mode, as its file's
 *		header says (the format's write and read versions, bytes 18 and 19,
 *		are 2), read through the handle's own open file; 0 when it is not or
 *		cannot be told.  Leaving WAL mode needs every other connection's
 *		lock gone, so the answer holds while the handle is in a transaction.
 */
int
shardio_in_wal_mode(sqlite3 *db)
{
	sqlite3_file *file = NULL;
	unsigned char versions[2];

	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER,
							 &file) != SQLITE_OK ||
		file == NULL || file->pMethods == NULL)
		return 0;
	if (file->pMethods->xRead(file, versions, sizeof(versions), 18) !=
		SQLITE_OK)
		return 0;
	return versions[0] == 2 && versions[1] == 2;
}

/*
 * shardio_change_stamp
 *		Take a stamp of the main database of a handle that changes with every
 *		commit to it, without a lock or a transaction: equal stamps taken at
 *		two moments mean no commit became visible in between.  Returns
 *		SHARDIO_STAMP_WAL or SHARDIO_STAMP_HEADER for the kind of stamp
 *		taken, or 0 when none can be had (a database in WAL mode whose WAL
 *		the handle has not opened yet), and the caller must check another
 *		way.
 *
 * In WAL mode a commit becomes visible to readers when the writer rewrites
 * the WAL-index header at the start of the -shm file (SQLite's documented
 * file format: two 48-byte copies, the second written first; a reader that
 * finds them unequal retries).  Only a handle whose pager has the WAL open
 * is stamped so: SQLite then holds a shared lock on the database file for
 * as long as the handle stays open, so no other connection can take the
 * database out of WAL mode or remove its -shm file, and the handle's own
 * mapping of that file, reached through the VFS, is already there.  The
 * stamp then reads memory only.  A commit may become visible at any moment,
 * the handle's own read transactions included: a WAL stamp is good only
 * when taken before the state it vouches for is read.
 *
 * In rollback-journal mode the stamp is the database header (its first 100
 * bytes), read with one pread on the handle's open file.  Every commit
 * writes a new change counter into it (offset 24) before the commit point,
 * which is when the journal goes: SQLite's own pager keeps its page cache
 * across transactions exactly when bytes 24-39 are unchanged, so an
 * unchanged header means no commit another connection could see.  The
 * header read without a lock may be that of a commit under way, or of one
 * whose writer died (a hot journal): such a header differs from the last
 * committed one, and the caller checks the slow way.  A header stamp that
 * is kept to compare with must therefore be taken inside a read
 * transaction, whose shared lock keeps writers out of the file and makes
 * SQLite roll back a hot journal first: it is then the committed header.
 * A header of a file in WAL mode (format versions 2, offsets 18-19) is no
 * stamp: WAL commits leave it as it is.
 */
int
shardio_change_stamp(sqlite3 *db, ShardioStamp *stamp)
{
	sqlite3_file *file = NULL;
	sqlite3_file *journal = NULL;
	unsigned char second[48];
	void volatile *shm = NULL;

	memset(stamp, 0, sizeof(ShardioStamp));

	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER,
							 &file) != SQLITE_OK ||
		file == NULL || file->pMethods == NULL)
		return 0;

	/*
	 * The journal of a handle in WAL mode is its open WAL file; a read-only
	 * handle in rollback-journal mode never opens its journal (it cannot
	 * write, nor roll back another's).
	 */
	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER,
							 &journal) != SQLITE_OK || journal == NULL)
		return 0;
	if (journal->pMethods == NULL)
	{
		static const char magic[] = "SQLite format 3";

		if (file->pMethods->xRead(file, stamp->bytes,
								  SHARDIO_STAMP_HEADER_LEN, 0) != SQLITE_OK ||
			memcmp(stamp->bytes, magic, sizeof(magic)) != 0 ||
			stamp->bytes[18] != 1 || stamp->bytes[19] != 1)
		{
			memset(stamp, 0, sizeof(ShardioStamp));
			return 0;
		}
		stamp->kind = SHARDIO_STAMP_HEADER;
		return SHARDIO_STAMP_HEADER;
	}

	if (file->pMethods->iVersion < 2 || file->pMethods->xShmMap == NULL)
		return 0;
	if (file->pMethods->xShmMap(file, 0, 32768, 0, &shm) != SQLITE_OK ||
		shm == NULL)
		return 0;
	memcpy(stamp->bytes, (const void *) shm, sizeof(second));
	__sync_synchronize();
	memcpy(second, (const char *) shm + sizeof(second), sizeof(second));

	/* a header being rewritten, or not yet initialized (isInit) */
	if (memcmp(stamp->bytes, second, sizeof(second)) != 0 ||
		stamp->bytes[12] != 1)
	{
		memset(stamp, 0, sizeof(ShardioStamp));
		return 0;
	}
	stamp->kind = SHARDIO_STAMP_WAL;
	return SHARDIO_STAMP_WAL;
}
