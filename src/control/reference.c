/*-------------------------------------------------------------------------
 *
 * reference.c
 *		  Reference tables: tables that belong to no tenant
 *
 * A foreign table with the option distribution 'reference' holds rows
 * every tenant shares (plans, currencies, feature flags).  Every shard is
 * meant to hold the same copy, so that a tenant table's shard can join
 * with it where the tenant's rows are; a plain read takes the copy of one
 * shard, the table's "reference_shard" or else the first shard of the
 * directory in shard_id order, so that every statement reads the same
 * copy whatever the fleet's size.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/table.h"
#include "catalog/pg_class.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(shard_reference_check);

/*
 * shard_reference_shard
 *		The shard a reference table is read from: the one its option names,
 *		which must be a shard of the directory, or the directory's first.
 */
ShardInfo *
shard_reference_shard(ShardDirectory *dir, ShardTableOptions *topts,
					  const char *relname)
{
	List	   *shards = shard_directory_shards(dir);
	ListCell   *lc;

	Assert(topts->reference);
	if (topts->reference_shard == NULL)
	{
		if (shards == NIL)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
					 errmsg("reference table \"%s\" has no shard to be read from",
							relname),
					 errdetail("The directory of server \"%s\" lists no shard.",
							   shard_server_options(topts->serverid)->servername)));
		return linitial(shards);
	}
	foreach(lc, shards)
	{
		ShardInfo  *info = lfirst(lc);

		if (strcmp(info->shard_id, topts->reference_shard) == 0)
			return info;
	}
	ereport(ERROR,
			(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
			 errmsg("reference shard \"%s\" of foreign table \"%s\" is not a shard of the directory",
					topts->reference_shard, relname),
			 errhint("Set the table option \"reference_shard\" to a shard shard_list() shows, or drop it to read the first shard.")));
	return NULL;				/* keep compiler quiet */
}

/*
 * copy_digest
 *		Count a shard's copy of a table and checksum its rows with the
 *		aggregate tenant moves verify with (ssfdw_move_sum, movesum.c: a sum
 *		of row hashes, so neither the order SQLite returns rows in nor their
 *		rowids matter), on a read-only handle of its own.  False, with
 *		nothing set, when the shard has no readable copy: its file, the
 *		table or a column is missing.
 */
static bool
copy_digest(ShardServerOptions *opts, ShardInfo *info, const char *table,
			const char *sql, int64 *rows, uint64 *digest)
{
	char		errbuf[SHARDIO_ERRLEN];
	sqlite3    *db = NULL;
	sqlite3_stmt *stmt = NULL;
	bool		found = false;
	int			rc;

	if (shardio_file_state(info->path) != SHARDIO_FILE_OK)
		return false;
	rc = shardio_open(info->path, 0, opts->busy_timeout_ms, &db, errbuf);
	if (rc == SQLITE_OK)
		rc = shardio_register_move_sum(db);
	if (rc == SQLITE_OK &&
		sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK)
	{
		/*
		 * A missing table or column is SQLite's plain SQLITE_ERROR; a lock
		 * timeout, a cancel or a damaged file is the error below.
		 */
		rc = sqlite3_errcode(db);
		if (rc == SQLITE_ERROR)
		{
			shardio_close(db);
			return false;
		}
	}
	else if (rc == SQLITE_OK)
		rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
	{
		*rows = sqlite3_column_int64(stmt, 0);
		*digest = (uint64) sqlite3_column_int64(stmt, 1);
		found = true;
	}
	else if (db != NULL)
		strlcpy(errbuf, sqlite3_errmsg(db), sizeof(errbuf));
	sqlite3_finalize(stmt);
	if (db != NULL)
		shardio_close(db);
	if (!found)
	{
		shard_check_lock_wait(rc, false, info->shard_id);
		ereport(ERROR,
				(errcode(shard_sqlite_sqlstate(rc)),
				 errmsg("could not read table \"%s\" on shard \"%s\"",
						table, info->shard_id),
				 errdetail_internal("%s", errbuf)));
	}
	return true;
}

/*
 * shard_reference_check
 *		reference_check(table): each shard's copy of a reference table, its
 *		rows and a digest of their contents, and whether it holds what the
 *		copy reads come from holds.  Copies drift when something writes
 *		one shard's copy and not the others (a pushed join reads each
 *		shard's own copy); this finds which.
 */
Datum
shard_reference_check(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			relid = PG_GETARG_OID(0);
	Relation	rel;
	NameData	servername;
	ShardTableOptions *topts;
	ShardServerOptions *opts;
	ShardDirectory *dir;
	StringInfoData sql;
	TupleDesc	tupdesc;
	ShardInfo  *lead;
	int64		lead_rows = 0;
	uint64		lead_digest = 0;
	bool		lead_ok;
	int			ncols = 0;
	ListCell   *lc;
	int			i;

	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_FOREIGN_TABLE,
					   get_rel_name(relid));
	rel = table_open(relid, AccessShareLock);
	if (rel->rd_rel->relkind != RELKIND_FOREIGN_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a foreign table",
						RelationGetRelationName(rel))));
	/* a server of this wrapper, which the caller may use */
	namestrcpy(&servername,
			   GetForeignServer(GetForeignServerIdByRelId(relid))->servername);
	opts = shard_admin_server(&servername);
	topts = shard_table_options(rel);
	if (!topts->reference)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("foreign table \"%s\" is not a reference table",
						RelationGetRelationName(rel)),
				 errhint("Only a table with the option distribution 'reference' has a copy in every shard.")));

	/* every column the foreign table reads, by its SQLite name */
	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT count(*), ssfdw_move_sum(");
	tupdesc = RelationGetDescr(rel);
	for (i = 0; i < tupdesc->natts; i++)
	{
		if (TupleDescAttr(tupdesc, i)->attisdropped)
			continue;
		if (ncols++ > 0)
			appendStringInfoString(&sql, ", ");
		shard_quote_identifier(&sql, shard_column_name(relid, i + 1));
	}
	if (ncols == 0)
		appendStringInfoString(&sql, "NULL");
	appendStringInfoString(&sql, ") FROM ");
	shard_quote_identifier(&sql, topts->table);

	dir = shard_directory_get(opts);
	lead = shard_reference_shard(dir, topts, RelationGetRelationName(rel));
	lead_ok = copy_digest(opts, lead, topts->table, sql.data, &lead_rows, &lead_digest);

	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, shard_directory_shards(dir))
	{
		ShardInfo  *info = lfirst(lc);
		Datum		values[4];
		bool		nulls[4] = {false, false, false, false};
		int64		rows;
		uint64		digest;

		values[0] = CStringGetTextDatum(info->shard_id);
		if (copy_digest(opts, info, topts->table, sql.data, &rows, &digest))
		{
			values[1] = Int64GetDatum(rows);
			values[2] = CStringGetTextDatum(psprintf("%016llx",
													 (unsigned long long) digest));
			values[3] = BoolGetDatum(lead_ok && rows == lead_rows &&
									 digest == lead_digest);
		}
		else
		{
			nulls[1] = nulls[2] = true;
			values[3] = BoolGetDatum(false);
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values,
							 nulls);
	}
	table_close(rel, AccessShareLock);
	return (Datum) 0;
}
