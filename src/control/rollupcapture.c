/*-------------------------------------------------------------------------
 *
 * rollupcapture.c
 *		  A rollup's change capture inside the shards: the triggers that log
 *		  which tenants' rows changed, and what a refresh reads of the log
 *
 * Every write of a rollup's SQLite table, by any connection (the
 * application's, which knows nothing of rollups, included), fires a
 * trigger that notes the tenant value of the row written (OLD and NEW)
 * in the shard's table _ssfdw_rollup_log, one row per table and stored
 * value, stamped with a change number one above the log's highest and the
 * time.  Writers of one SQLite file take turns, so a change committed
 * after a reader's snapshot always has a higher number than any the
 * reader saw: a refresh that reads the log's highest number first (its
 * "mark"), then computes the tenants logged above its previous mark, has
 * every change committed up to then, and whatever commits later is above
 * the new mark, for the next refresh.  The log keeps a row per stored
 * value, not per write, so it does not grow with the writes.
 *
 * Most writes do not even write the log: a refresh publishes the log's
 * highest number as the table's mark in the shard (_ssfdw_rollup_mark),
 * then reads the log, and takes as its own mark the published one it
 * reads (not the highest number), and a write of a tenant already logged
 * above the published mark leaves its row as it is.  That number is above
 * every mark a refresh has taken, so the next refresh computes the tenant
 * anyway; a tenant logged at or below the mark gets a new number, above
 * them all.  A tenant written a thousand times between two refreshes
 * costs its log one write; its time is that of its first change since
 * the mark moved.
 *
 * The triggers store the value as the application wrote it; which tenant
 * it is decided when the log is read, by the one tenant rule (tenantrule.c,
 * shard_tenant_key), as for every other path.  Nothing read from a shard
 * is ever run as SQL: the triggers are recognised by comparing their text
 * with the text this file would create.
 *
 * Each shard's log has an epoch, a random id written when the capture is
 * installed (first, or again after the triggers went missing: a move may
 * have created the table on its target, someone may have dropped them, the
 * file may have been replaced).  A rollup remembers the epoch and mark it
 * took of each shard; another epoch means the rollup cannot know what
 * changed there, and every tenant the shard answers for is computed anew.
 *
 * The capture misses what fires no trigger (an INSERT OR REPLACE that
 * deletes through another unique index, an incremental blob write, a
 * connection with triggers disabled), as a move's does; a full refresh
 * recomputes everything.
 *
 * Shards whose files have not changed are not opened.  When a refresh
 * finds nothing logged above the mark it takes of a shard, it records with
 * the mark the state of the shard's files: device, inode, size and change
 * time (ctime) of the file and of its WAL file.  While both files show
 * that state, their content is what the refresh read, so the log still
 * holds nothing above the mark, and a later refresh or a query answered
 * from the rollup takes the shard as read, without opening it.  Any write
 * of either file sets its change time to the clock's time; nobody can set
 * it otherwise (utimes sets the modification time, not ctime).  A state
 * is recorded only when each file's change time is older, by
 * ROLLUP_FILE_TIME_SLACK_US, than the moment before the log was read (the
 * "racy" check of git's index): a write after that moment, even within
 * the same tick of the file system's clock, has a later change time than
 * the one recorded, so it can never look like the state recorded.  The
 * refresh reads the log and looks at the files under the shard's write
 * lock (or records nothing), so that no writer is half way through a
 * commit: in WAL mode a commit's frames are written, with their change
 * time, before the commit becomes visible.  A file written within the
 * slack before a read is read again next time.  This
 * holds on a local file system whose change times have a granularity
 * under the slack, with a system clock that is not set back; a network
 * file system that caches attributes may show an old change time, and is
 * no place for SQLite files anyway.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <sys/stat.h>
#include <time.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "control/rollup.h"

/* The change log and the epochs, inside every shard. */
#define ROLLUP_LOG "_ssfdw_rollup_log"
#define ROLLUP_EPOCH "_ssfdw_rollup_epoch"
#define ROLLUP_MARK "_ssfdw_rollup_mark"

/*
 * How much older than the moment before a log is read a file's change time
 * must be for the state of the files to be recorded: more than the
 * granularity of any file system's change times (a clock tick, some
 * milliseconds, on Linux's own; a second or two on some others).
 */
#define ROLLUP_FILE_TIME_SLACK_US (2 * USECS_PER_SEC)

/* The error of a failed publication of a mark (see publish_mark). */
#define PUBLISH_FAILED \
	gettext_noop("could not publish the rollup change mark of table \"%s\" on shard \"%s\"")

static char *file_state(const char *path, int64 before);

