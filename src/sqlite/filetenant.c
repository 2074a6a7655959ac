/*-------------------------------------------------------------------------
 *
 * filetenant.c
 *		  The SQL function ssfdw_file_tenant: the tenant a file belongs to
 *
 * In a fleet of one SQLite file per tenant (server option layout
 * 'file_per_tenant') the files have no tenant column: the file is the
 * tenant.  The foreign table's tenant column is then deparsed as
 * ssfdw_file_tenant(kind), a function registered on each tenant file's
 * handle with that file's tenant id, so that every pushed condition,
 * grouping, ordering and aggregate over the tenant column runs in the file
 * unchanged.  The function takes no column and is deterministic, so SQLite
 * computes it once per statement.
 *
 * kind is that of ssfdw_tenant (tenantkey.c): for an integer tenant column
 * the id is returned as an integer, so that it compares and converts as
 * the stored integers of a shared shard would; otherwise as text.
 *
 * This file must not include postgres.h, like every file of src/sqlite/.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include "shardio.h"

/*
 * file_tenant_func
 *		SQL function ssfdw_file_tenant(kind): the file's tenant id, as an
 *		integer for an integer kind when the id reads as one, else as text.
 */
static void
file_tenant_func(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const char *id = (const char *) sqlite3_user_data(ctx);
	int			kind = sqlite3_value_int(argv[0]);

	(void) argc;
	if (kind == 16 || kind == 32 || kind == 64)
	{
		char	   *end;
		long long	v;

		errno = 0;
		v = strtoll(id, &end, 10);
		if (errno == 0 && end != id && *end == '\0')
		{
			sqlite3_result_int64(ctx, (sqlite3_int64) v);
			return;
		}
	}
	sqlite3_result_text(ctx, id, -1, SQLITE_STATIC);
}

/*
 * shardio_set_file_tenant
 *		Register ssfdw_file_tenant on a tenant file's handle, answering
 *		tenant (copied; freed when the handle closes).  An SQLite result
 *		code.
 */
int
shardio_set_file_tenant(sqlite3 *db, const char *tenant)
{
	char	   *copy = strdup(tenant);

	if (copy == NULL)
		return SQLITE_NOMEM;
	return sqlite3_create_function_v2(db, "ssfdw_file_tenant", 1,
									  SQLITE_UTF8 | SQLITE_DETERMINISTIC |
									  SQLITE_INNOCUOUS,
									  copy, file_tenant_func, NULL, NULL,
									  free);
}
