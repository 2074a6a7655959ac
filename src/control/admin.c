/*-------------------------------------------------------------------------
 *
 * admin.c
 *		  SQL functions of the control plane: the directory's contents
 *
 * These functions read and write the directory, the SQLite control database
 * shared with the application.  Writes join the PostgreSQL transaction: the
 * first takes the directory's write lock (BEGIN IMMEDIATE), and they commit
 * with the transaction, before any shard, or vanish with its rollback
 * (connection.c), so two sessions adding tenants at once cannot both place
 * a tenant or break the directory.  They need the privileges of
 * pg_write_server_files, as anything that writes files of the server's
 * choosing does, and shard_add, which names a file the server then reads,
 * those of pg_read_server_files too.  Reads need USAGE on the server.
 *
 * Placement chooses by headroom and expected volume, not by file size
 * alone: tenants are usually registered before their rows exist, and a
 * shard that has just taken ten tenants is as small as before.  So a
 * shard's expected load is the larger of its file (with its write-ahead
 * log) and its tenants (those the directory has it answer for, the
 * transaction's own registrations included) times the fleet's average
 * bytes per tenant: a tenant placed and not yet written counts as an
 * average one.  A new tenant goes to the shard with the smallest expected
 * load, the fewest tenants on a tie, the first by id on a second tie,
 * among the shards whose file the server can read as an SQLite database
 * and whose file has room under the server's max_shard_bytes for the
 * tenant's expected_bytes, when the caller gives them.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "access/htup_details.h"
#include "catalog/pg_foreign_server.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "compat.h"

PG_FUNCTION_INFO_V1(shard_directory_init);
PG_FUNCTION_INFO_V1(shard_add);
PG_FUNCTION_INFO_V1(shard_list);
PG_FUNCTION_INFO_V1(shard_tenant_add);
PG_FUNCTION_INFO_V1(shard_tenant_locate);
PG_FUNCTION_INFO_V1(shard_tenant_list);
PG_FUNCTION_INFO_V1(shard_analyze);

/* Who may open a directory file that directory_init creates. */
#define DEFAULT_DIRECTORY_MODE 0660

static const char *const directory_schema =
"CREATE TABLE IF NOT EXISTS shards ("
"  shard_id TEXT PRIMARY KEY,"
"  path TEXT NOT NULL UNIQUE);"
"CREATE TABLE IF NOT EXISTS shard_map ("
"  tenant_id TEXT PRIMARY KEY,"
"  shard_id TEXT NOT NULL,"
"  status TEXT NOT NULL DEFAULT 'ACTIVE',"
"  target_shard_id TEXT,"
"  updated_at INTEGER NOT NULL);"
"CREATE INDEX IF NOT EXISTS shard_map_status ON shard_map (status);";

/*
 * shard_admin_server
 *		The options of a sqlite_shard_fdw server named by the caller, after
 *		checking that the caller may use it.
 */
ShardServerOptions *
shard_admin_server(Name servername)
{
	ForeignServer *server = GetForeignServerByName(NameStr(*servername), false);
	ForeignDataWrapper *fdw = GetForeignDataWrapper(server->fdwid);
	char	   *handler = OidIsValid(fdw->fdwhandler) ?
	get_func_name(fdw->fdwhandler) : NULL;

	if (handler == NULL || strcmp(handler, "sqlite_shard_fdw_handler") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("server \"%s\" is not a sqlite_shard_fdw server",
						server->servername)));
	if (server_aclcheck_compat(server->serverid, GetUserId(), ACL_USAGE) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_FOREIGN_SERVER,
					   server->servername);
	return shard_server_options(server->serverid);
}

/*
 * shard_admin_server_arg
 *		shard_admin_server of a function's first argument, which must not
 *		be NULL.
 */
ShardServerOptions *
shard_admin_server_arg(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("server must not be null")));
	return shard_admin_server(PG_GETARG_NAME(0));
}

/*
 * shard_require_admin
 *		The fleet checks and statistics read every tenant's rows and files
 *		of the server's choosing, and name every tenant: they need what
 *		shard_add needs, the privileges of pg_write_server_files and of
 *		pg_read_server_files.
 */