/* A rollup's mark of one shard, from the catalog. */
typedef struct RollupMark
{
	char		shard_id[NAMEDATALEN * 2];	/* hash key, cut */
	char	   *id;				/* the whole shard id */
	char	   *epoch;
	int64		mark;
	char	   *file_state;		/* recorded with the mark, or NULL */
} RollupMark;

/*
 * capture_error
 *		Raise a failed SQLite call on a shard's handle during the capture.
 */
static void
capture_error(sqlite3 *db, const char *shard_id, const char *table,
			  const char *fmt)
{
	int			rc = sqlite3_extended_errcode(db);

	shard_check_lock_wait(rc, false, shard_id);
	ereport(ERROR,
			(errcode(shard_sqlite_sqlstate(rc)),
			 errmsg(fmt, table, shard_id),
			 errdetail_internal("%s", sqlite3_errmsg(db))));
}

/*
 * trigger_name
 *		The name of the capture trigger of kind ('i', 'u', 'd') on table.
 */
static char *
trigger_name(const char *table, char kind)
{
	return psprintf("_ssfdw_rollup_%c_%s", kind, table);
}

/*
 * append_log_row
 *		Append the statement that logs row's (NEW or OLD) tenant value of
 *		table's column, when it is not NULL (and cond holds, if given): a
 *		new number for a value not logged above the table's published mark,
 *		nothing for one that is (see read_log).  A missing mark stamps
 *		every write.  Without a column (a file of one tenant), every write
 *		is the file's tenant's, logged as the value ''.
 */
static void
append_log_row(StringInfo buf, const char *table, const char *column,
			   const char *row, const char *cond)
{
	appendStringInfoString(buf, "INSERT INTO " ROLLUP_LOG " (tbl, tenant, v, at) SELECT ");
	shard_append_sql_literal(buf, table);
	if (column == NULL)
		appendStringInfoString(buf, ", ''");
	else
	{
		appendStringInfo(buf, ", %s.", row);
		shard_quote_identifier(buf, column);
	}
	appendStringInfoString(buf, ", coalesce((SELECT max(v) FROM " ROLLUP_LOG "), 0) + 1, julianday('now') WHERE ");
	if (column == NULL)
		appendStringInfoString(buf, "1");
	else
	{
		appendStringInfo(buf, "%s.", row);
		shard_quote_identifier(buf, column);
		appendStringInfoString(buf, " IS NOT NULL");
	}
	if (cond)
		appendStringInfo(buf, " AND %s", cond);
	appendStringInfoString(buf, " ON CONFLICT (tbl, tenant) DO UPDATE SET v = excluded.v, at = excluded.at"
						   " WHERE v <= coalesce((SELECT mark FROM " ROLLUP_MARK " WHERE tbl = ");
	shard_append_sql_literal(buf, table);
	appendStringInfoString(buf, "), v); ");
}

/*
 * append_unlogged
 *		Append the condition "row's tenant value of table's column is not
 *		logged above the table's published mark": exactly that value (no
 *		affinity applied, as the log's key compares it), true when the
 *		mark is missing.  A trigger whose every statement would find its
 *		value logged above the mark does not run at all, and reads two
 *		rows instead of running its statements for nothing.
 */
static void
append_unlogged(StringInfo buf, const char *table, const char *column,
				const char *row)
{
	appendStringInfoString(buf, "NOT EXISTS (SELECT 1 FROM " ROLLUP_LOG " WHERE tbl = ");
	shard_append_sql_literal(buf, table);
	if (column == NULL)
		appendStringInfoString(buf, " AND tenant = ''");
	else
	{
		appendStringInfo(buf, " AND tenant = +%s.", row);
		shard_quote_identifier(buf, column);
	}
	appendStringInfoString(buf, " AND v > (SELECT mark FROM " ROLLUP_MARK " WHERE tbl = ");
	shard_append_sql_literal(buf, table);
	appendStringInfoString(buf, "))");
}

/*
 * trigger_sql
 *		The CREATE TRIGGER text of the capture trigger of kind on table,
 *		exactly as sqlite_schema keeps it once created; column is the
 *		tenant column, NULL in a file of one tenant.
 */
