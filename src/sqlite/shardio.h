/*-------------------------------------------------------------------------
 *
 * shardio.h
 *		  Plain-C interface to the SQLite side of sqlite_shard_fdw
 *
 * Everything declared here is implemented without PostgreSQL headers, so it
 * may run on fan-out worker threads: it calls only SQLite and the C library,
 * allocates with malloc, and reports failures as an SQLite result code plus
 * a message copied into a caller-supplied buffer.  The backend side turns
 * those into ereport() calls naming the shard involved.
 *
 * Rows travel from a shard to the backend in ShardBatch buffers: a fixed
 * number of columns, values copied out of SQLite (text and blobs into the
 * batch's own arena), so that a batch stays valid after the statement steps
 * on or is finalized.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDIO_H
#define SHARDIO_H

#include <stddef.h>
#include <sqlite3.h>

#define SHARDIO_ERRLEN 512

/*
 * Result codes of the wrapper's own failures on the SQLite side: its SQL
 * functions' errors (sqlite3_result_error_code) and thread aggregation's.
 * Each is an extended code of SQLITE_ERROR beyond any SQLite defines, so
 * the backend gives it the SQLSTATE PostgreSQL would raise (sqliteerror.c,
 * shard_sqlite_sqlstate) while SQLite's own codes, bind errors included,
 * keep their generic meaning.  The message that comes with one is whole.
 */
#define SHARDIO_ERROR_CODE(n)		(SQLITE_ERROR | ((0x5300 + (n)) << 8))
#define SHARDIO_ERR_NOT_UTF8		SHARDIO_ERROR_CODE(1)	/* 22021 */
#define SHARDIO_ERR_TIME_FORMAT		SHARDIO_ERROR_CODE(2)	/* 22007 */
#define SHARDIO_ERR_TIME_RANGE		SHARDIO_ERROR_CODE(3)	/* 22008 */
#define SHARDIO_ERR_TIME_TYPE		SHARDIO_ERROR_CODE(4)	/* HV004 */
#define SHARDIO_ERR_TOO_LONG		SHARDIO_ERROR_CODE(5)	/* 22001 */
#define SHARDIO_ERR_SUM_OVERFLOW	SHARDIO_ERROR_CODE(6)	/* 22003 */
#define SHARDIO_ERR_INT_RANGE		SHARDIO_ERROR_CODE(7)	/* 22003 */
#define SHARDIO_ERR_INT_SYNTAX		SHARDIO_ERROR_CODE(8)	/* 22P02 */
#define SHARDIO_ERR_DIV_ZERO		SHARDIO_ERROR_CODE(9)	/* 22012 */
#define SHARDIO_ERR_INT_TYPE		SHARDIO_ERROR_CODE(10)	/* HV004 */

/* One value copied out of, or to be bound into, an SQLite statement. */
typedef struct ShardValue
{
	short		type;			/* SQLITE_INTEGER, _FLOAT, _TEXT, _BLOB, _NULL,
								 * or SHARDIO_TIME */
	unsigned short flags;		/* SHARDIO_VALUE_ bits */
	int			len;			/* bytes of text or blob */
	union
	{
		sqlite3_int64 i;
		double		d;
		const char *p;			/* text (NUL-terminated) or blob bytes */
	}			u;
} ShardValue;

/* ShardValue.flags: what the reader checked of a value. */
#define SHARDIO_VALUE_UTF8		0x01	/* text: valid UTF-8, no NUL byte */

/*
 * A storage class of the reader's own: text in one of the wrapper's date
 * and time forms, already read; u.i is microseconds since 2000-01-01 UTC.
 */
#define SHARDIO_TIME			64

/* What a reader does to a column's values as it fetches them. */
#define SHARDIO_PREP_NONE		0
#define SHARDIO_PREP_UTF8		1	/* check text, set SHARDIO_VALUE_UTF8 */
#define SHARDIO_PREP_TIME		2	/* read date and time text into
									 * SHARDIO_TIME, else as _UTF8 */

/* A batch of rows, row-major: values[row * ncols + col]. */
typedef struct ShardBatch
{
	int			ncols;			/* columns of the rows held now */
	int			maxcols;		/* room for this many */
	int			nrows;
	int			maxrows;
	ShardValue *values;
	char	   *arena;			/* storage for text and blob bytes */
	size_t		arena_used;
	size_t		arena_size;
	const unsigned char *prep;	/* SHARDIO_PREP_ per column, or NULL */
	int			nprep;
	double		fill_ms;		/* time its reader took to fill it
								 * (fanout.c), for EXPLAIN ANALYZE */
} ShardBatch;

/* Flags for shardio_open. */
#define SHARDIO_OPEN_READWRITE	0x01	/* otherwise read-only */
#define SHARDIO_OPEN_CREATE		0x02	/* create the file if missing */
#define SHARDIO_OPEN_SMALL		0x04	/* a small lookaside buffer: one of
										 * thousands of handles kept */
#define SHARDIO_SMALL_LOOKASIDE_SLOT	256
#define SHARDIO_SMALL_LOOKASIDE_SLOTS	32

extern int	shardio_open(const char *path, int flags, int busy_timeout_ms,
						 sqlite3 **db, char *errbuf);
