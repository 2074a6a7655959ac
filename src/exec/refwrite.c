/*-------------------------------------------------------------------------
 *
 * refwrite.c
 *		  Writes to reference tables: every shard's copy changed alike, in
 *		  one transaction
 *
 * A reference table (distribution 'reference', reference.c) has a copy in
 * every shard, which reads and pushed joins take as the same rows.  A write
 * through the wrapper therefore goes to every copy, each inside its shard's
 * write transaction, so that all of them commit with the PostgreSQL
 * transaction or none does (connection.c records a commit across shards):
 *
 * - INSERT and COPY insert each row into every shard (modify.c), the copy
 *   reads come from last, whose stored row RETURNING reads;
 * - UPDATE and DELETE run inside the shards, one statement per shard
 *   (directmodify.c), each on its own copy; the rows of the copy reads come
 *   from are the statement's count and RETURNING rows.
 *
 * Each copy must change as the copy reads come from changes: the same
 * number of rows inserted, updated or deleted.  Copies that already
 * differ may not, and the statement then fails, naming the shards, before
 * anything commits; reference_check shows which copies differ.  A
 * row-by-row UPDATE or DELETE is refused: a row read from one copy has no
 * identity in the others (a rowid is each file's own), so it could not be
 * changed exactly in each.  A role whose user mapping limits it to some
 * tenants may read a reference table but not write it: the rows are every
 * tenant's.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/rel.h"

#include "compat.h"
#include "scan.h"

/*
 * shard_reference_check_writer
 *		Refuse a write to reference table rel by a role (userid) whose user
 *		mapping limits it to some tenants.
 */
void
shard_reference_check_writer(Relation rel, Oid serverid, Oid userid)
{
	if (shard_user_tenants(serverid, userid) != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to write reference table \"%s\"",
						RelationGetRelationName(rel)),
				 errdetail("The user mapping limits the role to its own tenants, and the rows of a reference table belong to every tenant.")));
}

/*
 * shard_reference_refuse_row_modify
 *		Refuse an UPDATE or DELETE of reference table rel that would run
 *		row by row: a row read from one copy has no identity in another.
 */
void
shard_reference_refuse_row_modify(Relation rel, CmdType operation)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 operation == CMD_UPDATE ?
			 errmsg("cannot update reference table \"%s\" row by row",
					RelationGetRelationName(rel)) :
			 errmsg("cannot delete from reference table \"%s\" row by row",
					RelationGetRelationName(rel)),
			 errdetail("Every shard holds a copy, and a row read from one copy cannot be found again in the others."),
			 errhint("Write the statement so that it runs inside the shards: conditions and new values SQLite can compute, no row triggers, no other table joined.")));
}

/*
 * shard_reference_returning_attnum
 *		The column a RETURNING that reads no column of a reference table
 *		has SQLite return, one row per change: its first.
 */
AttrNumber
shard_reference_returning_attnum(Relation rel)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	int			i;

	for (i = 0; i < tupdesc->natts; i++)
		if (!TupleDescAttr(tupdesc, i)->attisdropped)
			return i + 1;
	elog(ERROR, "foreign table \"%s\" has no column",
		 RelationGetRelationName(rel));
	return InvalidAttrNumber;	/* keep compiler quiet */
}

/*
 * shard_reference_report_differ
 *		Fail a write to reference table relname whose copies did not change
 *		alike: n rows on shard shard_id, lead_n on lead_id, the shard reads
 *		come from.
 */
void
shard_reference_report_differ(const char *relname, const char *shard_id,
							  int64 n, const char *lead_id, int64 lead_n)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("copies of reference table \"%s\" on shards \"%s\" and \"%s\" differ",
					relname, lead_id, shard_id),
			 errdetail("Rows changed: " INT64_FORMAT " in the copy on shard \"%s\", " INT64_FORMAT " in the copy on shard \"%s\".",
					   lead_n, lead_id, n, shard_id),
			 errhint("Find the copies that differ with reference_check('%s') and make them identical.",
					 relname)));
}

/*
 * shard_reference_direct_begin
 *		Start an UPDATE or DELETE run inside the shards: of a reference
 *		table, refused for a tenant-scoped role.
 */
void
shard_reference_direct_begin(ForeignScanState *node)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;

	if (s != NULL && s->topts->reference && node->resultRelInfo != NULL)
		shard_reference_check_writer(s->rel, s->opts->serverid,
									 modify_user_compat(node->resultRelInfo,
														node->ss.ps.state));
}

/*
 * shard_reference_counts
 *		Do the rows a direct UPDATE or DELETE changed on shard t count for
 *		the statement?  Those of a tenant table's shards all do; of a
 *		reference table's copies, only those of the copy reads come from.
 */
bool
shard_reference_counts(ShardScanState *s, ShardTarget *t)
{
	if (!s->topts->reference)
		return true;
	return strcmp(t->info.shard_id,
				  shard_reference_shard(s->dir, s->topts,
										s->table_name)->shard_id) == 0;
}

/*
 * shard_reference_direct_end
 *		A direct UPDATE or DELETE of a reference table ran on every copy:
 *		fail it unless each changed as many rows as the copy reads come
 *		from.
 */
void
shard_reference_direct_end(ShardScanState *s)
{
	ShardTarget *lead = NULL;
	ListCell   *lc;

	if (!s->topts->reference)
		return;
	foreach(lc, s->targets)
	{
		ShardTarget *t = lfirst(lc);

		if (shard_reference_counts(s, t))
			lead = t;
	}
	if (lead == NULL)
		return;
	foreach(lc, s->targets)
	{
		ShardTarget *t = lfirst(lc);

		if (t->rows != lead->rows)
			shard_reference_report_differ(s->table_name, t->info.shard_id,
										  t->rows, lead->info.shard_id,
										  lead->rows);
	}
}