static char *
trigger_sql(const char *table, const char *column, char kind)
{
	StringInfoData buf;
	StringInfoData cond;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "CREATE TRIGGER ");
	shard_quote_identifier(&buf, trigger_name(table, kind));
	appendStringInfo(&buf, " AFTER %s ON ",
					 kind == 'i' ? "INSERT" : kind == 'u' ? "UPDATE" : "DELETE");
	shard_quote_identifier(&buf, table);
	appendStringInfoString(&buf, " WHEN ");
	append_unlogged(&buf, table, column, kind == 'i' ? "NEW" : "OLD");
	if (kind == 'u' && column != NULL)
	{
		appendStringInfoString(&buf, " OR (NEW.");
		shard_quote_identifier(&buf, column);
		appendStringInfoString(&buf, " IS NOT OLD.");
		shard_quote_identifier(&buf, column);
		appendStringInfoString(&buf, " AND ");
		append_unlogged(&buf, table, column, "NEW");
		appendStringInfoChar(&buf, ')');
	}
	appendStringInfoString(&buf, " BEGIN ");
	switch (kind)
	{
		case 'i':
			append_log_row(&buf, table, column, "NEW", NULL);
			break;
		case 'd':
			append_log_row(&buf, table, column, "OLD", NULL);
			break;
		default:
			/* the old tenant always; the new one when the update moved it */
			append_log_row(&buf, table, column, "OLD", NULL);
			if (column == NULL)
				break;
			initStringInfo(&cond);
			appendStringInfoString(&cond, "NEW.");
			shard_quote_identifier(&cond, column);
			appendStringInfoString(&cond, " IS NOT OLD.");
			shard_quote_identifier(&cond, column);
			append_log_row(&buf, table, column, "NEW", cond.data);
			break;
	}
	appendStringInfoString(&buf, "END");
	return buf.data;
}

/*
 * capture_column
 *		The column whose values the rollup's triggers log: its tenant
 *		column, or NULL on a server of one file per tenant, whose files
 *		store no tenant column (the file is the tenant).
 */
static const char *
capture_column(Rollup *r)
{
	return r->opts->file_per_tenant ? NULL : r->tenant_column;
}

/*
 * shard_table_name
 *		The shard's own spelling of table (SQLite's names ignore ASCII
 *		case), or NULL when it has no such table.
 */
static char *
shard_table_name(sqlite3 *db, const char *shard_id, const char *table)
{
	sqlite3_stmt *stmt;
	char	   *result = NULL;
	int			rc;

	if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_schema WHERE type = 'table' "
						   "AND name = ?1 COLLATE NOCASE", -1, &stmt,
						   NULL) != SQLITE_OK)
		capture_error(db, shard_id, table,
					  gettext_noop("could not read the schema of table \"%s\" on shard \"%s\""));
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		result = pstrdup((const char *) sqlite3_column_text(stmt, 0));
	sqlite3_finalize(stmt);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		capture_error(db, shard_id, table,
					  gettext_noop("could not read the schema of table \"%s\" on shard \"%s\""));
	return result;
}

/*
 * capture_present
 *		Are the three capture triggers of table in place, each exactly as
 *		this file creates it, and does the log have an epoch for it?
 */
static bool
capture_present(sqlite3 *db, const char *shard_id, const char *table,
				const char *column)
{
	static const char kinds[] = {'i', 'u', 'd'};
	sqlite3_stmt *stmt;
	int			found = 0;
	int			i;

	for (i = 0; i < lengthof(kinds); i++)
	{
		int			rc;

		if (sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_schema WHERE type = 'trigger' "
							   "AND name = ?1 AND tbl_name = ?2", -1, &stmt,
							   NULL) != SQLITE_OK)
			capture_error(db, shard_id, table,
						  gettext_noop("could not read the schema of table \"%s\" on shard \"%s\""));
		sqlite3_bind_text(stmt, 1, trigger_name(table, kinds[i]), -1,
						  SQLITE_TRANSIENT);
		sqlite3_bind_text(stmt, 2, table, -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(stmt);
		if (rc == SQLITE_ROW && sqlite3_column_text(stmt, 0) != NULL &&
			strcmp((const char *) sqlite3_column_text(stmt, 0),
				   trigger_sql(table, column, kinds[i])) == 0)
			found++;
		sqlite3_finalize(stmt);
	}
	if (found != lengthof(kinds))
		return false;

	/* a log without its epoch table (or the marks) is no log of ours */
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM " ROLLUP_MARK, -1, &stmt,
						   NULL) != SQLITE_OK)
		return false;
	sqlite3_finalize(stmt);
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM " ROLLUP_EPOCH " WHERE tbl = ?1",
						   -1, &stmt, NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
	found = sqlite3_step(stmt) == SQLITE_ROW;
	sqlite3_finalize(stmt);
	return found;
}

/*
 * exec_capture
 *		Run one statement of the capture's installation.
 */
static void
exec_capture(sqlite3 *db, const char *shard_id, const char *table,
			 const char *sql)
{
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
	{
		char	   *msg = pstrdup(sqlite3_errmsg(db));
		int			rc = sqlite3_extended_errcode(db);

		if (!sqlite3_get_autocommit(db))
			(void) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		shard_check_lock_wait(rc, false, shard_id);
		ereport(ERROR,
				(errcode(shard_sqlite_sqlstate(rc)),
				 errmsg("could not install the rollup change capture of table \"%s\" on shard \"%s\"",
						table, shard_id),
				 errdetail_internal("%s", msg)));
	}
}

