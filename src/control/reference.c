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
 * row_hash
 *		A 64-bit FNV-1a hash of one row as SQLite stores it: each column's
 *		storage class and bytes, so that 1 and '1' and 1.0 differ, as they
 *		are different copies of a value.
 */
static uint64
row_hash(sqlite3_stmt *stmt, int ncols)
{
	uint64		h = UINT64CONST(14695981039346656037);
	int			c;

	for (c = 0; c < ncols; c++)
	{
		int			type = sqlite3_column_type(stmt, c);
		const unsigned char *bytes = NULL;
		unsigned char num[8];
		int			len = 0;
		int			i;

		if (type == SQLITE_INTEGER || type == SQLITE_FLOAT)
		{
			int64		v = sqlite3_column_int64(stmt, c);
			double		d = sqlite3_column_double(stmt, c);

			if (type == SQLITE_FLOAT)
				memcpy(&v, &d, sizeof(v));
			for (i = 0; i < 8; i++)
				num[i] = (unsigned char) ((uint64) v >> (8 * i));
			bytes = num;
			len = 8;
		}
		else if (type == SQLITE_TEXT || type == SQLITE_BLOB)
		{
			bytes = type == SQLITE_TEXT ? sqlite3_column_text(stmt, c) :
				sqlite3_column_blob(stmt, c);
			len = sqlite3_column_bytes(stmt, c);
		}
		/* the class, the length, the bytes: no two rows read alike */
		h = (h ^ (uint64) type) * UINT64CONST(1099511628211);
		for (i = 0; i < 4; i++)
			h = (h ^ (uint64) ((len >> (8 * i)) & 0xff)) * UINT64CONST(1099511628211);
		for (i = 0; i < len; i++)
			h = (h ^ (uint64) bytes[i]) * UINT64CONST(1099511628211);
	}
	return h;
}

/*
 * copy_digest
 *		Count a shard's copy of a table and sum its rows' hashes (a sum, so
 *		that the order SQLite returns rows in, or their rowids, do not
 *		matter).  False, with nothing set, when the shard has no readable
 *		copy: its file, the table or a column is missing.
 */
static bool
copy_digest(ShardServerOptions *opts, ShardInfo *info, const char *sql,
			int ncols, int64 *rows, uint64 *digest)
{
	ShardConn  *conn = shard_conn_get(opts, info, true);
	char		errbuf[SHARDIO_ERRLEN];
	sqlite3_stmt *stmt;
	int			rc;

	if (conn == NULL)
		return false;
	if (shard_conn_prepare(conn, sql, &stmt, errbuf) != SQLITE_OK)
	{
		shard_conn_release(conn);
		return false;
	}
	*rows = 0;
	*digest = 0;
	PG_TRY();
	{
		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		{
			(*rows)++;
			*digest += row_hash(stmt, ncols);
			if ((*rows & 1023) == 0)
				CHECK_FOR_INTERRUPTS();
		}
		if (rc != SQLITE_DONE)
			shard_sqlite_error(ERROR, rc, info->shard_id,
							   sqlite3_errmsg(shard_conn_db(conn)),
							   "could not read a reference table on shard \"%s\"",
							   info->shard_id);
	}
	PG_FINALLY();
	{
		shard_conn_unprepare(conn, stmt);
		shard_conn_release(conn);
	}
	PG_END_TRY();
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
	appendStringInfoString(&sql, "SELECT ");
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
	appendStringInfoString(&sql, " FROM ");
	shard_quote_identifier(&sql, topts->table);

	dir = shard_directory_get(opts);
	lead = shard_reference_shard(dir, topts, RelationGetRelationName(rel));
	lead_ok = copy_digest(opts, lead, sql.data, ncols, &lead_rows,
						  &lead_digest);

	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, shard_directory_shards(dir))
	{
		ShardInfo  *info = lfirst(lc);
		Datum		values[4];
		bool		nulls[4] = {false, false, false, false};
		int64		rows;
		uint64		digest;

		values[0] = CStringGetTextDatum(info->shard_id);
		if (copy_digest(opts, info, sql.data, ncols, &rows, &digest))
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
