/*-------------------------------------------------------------------------
 *
 * adopt.c
 *		  directory_adopt: register the shards and tenants a fleet already has
 *
 * A fleet usually exists before the server does: SQLite files that hold
 * several tenants each, written by an application.  Until the directory
 * knows a tenant, a routed statement finds no shard for it and returns no
 * rows, while a fan-out counts its rows: wrong answers without an error.
 * directory_adopt makes the directory say what the files hold.  With a
 * folder, every SQLite file in it that no shard names is added as a shard
 * (named after the file).  Then every tenant found in the shards' tables
 * that the directory does not know is registered on the shard holding its
 * rows, by the tenant rule every other path uses (tenantrows.c, the tables
 * and values shard_orphans reads).  A tenant found on several shards is
 * not registered: which copy is the tenant's is for the operator to say
 * (tenant_add, then the other copies are what shard_orphans lists).  It
 * all happens inside the caller's transaction, so a failure adds nothing;
 * run again, it finds nothing more to do.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <sys/stat.h>

#include "funcapi.h"
#include "storage/fd.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(shard_directory_adopt);

/* Rows of a tenant the directory does not know, on one shard. */
typedef struct FoundTenant
{
	char	   *tenant;
	char	   *shard_id;
	int64		rows;
} FoundTenant;

/*
 * found_cmp
 *		list_sort order of FoundTenant: by tenant, then by shard, so that
 *		a tenant's shards are neighbours.
 */
static int
found_cmp(const ListCell *a, const ListCell *b)
{
	const FoundTenant *fa = lfirst(a);
	const FoundTenant *fb = lfirst(b);
	int			c = strcmp(fa->tenant, fb->tenant);

	return c != 0 ? c : strcmp(fa->shard_id, fb->shard_id);
}

/*
 * name_cmp
 *		list_sort order of file names.
 */
static int
name_cmp(const ListCell *a, const ListCell *b)
{
	return strcmp(lfirst(a), lfirst(b));
}

/*
 * sqlite_file_name
 *		The shard id a file of an adopted folder gets: its name without a
 *		".db", ".sqlite" or ".sqlite3" ending, or NULL for a name with none
 *		of them (not taken for a shard).
 */
static char *
sqlite_file_name(const char *name)
{
	const char *endings[] = {".db", ".sqlite", ".sqlite3"};
	size_t		len = strlen(name);
	int			i;

	for (i = 0; i < lengthof(endings); i++)
	{
		size_t		elen = strlen(endings[i]);

		if (len > elen && strcmp(name + len - elen, endings[i]) == 0)
			return pnstrdup(name, len - elen);
	}
	return NULL;
}

/*
 * add_folder_shards
 *		Add as a shard every SQLite file of folder (relative paths from the
 *		directory file's folder; not its subfolders) that no shard names,
 *		in name order, each named after its file; a file that does not
 *		begin with SQLite's header is left out, with a NOTICE.  Returns the
 *		shard ids added.
 */
