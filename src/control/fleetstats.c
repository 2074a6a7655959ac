/*-------------------------------------------------------------------------
 *
 * fleetstats.c
 *		  shard_stats and tenant_stats: how full each shard is, and how much
 *		  of it each tenant takes
 *
 * A shard's size, compared with the server's max_shard_bytes, is what its
 * database holds: its pages less its free pages, from SQLite (page_count,
 * of which freelist_count are free: room that a VACUUM would give back),
 * as seen through the write-ahead log.  The practitioners' rule is to act
 * above 70 % and to hurry above 80 %.  The file and its write-ahead log
 * (what a disk or a hosted database's quota counts) are reported beside
 * it but not compared: a WAL shard's log keeps the size of the largest
 * transaction since the last restart of the log, so right after a tenant's
 * cleanup and VACUUM the file and log together can pass twice the
 * database, which a shard that holds little must not be flagged for.
 * shard_rebalance_plan (rebalance.c) measures shards by the same rule,
 * shard_fleet_used_bytes.
 *
 * A tenant's bytes are estimated per table: the table's bytes (its B-tree
 * and its indexes' B-trees, from the dbstat virtual table when the SQLite
 * library has it) shared among the table's tenants in proportion to their
 * rows.  Without dbstat the shard's used pages are shared among its tenant
 * tables by rows first.  Both read every page or row of the shard once;
 * both assume rows of one table are of similar size.  The method used is
 * reported with every tenant.
 *
 * On a server of layout 'file_per_tenant' each file is one tenant's, whole:
 * shard_stats counts one tenant per file, and tenant_stats gives each
 * file's tenant every row of every table of the file, and the bytes its
 * database holds (method "file"), without reading a tenant column.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <sys/stat.h>

#include "funcapi.h"
#include "utils/builtins.h"
#include "mb/pg_wchar.h"
#include "utils/json.h"
#include "utils/jsonb.h"

/* One tenant table of a shard, while its tenants' bytes are estimated. */
typedef struct ShardTableStat
{
	ShardTenantTable *tt;
	List	   *counts;			/* ShardTenantRows, ordered by tenant id */
	int64		rows;
	double		bytes;			/* with its indexes */
} ShardTableStat;

PG_FUNCTION_INFO_V1(shard_stats);
PG_FUNCTION_INFO_V1(shard_tenant_stats);

/*
 * path_bytes
 *		The size of a file, or -1 when it does not exist.
 */
static int64
path_bytes(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (int64) st.st_size : -1;
}

/*
 * stat_failed
 *		Raise a failed read of a shard's statistics (a lock waited for past
 *		the busy timeout, a cancel), whose primary message is message
 *		(translated already), the statement finalized first.
 */
static void
stat_failed(sqlite3 *db, sqlite3_stmt *stmt, int rc, const char *shard_id,
			const char *message)
{
	char	   *msg = pstrdup(sqlite3_errmsg(db));

	sqlite3_finalize(stmt);
	shard_sqlite_error(ERROR, rc, shard_id, msg, "%s", message);
}

/*
 * pragma_int
 *		The value of a PRAGMA of a shard that returns one integer.
 */
static int64
pragma_int(sqlite3 *db, const char *shard_id, const char *pragma)
{
	sqlite3_stmt *stmt = NULL;
	int64		v = -1;
	int			rc;

	rc = sqlite3_prepare_v2(db, pragma, -1, &stmt, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW)
		v = sqlite3_column_int64(stmt, 0);
	else
		stat_failed(db, stmt, rc, shard_id,
					psprintf(_("could not read the page counts of shard \"%s\""),
							 shard_id));
	sqlite3_finalize(stmt);
	return v;
}

/*
 * table_bytes_dbstat
 *		The bytes of each table of a shard with its indexes, from dbstat,
 *		into the tables' bytes; false when the library has no dbstat.
 */
