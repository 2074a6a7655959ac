/*-------------------------------------------------------------------------
 *
 * directory.c
 *		  The directory: which shard file holds which tenant
 *
 * The directory is an SQLite control database shared with the application
 * that owns the shards.  It holds shard_map (tenant -> shard, with the move
 * status of the published reference schema) and, optionally, shards (shard
 * id -> file path); without a shards table, paths come from the server's
 * shard_path pattern.
 *
 * Each backend keeps one read-only handle per server and caches what it
 * has looked up.  The cache is checked with PRAGMA data_version, which
 * changes whenever another connection (the sqlite3 CLI, the application, an
 * admin function of this extension) commits to the file, every time a scan
 * starts: a statement therefore always routes by the directory as it was
 * when the statement started, however long the backend has been running.
 * A stamp of the files (shardio_change_stamp) taken without a lock tells
 * first whether anything was committed since the last check, so the common
 * case reads no data version at all: in WAL mode the WAL-index header in
 * the -shm file (memory only), in rollback-journal mode the database
 * header (one pread).  test/dirchange_test.sh
 * holds this shortcut to the promise above: commits from another process
 * in WAL mode across checkpoints and WAL restarts, in rollback-journal mode
 * and across journal mode switches, read by backends that check both
 * continuously and after pauses.
 * Tenants are looked up one at a time through shard_map's primary key and
 * cached individually, so a lookup costs the same for a thousand tenants
 * or a million.
 *
 * shard_map needs only tenant_id and shard_id for reading: a hand-written
 * map without status and target_shard_id has every tenant ACTIVE.  Which
 * columns it has is read from the file (PRAGMA table_info), again whenever
 * its schema changes, so a column added later (by directory_init, a move
 * or the application) is used from the next statement on.  Operations that
 * need more columns say which, with shard_directory_require_columns.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <sys/stat.h>

#include "access/parallel.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

/* Tenant ids longer than this are looked up every time, not cached. */
#define TENANT_KEY_LEN 128

typedef struct TenantEntry
{
	char		key[TENANT_KEY_LEN];
	bool		found;			/* false: negative entry, tenant unknown */
	ShardLocation loc;
} TenantEntry;

typedef struct ShardEntry
{
	char		key[TENANT_KEY_LEN];
	bool		found;
	ShardInfo	info;
} ShardEntry;

struct ShardDirectory
{
	Oid			serverid;
	char	   *path;			/* the control database */
	char	   *shard_path;		/* pattern from the server, or NULL */
	bool		file_per_tenant;	/* the server's layout 'file_per_tenant' */
	char	   *tenant_path;	/* its tenant_path pattern, or NULL */
	MemoryContext files_cxt;	/* the files tenant_path matched ... */
	List	   *files;			/* ... as ShardInfo, */
	TimestampTz files_stmt;		/* listed for the statement that began then */
	uint64		files_generation;	/* of the listing they come from
									 * (tenantfile.c) */
	bool		allow_outside;	/* the server's allow_outside_paths */
	sqlite3    *db;				/* lookups read here: read_db, or the
								 * transaction's directory writer */
	sqlite3    *read_db;		/* the backend's own read-only handle */
	bool		ready;			/* the statements below are prepared on db */
	uint64		write_generation;	/* of the writer, when db is one */
	sqlite3_stmt *version_stmt;
	sqlite3_stmt *locate_stmt;
	sqlite3_stmt *shard_stmt;	/* NULL without a shards table */
	sqlite3_int64 data_version;
	ShardioStamp stamp;			/* the files when data_version was read */
	bool		stamp_valid;
	bool		has_shards_table;
	bool		has_status;		/* shard_map has "status" */
	bool		has_target;		/* shard_map has "target_shard_id" */
	sqlite3_int64 schema_version;	/* when the columns were read */
	dev_t		dev;			/* the file opened, to notice a replacement */
	ino_t		ino;

	/* Everything below is reset whenever the directory changes. */
	MemoryContext cxt;
	HTAB	   *tenants;
	HTAB	   *shards;
	bool		shards_loaded;
	List	   *shard_list;
	bool		moving_loaded;
	List	   *moving;
	HTAB	   *file_tenants;	/* shard -> its tenant, in file_per_tenant
								 * without tenant_path; NULL: not read */
};

/* A shard's tenant, in a directory of one file per tenant. */
typedef struct FileTenantEntry
{
	char		key[TENANT_KEY_LEN];	/* the shard */
	char	   *tenant;			/* its tenant */
	char	   *other;			/* a second tenant mapped to it, or NULL */
} FileTenantEntry;

static MemoryContext DirectoryCacheContext = NULL;
static List *directories = NIL;

/* Installed by the control plane: see ShardMigratingHook. */
ShardMigratingHook shard_migrating_hook = NULL;

static void check_directory(ShardDirectory *dir, ShardServerOptions *opts);

/*
 * dir_error
 *		Report a failed SQLite call on the control database: fmt is the
 *		whole message, with the directory's path for its one %s.
 */
static void
dir_error(ShardDirectory *dir, const char *fmt)
{
	shard_directory_error(sqlite3_errcode(dir->db), dir->path,
						  sqlite3_errmsg(dir->db), fmt, dir->path);
}

/*
 * reset_cache
 *		Forget every lookup; called when the control database changed.
 */