void
shard_require_admin(const char *message, const char *detail)
{
	shard_require_file_privilege(true, message, detail);
	shard_require_file_privilege(false, message, detail);
}

/*
 * shard_admin_write_failed
 *		Report an SQLite failure while a control function reads or writes
 *		the directory (a lock not had, a cancel: as the directory's reads
 *		do): fmt is the whole message, with the directory's path for its
 *		one %s.
 */
void
shard_admin_write_failed(ShardServerOptions *opts, sqlite3 *db,
						 const char *fmt)
{
	shard_directory_error(sqlite3_errcode(db), opts->directory,
						  sqlite3_errmsg(db), fmt, opts->directory);
}

/*
 * run_stmt
 *		Prepare, bind text values and step a statement; returns the SQLite
 *		result of the step.  A row, if any, stays available on *out.
 */
static int
run_stmt(sqlite3 *db, const char *sql, const char **vals, int nvals,
		 sqlite3_stmt **out)
{
	sqlite3_stmt *stmt;
	int			i;
	int			rc;

	if (out)
		*out = NULL;
	rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return rc;
	for (i = 0; i < nvals; i++)
		sqlite3_bind_text(stmt, i + 1, vals[i], -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(stmt);
	if (out)
		*out = stmt;
	else
		sqlite3_finalize(stmt);
	return rc;
}

/*
 * parse_file_mode
 *		Read directory_init's mode argument: an octal file mode such as
 *		'0660', which must let the owner (the server) read and write.
 */
static mode_t
parse_file_mode(const char *value)
{
	const char *p = value;
	mode_t		mode = 0;
	int			ndigits = 0;

	for (; *p >= '0' && *p <= '7'; p++, ndigits++)
		mode = mode * 8 + (*p - '0');
	if (*p != '\0' || ndigits < 3 || ndigits > 4 || mode > 0777 ||
		(mode & 0600) != 0600)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid file mode for the directory: \"%s\"", value),
				 errhint("Give an octal mode such as '0660' or '0600' that lets the owner read and write.")));
	return mode;
}

/*
 * create_directory_file
 *		Create the directory file with the given mode if it does not exist
 *		yet; an existing file keeps its mode.
 *
 * SQLite would create the file itself, with the server's umask (0600): the
 * application that shares the directory could then not open it.  The mode
 * is set exactly, whatever the umask, and SQLite gives the -wal and -shm
 * files it creates later the same mode.  A failure other than "exists" is
 * left for the open that follows to report.
 */
static void
create_directory_file(const char *path, mode_t mode)
{
	int			fd;

	fd = OpenTransientFilePerm(path, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY,
							   mode);
	if (fd < 0)
		return;
	if (fchmod(fd, mode) != 0)
	{
		int			save_errno = errno;

		CloseTransientFile(fd);
		errno = save_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not set the mode of directory file \"%s\": %m",
						path)));
	}
	CloseTransientFile(fd);
}

/*
 * shard_directory_init
 *		directory_init(server [, mode]): create the directory's tables (and
 *		the file, with mode, default 0660) if they are missing.  Running it
 *		again changes nothing.
 */
Datum
shard_directory_init(PG_FUNCTION_ARGS)
{
	ShardServerOptions *opts = shard_admin_server(PG_GETARG_NAME(0));
	mode_t		mode = DEFAULT_DIRECTORY_MODE;
	ShardConn  *conn;
	char		errbuf[SHARDIO_ERRLEN];

	if (PG_NARGS() > 1)
		mode = parse_file_mode(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	shard_require_file_privilege(true, gettext_noop("permission denied to initialize a shard directory"),
								 gettext_noop("Only roles with privileges of the \"%s\" role may initialize a shard directory."));
	create_directory_file(opts->directory, mode);
	conn = shard_conn_directory_for_write(opts, true);
	if (shardio_exec(shard_conn_db(conn), directory_schema, errbuf) != SQLITE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_ERROR),
				 errmsg("could not create the tables of directory \"%s\"",
						opts->directory),
				 errdetail_internal("%s", errbuf)));
	shard_conn_release(conn);
	PG_RETURN_VOID();
}

/*
 * file_bytes
 *		The size of a shard: its file and its write-ahead log; -1 if the
 *		file is missing.
 */