static bool
table_bytes_dbstat(sqlite3 *db, const char *shard_id, List *tables)
{
	sqlite3_stmt *stmt;
	ListCell   *lc;
	int			rc;

	if (sqlite3_prepare_v2(db,
						   "SELECT m.tbl_name, sum(d.pgsize) FROM dbstat AS d "
						   "JOIN sqlite_schema AS m ON m.name = d.name "
						   "GROUP BY m.tbl_name",
						   -1, &stmt, NULL) != SQLITE_OK)
		return false;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		const char *name = (const char *) sqlite3_column_text(stmt, 0);

		foreach(lc, tables)
		{
			ShardTableStat *ts = lfirst(lc);

			if (name && strcmp(ts->tt->table, name) == 0)
				ts->bytes = (double) sqlite3_column_int64(stmt, 1);
		}
	}
	if (rc != SQLITE_DONE)
		stat_failed(db, stmt, rc, shard_id,
					psprintf(_("could not measure the tables of shard \"%s\""),
							 shard_id));
	sqlite3_finalize(stmt);
	return true;
}

/*
 * owner_cmp
 *		Order tenants by the shard that answers for them, then by id, byte
 *		for byte (as SQLite's BINARY collation orders text).
 */
static int
owner_cmp(const ListCell *a, const ListCell *b)
{
	ShardLocation *la = lfirst(a);
	ShardLocation *lb = lfirst(b);
	int			c = strcmp(la->owner, lb->owner);

	return c != 0 ? c : strcmp(la->tenant, lb->tenant);
}

/*
 * shard_fleet_owners
 *		Every tenant of the directory, ordered by the shard that answers
 *		for it and then by id, for shard_fleet_owned to take each shard's
 *		share from in one pass.
 */
List *
shard_fleet_owners(ShardDirectory *dir)
{
	List	   *all = shard_directory_tenants(dir, NULL);

	list_sort(all, owner_cmp);
	return all;
}

/*
 * shard_fleet_owned
 *		The tenants a shard answers for, from the list shard_fleet_owners
 *		made, starting at *pos; shards must be asked for in id order.
 */
List *
shard_fleet_owned(List *owners, int *pos, const char *shard_id)
{
	List	   *result = NIL;

	while (*pos < list_length(owners))
	{
		ShardLocation *loc = list_nth(owners, *pos);
		int			c = strcmp(loc->owner, shard_id);

		if (c > 0)
			break;
		if (c == 0)
			result = lappend(result, loc);
		(*pos)++;
	}
	return result;
}

/*
 * shard_fleet_stats
 *		The size and pages of one shard and, with tenants, the rows and
 *		estimated bytes of each tenant the shard answers for (owned, from
 *		shard_fleet_owned, ordered by id; tenants without rows included).
 *		A missing file is an error, or with missing_ok has file_bytes -1
 *		and nothing else.
 */