static void
reset_cache(ShardDirectory *dir)
{
	HASHCTL		ctl;

	MemoryContextReset(dir->cxt);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = TENANT_KEY_LEN;
	ctl.entrysize = sizeof(TenantEntry);
	ctl.hcxt = dir->cxt;
	dir->tenants = hash_create("sqlite_shard_fdw tenants", 256, &ctl,
							   HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	ctl.entrysize = sizeof(ShardEntry);
	dir->shards = hash_create("sqlite_shard_fdw shards", 64, &ctl,
							  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	dir->shards_loaded = false;
	dir->shard_list = NIL;
	dir->moving_loaded = false;
	dir->moving = NIL;
	dir->file_tenants = NULL;
}

/*
 * finalize_lookups
 *		Finalize the statements prepared on the handle lookups read.
 */
static void
finalize_lookups(ShardDirectory *dir)
{
	sqlite3_finalize(dir->version_stmt);
	sqlite3_finalize(dir->locate_stmt);
	sqlite3_finalize(dir->shard_stmt);
	dir->version_stmt = NULL;
	dir->locate_stmt = NULL;
	dir->shard_stmt = NULL;
	dir->ready = false;
}

/*
 * release_directory
 *		Close a cached directory whose server options changed.
 */
static void
release_directory(ShardDirectory *dir)
{
	finalize_lookups(dir);
	shardio_close(dir->read_db);
	MemoryContextDelete(dir->cxt);
	MemoryContextDelete(dir->files_cxt);
	pfree(dir->path);
	if (dir->shard_path)
		pfree(dir->shard_path);
	if (dir->tenant_path)
		pfree(dir->tenant_path);
	pfree(dir);
}

/*
 * prepare_or_error
 *		Prepare a statement that the directory's schema must support.
 */
static sqlite3_stmt *
prepare_or_error(ShardDirectory *dir, const char *sql)
{
	sqlite3_stmt *stmt;
	char		errbuf[SHARDIO_ERRLEN];

	if (shardio_prepare(dir->db, sql, 1, &stmt, errbuf) != SQLITE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
				 errmsg("directory \"%s\" does not have the expected layout",
						dir->path),
				 errdetail_internal("%s", errbuf)));
	return stmt;
}

/*
 * shard_directory_report_missing
 *		Raise that a server's directory file does not exist.
 */
void
shard_directory_report_missing(ShardServerOptions *opts)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
			 errmsg("directory \"%s\" of server \"%s\" does not exist",
					opts->directory, opts->servername),
			 errhint("Create it with directory_init('%s'), or correct the server option \"directory\".",
					 opts->servername)));
}

/*
 * open_directory
 *		Open a server's control database and check that it is one.
 */
static ShardDirectory *
open_directory(ShardServerOptions *opts)
{
	ShardDirectory *dir;
	MemoryContext oldcxt;
	char		errbuf[SHARDIO_ERRLEN];
	char	   *folder;
	int			rc;

	switch (shardio_file_state(opts->directory))
	{
		case SHARDIO_FILE_MISSING:
			shard_directory_report_missing(opts);
			break;
		case SHARDIO_FILE_UNREADABLE:
			ereport(ERROR,
					(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
					 errmsg("directory \"%s\" of server \"%s\" cannot be read",
							opts->directory, opts->servername),
					 errdetail("The server's operating system user needs read permission on the file and its folder.")));
			break;
		case SHARDIO_FILE_NOT_REGULAR:
			ereport(ERROR,
					(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
					 errmsg("directory \"%s\" of server \"%s\" is not a regular file",
							opts->directory, opts->servername)));
			break;
		default:
			break;
	}
	folder = shard_wal_folder_unwritable(opts->directory);
	if (folder != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot read directory \"%s\" of server \"%s\": the server cannot create files in folder \"%s\"",
						opts->directory, opts->servername, folder),
				 errdetail("The directory is in WAL mode: reading it needs its \"-wal\" and \"-shm\" files, which SQLite creates next to it whenever no other process has it open."),
				 errhint("Give the server's operating system user write permission on the folder, or take the directory out of WAL mode (PRAGMA journal_mode = DELETE).")));

	oldcxt = MemoryContextSwitchTo(DirectoryCacheContext);
	dir = palloc0(sizeof(ShardDirectory));
	dir->serverid = opts->serverid;
	dir->path = pstrdup(opts->directory);
	dir->shard_path = opts->shard_path ? pstrdup(opts->shard_path) : NULL;
	dir->allow_outside = opts->allow_outside_paths;
	dir->file_per_tenant = opts->file_per_tenant;
	dir->tenant_path = opts->tenant_path ? pstrdup(opts->tenant_path) : NULL;
	dir->cxt = AllocSetContextCreate(DirectoryCacheContext,
									 "sqlite_shard_fdw directory",
									 ALLOCSET_DEFAULT_SIZES);
	dir->files_cxt = AllocSetContextCreate(DirectoryCacheContext,
										   "sqlite_shard_fdw tenant files",
										   ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(oldcxt);

	rc = shardio_open(dir->path, 0, opts->busy_timeout_ms, &dir->read_db, errbuf);
	if (rc != SQLITE_OK)
	{
		int			errcode_sql = ((rc & 0xff) == SQLITE_NOTADB ||
								   (rc & 0xff) == SQLITE_CORRUPT) ?
			ERRCODE_DATA_CORRUPTED : ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION;

		MemoryContextDelete(dir->cxt);
		MemoryContextDelete(dir->files_cxt);
		pfree(dir->path);
		if (dir->shard_path)
			pfree(dir->shard_path);
		if (dir->tenant_path)
			pfree(dir->tenant_path);
		pfree(dir);
		shard_check_lock_wait(rc, true, opts->directory);
		ereport(ERROR,
				(errcode(errcode_sql),
				 errmsg("could not open directory \"%s\" of server \"%s\"",
						opts->directory, opts->servername),
				 errdetail_internal("%s", errbuf)));
	}

	/* An error from here on must not leak the handle. */
	PG_TRY();
	{
		uint64		generation;
		sqlite3    *writer = shard_conn_directory_writer(dir->path,
														 &generation);

		dir->db = writer ? writer : dir->read_db;
		dir->write_generation = generation;
		check_directory(dir, opts);
	}
	PG_CATCH();
	{
		release_directory(dir);
		PG_RE_THROW();
	}
	PG_END_TRY();

	{
		struct stat st;

		if (stat(dir->path, &st) == 0)
		{
			dir->dev = st.st_dev;
			dir->ino = st.st_ino;
		}
	}
	oldcxt = MemoryContextSwitchTo(DirectoryCacheContext);
	directories = lappend(directories, dir);
	MemoryContextSwitchTo(oldcxt);
	return dir;
}

