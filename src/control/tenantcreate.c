/*-------------------------------------------------------------------------
 *
 * tenantcreate.c
 *		  tenant_create: a tenant's own SQLite file, made from a template
 *
 * On a server of layout 'file_per_tenant' a tenant exists once its file
 * does.  tenant_create makes that file in one step from a template
 * database (its schema, indexes and seed rows), so that an INSERT for the
 * new tenant can follow at once:
 *
 * - the template is opened read-only and copied with SQLite's backup API,
 *   which copies a consistent snapshot even while the template is written;
 * - the copy goes to a temporary name in the target folder, created with
 *   the mode of the directory file (the fleet's files are shared with the
 *   application, which the server's umask would shut out), gets the
 *   template's journal mode, and is flushed to disk;
 * - it is then linked under the tenant's name, which fails rather than
 *   replaces when that name exists, so two sessions creating the same
 *   tenant cannot both succeed, and a reader never sees half a file.
 *
 * The hashed folders of a tenant_path pattern are created when missing.
 * Where the directory names the files, the tenant gets a shard of its own
 * (shards row, file tenants/<tenant>.db, or the file shard_path names) and
 * its shard_map row, written in the transaction's directory transaction
 * as tenant_add writes it.  Should the transaction roll back, the file it
 * created is removed again.
 *
 * tenant_remove archives a tenant's file with the same copy
 * (shard_tenant_file_copy), from a handle holding the file's write lock.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <sys/stat.h>
#include <unistd.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(shard_tenant_create);

/* Files this transaction created, removed if it aborts (TopMemoryContext). */
static List *created_files = NIL;
static bool xact_callback_registered = false;

/*
 * created_files_callback
 *		At the end of a transaction forget the files it created; on abort
 *		remove them first, since no directory row, and no commit, vouches
 *		for them.
 */
static void
created_files_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_PARALLEL_COMMIT &&
		event != XACT_EVENT_PREPARE && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_ABORT)
		return;
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		foreach(lc, created_files)
		{
			const char *path = lfirst(lc);

			if (unlink(path) != 0 && errno != ENOENT)
				ereport(WARNING,
						(errcode_for_file_access(),
						 errmsg("could not remove file \"%s\": %m", path)));
			/* SQLite's files beside it, should a read have opened it */
			(void) unlink(psprintf("%s-wal", path));
			(void) unlink(psprintf("%s-shm", path));
			(void) unlink(psprintf("%s-journal", path));
		}
	list_free_deep(created_files);
	created_files = NIL;
}

/*
 * remember_created
 *		Have path removed should the transaction abort.
 */
static void
remember_created(const char *path)
{
	MemoryContext oldcxt;

	if (!xact_callback_registered)
	{
		RegisterXactCallback(created_files_callback, NULL);
		xact_callback_registered = true;
	}
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	created_files = lappend(created_files, pstrdup(path));
	MemoryContextSwitchTo(oldcxt);
}

/*
 * fleet_folder
 *		The folder of the directory file, where relative paths start.
 */
static char *
fleet_folder(ShardServerOptions *opts)
{
	char	   *base = pstrdup(opts->directory);
	char	   *slash = strrchr(base, '/');

	if (slash)
		slash[slash == base ? 1 : 0] = '\0';
	return base;
}

/*
 * make_folders
 *		Create the missing folders above file (the hashed folders of a
 *		pattern, an archive folder) with mode, whatever the umask.
 */
static void
make_folders(const char *file, mode_t mode)
{
	char	   *path = pstrdup(file);
	char	   *p;

	for (p = path + 1; *p; p++)
	{
		struct stat st;

		if (*p != '/')
			continue;
		*p = '\0';
		if (stat(path, &st) != 0)
		{
			if (mkdir(path, mode) != 0 && errno != EEXIST)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not create folder \"%s\": %m", path)));
			if (chmod(path, mode) != 0)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not set the mode of folder \"%s\": %m",
								path)));
		}
		*p = '/';
	}
	pfree(path);
}

/*
 * copy_failed
 *		Remove what a failed copy left at tmp and report the failure.
 */
