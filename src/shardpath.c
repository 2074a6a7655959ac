/*-------------------------------------------------------------------------
 *
 * shardpath.c
 *		  Where a shard's file is: paths made absolute against the
 *		  directory's folder, and kept inside that folder
 *
 * Shard paths come from the directory's shards table, from the server's
 * shard_path or tenant_path pattern, from shard_add and tenant_create:
 * text whoever can write the directory chose.  A relative path is taken
 * from the folder of the directory file; a path that leads outside that
 * folder, by its letters or through a symbolic link, is refused unless the
 * server's option allow_outside_paths allows it.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

/*
 * shard_resolve_path
 *		Make a shard path absolute: relative paths are taken from the folder
 *		that holds the directory file.  Nothing is checked: see
 *		shard_resolve_checked_path for a path that will be read.
 */
char *
shard_resolve_path(ShardServerOptions *opts, const char *path)
{
	char	   *base;
	char	   *slash;

	if (is_absolute_path(path))
		return pstrdup(path);
	base = pstrdup(opts->directory);
	slash = strrchr(base, '/');
	if (slash)
		slash[1] = '\0';
	else
		base[0] = '\0';
	return psprintf("%s%s", base, path);
}

/*
 * normalize_path
 *		An absolute path with its ".", ".." and empty components taken out,
 *		by the letters alone, without asking the file system.
 */
static char *
normalize_path(const char *path)
{
	char	   *result = palloc(strlen(path) + 2);
	int			len = 0;
	const char *p = path;

	while (*p)
	{
		const char *start;
		int			n;

		while (*p == '/')
			p++;
		start = p;
		while (*p && *p != '/')
			p++;
		n = p - start;
		if (n == 0 || (n == 1 && start[0] == '.'))
			continue;
		if (n == 2 && start[0] == '.' && start[1] == '.')
		{
			/* drop the last component; ".." of the root is the root */
			while (len > 0 && result[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
			continue;
		}
		result[len++] = '/';
		memcpy(result + len, start, n);
		len += n;
	}
	if (len == 0)
		result[len++] = '/';
	result[len] = '\0';
	return result;
}

/*
 * path_is_inside
 *		Is path (normalized) the folder (normalized) or below it?
 */
static bool
path_is_inside(const char *folder, const char *path)
{
	size_t		len = strlen(folder);

	if (strcmp(folder, "/") == 0)
		return true;
	return strncmp(path, folder, len) == 0 &&
		(path[len] == '/' || path[len] == '\0');
}

/*
 * shard_check_path_inside
 *		Refuse a shard file outside the folder of the directory file, unless
 *		the server's option allow_outside_paths says otherwise.
 *
 * Whoever can write the directory (the application, a role allowed to
 * call shard_add) decides which files the server reads.  Confining them to
 * the fleet's folder keeps a ".." in shards.path or in the shard_path
 * pattern, or an absolute path, from reading another fleet's files or the
 * server's own.  The path is judged by its letters first, then, when the
 * file exists, by where its symbolic links lead.  Only a superuser or a
 * member of pg_read_server_files may set allow_outside_paths.
 */
void
shard_check_path_inside(const char *directory, bool allow_outside,
						const char *shard_id, const char *path,
						const char *resolved, bool from_pattern)
{
	char	   *folder;
	char	   *slash;
	char	   *real_path;
	char	   *real_folder;
	bool		inside;

	if (allow_outside)
		return;
	folder = pstrdup(directory);
	slash = strrchr(folder, '/');
	if (slash)
		slash[slash == folder ? 1 : 0] = '\0';

	if (!path_is_inside(normalize_path(folder), normalize_path(resolved)))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("path \"%s\" of shard \"%s\" leads outside the folder of directory \"%s\"",
						path, shard_id, directory),
				 from_pattern ?
				 errdetail("The server option \"shard_path\" gives this path; shard files must be in folder \"%s\" or below it.",
						   folder) :
				 errdetail("Shard files must be in folder \"%s\" or below it.",
						   folder),
				 errhint("A superuser or a member of pg_read_server_files may allow paths elsewhere with the server option \"allow_outside_paths\".")));

	/* Symbolic links: only once the file exists is there anything to follow. */
	real_path = realpath(resolved, NULL);
	if (real_path == NULL)
		return;
	real_folder = realpath(folder, NULL);
	inside = (real_folder == NULL || path_is_inside(real_folder, real_path));
	if (!inside)
	{
		char	   *target = pstrdup(real_path);

		free(real_path);
		free(real_folder);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("path \"%s\" of shard \"%s\" leads outside the folder of directory \"%s\"",
						path, shard_id, directory),
				 errdetail("The path leads through a symbolic link to \"%s\"; shard files must be in folder \"%s\" or below it.",
						   target, folder),
				 errhint("A superuser or a member of pg_read_server_files may allow paths elsewhere with the server option \"allow_outside_paths\".")));
	}
	free(real_path);
	free(real_folder);
}

/*
 * shard_resolve_checked_path
 *		The absolute path of a shard file that is about to be read, refused
 *		when it leaves the directory's folder and the server does not allow
 *		that.
 */
char *
shard_resolve_checked_path(ShardServerOptions *opts, const char *shard_id,
						   const char *path)
{
	char	   *resolved = shard_resolve_path(opts, path);

	shard_check_path_inside(opts->directory, opts->allow_outside_paths,
							shard_id, path, resolved, false);
	return resolved;
}