/*
 * table_columns
 *		The columns of a table of the control database, as PRAGMA
 *		table_info lists them (NIL for a missing table).
 */
static List *
table_columns(sqlite3 *db, const char *table)
{
	sqlite3_stmt *stmt = NULL;
	List	   *result = NIL;
	int			rc;

	rc = sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1) ORDER BY cid",
							-1, &stmt, NULL);
	if (rc == SQLITE_OK)
	{
		sqlite3_bind_text(stmt, 1, table, -1, SQLITE_STATIC);
		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
			result = lappend(result,
							 pstrdup((const char *) sqlite3_column_text(stmt, 0)));
	}
	if (rc != SQLITE_DONE)
	{
		/* a lock not had, a cancel: not "no such column" */
		char	   *msg = pstrdup(sqlite3_errmsg(db));
		const char *path = sqlite3_db_filename(db, "main");

		sqlite3_finalize(stmt);
		shard_check_lock_wait(rc, true, path);
		ereport(ERROR,
				(errcode(shard_sqlite_sqlstate(rc)),
				 errmsg("could not read the columns of table \"%s\" in directory \"%s\"",
						table, path),
				 errdetail_internal("%s", msg)));
	}
	sqlite3_finalize(stmt);
	return result;
}

/*
 * column_listed
 *		Is name (SQLite's rule: case does not matter) one of columns?
 */
static bool
column_listed(List *columns, const char *name)
{
	ListCell   *lc;

	foreach(lc, columns)
		if (pg_strcasecmp((const char *) lfirst(lc), name) == 0)
			return true;
	return false;
}

/*
 * shard_directory_has_column
 *		Does the control database's table have the column?
 */
bool
shard_directory_has_column(sqlite3 *db, const char *table, const char *column)
{
	return column_listed(table_columns(db, table), column);
}

/*
 * shard_directory_require_columns
 *		Refuse an operation that needs columns (NULL-terminated) of a table
 *		of the control database that lacks one, listing the columns it
 *		expects and those the table has: detail is the operation's whole
 *		sentence, filled in with the table, the columns expected and those
 *		it has ("To route tenants, table \"%s\" needs the columns %s; it
 *		has %s.").
 */
void
shard_directory_require_columns(sqlite3 *db, const char *path,
								const char *table,
								const char *const *columns, const char *detail)
{
	List	   *have = table_columns(db, table);
	StringInfoData expected;
	StringInfoData present;
	const char *missing = NULL;
	const char *const *c;
	ListCell   *lc;

	initStringInfo(&expected);
	for (c = columns; *c; c++)
	{
		appendStringInfo(&expected, "%s%s", expected.len ? ", " : "", *c);
		if (missing == NULL && !column_listed(have, *c))
			missing = *c;
	}
	if (missing == NULL)
		return;
	initStringInfo(&present);
	foreach(lc, have)
		appendStringInfo(&present, "%s%s", present.len ? ", " : "",
						 (const char *) lfirst(lc));
	ereport(ERROR,
			(errcode(ERRCODE_FDW_COLUMN_NAME_NOT_FOUND),
			 errmsg("table \"%s\" of directory \"%s\" has no column \"%s\"",
					table, path, missing),
			 errdetail(detail, table, expected.data,
					   present.len ? present.data : _("none")),
			 errhint("Add the missing columns (ALTER TABLE %s ADD COLUMN ...), as directory_init creates them.",
					 table)));
}

/*
 * schema_version
 *		The control database's schema version, which changes with every
 *		change of its tables' columns.
 */
static sqlite3_int64
schema_version(ShardDirectory *dir)
{
	sqlite3_stmt *stmt;
	sqlite3_int64 v = -1;

	if (sqlite3_prepare_v2(dir->db, "PRAGMA schema_version", -1, &stmt,
						   NULL) != SQLITE_OK)
		dir_error(dir,
				  gettext_noop("could not read the schema version in directory \"%s\""));
	if (sqlite3_step(stmt) == SQLITE_ROW)
		v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return v;
}

/*
 * location_columns
 *		The status and target_shard_id of a shard_map row, for a select
 *		list: constants where the map lacks the columns (every tenant
 *		ACTIVE, none moving).
 */
static const char *
location_columns(ShardDirectory *dir)
{
	return psprintf("%s, %s",
					dir->has_status ? "status" : "'ACTIVE'",
					dir->has_target ? "target_shard_id" : "NULL");
}

/*
 * shard_directory_owner_sql
 *		An SQL expression over shard_map's columns for the shard that
 *		answers for a tenant (fill_location's rule), for counting tenants
 *		per shard.
 */
const char *
shard_directory_owner_sql(ShardDirectory *dir)
{
	if (!dir->has_status || !dir->has_target)
		return "shard_id";
	return "CASE WHEN status = 'DONE' AND target_shard_id IS NOT NULL "
		"THEN target_shard_id ELSE shard_id END";
}

/*
 * check_directory
 *		Check that a freshly opened control database has the tables this
 *		server needs, and prepare the statements used on every lookup.
 */