static int64
file_bytes(const char *path)
{
	struct stat st;
	int64		total;
	char	   *wal;

	if (stat(path, &st) != 0)
		return -1;
	total = st.st_size;
	wal = psprintf("%s-wal", path);
	if (stat(wal, &st) == 0)
		total += st.st_size;
	pfree(wal);
	return total;
}

/*
 * shard_register_shard
 *		Register the file at path (relative paths are taken from the
 *		directory file's folder) as shard shard_id, inside the transaction's
 *		write transaction on the directory.  The file must already be an
 *		SQLite database.  A file some shard names already (under any
 *		spelling) is an error, unless existing_ok: then nothing changes and
 *		the result is false.  The caller has checked privileges.
 */
bool
shard_register_shard(ShardServerOptions *opts, const char *shard_id,
					 const char *path, bool existing_ok)
{
	char	   *resolved;
	char	   *real;
	ShardConn  *conn;
	sqlite3    *db;
	sqlite3    *probe;
	char		errbuf[SHARDIO_ERRLEN];

	if (shard_id[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("shard id must not be empty")));
	if (path[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("path of shard \"%s\" must not be empty", shard_id)));

	resolved = shard_resolve_checked_path(opts, shard_id, path);
	if (shardio_file_state(resolved) != SHARDIO_FILE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FILE),
				 errmsg("could not add shard \"%s\": file \"%s\" does not exist or cannot be read",
						shard_id, resolved)));
	shard_check_wal_folder(shard_id, resolved);
	if (shardio_open(resolved, 0, opts->busy_timeout_ms, &probe, errbuf) != SQLITE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("could not add shard \"%s\": file \"%s\" is not a valid SQLite database",
						shard_id, resolved),
				 errdetail_internal("%s", errbuf)));
	shardio_close(probe);
	/* SQLite takes an empty file for an empty database */
	if (shard_file_kind(resolved) == SHARD_FILE_NOT_SQLITE)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("could not add shard \"%s\": file \"%s\" is not a valid SQLite database",
						shard_id, resolved),
				 errdetail("The file is empty or does not begin with SQLite's header.")));
	{
		char	   *r = realpath(resolved, NULL);

		real = r ? pstrdup(r) : NULL;
		free(r);
	}

	conn = shard_conn_directory_for_write(opts, false);
	db = shard_conn_db(conn);
	{
		sqlite3_stmt *stmt;
		const char *vals[2] = {shard_id, path};
		int			rc;

		rc = run_stmt(db, "SELECT shard_id, path FROM shards WHERE shard_id = ? OR path = ?",
					  vals, 2, &stmt);
		if (rc == SQLITE_ROW)
		{
			bool		same_id = strcmp((const char *) sqlite3_column_text(stmt, 0),
										 shard_id) == 0;
			bool		same_file = false;

			/* the same shard again, under the same id and file */
			if (same_id && existing_ok && real != NULL &&
				sqlite3_column_text(stmt, 1) != NULL)
			{
				char	   *other_real;

				other_real = realpath(shard_resolve_path(opts, (const char *) sqlite3_column_text(stmt, 1)),
									  NULL);
				same_file = other_real && strcmp(other_real, real) == 0;
				free(other_real);
			}
			sqlite3_finalize(stmt);
			if (same_file)
			{
				shard_conn_release(conn);
				return false;
			}
			if (same_id)
				ereport(ERROR,
						(errcode(ERRCODE_UNIQUE_VIOLATION),
						 errmsg("shard \"%s\" already exists in directory \"%s\"",
								shard_id, opts->directory)));
			if (existing_ok)
			{
				shard_conn_release(conn);
				return false;
			}
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("file \"%s\" is already a shard of directory \"%s\"",
							path, opts->directory)));
		}
		sqlite3_finalize(stmt);
		if (rc != SQLITE_DONE)
		{
			if (rc != SQLITE_ERROR || sqlite3_errmsg(db) == NULL ||
				strstr(sqlite3_errmsg(db), "no such table") == NULL)
				shard_admin_write_failed(opts, db,
										 gettext_noop("could not add a shard in directory \"%s\""));
			ereport(ERROR,
					(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
					 errmsg("directory \"%s\" has no table \"shards\"",
							opts->directory),
					 errhint("Create the directory's tables with directory_init('%s').",
							 opts->servername)));
		}
		/* The same file under another spelling is the same shard. */
		if (sqlite3_prepare_v2(db, "SELECT shard_id, path FROM shards", -1,
							   &stmt, NULL) != SQLITE_OK)
			shard_admin_write_failed(opts, db,
									 gettext_noop("could not add a shard in directory \"%s\""));
		while (real && sqlite3_step(stmt) == SQLITE_ROW)
		{
			const char *other = (const char *) sqlite3_column_text(stmt, 1);
			char	   *other_real;
			bool		same;

			if (other == NULL)
				continue;
			other_real = realpath(shard_resolve_path(opts, other), NULL);
			same = other_real && strcmp(other_real, real) == 0;
			free(other_real);
			if (same)
			{
				char	   *other_id = pstrdup((const char *) sqlite3_column_text(stmt, 0));

				sqlite3_finalize(stmt);
				if (existing_ok)
				{
					shard_conn_release(conn);
					return false;
				}
				ereport(ERROR,
						(errcode(ERRCODE_UNIQUE_VIOLATION),
						 errmsg("file \"%s\" is already a shard of directory \"%s\"",
								path, opts->directory),
						 errdetail("Shard \"%s\" names the same file.", other_id)));
			}
		}
		sqlite3_finalize(stmt);

		if (run_stmt(db, "INSERT INTO shards (shard_id, path) VALUES (?, ?)",
					 vals, 2, NULL) != SQLITE_DONE)
			shard_admin_write_failed(opts, db,
									 gettext_noop("could not add a shard in directory \"%s\""));
	}
	shard_directory_changed(shard_directory_get(opts));
	shard_conn_release(conn);
	return true;
}

