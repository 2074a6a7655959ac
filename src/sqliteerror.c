/*-------------------------------------------------------------------------
 *
 * sqliteerror.c
 *		  SQLite failures raised as PostgreSQL errors
 *
 * Every failed SQLite call on the backend, on a shard or on the directory,
 * is raised through here: with the SQLSTATE that matches its cause (a
 * constraint as PostgreSQL's own violation, a full disk as 53100, the
 * wrapper's own SQL functions' failures as the errors PostgreSQL raises for
 * the same values), with a primary message that names the shard or the
 * directory file and SQLite's message as the detail.
 *
 * A file the server may not open or write (SQLite says only "unable to open
 * database file" or "attempt to write a readonly database") gets a hint
 * naming the folder or file and the operating system user that lacks the
 * permission, with 42501 (shard_write_access_sqlstate and
 * shard_errhint_write_access).
 *
 * A lock wait is SQLite's busy handler (shardio.c), which gives up as soon
 * as a cancel, a statement timeout or a termination is pending.  Inside
 * SQLite it only reads the flags (shard_interrupts_pending); the failed
 * call then raises them, or 55P03 when the file stayed locked for the
 * whole busy timeout (shard_check_lock_wait).
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <pwd.h>
#include <unistd.h>

#include "miscadmin.h"

/*
 * shard_interrupts_pending
 *		The backend thread's check for SQLite's busy and progress handlers
 *		(registered by _PG_init): is a cancel, a statement timeout or a
 *		termination pending that CHECK_FOR_INTERRUPTS would raise now?
 *		Called inside SQLite, so it only reads the flags; the failed call
 *		raises them afterwards (shard_check_lock_wait).
 */
int
shard_interrupts_pending(void)
{
	return InterruptPending && InterruptHoldoffCount == 0 &&
		CritSectionCount == 0 &&
		(ProcDiePending ||
		 (QueryCancelPending && QueryCancelHoldoffCount == 0));
}

/*
 * shard_check_lock_wait
 *		After an SQLite call on the backend failed with rc: when it gave up
 *		a lock wait or a statement because of a pending cancel, statement
 *		timeout or termination, raise that; when it waited for a lock the
 *		whole busy timeout, raise that the shard (or, with is_directory,
 *		the directory file) named is locked.  Returns for other failures.
 */
void
shard_check_lock_wait(int rc, bool is_directory, const char *name)
{
	if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_INTERRUPT)
		return;
	CHECK_FOR_INTERRUPTS();
	if ((rc & 0xff) != SQLITE_BUSY)
		return;
	if (is_directory)
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("directory \"%s\" is locked", name),
				 errdetail("Another connection held a lock on the file for longer than the busy timeout."),
				 errhint("Retry once the other connection's transaction has ended, or raise the server option \"busy_timeout_ms\".")));
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("shard \"%s\" is locked", name),
			 errdetail("Another connection held a lock on the shard's file for longer than the busy timeout."),
			 errhint("Retry once the other connection's transaction has ended, or raise the server option \"busy_timeout_ms\".")));
}

/*
 * shard_format_message
 *		The message fmt (a whole sentence, which the caller's literal marks
 *		for translation) translated and filled in with args.
 */
char *
shard_format_message(const char *fmt, va_list args)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (;;)
	{
		va_list		copy;
		int			needed;

		va_copy(copy, args);
		needed = appendStringInfoVA(&buf, _(fmt), copy);
		va_end(copy);
		if (needed == 0)
			break;
		enlargeStringInfo(&buf, needed);
	}
	return buf.data;
}

/*
 * The SQLSTATEs of the wrapper's own failures on the SQLite side (the
 * SHARDIO_ERR_ codes of shardio.h): the errors PostgreSQL raises for the
 * same values.
 */