static void
check_directory(ShardDirectory *dir, ShardServerOptions *opts)
{
	char		errbuf[SHARDIO_ERRLEN];
	sqlite3_stmt *stmt;
	bool		has_map = false;
	int			rc;

	reset_cache(dir);
	dir->has_shards_table = false;
	if (shardio_prepare(dir->db,
						"SELECT name FROM sqlite_schema WHERE type = 'table' "
						"AND name IN ('shard_map', 'shards')",
						0, &stmt, errbuf) != SQLITE_OK)
		dir_error(dir,
				  gettext_noop("could not read the schema in directory \"%s\""));
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		const char *name = (const char *) sqlite3_column_text(stmt, 0);

		if (strcmp(name, "shard_map") == 0)
			has_map = true;
		else
			dir->has_shards_table = true;
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		dir_error(dir,
				  gettext_noop("could not read the schema in directory \"%s\""));

	if (!has_map)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
				 errmsg("directory \"%s\" has no table \"shard_map\"", dir->path),
				 errhint("Create the directory's tables with directory_init('%s').",
						 opts->servername)));
	if (!dir->has_shards_table && dir->shard_path == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
				 errmsg("directory \"%s\" has no table \"shards\" and server \"%s\" has no option \"shard_path\"",
						dir->path, opts->servername),
				 errhint("Create the table with directory_init('%s') and add shards with shard_add(), or set the server option \"shard_path\" to a pattern such as 'shards/%%s.db'.",
						 opts->servername)));

	{
		static const char *const reading[] = {"tenant_id", "shard_id", NULL};

		shard_directory_require_columns(dir->db, dir->path, "shard_map",
										reading,
										gettext_noop("To route tenants, table \"%s\" needs the columns %s; it has %s."));
		if (dir->has_shards_table)
		{
			static const char *const paths[] = {"shard_id", "path", NULL};

			shard_directory_require_columns(dir->db, dir->path, "shards",
											paths,
											gettext_noop("To find shard files, table \"%s\" needs the columns %s; it has %s."));
		}
	}
	dir->has_status = shard_directory_has_column(dir->db, "shard_map",
												 "status");
	dir->has_target = shard_directory_has_column(dir->db, "shard_map",
												 "target_shard_id");
	dir->schema_version = schema_version(dir);
	dir->version_stmt = prepare_or_error(dir, "PRAGMA data_version");
	dir->locate_stmt = prepare_or_error(dir,
										psprintf("SELECT shard_id, %s FROM shard_map "
												 "WHERE tenant_id = ?",
												 location_columns(dir)));
	if (dir->has_shards_table)
		dir->shard_stmt = prepare_or_error(dir,
										   "SELECT path FROM shards WHERE shard_id = ?");
	dir->data_version = -1;
	dir->ready = true;
}

/*
 * same_file
 *		Is the control database still the file this handle opened?
 */
static bool
same_file(ShardDirectory *dir)
{
	struct stat st;

	return stat(dir->path, &st) == 0 && st.st_dev == dir->dev &&
		st.st_ino == dir->ino;
}

/*
 * shard_directory_get
 *		The directory of a server, its cache checked against the control
 *		database so that the caller sees every committed change.
 */
ShardDirectory *
shard_directory_get(ShardServerOptions *opts)
{
	ShardDirectory *dir = NULL;
	ListCell   *lc;
	sqlite3_int64 version;
	ShardioStamp stamp;
	int			stamp_kind;

	shard_waits_init();
	if (DirectoryCacheContext == NULL)
		DirectoryCacheContext = AllocSetContextCreate(TopMemoryContext,
													  "sqlite_shard_fdw directories",
													  ALLOCSET_SMALL_SIZES);

	foreach(lc, directories)
	{
		ShardDirectory *d = (ShardDirectory *) lfirst(lc);

		if (d->serverid != opts->serverid)
			continue;
		if (strcmp(d->path, opts->directory) == 0 &&
			d->allow_outside == opts->allow_outside_paths &&
			((d->shard_path == NULL && opts->shard_path == NULL) ||
			 (d->shard_path && opts->shard_path &&
			  strcmp(d->shard_path, opts->shard_path) == 0)) &&
			d->file_per_tenant == opts->file_per_tenant &&
			((d->tenant_path == NULL && opts->tenant_path == NULL) ||
			 (d->tenant_path && opts->tenant_path &&
			  strcmp(d->tenant_path, opts->tenant_path) == 0)) &&
			same_file(d))
			dir = d;
		else
		{
			/*
			 * ALTER SERVER changed where the directory or the shards are, or
			 * the file was replaced (a restore, a rename over it): reopen,
			 * forgetting every path resolved under the old options.
			 */
			directories = foreach_delete_current(directories, lc);
			release_directory(d);
		}
		break;
	}

	if (dir == NULL)
		dir = open_directory(opts);

	/*
	 * While this transaction writes the directory, lookups read through its
	 * handle, to see its own changes; nobody else can commit meanwhile, as
	 * it holds the write lock.  Its cache lasts until the writer writes
	 * again or rolls back to a savepoint.
	 */
	{
		uint64		generation;
		sqlite3    *writer = shard_conn_directory_writer(dir->path,
														 &generation);
		sqlite3    *target = writer ? writer : dir->read_db;

		if (dir->db != target || !dir->ready)
		{
			finalize_lookups(dir);
			dir->db = target;
			check_directory(dir, opts);
			dir->stamp_valid = false;
		}
		else if (writer != NULL && generation != dir->write_generation)
		{
			/* the transaction's own writes may have changed the columns */
			if (schema_version(dir) != dir->schema_version)
			{
				finalize_lookups(dir);
				check_directory(dir, opts);
			}
			reset_cache(dir);
		}
		dir->write_generation = generation;
		if (writer != NULL)
			return dir;
	}

	/*
	 * Reading the data version takes a read transaction, about ten system
	 * calls.  When the files' stamp is what it was then, no commit has
	 * become visible since, and the version cannot have moved.  A WAL stamp
	 * is taken before the version is read: a commit in between changes the
	 * next stamp, and the version is read again then.  A header stamp (a
	 * rollback-journal directory) is kept only as taken again inside the
	 * read transaction, when the header is the committed one (see
	 * shardio_change_stamp).
	 */
	stamp_kind = shardio_change_stamp(dir->db, &stamp);
	if (stamp_kind != 0 && dir->stamp_valid &&
		memcmp(&stamp, &dir->stamp, sizeof(stamp)) == 0)
		return dir;

	if (sqlite3_step(dir->version_stmt) != SQLITE_ROW)
	{
		sqlite3_reset(dir->version_stmt);
		dir_error(dir,
				  gettext_noop("could not read the data version in directory \"%s\""));
	}
	version = sqlite3_column_int64(dir->version_stmt, 0);
	if (stamp_kind != SHARDIO_STAMP_WAL)
		stamp_kind = shardio_change_stamp(dir->db, &stamp) ==
			SHARDIO_STAMP_HEADER ? SHARDIO_STAMP_HEADER : 0;
	sqlite3_reset(dir->version_stmt);
	if (version != dir->data_version)
	{
		/* shard_map's columns may have changed with it */
		if (schema_version(dir) != dir->schema_version)
		{
			finalize_lookups(dir);
			check_directory(dir, opts);
		}
		reset_cache(dir);
		dir->data_version = version;
	}
	dir->stamp = stamp;
	dir->stamp_valid = (stamp_kind != 0);
	return dir;
}