ShardFleetStat *
shard_fleet_stats(ShardServerOptions *opts, ShardInfo *info, List *owned,
				  bool tenants, bool missing_ok)
{
	ShardFleetStat *fs = palloc0(sizeof(ShardFleetStat));
	ShardConn  *conn;
	sqlite3    *db;
	char	   *wal;
	ListCell   *lc;
	int			i;

	fs->info = info;
	fs->ntenants = list_length(owned);
	fs->page_size = fs->page_count = fs->freelist_count = -1;
	fs->file_bytes = -1;
	conn = shard_conn_get(opts, info, missing_ok);
	if (conn == NULL)
		return fs;
	fs->file_bytes = Max(path_bytes(info->path), 0);
	wal = psprintf("%s-wal", info->path);
	fs->wal_bytes = Max(path_bytes(wal), 0);
	db = shard_conn_db(conn);
	fs->page_size = pragma_int(db, info->shard_id, "PRAGMA page_size");
	fs->page_count = pragma_int(db, info->shard_id, "PRAGMA page_count");
	fs->freelist_count = pragma_int(db, info->shard_id,
								   "PRAGMA freelist_count");

	if (tenants)
	{
		ShardTenantSpec *spec = shard_tenant_spec(opts->serverid);
		List	   *tables = NIL;
		double		used = (double) shard_fleet_used_bytes(fs);
		int64		all_rows = 0;

		fs->tenants = palloc0(sizeof(ShardTenantStat) * (fs->ntenants + 1));
		i = 0;
		foreach(lc, owned)
			fs->tenants[i++].tenant = ((ShardLocation *) lfirst(lc))->tenant;

		foreach(lc, shard_server_tenant_tables(conn, info->shard_id, spec))
		{
			ShardTableStat *ts = palloc0(sizeof(ShardTableStat));
			ListCell   *lr;

			ts->tt = lfirst(lc);
			ts->counts = shard_tenant_table_counts(conn, info->shard_id, ts->tt);
			foreach(lr, ts->counts)
				ts->rows += ((ShardTenantRows *) lfirst(lr))->rows;
			all_rows += ts->rows;
			tables = lappend(tables, ts);
		}

		fs->dbstat = table_bytes_dbstat(db, info->shard_id, tables);
		foreach(lc, tables)
		{
			ShardTableStat *ts = lfirst(lc);
			ListCell   *lr;

			if (!fs->dbstat)
				ts->bytes = all_rows > 0 ? used * ts->rows / all_rows : 0;

			/*
			 * Both lists are ordered by tenant id, byte for byte: merge.
			 * Rows of tenants the shard does not own are shard_orphans'.
			 */
			i = 0;
			foreach(lr, ts->counts)
			{
				ShardTenantRows *tr = lfirst(lr);
				ShardTenantStat *st;
				int			c = 1;

				if (tr->tenant == NULL)
					continue;
				while (i < fs->ntenants &&
					   (c = strcmp(fs->tenants[i].tenant, tr->tenant)) < 0)
					i++;
				if (i >= fs->ntenants)
					break;
				if (c != 0)
					continue;
				st = &fs->tenants[i];
				st->rows += tr->rows;
				st->bytes += ts->rows > 0 ? ts->bytes * tr->rows / ts->rows : 0;
				st->table_rows = lappend(st->table_rows,
										 list_make2(ts->tt->table, tr));
			}
		}
	}
	shard_conn_release(conn);
	return fs;
}

/*
 * shard_fleet_used_bytes
 *		What a shard's database holds: its pages less its free pages, in
 *		bytes, or -1 when its file is missing.  The one measure of a shard
 *		that max_shard_bytes is compared with (see the file's header).
 */
int64
shard_fleet_used_bytes(const ShardFleetStat *fs)
{
	if (fs->file_bytes < 0 || fs->page_count < 0 || fs->freelist_count < 0 ||
		fs->page_size < 0)
		return -1;
	return (fs->page_count - fs->freelist_count) * fs->page_size;
}

/*
 * shard_bytes_total
 *		A shard's file with its write-ahead log, or -1 when missing.
 */
static int64
shard_bytes_total(ShardFleetStat *fs)
{
	return fs->file_bytes < 0 ? -1 : fs->file_bytes + fs->wal_bytes;
}

/*
 * shard_stats
 *		shard_stats(server): per shard, its file and write-ahead log sizes,
 *		what its database holds, pages, free pages, tenants, and how full
 *		it is (what its database holds) against the server's
 *		max_shard_bytes, flagged at 70 % and 80 %.
 */