/*
 * install_capture
 *		Create the log, the epoch table and table's triggers in one
 *		transaction, under the shard's write lock, with a new epoch: from
 *		its commit on every write of table, by any connection, is logged.
 */
static void
install_capture(sqlite3 *db, const char *shard_id, const char *table,
				const char *column)
{
	static const char kinds[] = {'i', 'u', 'd'};
	StringInfoData buf;
	uint8		bytes[8];
	char		epoch[17];
	int			i;

	if (!pg_strong_random(bytes, sizeof(bytes)))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate a random epoch")));
	for (i = 0; i < (int) sizeof(bytes); i++)
		snprintf(epoch + 2 * i, 3, "%02x", bytes[i]);

	exec_capture(db, shard_id, table, "BEGIN IMMEDIATE");
	exec_capture(db, shard_id, table,
				 "CREATE TABLE IF NOT EXISTS main." ROLLUP_LOG
				 " (tbl TEXT NOT NULL, tenant NOT NULL, v INTEGER NOT NULL,"
				 " at REAL NOT NULL, PRIMARY KEY (tbl, tenant)) WITHOUT ROWID");
	exec_capture(db, shard_id, table,
				 "CREATE INDEX IF NOT EXISTS main." ROLLUP_LOG "_v ON "
				 ROLLUP_LOG " (v)");
	exec_capture(db, shard_id, table,
				 "CREATE TABLE IF NOT EXISTS main." ROLLUP_EPOCH
				 " (tbl TEXT PRIMARY KEY, epoch TEXT NOT NULL)");
	exec_capture(db, shard_id, table,
				 "CREATE TABLE IF NOT EXISTS main." ROLLUP_MARK
				 " (tbl TEXT PRIMARY KEY, mark INTEGER NOT NULL)");
	initStringInfo(&buf);
	for (i = 0; i < lengthof(kinds); i++)
	{
		resetStringInfo(&buf);
		appendStringInfoString(&buf, "DROP TRIGGER IF EXISTS main.");
		shard_quote_identifier(&buf, trigger_name(table, kinds[i]));
		exec_capture(db, shard_id, table, buf.data);
		exec_capture(db, shard_id, table, trigger_sql(table, column, kinds[i]));
	}
	resetStringInfo(&buf);
	appendStringInfoString(&buf, "INSERT OR REPLACE INTO main." ROLLUP_EPOCH " VALUES (");
	shard_append_sql_literal(&buf, table);
	appendStringInfoString(&buf, ", ");
	shard_append_sql_literal(&buf, epoch);
	appendStringInfoChar(&buf, ')');
	exec_capture(db, shard_id, table, buf.data);
	exec_capture(db, shard_id, table, "COMMIT");
}

/*
 * julian_to_timestamptz
 *		A time of SQLite's julianday() as a TimestampTz.
 */
static TimestampTz
julian_to_timestamptz(double jd)
{
	double		secs = (jd - 2440587.5) * SECS_PER_DAY -
		(double) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY;

	return (TimestampTz) (secs * USECS_PER_SEC);
}

/*
 * mark_is_behind
 *		Is table's published mark below the highest change number of the
 *		shard's log?  Read without the write lock: nothing to publish when
 *		nothing changed.  In WAL mode the handle's writes are set not to
 *		wait for the disk (see publish_mark).
 */
static bool
mark_is_behind(sqlite3 *db, const char *shard_id, const char *table)
{
	sqlite3_stmt *stmt;
	bool		behind;
	bool		wal;

	if (sqlite3_prepare_v2(db, "SELECT (SELECT coalesce(max(v), 0) FROM " ROLLUP_LOG
						   ") <> (SELECT coalesce(max(mark), 0) FROM " ROLLUP_MARK
						   " WHERE tbl = ?1), (SELECT journal_mode = 'wal' FROM"
						   " pragma_journal_mode)", -1, &stmt, NULL) != SQLITE_OK)
		capture_error(db, shard_id, table, PUBLISH_FAILED);
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(stmt) != SQLITE_ROW)
	{
		sqlite3_finalize(stmt);
		capture_error(db, shard_id, table, PUBLISH_FAILED);
	}
	behind = sqlite3_column_int(stmt, 0) != 0;
	wal = sqlite3_column_int(stmt, 1) != 0;
	sqlite3_finalize(stmt);
	if (behind && wal)
		(void) sqlite3_exec(db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
	return behind;
}

/*
 * write_mark
 *		Set table's published mark to the highest change number of the
 *		shard's log, inside a write transaction the caller holds.
 */