static List *
add_folder_shards(ShardServerOptions *opts, const char *folder)
{
	char	   *resolved = shard_resolve_path(opts, folder);
	DIR		   *dir;
	struct dirent *de;
	List	   *names = NIL;
	List	   *added = NIL;
	ListCell   *lc;
	struct stat st;

	if (stat(resolved, &st) != 0 || !S_ISDIR(st.st_mode))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FILE),
				 errmsg("folder \"%s\" does not exist", resolved),
				 errdetail("A relative folder is taken from the folder of directory \"%s\".",
						   opts->directory)));
	dir = AllocateDir(resolved);
	while ((de = ReadDir(dir, resolved)) != NULL)
		if (sqlite_file_name(de->d_name) != NULL)
			names = lappend(names, pstrdup(de->d_name));
	FreeDir(dir);
	list_sort(names, name_cmp);

	foreach(lc, names)
	{
		char	   *name = lfirst(lc);
		char	   *path = psprintf("%s/%s", folder, name);
		char	   *full = psprintf("%s/%s", resolved, name);
		char	   *shard_id = sqlite_file_name(name);

		if (stat(full, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (shard_file_kind(full) != SHARD_FILE_ROLLBACK &&
			shard_file_kind(full) != SHARD_FILE_WAL)
		{
			ereport(NOTICE,
					(errmsg("file \"%s\" is not an SQLite database: not added as a shard",
							full)));
			continue;
		}
		if (shard_register_shard(opts, shard_id, path, true))
			added = lappend(added, shard_id);
	}
	return added;
}

/*
 * unknown_tenants
 *		The rows of every tenant the directory does not know, per shard:
 *		a FoundTenant per tenant, shard and table, read from every tenant
 *		table of every shard as shard_orphans reads them.
 */
static List *
unknown_tenants(ShardServerOptions *opts, ShardDirectory *dir)
{
	ShardTenantSpec *spec = shard_tenant_spec(opts->serverid);
	List	   *found = NIL;
	ListCell   *lc;

	foreach(lc, shard_directory_shards(dir))
	{
		ShardInfo  *info = lfirst(lc);
		ShardConn  *conn = shard_conn_get(opts, info, opts->skip_missing);
		ListCell   *lt;

		if (conn == NULL)
		{
			shard_warn_skipped(info, NULL);
			continue;
		}
		foreach(lt, shard_server_tenant_tables(conn, info->shard_id, spec))
		{
			ListCell   *lr;

			foreach(lr, shard_tenant_table_counts(conn, info->shard_id,
												  lfirst(lt)))
			{
				ShardTenantRows *tr = lfirst(lr);
				FoundTenant *f;

				if (tr->tenant == NULL ||
					shard_directory_locate(dir, tr->tenant) != NULL)
					continue;
				f = palloc(sizeof(FoundTenant));
				f->tenant = tr->tenant;
				/* the directory's cache goes with its next change */
				f->shard_id = pstrdup(info->shard_id);
				f->rows = tr->rows;
				found = lappend(found, f);
			}
		}
		shard_conn_release(conn);
	}
	return found;
}

/*
 * put_row
 *		One row of directory_adopt's result.
 */
static void
put_row(ReturnSetInfo *rsinfo, const char *tenant, const char *shard_id,
		int64 rows, const char *status)
{
	Datum		values[4];
	bool		nulls[4] = {tenant == NULL, false, rows < 0, false};

	values[0] = tenant ? shard_tenant_id_datum(tenant) : (Datum) 0;
	values[1] = CStringGetTextDatum(shard_id);
	values[2] = Int64GetDatum(rows);
	values[3] = CStringGetTextDatum(status);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * shard_directory_adopt
 *		directory_adopt(server [, folder]): with folder, add its SQLite
 *		files as shards ("shard added"); then register every tenant found
 *		in the shards that the directory does not know on the one shard
 *		holding its rows ("registered", with its rows in every table), or
 *		report a tenant found on several shards without registering it
 *		("conflict", a row per shard).
 */
Datum
shard_directory_adopt(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardServerOptions *opts;
	List	   *found;
	ListCell   *lc;
	int			i;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("server must not be null")));
	opts = shard_admin_server(PG_GETARG_NAME(0));
	/* shards are files the server then reads; tenants are written */
	shard_require_admin(gettext_noop("permission denied to adopt a fleet"),
						gettext_noop("Only roles with privileges of the \"%s\" role may adopt a fleet."));
	InitMaterializedSRF(fcinfo, 0);

	if (PG_NARGS() > 1 && !PG_ARGISNULL(1))
	{
		char	   *folder = text_to_cstring(PG_GETARG_TEXT_PP(1));

		if (folder[0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("folder must not be empty")));
		foreach(lc, add_folder_shards(opts, folder))
			put_row(rsinfo, NULL, lfirst(lc), -1, "shard added");
	}

	found = unknown_tenants(opts, shard_directory_get(opts));
	list_sort(found, found_cmp);

	/* a tenant's rows per shard, summed over its tables */
	for (i = 0; i < list_length(found);)
	{
		FoundTenant *f = list_nth(found, i);
		List	   *shards = NIL;
		ListCell   *ls;

		while (i < list_length(found) &&
			   strcmp(((FoundTenant *) list_nth(found, i))->tenant,
					  f->tenant) == 0)
		{
			FoundTenant *g = list_nth(found, i);
			FoundTenant *last = shards ? llast(shards) : NULL;

			if (last && strcmp(last->shard_id, g->shard_id) == 0)
				last->rows += g->rows;
			else
			{
				last = palloc(sizeof(FoundTenant));
				*last = *g;
				shards = lappend(shards, last);
			}
			i++;
		}

		if (f->tenant[0] == '\0')
		{
			foreach(ls, shards)
				put_row(rsinfo, f->tenant, ((FoundTenant *) lfirst(ls))->shard_id,
						((FoundTenant *) lfirst(ls))->rows, "empty tenant id");
			continue;
		}
		if (list_length(shards) > 1)
		{
			foreach(ls, shards)
				put_row(rsinfo, f->tenant, ((FoundTenant *) lfirst(ls))->shard_id,
						((FoundTenant *) lfirst(ls))->rows, "conflict");
			continue;
		}
		{
			FoundTenant *only = linitial(shards);
			bool		added;

			(void) shard_register_tenant(opts, only->tenant, only->shard_id,
										 false, 0, &added);
			put_row(rsinfo, only->tenant, only->shard_id, only->rows,
					"registered");
		}
	}
	return (Datum) 0;
}