/*
 * shard_add
 *		shard_add(server, shard_id, path): register a shard file.  The file
 *		must already be an SQLite database; a relative path is taken from
 *		the directory file's folder.
 */
Datum
shard_add(PG_FUNCTION_ARGS)
{
	ShardServerOptions *opts;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("server, shard id and path must not be null")));
	opts = shard_admin_server(PG_GETARG_NAME(0));
	/* the file is written through the directory, then read */
	shard_require_admin(gettext_noop("permission denied to add a shard"),
						gettext_noop("Only roles with privileges of the \"%s\" role may add a shard."));
	(void) shard_register_shard(opts, text_to_cstring(PG_GETARG_TEXT_PP(1)),
								text_to_cstring(PG_GETARG_TEXT_PP(2)), false);
	PG_RETURN_VOID();
}

/*
 * shard_loads
 *		Every shard with its tenant count and size, read through db (the
 *		cached read handle, or a write handle inside its transaction), in
 *		shard id order.
 */
ShardLoad *
shard_loads(ShardServerOptions *opts, ShardDirectory *dir, sqlite3 *db,
			int *nshards)
{
	List	   *shards = shard_directory_shards(dir);
	ShardLoad  *loads = palloc0(sizeof(ShardLoad) * (list_length(shards) + 1));
	sqlite3_stmt *stmt;
	ListCell   *lc;
	int			n = 0;
	int			rc;

	foreach(lc, shards)
	{
		loads[n].info = lfirst(lc);
		loads[n].bytes = file_bytes(loads[n].info->path);
		n++;
	}
	*nshards = n;

	/* Count each tenant on the shard that answers for it. */
	rc = sqlite3_prepare_v2(db,
							psprintf("SELECT %s AS owner, count(*) FROM shard_map "
									 "GROUP BY owner",
									 shard_directory_owner_sql(dir)),
							-1, &stmt, NULL);
	if (rc != SQLITE_OK)
		shard_admin_write_failed(opts, db,
								 gettext_noop("could not count tenants in directory \"%s\""));
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		const char *owner = (const char *) sqlite3_column_text(stmt, 0);
		int			i;

		for (i = 0; i < n; i++)
			if (owner && strcmp(loads[i].info->shard_id, owner) == 0)
				loads[i].tenants = sqlite3_column_int64(stmt, 1);
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		shard_admin_write_failed(opts, db,
								 gettext_noop("could not count tenants in directory \"%s\""));
	return loads;
}

/*
 * shard_list
 *		shard_list(server): every shard with its file, tenant count and
 *		size in bytes (NULL when the file is missing).
 */