extern void shardio_close(sqlite3 *db);
extern int	shardio_exec(sqlite3 *db, const char *sql, char *errbuf);
extern int	shardio_prepare(sqlite3 *db, const char *sql, int persistent,
							sqlite3_stmt **stmt, char *errbuf);
extern int	shardio_bind(sqlite3_stmt *stmt, int first, const ShardValue *vals,
						 int nvals, char *errbuf);

extern ShardBatch *shardio_batch_create(int ncols, int maxrows);
extern void shardio_batch_reset(ShardBatch *batch);
extern void shardio_batch_free(ShardBatch *batch);
extern int	shardio_fetch(sqlite3_stmt *stmt, ShardBatch *batch, char *errbuf);
extern int	shardio_column(sqlite3_stmt *stmt, int c, ShardValue *v);
extern int	shardio_value(sqlite3_value *val, ShardValue *v);
extern long shardio_arena_store(ShardBatch *batch, const void *src,
								size_t len);
extern void shardio_batch_fix_pointers(ShardBatch *batch);

/* The oldest SQLite the wrapper runs on (sqlite3_txn_state is 3.34.0's). */
#define SHARDIO_MIN_SQLITE_VERSION 3034000

/*
 * What ends a wait for a lock, or a running statement, before its time:
 * on a fan-out worker its fan-out's stop flag, set with
 * shardio_thread_stop_flag when the worker starts; on the backend thread the
 * check the backend registered once (it may read the backend's interrupt
 * flags, and do nothing else).  Nonzero means stop.
 */
typedef int (*ShardioInterruptCheck) (void);

extern void shardio_set_interrupt_check(ShardioInterruptCheck check);
extern void shardio_thread_stop_flag(volatile int *flag);

/*
 * Who hears of a wait for another process's lock, so that it shows in
 * pg_stat_activity: on the backend thread, the function the backend
 * registered once, called with 1 before each sleep of the wait and with 0
 * after it; on a fan-out worker, the counter given with
 * shardio_thread_lock_waits, raised during each sleep, which the backend
 * reads (a worker never calls into PostgreSQL).
 */
typedef void (*ShardioWaitReport) (int waiting);

extern void shardio_set_wait_report(ShardioWaitReport report);
extern void shardio_thread_lock_waits(int *counter);

extern int	shardio_file_state(const char *path);
extern int	shardio_read_header(const char *path, unsigned char *buf, int len);

/*
 * What of a database's files changes with every commit: the WAL-index
 * header of a database in WAL mode, the database header otherwise.
 */
#define SHARDIO_STAMP_WAL		1
#define SHARDIO_STAMP_HEADER	2
#define SHARDIO_STAMP_HEADER_LEN 100

typedef struct ShardioStamp
{
	int			kind;			/* SHARDIO_STAMP_*, 0 for none */
	unsigned char bytes[SHARDIO_STAMP_HEADER_LEN];
} ShardioStamp;

extern int	shardio_change_stamp(sqlite3 *db, ShardioStamp *stamp);
extern int	shardio_in_wal_mode(sqlite3 *db);

/* A date and time in one of the text forms SQLite's date functions use. */
typedef struct ShardDatetime
{
	int			year,
				month,
				day,
				hour,
				minute,
				second;
	long		fraction;		/* microseconds, rounded */
	int			offset;			/* seconds east of UTC */
	int			has_time;		/* a time of day was given */
	int			has_offset;		/* so was 'Z' or an offset */
} ShardDatetime;

#define SHARDIO_DT_OK			0
#define SHARDIO_DT_BAD_FORMAT	1	/* not one of the accepted forms */
#define SHARDIO_DT_BAD_FIELD	2	/* right form, impossible field value */

extern void shardio_function_error(sqlite3_context *ctx, int code,
								   const char *msg);
extern int	shardio_utf8_ok(const unsigned char *p, int len);

/* in shardtime.c: the one reader of stored dates and times */
extern int	shardio_parse_datetime(const char *str, int len, ShardDatetime *dt);
extern long long shardio_datetime_usecs(const ShardDatetime *dt);
extern int	shardio_unix_time(int type, long long i, double d, int as_date,
							  long long *out);
extern long long shardio_usecs_days(long long usecs);

/* Results of shardio_file_state. */
#define SHARDIO_FILE_OK			0
#define SHARDIO_FILE_MISSING	1
#define SHARDIO_FILE_UNREADABLE 2
#define SHARDIO_FILE_NOT_REGULAR 3

/* in tenantkey.c: ssfdw_tenant(value, kind) and its kinds */
#define SHARDIO_TENANT_TEXT		0	/* text as stored */
#define SHARDIO_TENANT_UUID		128 /* uuid, lower-case hyphenated */
									/* 16, 32, 64: integers of those bits */
extern void shardio_tenant_func(sqlite3_context *ctx, int argc,
								sqlite3_value **argv);

/* in filetenant.c: ssfdw_file_tenant(kind), a tenant file's tenant */
extern int	shardio_set_file_tenant(sqlite3 *db, const char *tenant);

/* in movesum.c: ssfdw_move_sum, the checksum a tenant move verifies with */
extern int	shardio_register_move_sum(sqlite3 *db);

#endif							/* SHARDIO_H */