static const struct
{
	int			code;
	int			sqlstate;
}			shardio_errors[] =
{
	{SHARDIO_ERR_NOT_UTF8, ERRCODE_CHARACTER_NOT_IN_REPERTOIRE},
	{SHARDIO_ERR_TIME_FORMAT, ERRCODE_INVALID_DATETIME_FORMAT},
	{SHARDIO_ERR_TIME_RANGE, ERRCODE_DATETIME_VALUE_OUT_OF_RANGE},
	{SHARDIO_ERR_TIME_TYPE, ERRCODE_FDW_INVALID_DATA_TYPE},
	{SHARDIO_ERR_TOO_LONG, ERRCODE_STRING_DATA_RIGHT_TRUNCATION},
	{SHARDIO_ERR_SUM_OVERFLOW, ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE},
	{SHARDIO_ERR_INT_RANGE, ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE},
	{SHARDIO_ERR_INT_SYNTAX, ERRCODE_INVALID_TEXT_REPRESENTATION},
	{SHARDIO_ERR_DIV_ZERO, ERRCODE_DIVISION_BY_ZERO},
	{SHARDIO_ERR_INT_TYPE, ERRCODE_FDW_INVALID_DATA_TYPE},
};

/*
 * shard_sqlite_sqlstate
 *		The SQLSTATE that matches an SQLite result code's cause: the
 *		wrapper's own codes by the table above, SQLite's by their primary
 *		code.
 */
int
shard_sqlite_sqlstate(int rc)
{
	int			i;

	for (i = 0; i < lengthof(shardio_errors); i++)
		if (rc == shardio_errors[i].code)
			return shardio_errors[i].sqlstate;

	switch (rc & 0xff)
	{
		case SQLITE_BUSY:
		case SQLITE_LOCKED:
			return ERRCODE_LOCK_NOT_AVAILABLE;
		case SQLITE_CORRUPT:
		case SQLITE_NOTADB:
			return ERRCODE_DATA_CORRUPTED;
		case SQLITE_FULL:
			return ERRCODE_DISK_FULL;
		case SQLITE_NOMEM:
			return ERRCODE_OUT_OF_MEMORY;
		case SQLITE_INTERRUPT:
			return ERRCODE_QUERY_CANCELED;
		case SQLITE_TOOBIG:
			/* a string or blob beyond SQLite's length limit */
			return ERRCODE_PROGRAM_LIMIT_EXCEEDED;
		case SQLITE_MISMATCH:
			return ERRCODE_FDW_INVALID_DATA_TYPE;
		case SQLITE_CANTOPEN:
		case SQLITE_PERM:
		case SQLITE_AUTH:
			return ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION;
		default:
			return ERRCODE_FDW_ERROR;
	}
}

/*
 * os_user_name
 *		The name of the operating system user the server runs as, or its
 *		number when it has no name.
 */
static const char *
os_user_name(void)
{
	struct passwd *pw = getpwuid(geteuid());

	return pw != NULL ? pstrdup(pw->pw_name) :
		psprintf("%u", (unsigned int) geteuid());
}

/*
 * unwritable
 *		Does file path exist without write permission for the server?
 */
static bool
unwritable(const char *path)
{
	return access(path, F_OK) == 0 && access(path, W_OK) != 0;
}

/*
 * write_access_problem
 *		For an SQLite file at path (a directory or a shard) that the server
 *		could not open or write with result code rc: when rc says the file
 *		could not be opened or written and the file system says why, the
 *		SQLSTATE for it (58P01 for a folder that does not exist, 42501 for
 *		a permission) and in *hint what to do, naming the folder (SQLite
 *		creates the journal and the "-wal" and "-shm" files there) or the
 *		file, and the operating system user the server runs as.  0 and
 *		NULL otherwise.
 */
static int
write_access_problem(const char *path, int rc, char **hint)
{
	char		folder[MAXPGPATH];
	const char *suffixes[] = {"-journal", "-wal", "-shm"};
	int			i;

	*hint = NULL;
	if ((rc & 0xff) != SQLITE_CANTOPEN && (rc & 0xff) != SQLITE_READONLY &&
		(rc & 0xff) != SQLITE_PERM && (rc & 0xff) != SQLITE_IOERR)
		return 0;
	strlcpy(folder, path, sizeof(folder));
	get_parent_directory(folder);
	if (folder[0] == '\0')
		strlcpy(folder, ".", sizeof(folder));
	if (access(folder, F_OK) != 0)
	{
		*hint = psprintf(_("Folder \"%s\" does not exist: create it, writable by the operating system user \"%s\" that runs the server."),
						 folder, os_user_name());
		return ERRCODE_UNDEFINED_FILE;
	}
	if (access(folder, W_OK | X_OK) != 0)
		*hint = psprintf(_("The operating system user \"%s\" that runs the server needs write permission on folder \"%s\", where SQLite creates the file's journal and its \"-wal\" and \"-shm\" files."),
						 os_user_name(), folder);
	else if (unwritable(path))
		*hint = psprintf(_("The operating system user \"%s\" that runs the server needs write permission on file \"%s\"."),
						 os_user_name(), path);
	for (i = 0; *hint == NULL && i < lengthof(suffixes); i++)
	{
		char	   *side = psprintf("%s%s", path, suffixes[i]);

		if (unwritable(side))
			*hint = psprintf(_("The operating system user \"%s\" that runs the server needs write permission on file \"%s\"."),
							 os_user_name(), side);
	}
	return *hint != NULL ? ERRCODE_INSUFFICIENT_PRIVILEGE : 0;
}