Datum
shard_list(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardServerOptions *opts = shard_admin_server(PG_GETARG_NAME(0));
	ShardDirectory *dir = shard_directory_get(opts);
	ShardLoad  *loads;
	int			n,
				i;

	InitMaterializedSRF(fcinfo, 0);
	loads = shard_loads(opts, dir, shard_directory_handle(dir), &n);
	for (i = 0; i < n; i++)
	{
		Datum		values[4];
		bool		nulls[4] = {false, false, false, false};

		values[0] = CStringGetTextDatum(loads[i].info->shard_id);
		values[1] = CStringGetTextDatum(loads[i].info->path);
		values[2] = Int64GetDatum(loads[i].tenants);
		values[3] = Int64GetDatum(loads[i].bytes);
		nulls[3] = (loads[i].bytes < 0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * check_shard_file
 *		Refuse to place tenant on a shard whose file cannot hold it: missing
 *		or unreadable, not a regular file, not an SQLite database (an empty
 *		file included), or in WAL mode in a folder where the server cannot
 *		create the -wal and -shm files.  Only looks at the file, without
 *		SQLite, so a shard locked by a writer does not stall placement.
 *		With report false, returns whether the shard is usable instead.
 */
static bool
check_shard_file(ShardInfo *info, const char *tenant, bool report)
{
	int			kind;

	switch (shardio_file_state(info->path))
	{
		case SHARDIO_FILE_OK:
			break;
		case SHARDIO_FILE_NOT_REGULAR:
			if (report)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
						 errmsg("could not add tenant \"%s\": \"%s\" of shard \"%s\" is not a regular file",
								tenant, info->path, info->shard_id)));
			return false;
		default:
			if (report)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_FILE),
						 errmsg("could not add tenant \"%s\": file \"%s\" of shard \"%s\" does not exist or cannot be read",
								tenant, info->path, info->shard_id)));
			return false;
	}
	kind = shard_file_kind(info->path);
	if (kind != SHARD_FILE_ROLLBACK && kind != SHARD_FILE_WAL)
	{
		if (report)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("could not add tenant \"%s\": file \"%s\" of shard \"%s\" is not a valid SQLite database",
							tenant, info->path, info->shard_id),
					 errdetail("The file is empty or does not begin with SQLite's header.")));
		return false;
	}
	if (report)
		shard_check_wal_folder(info->shard_id, info->path);
	return shard_wal_folder_unwritable(info->path) == NULL;
}

/*
 * place_tenant
 *		The shard to take tenant, expected to grow to expected bytes (0: not
 *		known), by headroom and expected volume (see the file's header): the
 *		shard with the smallest expected load, fewest tenants on a tie,
 *		among those whose file can hold a tenant (check_shard_file) and has
 *		room for expected bytes under max_shard_bytes.
 */
static ShardInfo *
place_tenant(ShardServerOptions *opts, ShardLoad *loads, int n,
			 const char *tenant, int64 expected)
{
	ShardLoad  *best = NULL;
	double		best_load = 0;
	double		fleet_bytes = 0;
	double		fleet_tenants = 0;
	double		per_tenant;
	bool	   *usable = palloc0(sizeof(bool) * (n + 1));
	bool		any = false;
	int			i;

	for (i = 0; i < n; i++)
	{
		usable[i] = loads[i].bytes >= 0 &&
			check_shard_file(loads[i].info, tenant, false);
		if (!usable[i])
			continue;
		any = true;
		fleet_bytes += loads[i].bytes;
		fleet_tenants += loads[i].tenants;
	}
	if (!any)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no shard of server \"%s\" can take tenant \"%s\"",
						opts->servername, tenant),
				 errdetail("The directory lists no shard whose file exists and is an SQLite database the server can read."),
				 errhint("Add a shard with shard_add().")));

	/* what a tenant takes on average, written or not */
	per_tenant = fleet_tenants > 0 ? fleet_bytes / fleet_tenants : 0;

	for (i = 0; i < n; i++)
	{
		ShardLoad  *l = &loads[i];
		double		load;

		if (!usable[i] || l->bytes >= opts->max_shard_bytes ||
			l->bytes + expected > opts->max_shard_bytes)
			continue;

		/* tenants placed but not written yet count as average tenants */
		load = Max((double) l->bytes, l->tenants * per_tenant);
		if (best == NULL || load < best_load ||
			(load == best_load && l->tenants < best->tenants))
		{
			best = l;
			best_load = load;
		}
	}
	if (best == NULL && expected > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DISK_FULL),
				 errmsg("no shard of server \"%s\" has room for " INT64_FORMAT " bytes under \"max_shard_bytes\"",
						opts->servername, expected),
				 errdetail("Tenant \"%s\" was not added.", tenant),
				 errhint("Add a shard with shard_add(), or raise the server option \"max_shard_bytes\".")));
	if (best == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DISK_FULL),
				 errmsg("every shard of server \"%s\" is at or over \"max_shard_bytes\"",
						opts->servername),
				 errdetail("Tenant \"%s\" was not added.", tenant),
				 errhint("Add a shard with shard_add(), or raise the server option \"max_shard_bytes\".")));
	return best->info;
}