static void
write_mark(sqlite3 *db, const char *shard_id, const char *table)
{
	sqlite3_stmt *stmt;
	int			rc;

	if (sqlite3_prepare_v2(db, "INSERT INTO " ROLLUP_MARK " SELECT ?1, coalesce(max(v), 0)"
						   " FROM " ROLLUP_LOG " WHERE true ON CONFLICT (tbl) DO UPDATE"
						   " SET mark = excluded.mark", -1, &stmt,
						   NULL) != SQLITE_OK)
		capture_error(db, shard_id, table, PUBLISH_FAILED);
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		capture_error(db, shard_id, table, PUBLISH_FAILED);
}

/*
 * publish_mark
 *		Publish the highest change number of the shard's log as table's
 *		mark, when it is not the mark there, in a transaction of its own:
 *		from then on a write of a tenant logged above the mark is not
 *		stamped again (see append_log_row).  Any mark up to the highest
 *		number is safe to publish, as long as it does not go down below a
 *		number logged: a refresh takes as its own the mark it reads, and
 *		reads after publishing (or in the same transaction, see read_log).
 *		(The mark goes down only to the highest number of a log emptied
 *		under it, which read_log tells.)  So the write need not wait for
 *		the disk (in WAL mode), and a shard whose write lock stays taken
 *		(an application's long transaction) is left as it is: the next
 *		refresh computes its tenants logged above the old mark once more.
 */
static void
publish_mark(sqlite3 *db, const char *shard_id, const char *table)
{
	int			rc;

	if (!mark_is_behind(db, shard_id, table))
		return;
	rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
		return;
	if (rc != SQLITE_OK)
		capture_error(db, shard_id, table, PUBLISH_FAILED);
	write_mark(db, shard_id, table);
	rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
		capture_error(db, shard_id, table, PUBLISH_FAILED);
	if (!sqlite3_get_autocommit(db))
		(void) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

/*
 * read_log
 *		In one read transaction: the epoch of table's log and its
 *		published mark into log, and the tenants logged above since (with
 *		the time of each one's first change after the mark moved).  A
 *		tenant is the id its stored value reads as, by the tenant rule;
 *		values of no tenant are left out.  With since PG_INT64_MAX, no
 *		tenant is read.
 *
 *		With publish (a refresh, on a handle that may write), the mark is
 *		published first, in the transaction that reads the log when the
 *		shard's write lock is had for it (with path), else in one of its
 *		own (publish_mark).  The refresh takes as its own the mark it reads
 *		here, not the highest number: a write after this read of a tenant
 *		logged above the mark is not stamped again, and its number must be
 *		above the refresh's.  Should the mark read be below since (a mark
 *		published, then lost with the file's last writes in a crash),
 *		the tenants above it are read: their writes may not have been
 *		stamped.  Returns whether the log's numbers went back below since
 *		or the mark (a log emptied under them, whose numbers start again
 *		from 1): what changed there cannot be known.
 *
 *		With path (the shard's file; a refresh), the log is read under the
 *		shard's write lock when it can be had, and when nothing is logged
 *		above the mark taken, the state of the files is noted there, before
 *		the lock goes, into log->file_state (see the file's comment; NULL
 *		when it cannot be trusted): with the lock held no writer is half
 *		way through a commit, whose frames would be in the WAL file
 *		already, with their change time, and their commit not yet visible
 *		to the read.  before is the moment before the shard was opened.
 */
static bool
read_log(sqlite3 *db, Rollup *r, const char *table, int64 since,
		 bool publish, RollupShardLog *log, const char *path, int64 before)
{
	sqlite3_stmt *stmt;
	StringInfoData sql;
	ShardTenantRule rule;
	const char *fmt = gettext_noop("could not read the rollup change log of table \"%s\" on shard \"%s\"");
	int64		top;
	bool		went_back;
	bool		locked = false;
	bool		published = false;
	int64		given_since = since;
	int			rc;

	log->file_state = NULL;
	if (path == NULL)
	{
		if (publish)
			publish_mark(db, log->shard_id, table);
	}
	else
	{
		bool		behind = publish && mark_is_behind(db, log->shard_id, table);

		locked = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
		/* a cancel ended the wait for the lock: not a lock to do without */
		if (!locked)
			CHECK_FOR_INTERRUPTS();
		else if (behind)
		{
			/*
			 * Published under the lock the log is read with: no write can
			 * come between, and one write transaction does both.  Its
			 * commit changes the files: their state is not recorded.
			 */
			write_mark(db, log->shard_id, table);
			published = true;
		}
	}
	if (!locked && sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		capture_error(db, log->shard_id, table, fmt);
	if (sqlite3_prepare_v2(db, "SELECT (SELECT epoch FROM " ROLLUP_EPOCH
						   " WHERE tbl = ?1), (SELECT coalesce(max(mark), 0) FROM "
						   ROLLUP_MARK " WHERE tbl = ?1), (SELECT coalesce(max(v), 0) FROM "
						   ROLLUP_LOG ")", -1, &stmt, NULL) != SQLITE_OK)
		capture_error(db, log->shard_id, table, fmt);
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(stmt) != SQLITE_ROW)
	{
		sqlite3_finalize(stmt);
		capture_error(db, log->shard_id, table, fmt);
	}
	log->epoch = sqlite3_column_text(stmt, 0) ?
		pstrdup((const char *) sqlite3_column_text(stmt, 0)) : pstrdup("?");
	log->mark = sqlite3_column_int64(stmt, 1);
	top = sqlite3_column_int64(stmt, 2);
	/* nothing above the mark taken, in a log that has its epoch */
	log->quiet = sqlite3_column_type(stmt, 0) != SQLITE_NULL &&
		top <= log->mark;
	sqlite3_finalize(stmt);
	if (since == PG_INT64_MAX)
	{
		(void) sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
		return false;
	}
	/* numbers below what was taken: the log was emptied, numbers reused */
	went_back = since > top || log->mark > top;
	log->mark = Min(log->mark, top);
	since = Min(since, log->mark);

	/* the rule of the source's tenant type, whatever the shard declares */
	initStringInfo(&sql);
	if (r->opts->file_per_tenant)
		appendStringInfoString(&sql, "SELECT '', max(at) FROM " ROLLUP_LOG
							   " WHERE tbl = ?1 AND v > ?2 HAVING count(*) > 0");
	else
	{
		shard_tenant_rule_init(&rule, r->kind, NULL, NULL);
		appendStringInfoString(&sql, "SELECT ");
		shard_tenant_key(&sql, "", "tenant", &rule);
		appendStringInfoString(&sql, " AS t, max(at) FROM " ROLLUP_LOG
							   " WHERE tbl = ?1 AND v > ?2 GROUP BY t ORDER BY t");
	}
	if (sqlite3_prepare_v2(db, sql.data, -1, &stmt, NULL) != SQLITE_OK)
		capture_error(db, log->shard_id, table, fmt);
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(stmt, 2, since);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		TimestampTz *at;

		if (sqlite3_column_type(stmt, 0) == SQLITE_NULL)
			continue;
		at = palloc(sizeof(TimestampTz));
		*at = julian_to_timestamptz(sqlite3_column_double(stmt, 1));
		log->tenants = lappend(log->tenants, r->opts->file_per_tenant ?
							   pstrdup(shard_directory_file_tenant(shard_directory_get(r->opts),
																   log->shard_id)) :
							   pstrdup((const char *) sqlite3_column_text(stmt, 0)));
		log->changed_at = lappend(log->changed_at, at);
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		capture_error(db, log->shard_id, table, fmt);
	if (locked && log->quiet && !published)
		log->file_state = file_state(path, before);
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK && published)
	{
		/*
		 * The mark read is not published (a commit refused, as a rollback
		 * journal's is while others read): it must not be taken either.
		 * Read again, taking the mark as it was.
		 */
		if (!sqlite3_get_autocommit(db))
			(void) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		list_free_deep(log->tenants);
		list_free_deep(log->changed_at);
		log->tenants = NIL;
		log->changed_at = NIL;
		return read_log(db, r, table, given_since, false, log, NULL, before);
	}
	return went_back;
}