Datum
shard_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardServerOptions *opts;
	ShardDirectory *dir;
	ShardLoad  *loads;
	int			nshards;
	int			s;

	opts = shard_admin_server_arg(fcinfo);
	shard_require_admin(gettext_noop("permission denied to read shard statistics"),
						gettext_noop("Only roles with privileges of the \"%s\" role may read shard statistics."));
	InitMaterializedSRF(fcinfo, 0);
	dir = shard_directory_get(opts);
	/* tenants counted by the directory, not listed */
	loads = shard_loads(opts, dir, shard_directory_handle(dir), &nshards);

	for (s = 0; s < nshards; s++)
	{
		ShardFleetStat *fs = shard_fleet_stats(opts, loads[s].info, NIL,
											   false, true);
		int64		bytes = shard_bytes_total(fs);
		int64		used = shard_fleet_used_bytes(fs);
		double		percent = 100.0 * used / opts->max_shard_bytes;
		Datum		values[12];
		bool		nulls[12];
		int			i;

		shard_conn_end_reads();	/* its row is all it needs of the shard */
		memset(nulls, bytes < 0, sizeof(nulls));
		nulls[0] = nulls[7] = nulls[8] = false;
		values[0] = CStringGetTextDatum(fs->info->shard_id);
		values[1] = Int64GetDatum(bytes);
		values[2] = Int64GetDatum(fs->wal_bytes);
		values[3] = Int64GetDatum(used);
		values[4] = Int64GetDatum(fs->page_size);
		values[5] = Int64GetDatum(fs->page_count);
		values[6] = Int64GetDatum(fs->freelist_count);
		values[7] = Int64GetDatum(opts->file_per_tenant ? 1 : loads[s].tenants);
		values[8] = Int64GetDatum(opts->max_shard_bytes);
		if (used < 0)
			nulls[3] = nulls[9] = nulls[10] = nulls[11] = true;
		else
		{
			values[9] = DirectFunctionCall2(numeric_round,
											DirectFunctionCall1(float8_numeric,
																Float8GetDatum(percent)),
											Int32GetDatum(1));
			values[10] = BoolGetDatum(percent >= 70.0);
			values[11] = BoolGetDatum(percent >= 80.0);
		}
		for (i = 4; i <= 6; i++)
			if (DatumGetInt64(values[i]) < 0)
				nulls[i] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * table_rows_jsonb
 *		A tenant's rows per table as a jsonb object, {"table": rows, ...}.
 */
static Datum
table_rows_jsonb(List *table_rows)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	foreach(lc, table_rows)
	{
		List	   *pair = lfirst(lc);

		if (buf.len > 1)
			appendStringInfoString(&buf, ", ");
		escape_json(&buf, pg_any_to_server(linitial(pair),
										   strlen(linitial(pair)), PG_UTF8));
		appendStringInfo(&buf, ": " INT64_FORMAT,
						 ((ShardTenantRows *) lsecond(pair))->rows);
	}
	appendStringInfoChar(&buf, '}');
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
}

/*
 * file_tenant_stats
 *		tenant_stats of a file that is one tenant's (layout
 *		'file_per_tenant'): its rows in every table, and what its database
 *		holds, all the tenant's.
 */