/*
 * shard_register_tenant
 *		Register tenant on shard_id, or on the shard placement picks for a
 *		tenant expected to take expected bytes (0: not known) when that is
 *		NULL, inside the transaction's write transaction on the
 *		directory; returns the shard that answers for it.  A tenant already
 *		registered is an error, unless existing_ok (an INSERT under
 *		auto_register that another session's tenant was placed before),
 *		which sets *added false.  The caller has checked privileges.
 */
char *
shard_register_tenant(ShardServerOptions *opts, const char *tenant,
					  const char *shard_id, bool existing_ok, int64 expected,
					  bool *added)
{
	ShardConn  *conn;
	ShardDirectory *dir;
	sqlite3    *db;
	sqlite3_stmt *stmt;
	const char *vals[2];
	int			rc;

	if (tenant[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tenant id must not be empty")));

	/* lookups below read through the write transaction: take it first */
	conn = shard_conn_directory_for_write(opts, false);
	db = shard_conn_db(conn);
	dir = shard_directory_get(opts);
	if (shard_id != NULL)
	{
		ShardInfo  *info = shard_directory_shard(dir, shard_id);

		if (info == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("shard \"%s\" does not exist in directory \"%s\"",
							shard_id, opts->directory)));

		/* A tenant on a file that cannot be read could never be read. */
		(void) check_shard_file(info, tenant, true);
	}

	vals[0] = tenant;
	rc = run_stmt(db, "SELECT shard_id FROM shard_map WHERE tenant_id = ?",
				  vals, 1, &stmt);
	if (rc == SQLITE_ROW)
	{
		char	   *existing = pstrdup((const char *) sqlite3_column_text(stmt, 0));

		sqlite3_finalize(stmt);
		if (!existing_ok)
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("tenant \"%s\" already exists on shard \"%s\"",
							tenant, existing)));
		shard_conn_release(conn);
		*added = false;
		return shard_directory_locate(dir, tenant)->owner;
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		shard_admin_write_failed(opts, db,
								 gettext_noop("could not look up a tenant in directory \"%s\""));

	if (shard_id == NULL)
	{
		ShardLoad  *loads;
		int			n;

		loads = shard_loads(opts, dir, db, &n);
		shard_id = place_tenant(opts, loads, n, tenant, expected)->shard_id;
	}
	vals[1] = shard_id;

	/*
	 * A hand-written shard_map may have only tenant_id and shard_id: set
	 * the other columns of the published schema where it has them.
	 */
	{
		StringInfoData sql;
		bool		status = shard_directory_has_column(db, "shard_map", "status");
		bool		updated = shard_directory_has_column(db, "shard_map", "updated_at");

		initStringInfo(&sql);
		appendStringInfo(&sql, "INSERT INTO shard_map (tenant_id, shard_id%s%s) "
						 "VALUES (?, ?%s%s)",
						 status ? ", status" : "", updated ? ", updated_at" : "",
						 status ? ", 'ACTIVE'" : "",
						 updated ? ", CAST(strftime('%s', 'now') AS INTEGER)" : "");
		if (run_stmt(db, sql.data, vals, 2, NULL) != SQLITE_DONE)
			shard_admin_write_failed(opts, db,
									 gettext_noop("could not add a tenant in directory \"%s\""));
	}
	shard_directory_changed(dir);
	shard_conn_release(conn);
	*added = true;
	return pstrdup(shard_id);
}