static void
copy_failed(const char *tenant, const char *tmp, int fd, const char *what,
			const char *sqlite_msg)
{
	int			save_errno = errno;

	if (fd >= 0)
		CloseTransientFile(fd);
	unlink(tmp);
	unlink(psprintf("%s-journal", tmp));
	unlink(psprintf("%s-wal", tmp));
	unlink(psprintf("%s-shm", tmp));
	errno = save_errno;
	if (sqlite_msg != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("could not write the file of tenant \"%s\": %s",
						tenant, what),
				 errdetail_internal("%s", sqlite_msg)));
	ereport(ERROR,
			(errcode_for_file_access(),
			 errmsg("could not write the file of tenant \"%s\": %s: %m",
					tenant, what)));
}

/*
 * shard_tenant_file_copy
 *		Write the main database of src to target, a file that must not
 *		exist (42710 otherwise), atomically: through a temporary file in the
 *		same folder, flushed, then linked under target's name.  The file
 *		gets mode, and journal mode journal ("wal", "delete", ...: src's
 *		when NULL).  Missing folders above target are created with the
 *		mode of the folder of the directory file.
 */
void
shard_tenant_file_copy(ShardServerOptions *opts, sqlite3 *src,
					   const char *tenant, const char *target)
{
	char	   *tmp;
	char	   *folder;
	char	   *slash;
	struct stat st;
	mode_t		mode = 0660;		/* directory_init's default */
	mode_t		folder_mode = 0770;
	char		journal[32];
	char		errbuf[SHARDIO_ERRLEN];
	sqlite3    *dst;
	sqlite3_backup *backup;
	sqlite3_stmt *stmt;
	int			fd;
	int			rc;

	if (stat(target, &st) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("file \"%s\" of tenant \"%s\" already exists",
						target, tenant)));

	/* the fleet's modes: those of the directory file and its folder */
	if (stat(opts->directory, &st) == 0)
		mode = (st.st_mode & 0777) | 0600;
	if (stat(fleet_folder(opts), &st) == 0)
		folder_mode = (st.st_mode & 0777) | 0700;
	make_folders(target, folder_mode);

	/* the template's journal mode, read before anything is written */
	strlcpy(journal, "delete", sizeof(journal));
	if (sqlite3_prepare_v2(src, "PRAGMA journal_mode", -1, &stmt, NULL) == SQLITE_OK)
	{
		if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0))
			strlcpy(journal, (const char *) sqlite3_column_text(stmt, 0),
					sizeof(journal));
		sqlite3_finalize(stmt);
	}
	if (strspn(journal, "abcdefghijklmnopqrstuvwxyz") != strlen(journal))
		strlcpy(journal, "delete", sizeof(journal));

	/* a name no tenant has: the pattern's fixed parts are not at its end */
	folder = pstrdup(target);
	slash = strrchr(folder, '/');
	if (slash)
		*slash = '\0';
	tmp = psprintf("%s/.%s.%d.tmp", folder, slash ? slash + 1 : target,
				   MyProcPid);
	fd = OpenTransientFilePerm(tmp, O_RDWR | O_CREAT | O_EXCL | PG_BINARY,
							   mode);
	if (fd < 0)
		copy_failed(tenant, tmp, -1, "could not create a temporary file", NULL);
	if (fchmod(fd, mode) != 0)
		copy_failed(tenant, tmp, fd, "could not set its mode", NULL);

	rc = shardio_open(tmp, SHARDIO_OPEN_READWRITE, 0, &dst, errbuf);
	if (rc != SQLITE_OK)
		copy_failed(tenant, tmp, fd, "could not open the copy", errbuf);
	backup = sqlite3_backup_init(dst, "main", src, "main");
	if (backup == NULL)
	{
		strlcpy(errbuf, sqlite3_errmsg(dst), sizeof(errbuf));
		shardio_close(dst);
		copy_failed(tenant, tmp, fd, "could not copy the database", errbuf);
	}
	rc = sqlite3_backup_step(backup, -1);
	sqlite3_backup_finish(backup);
	if (rc != SQLITE_DONE)
	{
		strlcpy(errbuf, sqlite3_errstr(rc), sizeof(errbuf));
		shardio_close(dst);
		copy_failed(tenant, tmp, fd, "could not copy the database", errbuf);
	}
	if (shardio_exec(dst, psprintf("PRAGMA journal_mode = %s", journal),
					 errbuf) != SQLITE_OK)
	{
		shardio_close(dst);
		copy_failed(tenant, tmp, fd, "could not set its journal mode", errbuf);
	}
	shardio_close(dst);
	if (pg_fsync(fd) != 0)
		copy_failed(tenant, tmp, fd, "could not flush it to disk", NULL);
	CloseTransientFile(fd);

	/* in place, unless another session made it meanwhile */
	if (link(tmp, target) != 0)
	{
		int			save_errno = errno;

		unlink(tmp);
		if (save_errno == EEXIST)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("file \"%s\" of tenant \"%s\" already exists",
							target, tenant)));
		errno = save_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write the file of tenant \"%s\": could not link \"%s\" to \"%s\": %m",
						tenant, tmp, target)));
	}
	unlink(tmp);
	fsync_fname(folder, true);
}