/*
 * read_marks
 *		The rollup's marks of its shards, from the catalog: a hash table
 *		of RollupMark by shard id (cut to the key's size; find_mark
 *		compares the whole id), in the caller's memory.
 */
static HTAB *
read_marks(Rollup *r)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(r->relid)};
	HASHCTL		ctl;
	HTAB	   *result;
	uint64		i;

	ctl.keysize = sizeof(((RollupMark *) NULL)->shard_id);
	ctl.entrysize = sizeof(RollupMark);
	ctl.hcxt = CurrentMemoryContext;
	SPI_connect();
	if (SPI_execute_with_args("SELECT shard_id, epoch, mark::text, file_state "
							  "FROM ssfdw_rollup.shards WHERE rollup = $1",
							  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the rollup catalog");
	result = hash_create("rollup marks", Max(SPI_processed, 16), &ctl,
						 HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *id = SPI_getvalue(tup, desc, 1);
		char		key[sizeof(((RollupMark *) NULL)->shard_id)];
		char	   *state = SPI_getvalue(tup, desc, 4);
		RollupMark *m;
		bool		found;

		strlcpy(key, id, sizeof(key));
		m = hash_search(result, key, HASH_ENTER, &found);
		if (found)
			continue;			/* another id cut the same: not skipped */
		m->id = MemoryContextStrdup(ctl.hcxt, id);
		m->epoch = MemoryContextStrdup(ctl.hcxt, SPI_getvalue(tup, desc, 2));
		m->mark = pg_strtoint64(SPI_getvalue(tup, desc, 3));
		m->file_state = state ? MemoryContextStrdup(ctl.hcxt, state) : NULL;
	}
	SPI_finish();
	return result;
}

/*
 * find_mark
 *		The rollup's mark of shard_id, or NULL for a shard it has not seen.
 */
static RollupMark *
find_mark(HTAB *marks, const char *shard_id)
{
	char		key[sizeof(((RollupMark *) NULL)->shard_id)];
	RollupMark *m;

	strlcpy(key, shard_id, sizeof(key));
	m = hash_search(marks, key, HASH_FIND, NULL);
	return m != NULL && strcmp(m->id, shard_id) == 0 ? m : NULL;
}

/*
 * capture_shard
 *		What the rollup takes of one shard's log, on the open handle db;
 *		with install, the capture is installed first where it is missing.
 *		mark is the rollup's, or NULL for a shard it has not seen.
 */
static void
capture_shard(sqlite3 *db, Rollup *r, RollupMark *mark, bool install,
			  RollupShardLog *log, const char *path, int64 before)
{
	char	   *table = shard_table_name(db, log->shard_id, r->table);

	if (table == NULL)
	{
		/* nothing to capture; once the table appears, all is new */
		log->epoch = pstrdup("");
		log->mark = 0;
		log->reset = mark == NULL || strcmp(mark->epoch, "") != 0;
		log->quiet = true;
		return;
	}
	if (!capture_present(db, log->shard_id, table, capture_column(r)))
	{
		if (!install)
		{
			log->epoch = pstrdup("?");
			log->reset = true;
			return;
		}
		install_capture(db, log->shard_id, table, capture_column(r));
	}
	log->reset = mark == NULL;
	if (mark != NULL)
	{
		bool		went_back = read_log(db, r, table, mark->mark, install,
										 log, install ? path : NULL, before);

		log->reset = went_back || strcmp(log->epoch, mark->epoch) != 0;
	}
	if (log->reset)
	{
		/* another history: every change logged there, from the start */
		list_free_deep(log->tenants);
		log->tenants = NIL;
		log->changed_at = NIL;
		(void) read_log(db, r, table, 0, install, log,
						install ? path : NULL, before);
	}
}

/*
 * open_shard
 *		A handle of the shard info for the rollup, read-write with write;
 *		NULL, after a warning, for a missing file the server's
 *		on_missing_shard = skip lets it pass over (otherwise an error).
 */
static sqlite3 *
open_shard(Rollup *r, ShardInfo *info, bool write)
{
	sqlite3    *db = NULL;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	if (shardio_file_state(info->path) != SHARDIO_FILE_OK)
	{
		ereport(r->opts->skip_missing ? WARNING : ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("could not open shard \"%s\": file \"%s\" does not exist or cannot be read",
						info->shard_id, info->path),
				 r->opts->skip_missing ?
				 errdetail("Rollup \"%s\" takes no changes from it until it is back.",
						   get_rel_name(r->relid)) : 0));
		return NULL;
	}
	if (write)
		shard_check_wal_folder(info->shard_id, info->path);
	rc = shardio_open(info->path, write ? SHARDIO_OPEN_READWRITE : 0,
					  r->opts->busy_timeout_ms, &db, errbuf);
	/* a refresh never checkpoints a WAL file: its writers do */
	if (rc == SQLITE_OK)
		(void) sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	if (rc != SQLITE_OK)
	{
		if (db != NULL)
			shardio_close(db);
		shard_check_lock_wait(rc, false, info->shard_id);
		ereport(ERROR,
				(errcode(shard_write_access_sqlstate(info->path, rc,
													 shard_sqlite_sqlstate(rc))),
				 errmsg("could not open shard \"%s\" for rollup \"%s\"",
						info->shard_id, get_rel_name(r->relid)),
				 errdetail_internal("File \"%s\": %s", info->path, errbuf),
				 shard_errhint_write_access(info->path, rc)));
	}
	return db;
}