/*
 * shard_write_access_sqlstate
 *		The SQLSTATE of a failure with rc to open or write the SQLite file
 *		at path: that of write_access_problem when the file system says
 *		why, else otherwise.
 */
int
shard_write_access_sqlstate(const char *path, int rc, int otherwise)
{
	char	   *hint;
	int			sqlstate = write_access_problem(path, rc, &hint);

	return sqlstate != 0 ? sqlstate : otherwise;
}

/*
 * shard_errhint_write_access
 *		The hint of write_access_problem for the error being raised: called
 *		among an ereport's arguments; with nothing to name, it adds no
 *		hint (and leaves any hint given before it).
 */
int
shard_errhint_write_access(const char *path, int rc)
{
	char	   *hint;

	(void) write_access_problem(path, rc, &hint);
	return hint != NULL ? errhint("%s", hint) : 0;
}

/*
 * shard_directory_error
 *		Raise a failed SQLite call (result code rc, SQLite's message msg) on
 *		the directory file path: a lock waited for past the busy timeout or
 *		a cancel as shard_check_lock_wait raises it, anything else with fmt
 *		filled in as its primary message, a whole sentence that names the
 *		directory ("could not look up a tenant in directory \"%s\"").
 */
void
shard_directory_error(int rc, const char *path, const char *msg,
					  const char *fmt,...)
{
	va_list		args;
	char	   *message;

	shard_check_lock_wait(rc, true, path);
	va_start(args, fmt);
	message = shard_format_message(fmt, args);
	va_end(args);
	ereport(ERROR,
			(errcode(shard_write_access_sqlstate(path, rc,
												 shard_sqlite_sqlstate(rc))),
			 errmsg_internal("%s", message),
			 errdetail_internal("%s", msg),
			 shard_errhint_write_access(path, rc)));
}

/*
 * raise_sqlite_error
 *		Raise an SQLite failure on a shard, whose primary message is
 *		message (translated already), with the SQLSTATE that matches its
 *		cause.
 *
 * SQLite's sum() (and abs()) fail with plain SQLITE_ERROR and the message
 * "integer overflow" when an integer leaves 64 bits; PostgreSQL raises
 * 22003 for that, as for thread aggregation's SHARDIO_ERR_SUM_OVERFLOW.
 */
static void
raise_sqlite_error(int elevel, int rc, const char *shard_id,
				   const char *msg, const char *message)
{
	int			sqlstate = shard_sqlite_sqlstate(rc);

	/* A cancel, timeout or lock that ended the call: raise that. */
	if (elevel >= ERROR)
		shard_check_lock_wait(rc, false, shard_id);

	if (rc == SQLITE_ERROR && msg != NULL &&
		strcmp(msg, "integer overflow") == 0)
		sqlstate = ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE;

	ereport(elevel,
			(errcode(sqlstate),
			 errmsg_internal("%s", message),
			 errdetail_internal("%s", msg)));
}

/*
 * shard_sqlite_error
 *		Raise (or, below ERROR, report) an SQLite failure with message msg
 *		on a shard, whose primary message is fmt filled in with the
 *		arguments: a whole sentence that names the shard, as "could not
 *		read table \"%s\" on shard \"%s\"".
 */
void
shard_sqlite_error(int elevel, int rc, const char *shard_id, const char *msg,
				   const char *fmt,...)
{
	va_list		args;
	char	   *message;

	va_start(args, fmt);
	message = shard_format_message(fmt, args);
	va_end(args);
	raise_sqlite_error(elevel, rc, shard_id, msg, message);
}