/*
 * shard_directory_changed
 *		Drop the cache after this backend wrote to the directory through
 *		another handle, without waiting for the next version check.
 */
void
shard_directory_changed(ShardDirectory *dir)
{
	reset_cache(dir);
	dir->data_version = -1;
	dir->stamp_valid = false;
}

/*
 * shard_directory_writer_gone
 *		The transaction that wrote a directory through db ended: its
 *		directories read through their own handles again (prepared anew at
 *		their next use, where an error may be raised), with their caches
 *		emptied.
 */
void
shard_directory_writer_gone(sqlite3 *db)
{
	ListCell   *lc;

	foreach(lc, directories)
	{
		ShardDirectory *dir = (ShardDirectory *) lfirst(lc);

		if (dir->db != db)
			continue;
		finalize_lookups(dir);
		dir->db = dir->read_db;
		reset_cache(dir);
		dir->data_version = -1;
		dir->stamp_valid = false;
	}
}

/*
 * shard_directory_handle
 *		The read-only handle on the control database.
 */
sqlite3 *
shard_directory_handle(ShardDirectory *dir)
{
	return dir->db;
}

/*
 * column_pstrdup
 *		Copy a text column into the directory cache, or NULL.
 */
static char *
column_pstrdup(sqlite3_stmt *stmt, int col)
{
	const char *s = (const char *) sqlite3_column_text(stmt, col);

	return s ? pstrdup(s) : NULL;
}

/*
 * fill_location
 *		Build a ShardLocation from a shard_map row (shard_id, status,
 *		target_shard_id in columns first .. first + 2): DONE means the move
 *		has cut over, so the target answers for the tenant.
 */
static void
fill_location(ShardLocation *loc, const char *tenant, sqlite3_stmt *stmt,
			  int first)
{
	loc->tenant = pstrdup(tenant);
	loc->shard_id = column_pstrdup(stmt, first);
	loc->status = column_pstrdup(stmt, first + 1);
	loc->target_shard_id = column_pstrdup(stmt, first + 2);
	if (loc->shard_id == NULL)
		loc->shard_id = pstrdup("");
	if (loc->status == NULL)
		loc->status = pstrdup("ACTIVE");
	if (strcmp(loc->status, "DONE") == 0 && loc->target_shard_id != NULL)
		loc->owner = loc->target_shard_id;
	else
		loc->owner = loc->shard_id;
}

/*
 * locate_tenant_file
 *		Where a tenant's rows are under the tenant_path pattern: in its own
 *		file, whose shard id is the tenant id; NULL when the file does not
 *		exist (an unknown tenant).  Whether it exists is asked every time
 *		(one stat), since files come and go without the directory changing:
 *		a file created or removed is seen by the next statement.
 */
static ShardLocation *
locate_tenant_file(ShardDirectory *dir, const char *tenant)
{
	ShardInfo  *info;
	TenantEntry *entry;
	MemoryContext oldcxt;
	struct stat st;
	bool		found = false;

	shard_tenant_id_path_check(tenant);
	info = shard_directory_shard(dir, tenant);
	if (info == NULL || stat(info->path, &st) != 0)
		return NULL;
	oldcxt = MemoryContextSwitchTo(dir->cxt);
	if (strlen(tenant) < TENANT_KEY_LEN)
		entry = hash_search(dir->tenants, tenant, HASH_ENTER, &found);
	else
		entry = palloc0(sizeof(TenantEntry));
	if (!found)
	{
		entry->found = true;
		entry->loc.tenant = pstrdup(tenant);
		entry->loc.owner = entry->loc.shard_id = pstrdup(tenant);
		entry->loc.status = pstrdup("ACTIVE");
		entry->loc.target_shard_id = NULL;
	}
	MemoryContextSwitchTo(oldcxt);
	return &entry->loc;
}

/*
 * shard_directory_locate
 *		Where a tenant's rows are; NULL for a tenant the directory does not
 *		know.  The result lives until the directory next changes.
 */