/*
 * shard_tenant_auto_register
 *		auto_register: register the tenant of a row that an INSERT or COPY
 *		writes and the directory does not know, on the shard
 *		placement picks for a tenant of unknown size, and say so: a
 *		mistyped tenant id would otherwise become a tenant unseen.  Another
 *		session may have registered it meanwhile; then nothing is said.
 */
void
shard_tenant_auto_register(ShardServerOptions *opts, const char *tenant)
{
	bool		added;
	char	   *shard_id = shard_register_tenant(opts, tenant, NULL, true, 0, &added);

	if (added)
		ereport(NOTICE,
				(errmsg("registered tenant \"%s\" on shard \"%s\" of server \"%s\"",
						tenant, shard_id, opts->servername),
				 errhint("To refuse rows of tenants the directory does not know instead, SET sqlite_shard_fdw.auto_register = off.")));
}

/*
 * shard_tenant_add
 *		tenant_add(server, tenant [, shard]): register a tenant on the given
 *		shard, or on the one placement picks.  Returns the shard id.
 */
Datum
shard_tenant_add(PG_FUNCTION_ARGS)
{
	ShardServerOptions *opts;
	char	   *tenant;
	char	   *shard_id = NULL;
	int64		expected = 0;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("server must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("tenant must not be null")));
	opts = shard_admin_server(PG_GETARG_NAME(0));
	tenant = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (!PG_ARGISNULL(2))
		shard_id = text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (PG_NARGS() > 3 && !PG_ARGISNULL(3))
	{
		expected = PG_GETARG_INT64(3);
		if (expected < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("expected_bytes must not be negative")));
	}
	shard_require_file_privilege(true, gettext_noop("permission denied to add a tenant"),
								 gettext_noop("Only roles with privileges of the \"%s\" role may add a tenant."));
	{
		bool		added;

		shard_id = shard_register_tenant(opts, tenant, shard_id, false, expected,
								   &added);
	}
	PG_RETURN_TEXT_P(cstring_to_text(shard_id));
}

/*
 * shard_tenant_locate
 *		tenant_locate(server, tenant): where a tenant's rows are: the shard
 *		that answers for it, the move status and both shards of a move, and
 *		the file.  NULL for a tenant the directory does not know.
 */
Datum
shard_tenant_locate(PG_FUNCTION_ARGS)
{
	ShardServerOptions *opts = shard_admin_server(PG_GETARG_NAME(0));
	char	   *tenant = text_to_cstring(PG_GETARG_TEXT_PP(1));
	ShardDirectory *dir = shard_directory_get(opts);
	ShardLocation *loc = shard_directory_locate(dir, tenant);
	TupleDesc	tupdesc;
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};

	if (loc == NULL)
		PG_RETURN_NULL();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	values[0] = CStringGetTextDatum(loc->owner);
	values[1] = CStringGetTextDatum(loc->status);
	values[2] = CStringGetTextDatum(loc->shard_id);
	if (loc->target_shard_id)
		values[3] = CStringGetTextDatum(loc->target_shard_id);
	else
		nulls[3] = true;
	values[4] = CStringGetTextDatum(shard_directory_shard(dir, loc->owner)->path);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc),
													  values, nulls)));
}

/*
 * shard_admin_shard
 *		A shard named by a function's argument, or an error naming the
 *		function that lists the server's shards.
 */
ShardInfo *
shard_admin_shard(ShardServerOptions *opts, ShardDirectory *dir,
				  const char *shard_id)
{
	ShardInfo  *info = shard_directory_shard(dir, shard_id);

	if (info == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("shard \"%s\" does not exist", shard_id),
				 errhint("shard_list() shows the shards of server \"%s\".",
						 opts->servername)));
	return info;
}

/*
 * tenant_listed
 *		Is tenant (as the directory keys it) one of ids?
 */
static bool
tenant_listed(List *ids, const char *tenant)
{
	ListCell   *lc;

	foreach(lc, ids)
		if (strcmp((const char *) lfirst(lc), tenant) == 0)
			return true;
	return false;
}