/*
 * shard_write_error
 *		Raise a failed write on a shard: a constraint SQLite enforces with
 *		PostgreSQL's SQLSTATE for it (23502, 23505, 23514, 23503), a lost
 *		snapshot upgrade as a serialization failure, a lock not had within
 *		the busy timeout as 55P03; naming the table and tenant when known.
 *		Any other failure has fmt, filled in, for its primary message, as
 *		shard_sqlite_error's.
 */
void
shard_write_error(int rc, const char *shard_id, const char *table,
				  const char *tenant, const char *msg, const char *fmt,...)
{
	int			sqlstate;
	va_list		args;
	char	   *message;

	switch (rc)
	{
		case SQLITE_CONSTRAINT_NOTNULL:
			sqlstate = ERRCODE_NOT_NULL_VIOLATION;
			break;
		case SQLITE_CONSTRAINT_UNIQUE:
		case SQLITE_CONSTRAINT_PRIMARYKEY:
		case SQLITE_CONSTRAINT_ROWID:
			sqlstate = ERRCODE_UNIQUE_VIOLATION;
			break;
		case SQLITE_CONSTRAINT_CHECK:
			sqlstate = ERRCODE_CHECK_VIOLATION;
			break;
		case SQLITE_CONSTRAINT_FOREIGNKEY:
			sqlstate = ERRCODE_FOREIGN_KEY_VIOLATION;
			break;
		case SQLITE_BUSY_SNAPSHOT:
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize a write to shard \"%s\"",
							shard_id),
					 errdetail("Another connection wrote to the shard, or was writing it, after this transaction read it."),
					 errhint("The transaction might succeed if retried.")));
			return;
		case SQLITE_CONSTRAINT_TRIGGER:

			/*
			 * A move's fence (movecopy.c): the tenant's rows left this
			 * shard after the statement was routed here.  Run again, the
			 * statement is routed to the new shard.
			 */
			if (msg != NULL &&
				strncmp(msg, SHARD_FENCE_LEAD, strlen(SHARD_FENCE_LEAD)) == 0 &&
				strstr(msg, SHARD_FENCE_MARK) != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("could not write to shard \"%s\": the tenant moved to another shard",
								shard_id),
						 errdetail_internal("%s", msg),
						 errhint("The tenant moved while the statement ran; the transaction might succeed if retried.")));

			/*
			 * The fence of a removed tenant's file (removal.c): the
			 * tenant was removed while the statement waited for the
			 * file's lock.  Run again, it finds no file.
			 */
			if (msg != NULL &&
				strncmp(msg, SHARD_FENCE_LEAD, strlen(SHARD_FENCE_LEAD)) == 0 &&
				strstr(msg, SHARD_REMOVED_MARK) != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("could not write to the file of tenant \"%.*s\": the tenant was removed",
								(int) (strstr(msg, SHARD_REMOVED_MARK) -
									   msg - strlen(SHARD_FENCE_LEAD)),
								msg + strlen(SHARD_FENCE_LEAD)),
						 errdetail_internal("%s", msg),
						 errhint("The tenant was removed while the statement ran; the transaction might succeed if retried.")));
			sqlstate = ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION;
			break;
		default:
			/* a cancel during the lock wait, or the wait's end: 55P03 */
			shard_check_lock_wait(rc, false, shard_id);
			sqlstate = (rc & 0xff) == SQLITE_CONSTRAINT ?
				ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION : 0;
			break;
	}
	if (sqlstate != 0 && table != NULL && tenant != NULL)
		ereport(ERROR,
				(errcode(sqlstate),
				 errmsg("row of tenant \"%s\" violates a constraint of table \"%s\" on shard \"%s\"",
						tenant, table, shard_id),
				 errdetail_internal("%s", msg)));
	va_start(args, fmt);
	message = shard_format_message(fmt, args);
	va_end(args);
	if (sqlstate == 0)
		raise_sqlite_error(ERROR, rc, shard_id, msg, message);
	ereport(ERROR,
			(errcode(sqlstate),
			 errmsg_internal("%s", message),
			 errdetail_internal("%s", msg)));
}