static void
file_tenant_stats(ReturnSetInfo *rsinfo, ShardServerOptions *opts,
				  ShardDirectory *dir, ShardInfo *info)
{
	ShardFleetStat *fs;
	ShardConn  *conn;
	sqlite3    *db;
	sqlite3_stmt *stmt;
	List	   *tables = NIL;
	List	   *table_rows = NIL;
	int64		rows = 0;
	int64		used;
	double		file;
	ListCell   *lc;
	Datum		values[7];
	bool		nulls[7] = {false, false, false, false, false, false, false};
	int			rc;

	/* under tenant_path a file gone since it was listed has no tenant */
	fs = shard_fleet_stats(opts, info, NIL, false,
						   opts->skip_missing || opts->tenant_path != NULL);
	if (fs->file_bytes < 0)
	{
		if (opts->tenant_path == NULL)
			shard_warn_skipped(info, NULL);
		return;
	}
	conn = shard_conn_get(opts, info, false);
	db = shard_conn_db(conn);
	rc = sqlite3_prepare_v2(db,
							"SELECT name FROM main.sqlite_schema"
							" WHERE type = 'table'"
							" AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
							" AND name NOT LIKE '\\_ssfdw\\_%' ESCAPE '\\'"
							" ORDER BY name", -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		stat_failed(db, NULL, rc, info->shard_id,
					_("could not list the tables of a tenant's file"));
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		tables = lappend(tables,
						 pstrdup((const char *) sqlite3_column_text(stmt, 0)));
	if (rc != SQLITE_DONE)
		stat_failed(db, stmt, rc, info->shard_id,
					_("could not list the tables of a tenant's file"));
	sqlite3_finalize(stmt);
	foreach(lc, tables)
	{
		StringInfoData sql;
		ShardTenantRows *tr = palloc0(sizeof(ShardTenantRows));

		initStringInfo(&sql);
		appendStringInfoString(&sql, "SELECT count(*) FROM main.");
		shard_quote_identifier(&sql, lfirst(lc));
		rc = sqlite3_prepare_v2(db, sql.data, -1, &stmt, NULL);
		if (rc != SQLITE_OK)
			stat_failed(db, NULL, rc, info->shard_id,
						_("could not count the rows of a tenant's file"));
		rc = sqlite3_step(stmt);
		if (rc != SQLITE_ROW)
			stat_failed(db, stmt, rc, info->shard_id,
						_("could not count the rows of a tenant's file"));
		tr->rows = sqlite3_column_int64(stmt, 0);
		sqlite3_finalize(stmt);
		rows += tr->rows;
		table_rows = lappend(table_rows, list_make2(lfirst(lc), tr));
	}
	shard_conn_release(conn);
	shard_conn_end_reads();		/* its rows are all it needs of the file */

	used = shard_fleet_used_bytes(fs);
	file = (double) fs->page_count * fs->page_size;
	values[0] = shard_tenant_id_datum(shard_directory_file_tenant(dir,
																  info->shard_id));
	values[1] = CStringGetTextDatum(info->shard_id);
	values[2] = Int64GetDatum(rows);
	values[3] = table_rows_jsonb(table_rows);
	values[4] = Int64GetDatum(Max(used, 0));
	values[5] = DirectFunctionCall2(numeric_round,
									DirectFunctionCall1(float8_numeric,
														Float8GetDatum(file > 0 ? 100.0 * used / file : 0)),
									Int32GetDatum(1));
	values[6] = CStringGetTextDatum("file");
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * shard_tenant_stats
 *		tenant_stats(server [, shard]): per tenant (of every shard, or of
 *		the one named), its rows, rows per table, estimated bytes and share
 *		of its shard's file, and how the bytes were estimated.
 */
Datum
shard_tenant_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardServerOptions *opts;
	ShardDirectory *dir;
	List	   *shards;
	List	   *owners;
	int			pos = 0;
	ListCell   *lc;

	opts = shard_admin_server_arg(fcinfo);
	shard_require_admin(gettext_noop("permission denied to read tenant statistics"),
						gettext_noop("Only roles with privileges of the \"%s\" role may read tenant statistics."));
	InitMaterializedSRF(fcinfo, 0);
	dir = shard_directory_get(opts);
	if (PG_ARGISNULL(1))
		shards = shard_directory_shards(dir);
	else
		shards = list_make1(shard_admin_shard(opts, dir,
											  text_to_cstring(PG_GETARG_TEXT_PP(1))));

	if (opts->file_per_tenant)
	{
		foreach(lc, shards)
			file_tenant_stats(rsinfo, opts, dir, lfirst(lc));
		return (Datum) 0;
	}

	owners = shard_fleet_owners(dir);
	foreach(lc, shards)
	{
		ShardInfo  *info = lfirst(lc);
		ShardFleetStat *fs;
		double		file;
		int			i;

		fs = shard_fleet_stats(opts, info,
							   shard_fleet_owned(owners, &pos, info->shard_id),
							   true, opts->skip_missing);
		shard_conn_end_reads();	/* its rows are all it needs of the shard */
		file = (double) fs->page_count * fs->page_size;
		if (fs->file_bytes < 0)
		{
			shard_warn_skipped(info, NULL);
			continue;
		}
		for (i = 0; i < fs->ntenants; i++)
		{
			ShardTenantStat *st = &fs->tenants[i];
			Datum		values[7];
			bool		nulls[7] = {false, false, false, false, false, false, false};

			values[0] = shard_tenant_id_datum(st->tenant);
			values[1] = CStringGetTextDatum(fs->info->shard_id);
			values[2] = Int64GetDatum(st->rows);
			values[3] = table_rows_jsonb(st->table_rows);
			values[4] = Int64GetDatum((int64) (st->bytes + 0.5));
			values[5] = DirectFunctionCall2(numeric_round,
											DirectFunctionCall1(float8_numeric,
																Float8GetDatum(file > 0 ? 100.0 * st->bytes / file : 0)),
											Int32GetDatum(1));
			values[6] = CStringGetTextDatum(fs->dbstat ? "dbstat" : "rows");
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	return (Datum) 0;
}