ShardLocation *
shard_directory_locate(ShardDirectory *dir, const char *tenant)
{
	bool		cacheable = strlen(tenant) < TENANT_KEY_LEN;
	TenantEntry *entry;
	ShardLocation loc;
	MemoryContext oldcxt;
	bool		found;
	int			rc;

	if (dir->tenant_path != NULL)
		return locate_tenant_file(dir, tenant);
	if (cacheable)
	{
		entry = hash_search(dir->tenants, tenant, HASH_FIND, NULL);
		if (entry)
			return entry->found ? &entry->loc : NULL;
	}

	sqlite3_bind_text(dir->locate_stmt, 1, tenant, -1, SQLITE_STATIC);
	rc = sqlite3_step(dir->locate_stmt);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
	{
		sqlite3_reset(dir->locate_stmt);
		dir_error(dir,
				  gettext_noop("could not look up a tenant in directory \"%s\""));
	}

	oldcxt = MemoryContextSwitchTo(dir->cxt);
	memset(&loc, 0, sizeof(loc));
	if (rc == SQLITE_ROW)
		fill_location(&loc, tenant, dir->locate_stmt, 0);
	MemoryContextSwitchTo(oldcxt);
	sqlite3_reset(dir->locate_stmt);

	/*
	 * A tenant must map to a shard the directory can resolve.  Checked
	 * before anything is cached, so that an error leaves no entry behind.
	 */
	if (rc == SQLITE_ROW && shard_directory_shard(dir, loc.owner) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("tenant \"%s\" is mapped to shard \"%s\", which is not in the directory",
						tenant, loc.owner),
				 errdetail("Table \"shards\" of directory \"%s\" has no row for shard \"%s\".",
						   dir->path, loc.owner)));

	/*
	 * A tenant read as MIGRATING: a move whose session is gone may have left
	 * the source fenced; the move's code, through shard_migrating_hook,
	 * lifts it (cheap while the move runs).  Not while this transaction
	 * writes the directory.
	 */
	if (rc == SQLITE_ROW && strcmp(loc.status, "MIGRATING") == 0 &&
		dir->db == dir->read_db && !IsParallelWorker() &&
		shard_migrating_hook != NULL)
		shard_migrating_hook(dir, shard_server_options(dir->serverid),
							 tenant, loc.shard_id, loc.target_shard_id);

	if (!cacheable)
	{
		ShardLocation *copy;

		if (rc != SQLITE_ROW)
			return NULL;
		copy = MemoryContextAlloc(dir->cxt, sizeof(ShardLocation));
		*copy = loc;
		return copy;
	}
	entry = hash_search(dir->tenants, tenant, HASH_ENTER, &found);
	entry->found = (rc == SQLITE_ROW);
	entry->loc = loc;
	return entry->found ? &entry->loc : NULL;
}

/*
 * check_shard_id_for_pattern
 *		A shard id substituted into the shard_path pattern must stay one
 *		file name: no slash, no "..", nothing empty.
 */
static void
check_shard_id_for_pattern(ShardDirectory *dir, const char *shard_id)
{
	if (shard_id[0] == '\0' || strchr(shard_id, '/') != NULL ||
		strcmp(shard_id, "..") == 0 || strcmp(shard_id, ".") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("shard id \"%s\" cannot be used in option \"shard_path\"",
						shard_id),
				 errdetail("Shard ids that name files through a pattern must not be empty, \".\" or \"..\", nor contain \"/\".")));
}

/*
 * directory_relative_path
 *		The path of a shard, from the directory or its pattern, made
 *		absolute against the directory's folder and checked.
 */
static char *
directory_relative_path(ShardDirectory *dir, const char *shard_id,
						const char *path, bool from_pattern)
{
	ShardServerOptions fake;
	char	   *resolved;

	memset(&fake, 0, sizeof(fake));
	fake.directory = dir->path;
	resolved = shard_resolve_path(&fake, path);
	shard_check_path_inside(dir->path, dir->allow_outside, shard_id, path,
							resolved, from_pattern);
	return resolved;
}

/*
 * expand_pattern
 *		The path of a shard named through the shard_path pattern.
 */
static char *
expand_pattern(ShardDirectory *dir, const char *shard_id)
{
	StringInfoData buf;
	const char *p;

	check_shard_id_for_pattern(dir, shard_id);
	initStringInfo(&buf);
	for (p = dir->shard_path; *p; p++)
	{
		if (p[0] == '%' && p[1] == 's')
		{
			appendStringInfoString(&buf, shard_id);
			p++;
		}
		else if (p[0] == '%' && p[1] == '%')
		{
			appendStringInfoChar(&buf, '%');
			p++;
		}
		else
			appendStringInfoChar(&buf, *p);
	}
	return directory_relative_path(dir, shard_id, buf.data, true);
}

/*
 * shard_directory_shard
 *		The file of a shard, or NULL when the directory has no such shard.
 *		The result lives until the directory next changes.
 */
ShardInfo *
shard_directory_shard(ShardDirectory *dir, const char *shard_id)
{
	bool		cacheable = strlen(shard_id) < TENANT_KEY_LEN;
	ShardEntry *entry;
	MemoryContext oldcxt;
	bool		found;
	char	   *path = NULL;

	if (cacheable)
	{
		entry = hash_search(dir->shards, shard_id, HASH_FIND, NULL);
		if (entry)
			return entry->found ? &entry->info : NULL;
	}

	oldcxt = MemoryContextSwitchTo(dir->cxt);
	if (dir->has_shards_table && dir->tenant_path == NULL)
	{
		int			rc;

		sqlite3_bind_text(dir->shard_stmt, 1, shard_id, -1, SQLITE_STATIC);
		rc = sqlite3_step(dir->shard_stmt);
		if (rc == SQLITE_ROW)
		{
			const char *stored = (const char *) sqlite3_column_text(dir->shard_stmt, 0);

			if (stored == NULL || stored[0] == '\0')
			{
				sqlite3_reset(dir->shard_stmt);
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("shard \"%s\" has no path in directory \"%s\"",
								shard_id, dir->path),
						 errdetail("Column \"path\" of table \"shards\" is empty for this shard.")));
			}
			path = pstrdup(stored);
		}
		sqlite3_reset(dir->shard_stmt);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		{
			MemoryContextSwitchTo(oldcxt);
			dir_error(dir,
					  gettext_noop("could not look up a shard in directory \"%s\""));
		}
		/* checked once the statement is reset: it may raise an error */
		if (path != NULL)
		{
			char	   *stored = path;

			path = directory_relative_path(dir, shard_id, stored, false);
			pfree(stored);
		}
	}
	else if (dir->tenant_path != NULL)
	{
		shard_tenant_id_path_check(shard_id);
		path = directory_relative_path(dir, shard_id,
									   shard_tenant_path_expand(dir->tenant_path,
																shard_id),
									   true);
	}
	else
		path = expand_pattern(dir, shard_id);

	if (!cacheable)
	{
		ShardInfo  *info = NULL;

		if (path)
		{
			info = palloc0(sizeof(ShardInfo));
			info->shard_id = pstrdup(shard_id);
			info->path = path;
		}
		MemoryContextSwitchTo(oldcxt);
		return info;
	}
	entry = hash_search(dir->shards, shard_id, HASH_ENTER, &found);
	entry->found = (path != NULL);
	entry->info.shard_id = pstrdup(shard_id);
	entry->info.path = path;
	MemoryContextSwitchTo(oldcxt);
	return entry->found ? &entry->info : NULL;
}