/*
 * shard_tenant_list
 *		tenant_list(server [, shard]): every tenant of the directory (or
 *		those the shard answers for), ordered by id, with the columns of
 *		tenant_locate.  A role whose user mapping lists its "tenants" sees
 *		only those: the list names every tenant of the fleet, which is
 *		what a tenant-scoped role must not learn (shard_orphans, which
 *		names them too, needs what shard_add needs).
 */
Datum
shard_tenant_list(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardServerOptions *opts;
	ShardDirectory *dir;
	char	   *shard_id = NULL;
	List	   *allowed;
	ListCell   *lc;

	opts = shard_admin_server_arg(fcinfo);
	allowed = shard_tenant_ids_text(shard_user_tenants(opts->serverid,
													   GetUserId()));
	InitMaterializedSRF(fcinfo, 0);
	dir = shard_directory_get(opts);
	if (!PG_ARGISNULL(1))
		shard_id = shard_admin_shard(opts, dir,
									 text_to_cstring(PG_GETARG_TEXT_PP(1)))->shard_id;
	foreach(lc, shard_directory_tenants(dir, shard_id))
	{
		ShardLocation *loc = lfirst(lc);
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};

		if (allowed != NIL && !tenant_listed(allowed, loc->tenant))
			continue;
		values[0] = shard_tenant_id_datum(loc->tenant);
		values[1] = CStringGetTextDatum(loc->owner);
		values[2] = CStringGetTextDatum(loc->status);
		values[3] = CStringGetTextDatum(loc->shard_id);
		if (loc->target_shard_id)
			values[4] = CStringGetTextDatum(loc->target_shard_id);
		else
			nulls[4] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * stat_rows
 *		The rows of a shard's sqlite_stat1 (SQLite's statistics of its
 *		tables and indexes), or 0 when it has none.
 */
static int64
stat_rows(sqlite3 *db)
{
	sqlite3_stmt *stmt;
	int64		n = 0;

	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_stat1", -1,
						   &stmt, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(stmt) == SQLITE_ROW)
		n = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return n;
}

/*
 * shard_analyze
 *		shard_analyze(server [, shard_id]): SQLite's ANALYZE inside every
 *		shard of the server, or the one named, so that SQLite plans the
 *		shard queries from statistics of their tables and indexes (in
 *		sqlite_stat1) rather than from guesses: without them, one large
 *		tenant's rows can be read through an index row by row, at many
 *		times the cost of reading the shard.  Each shard is analyzed inside
 *		its write transaction, committed with the PostgreSQL transaction;
 *		one row per shard with the number of statistics rows it now has.
 *		Writes the shard files, so it needs pg_write_server_files.
 */
Datum
shard_analyze(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardServerOptions *opts;
	ShardDirectory *dir;
	List	   *shards;
	ListCell   *lc;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	opts = shard_admin_server(PG_GETARG_NAME(0));
	shard_require_file_privilege(true, gettext_noop("permission denied to analyze shards"),
								 gettext_noop("Only roles with privileges of the \"%s\" role may analyze shards."));
	InitMaterializedSRF(fcinfo, 0);
	dir = shard_directory_get(opts);
	if (PG_ARGISNULL(1))
		shards = shard_directory_shards(dir);
	else
		shards = list_make1(shard_admin_shard(opts, dir,
											  text_to_cstring(PG_GETARG_TEXT_PP(1))));

	foreach(lc, shards)
	{
		ShardInfo  *info = lfirst(lc);
		ShardConn  *conn = shard_conn_get_for_write(opts, info);
		char		errbuf[SHARDIO_ERRLEN];
		Datum		values[2];
		bool		nulls[2] = {false, false};
		int			rc;

		rc = shardio_exec(shard_conn_db(conn), "ANALYZE", errbuf);
		if (rc != SQLITE_OK)
		{
			rc = shard_conn_write_failed(conn, rc);
			shard_sqlite_error(ERROR, rc, info->shard_id, errbuf,
							   "could not analyze shard \"%s\"",
							   info->shard_id);
		}
		values[0] = CStringGetTextDatum(info->shard_id);
		values[1] = Int64GetDatum(stat_rows(shard_conn_db(conn)));
		shard_conn_release(conn);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