/*
 * now_unix_us
 *		The system clock's time, in microseconds since 1970, as file change
 *		times count.
 */
static int64
now_unix_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64) ts.tv_sec * USECS_PER_SEC + ts.tv_nsec / 1000;
}

/*
 * append_file_state
 *		Append to buf path's device, inode, size and change time, or "-"
 *		when there is no such file and missing_ok.  With before >= 0, false
 *		when the change time is not older than before by
 *		ROLLUP_FILE_TIME_SLACK_US; false too when the file cannot be looked
 *		at.
 */
static bool
append_file_state(StringInfo buf, const char *path, int64 before,
				  bool missing_ok)
{
	struct stat st;

	if (stat(path, &st) != 0)
	{
		if (errno != ENOENT || !missing_ok)
			return false;
		appendStringInfoChar(buf, '-');
		return true;
	}
	if (before >= 0 &&
		(int64) st.st_ctim.tv_sec * USECS_PER_SEC + st.st_ctim.tv_nsec / 1000 >=
		before - ROLLUP_FILE_TIME_SLACK_US)
		return false;
	appendStringInfo(buf, "%llu:%llu:%lld:%lld.%09ld",
					 (unsigned long long) st.st_dev,
					 (unsigned long long) st.st_ino,
					 (long long) st.st_size,
					 (long long) st.st_ctim.tv_sec, (long) st.st_ctim.tv_nsec);
	return true;
}