/* The ids and paths of the tenant files' list, packed in blocks of this. */
#define FILES_TEXT_BLOCK	(64 * 1024)

/*
 * files_text
 *		A copy of str in the tenant files' list's blocks of text (*block,
 *		with *left bytes free), a new block begun in cxt when it is full.
 */
static char *
files_text(char **block, Size *left, MemoryContext cxt, const char *str)
{
	Size		len = strlen(str) + 1;
	char	   *copy;

	if (len > *left)
	{
		*left = Max(len, FILES_TEXT_BLOCK);
		*block = MemoryContextAlloc(cxt, *left);
	}
	copy = memcpy(*block, str, len);
	*block += len;
	*left -= len;
	return copy;
}

/*
 * list_tenant_files
 *		The files the tenant_path pattern matches, as shards named by their
 *		tenants, listed once per statement: files come and go without the
 *		directory changing.  The list lives until the next statement lists
 *		them again, or as long as the listing stands unchanged
 *		(shard_tenant_path_discover).  A fleet may have a hundred thousand
 *		files, so the list is compact: one array of ShardInfo, the ids and
 *		paths packed in blocks of text, and what listing and making the
 *		paths leave behind is freed at once.
 */
static List *
list_tenant_files(ShardDirectory *dir)
{
	TimestampTz stmt = GetCurrentStatementStartTimestamp();
	MemoryContext oldcxt;
	MemoryContext tmpcxt;
	MemoryContext filecxt;
	List	   *tenants;
	uint64		generation;
	ShardInfo  *infos;
	char	   *block = NULL;
	Size		left = 0;
	char	   *base;
	char	   *slash;
	ListCell   *lc;

	if (dir->files != NIL && dir->files_stmt == stmt)
		return dir->files;
	tmpcxt = AllocSetContextCreate(CurrentMemoryContext,
								   "sqlite_shard_fdw tenant file listing",
								   ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(tmpcxt);
	base = pstrdup(dir->path);
	slash = strrchr(base, '/');
	if (slash)
		slash[slash == base ? 1 : 0] = '\0';
	/* the listing unchanged since this list was made: it stands */
	generation = dir->files_generation;
	tenants = shard_tenant_path_discover(dir->tenant_path, base, &generation);
	if (tenants == NIL && generation != 0 && dir->files != NIL)
	{
		MemoryContextSwitchTo(oldcxt);
		MemoryContextDelete(tmpcxt);
		dir->files_stmt = stmt;
		return dir->files;
	}
	MemoryContextReset(dir->files_cxt);
	dir->files = NIL;
	infos = MemoryContextAllocExtended(dir->files_cxt,
									   sizeof(ShardInfo) *
									   Max(list_length(tenants), 1),
									   MCXT_ALLOC_HUGE);
	filecxt = AllocSetContextCreate(tmpcxt,
									"sqlite_shard_fdw tenant file path",
									ALLOCSET_SMALL_SIZES);
	foreach(lc, tenants)
	{
		const char *tenant = lfirst(lc);
		ShardInfo  *info = &infos[foreach_current_index(lc)];
		char	   *path;

		MemoryContextSwitchTo(filecxt);
		path = directory_relative_path(dir, tenant,
									   shard_tenant_path_expand(dir->tenant_path,
																tenant),
									   true);
		info->shard_id = files_text(&block, &left, dir->files_cxt, tenant);
		info->path = files_text(&block, &left, dir->files_cxt, path);
		MemoryContextSwitchTo(dir->files_cxt);
		dir->files = lappend(dir->files, info);
		MemoryContextReset(filecxt);
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(tmpcxt);
	/* made whole: the list stands for this listing */
	dir->files_generation = generation;
	dir->files_stmt = stmt;
	return dir->files;
}

/*
 * shard_directory_shards
 *		Every shard of the fleet, ordered by shard id: the rows of "shards",
 *		or without that table every shard that shard_map names.
 */
List *
shard_directory_shards(ShardDirectory *dir)
{
	sqlite3_stmt *stmt;
	char		errbuf[SHARDIO_ERRLEN];
	List	   *ids = NIL;
	ListCell   *lc;
	int			rc;

	if (dir->tenant_path != NULL)
		return list_tenant_files(dir);
	if (dir->shards_loaded)
		return dir->shard_list;

	if (shardio_prepare(dir->db, dir->has_shards_table ?
						"SELECT shard_id FROM shards ORDER BY shard_id" :
						dir->has_target ?
						"SELECT shard_id FROM shard_map UNION "
						"SELECT target_shard_id FROM shard_map "
						"WHERE target_shard_id IS NOT NULL ORDER BY 1" :
						"SELECT DISTINCT shard_id FROM shard_map ORDER BY 1",
						0, &stmt, errbuf) != SQLITE_OK)
		dir_error(dir,
				  gettext_noop("could not list the shards in directory \"%s\""));
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		const char *id = (const char *) sqlite3_column_text(stmt, 0);

		ids = lappend(ids, pstrdup(id ? id : ""));
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		dir_error(dir,
				  gettext_noop("could not list the shards in directory \"%s\""));

	dir->shard_list = NIL;
	foreach(lc, ids)
	{
		ShardInfo  *info = shard_directory_shard(dir, (char *) lfirst(lc));
		MemoryContext oldcxt;

		if (info == NULL)
			continue;
		oldcxt = MemoryContextSwitchTo(dir->cxt);
		dir->shard_list = lappend(dir->shard_list, info);
		MemoryContextSwitchTo(oldcxt);
	}
	dir->shards_loaded = true;
	return dir->shard_list;
}

/*
 * shard_directory_moving
 *		The tenants that are in a move (a target shard other than their
 *		shard is set, whatever the status): their rows may exist on two
 *		shards, and only the owner's count.  A tool may copy rows to the
 *		target before it marks the tenant MIGRATING: an ACTIVE tenant with
 *		a target is read from its shard, and the target's copy is skipped.
 */
List *
shard_directory_moving(ShardDirectory *dir)
{
	sqlite3_stmt *stmt;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	if (dir->moving_loaded)
		return dir->moving;
	dir->moving = NIL;
	dir->moving_loaded = true;
	if (!dir->has_target)
		return NIL;				/* no tenant can be moving */
	dir->moving_loaded = false;

	if (shardio_prepare(dir->db,
						psprintf("SELECT tenant_id, shard_id, %s "
								 "FROM shard_map WHERE target_shard_id IS NOT NULL "
								 "AND target_shard_id <> shard_id",
								 location_columns(dir)),
						0, &stmt, errbuf) != SQLITE_OK)
		dir_error(dir,
				  gettext_noop("could not list the tenants being moved in directory \"%s\""));
	dir->moving = NIL;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(dir->cxt);
		ShardLocation *loc = palloc0(sizeof(ShardLocation));
		const char *tenant = (const char *) sqlite3_column_text(stmt, 0);

		fill_location(loc, tenant ? tenant : "", stmt, 1);
		dir->moving = lappend(dir->moving, loc);
		MemoryContextSwitchTo(oldcxt);
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		dir_error(dir,
				  gettext_noop("could not list the tenants being moved in directory \"%s\""));
	dir->moving_loaded = true;
	return dir->moving;
}

/*
 * shard_directory_stale_tenants
 *		The tenants in a move whose rows on this shard are not the owner's:
 *		the target's copy before cutover, the source's leftovers after it.
 *		Every reader skips them, so each row counts once at every moment of
 *		a move.
 */
List *
shard_directory_stale_tenants(ShardDirectory *dir, const char *shard_id)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, shard_directory_moving(dir))
	{
		ShardLocation *loc = (ShardLocation *) lfirst(lc);
		const char *stale = (strcmp(loc->owner, loc->shard_id) == 0) ?
		loc->target_shard_id : loc->shard_id;

		if (stale != NULL && strcmp(stale, shard_id) == 0)
			result = lappend(result, pstrdup(loc->tenant));
	}
	return result;
}