/*
 * shard_tenant_create
 *		tenant_create(server, tenant [, template]): make a tenant's file on
 *		a server of layout 'file_per_tenant' from a template database (the
 *		server option tenant_template when not given), and register it in
 *		the directory when the directory names the files.  Returns the
 *		file's path.
 */
Datum
shard_tenant_create(PG_FUNCTION_ARGS)
{
	ShardServerOptions *opts;
	ShardDirectory *dir;
	char	   *tenant;
	char	   *template;
	char	   *template_path;
	char	   *target;
	char	   *relpath = NULL;
	bool		shards_table = false;
	sqlite3    *src;
	char		errbuf[SHARDIO_ERRLEN];

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("server and tenant must not be null")));
	opts = shard_admin_server(PG_GETARG_NAME(0));
	tenant = text_to_cstring(PG_GETARG_TEXT_PP(1));
	shard_require_file_privilege(true, gettext_noop("permission denied to create a tenant"),
								 gettext_noop("Only roles with privileges of the \"%s\" role may create a tenant."));
	if (!opts->file_per_tenant)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot create a file for tenant \"%s\": server \"%s\" does not keep one file per tenant",
						tenant, opts->servername),
				 errhint("Register the tenant on a shard with tenant_add('%s', '%s').",
						 opts->servername, tenant)));
	shard_tenant_id_path_check(tenant);

	template = (PG_NARGS() > 2 && !PG_ARGISNULL(2)) ?
		text_to_cstring(PG_GETARG_TEXT_PP(2)) : opts->tenant_template;
	if (template == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("no template to create tenant \"%s\" from", tenant),
				 errhint("Give one, as in tenant_create('%s', '%s', 'template.db'), or set the server option \"tenant_template\".",
						 opts->servername, tenant)));

	/* where the file goes */
	dir = shard_directory_get(opts);
	if (opts->tenant_path != NULL)
		target = shard_directory_shard(dir, tenant)->path;
	else
	{
		ShardConn  *conn = shard_conn_directory_for_write(opts, false);

		shards_table = shard_directory_has_column(shard_conn_db(conn),
												  "shards", "shard_id");
		shard_conn_release(conn);
		if (shards_table || opts->shard_path == NULL)
		{
			relpath = psprintf("tenants/%s.db", tenant);
			target = shard_resolve_checked_path(opts, tenant, relpath);
		}
		else
			target = shard_directory_shard(dir, tenant)->path;
	}

	/* the template, confined to the fleet's folder as shard files are */
	template_path = shard_resolve_checked_path(opts, tenant, template);
	if (shardio_file_state(template_path) != SHARDIO_FILE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FILE),
				 errmsg("could not create tenant \"%s\": template \"%s\" does not exist or cannot be read",
						tenant, template)));
	if (shard_file_kind(template_path) == SHARD_FILE_NOT_SQLITE ||
		shardio_open(template_path, 0, opts->busy_timeout_ms, &src,
					 errbuf) != SQLITE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("could not create tenant \"%s\": template \"%s\" is not a valid SQLite database",
						tenant, template)));

	PG_TRY();
	{
		shard_tenant_file_copy(opts, src, tenant, target);
	}
	PG_FINALLY();
	{
		shardio_close(src);
	}
	PG_END_TRY();
	remember_created(target);

	/* a tenant of a directory-named fleet: its shard and its row */
	if (opts->tenant_path == NULL)
	{
		bool		added;

		if (shards_table)
			(void) shard_register_shard(opts, tenant, relpath, false);
		(void) shard_register_tenant(opts, tenant, tenant, false, 0, &added);
	}
	PG_RETURN_TEXT_P(cstring_to_text(target));
}