/*
 * file_state
 *		The state of the shard file path and of its WAL file, as recorded
 *		with a mark; with before >= 0 (the moment before the log was read),
 *		NULL unless both files' change times are older than before by the
 *		slack (see the file's comment).  NULL too when the file is missing
 *		or cannot be looked at.
 */
static char *
file_state(const char *path, int64 before)
{
	StringInfoData buf;

	initStringInfo(&buf);
	if (!append_file_state(&buf, path, before, false))
		return NULL;
	appendStringInfoChar(&buf, ' ');
	if (!append_file_state(&buf, psprintf("%s-wal", path), before, true))
		return NULL;
	return buf.data;
}

/*
 * rollup_capture_read
 *		For every shard of the rollup's server, what the rollup has not
 *		taken of its change log yet, as RollupShardLog: with install, the
 *		capture is installed where it is missing (a new shard, a table a
 *		move created, triggers dropped), committed before the log is read,
 *		and the log's highest change number is published as the shard's
 *		mark before it is read (see read_log).  A shard whose file is
 *		missing is an error, or with the server's on_missing_shard = skip
 *		a warning, and left out (epoch NULL).
 *
 *		A shard whose files show the state recorded with the rollup's mark
 *		is not opened: nothing was logged there above the mark (see the
 *		file's comment).  With install, a shard read with nothing logged
 *		above the mark taken gets the state of its files to record, if it
 *		can be trusted (read_log).
 */
List *
rollup_capture_read(Rollup *r, bool install)
{
	ShardDirectory *dir = shard_directory_get(r->opts);
	HTAB	   *marks = read_marks(r);
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, shard_directory_shards(dir))
	{
		ShardInfo  *info = lfirst(lc);
		RollupShardLog *log = palloc0(sizeof(RollupShardLog));
		RollupMark *mark = find_mark(marks, info->shard_id);
		sqlite3    *volatile db;
		int64		before;

		/* a fleet of files skipped by their states stops on a cancel too */
		CHECK_FOR_INTERRUPTS();
		log->shard_id = info->shard_id;
		result = lappend(result, log);

		if (mark != NULL && mark->file_state != NULL)
		{
			char	   *now = file_state(info->path, -1);
			bool		same = now != NULL && strcmp(now, mark->file_state) == 0;

			/* a fleet of files: one state of each at a time */
			if (now != NULL)
				pfree(now);
			if (same)
			{
				/* unchanged since a read found nothing above the mark */
				log->epoch = pstrdup(mark->epoch);
				log->mark = mark->mark;
				log->quiet = true;
				log->file_state = mark->file_state;
				continue;
			}
		}

		before = now_unix_us();
		db = open_shard(r, info, install);
		if (db == NULL)
			continue;
		log->opened = true;
		PG_TRY();
		{
			capture_shard(db, r, mark, install, log, info->path, before);
		}
		PG_FINALLY();
		{
			shardio_close(db);
		}
		PG_END_TRY();
	}
	hash_destroy(marks);
	return result;
}

/*
 * rollup_capture_publish
 *		Publish the highest change number of the log of the shard that
 *		answers for tenant as its mark (see read_log), taking nothing: a
 *		change of the tenant after it gets a new number and time, so that
 *		a tenant computed alone (rollup_refresh_tenant) and written again
 *		shows as pending.  Nothing to do where the capture is missing.
 */
void
rollup_capture_publish(Rollup *r, const char *tenant)
{
	ShardDirectory *dir = shard_directory_get(r->opts);
	ShardLocation *loc = shard_directory_locate(dir, tenant);
	ShardInfo  *info;
	sqlite3    *volatile db;

	if (loc == NULL || (info = shard_directory_shard(dir, loc->owner)) == NULL)
		return;
	db = open_shard(r, info, true);
	if (db == NULL)
		return;
	PG_TRY();
	{
		char	   *table = shard_table_name(db, info->shard_id, r->table);
		RollupShardLog log = {.shard_id = info->shard_id};

		if (table != NULL &&
			capture_present(db, info->shard_id, table, capture_column(r)))
			(void) read_log(db, r, table, PG_INT64_MAX, true, &log, NULL, 0);
	}
	PG_FINALLY();
	{
		shardio_close(db);
	}
	PG_END_TRY();
}