/*
 * shard_directory_tenants
 *		Every tenant of the directory, ordered by id, as ShardLocations; with
 *		shard_id, those that shard answers for.  Read afresh each time (not
 *		cached: a listing, not a lookup); the results live in the caller's
 *		memory context.
 */
List *
shard_directory_tenants(ShardDirectory *dir, const char *shard_id)
{
	sqlite3_stmt *stmt;
	char		errbuf[SHARDIO_ERRLEN];
	List	   *result = NIL;
	int			rc;

	if (shardio_prepare(dir->db,
						psprintf("SELECT tenant_id, shard_id, %s FROM shard_map "
								 "ORDER BY tenant_id", location_columns(dir)),
						0, &stmt, errbuf) != SQLITE_OK)
		dir_error(dir,
				  gettext_noop("could not list the tenants in directory \"%s\""));
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		ShardLocation *loc = palloc0(sizeof(ShardLocation));
		const char *tenant = (const char *) sqlite3_column_text(stmt, 0);

		fill_location(loc, tenant ? tenant : "", stmt, 1);
		if (shard_id == NULL || strcmp(loc->owner, shard_id) == 0)
			result = lappend(result, loc);
		else
			pfree(loc);
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		dir_error(dir,
				  gettext_noop("could not list the tenants in directory \"%s\""));
	return result;
}

/*
 * shard_directory_file_tenant
 *		The tenant whose file a shard is, on a server of layout
 *		'file_per_tenant': under tenant_path the shard id itself; otherwise
 *		the one tenant shard_map maps to it (read for every shard at once,
 *		again whenever the directory changes).  A shard of no tenant, or of
 *		several, is an error: whose rows it holds cannot be told.
 */
const char *
shard_directory_file_tenant(ShardDirectory *dir, const char *shard_id)
{
	FileTenantEntry *entry;

	if (dir->tenant_path != NULL)
		return shard_id;
	if (dir->file_tenants == NULL)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(dir->cxt);
		HASHCTL		ctl;
		ListCell   *lc;
		HTAB	   *map;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = TENANT_KEY_LEN;
		ctl.entrysize = sizeof(FileTenantEntry);
		ctl.hcxt = dir->cxt;
		map = hash_create("sqlite_shard_fdw tenant files", 256, &ctl,
						  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
		foreach(lc, shard_directory_tenants(dir, NULL))
		{
			ShardLocation *loc = lfirst(lc);
			bool		found;

			if (strlen(loc->owner) >= TENANT_KEY_LEN)
				continue;		/* such a shard is reported below */
			entry = hash_search(map, loc->owner, HASH_ENTER, &found);
			if (!found)
			{
				entry->tenant = loc->tenant;
				entry->other = NULL;
			}
			else if (entry->other == NULL)
				entry->other = loc->tenant;
		}
		MemoryContextSwitchTo(oldcxt);
		dir->file_tenants = map;
	}
	entry = (strlen(shard_id) < TENANT_KEY_LEN) ?
		hash_search(dir->file_tenants, shard_id, HASH_FIND, NULL) : NULL;
	if (entry == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("shard \"%s\" is the file of no tenant", shard_id),
				 errdetail("With layout \"file_per_tenant\", \"shard_map\" of directory \"%s\" must map exactly one tenant to each shard.",
						   dir->path)));
	if (entry->other != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("shard \"%s\" is the file of more than one tenant",
						shard_id),
				 errdetail("Tenants \"%s\" and \"%s\" are both mapped to it; with layout \"file_per_tenant\", \"shard_map\" of directory \"%s\" must map exactly one tenant to each shard.",
						   entry->tenant, entry->other, dir->path)));
	return entry->tenant;
}
