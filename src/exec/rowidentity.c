/*-------------------------------------------------------------------------
 *
 * rowidentity.c
 *		  The identity of the rows a row-by-row UPDATE or DELETE reads: which
 *		  shard each came from and its rowid or primary key there
 *
 * A row is changed on the shard it was read from, whatever the directory
 * says of its tenant (leftovers of a tenant the directory places
 * elsewhere, or does not know, are changed where they are, as a statement
 * that runs inside the shards changes them).  The scan below the UPDATE or
 * DELETE hands each row over with a ctid that packs the number of that
 * shard in its low bits and the row's rowid above them, or for a WITHOUT
 * ROWID table the number of its primary key, which is kept here exactly as
 * SQLite returned it.  modify.c reads the ctid back to find the row again.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "nodes/nodeFuncs.h"
#include "storage/itemptr.h"

#include "scan.h"

/* The key of one row read from a keyed shard, as SQLite stored it. */
typedef struct ShardRowKey
{
	ShardKeyedShard *shard;
	ShardValue *values;			/* one per key column */
} ShardRowKey;

/*
 * The identity of the rows a scan below a row-by-row UPDATE or DELETE
 * returned.  A row is changed on the shard it was read from, whatever the
 * directory says of its tenant (leftovers of a tenant the directory places
 * elsewhere, or does not know, are changed where they are, as a statement
 * that runs inside the shards changes them), so its ctid carries the
 * number of that shard in its low shard_bits bits, above them its rowid,
 * or for a keyed shard the number of its key (from 1).  The keys are kept
 * exactly as SQLite returned them, never converted to PostgreSQL types and
 * back, so that an UPDATE binds the very values the shard holds whatever
 * the column's affinity; only those of rows that pass the scan's own
 * recheck are kept.
 */
struct ShardRowKeys
{
	MemoryContext cxt;
	List	   *shards;			/* ShardKeyedShard */
	ShardRowKey *rows;
	int64		nrows;
	int64		maxrows;
	ShardInfo  *read;			/* the shards rows came from, by number */
	int			nread;
	int			shard_bits;		/* 0 until the first row */
};

/*
 * shard_row_keys_create
 *		The row identities of the scan of a row-by-row UPDATE or DELETE,
 *		kept in a memory context of their own under parent.
 */
ShardRowKeys *
shard_row_keys_create(MemoryContext parent)
{
	ShardRowKeys *rk = MemoryContextAllocZero(parent, sizeof(ShardRowKeys));

	rk->cxt = AllocSetContextCreate(parent, "sqlite_shard_fdw row keys",
									ALLOCSET_DEFAULT_SIZES);
	return rk;
}

/*
 * shard_rowid_to_tid
 *		A row's rowid as the ctid a row-by-row UPDATE or DELETE identifies
 *		it by (with its tenant): its 48 low bits, or an invalid ctid for a
 *		rowid that does not fit.
 */
void
shard_rowid_to_tid(int64 rowid, ItemPointer tid)
{
	if (rowid < 0 || rowid >= (INT64CONST(1) << 48) - 0x10000)
		ItemPointerSetInvalid(tid);
	else
		ItemPointerSet(tid, (BlockNumber) (rowid >> 16),
					   (OffsetNumber) (rowid & 0xFFFF));
}

/*
 * report_no_row_key
 *		Refuse a row-by-row UPDATE or DELETE of a shard's table that has
 *		neither a rowid nor a primary key to find a row again by (a view,
 *		whose rowid SQLite reads as NULL, or a WITHOUT ROWID table of no
 *		key).
 */
static void
report_no_row_key(ShardScanState *s, ShardTarget *t)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot change rows of table \"%s\" on shard \"%s\" one by one",
					s->topts->table, t->info.shard_id),
			 errdetail("The table has neither a rowid nor a primary key to find a row again by."),
			 errhint("Change its rows with a statement that runs inside the shards.")));
}

/*
 * shard_row_key_shard
 *		A shard whose table has no rowid, read for a row-by-row UPDATE or
 *		DELETE: its rows are found again by the table's primary key, which
 *		the scan reads ahead of the columns.  A table with neither (a view)
 *		cannot be changed row by row.  Remembered per scan and shard, for
 *		the rows' keys to refer to.
 */
ShardKeyedShard *
shard_row_key_shard(ShardScanState *s, ShardTarget *t)
{
	ShardRowKeys *rk = s->row_keys;
	ShardKeyedShard *keyed;
	MemoryContext oldcxt;
	List	   *keys;
	List	   *collations;
	ListCell   *lc;

	foreach(lc, rk->shards)
	{
		keyed = lfirst(lc);
		if (strcmp(keyed->shard_id, t->info.shard_id) == 0)
			return keyed;
	}
	oldcxt = MemoryContextSwitchTo(rk->cxt);
	keys = shard_conn_primary_key(t->conn, s->topts->table, &collations);
	if (keys == NIL)
		report_no_row_key(s, t);
	keyed = palloc(sizeof(ShardKeyedShard));
	keyed->shard_id = pstrdup(t->info.shard_id);
	keyed->keys = keys;
	keyed->collations = collations;
	rk->shards = lappend(rk->shards, keyed);
	MemoryContextSwitchTo(oldcxt);
	return keyed;
}

/*
 * remember_row_key
 *		Keep the key of a row read from a keyed shard (its first values,
 *		exactly as SQLite returned them) and return its number, for a
 *		row-by-row UPDATE or DELETE to find the row again by.
 */
static int64
remember_row_key(ShardScanState *s, ShardTarget *t, const ShardValue *row)
{
	ShardRowKeys *rk = s->row_keys;
	MemoryContext oldcxt = MemoryContextSwitchTo(rk->cxt);
	ShardRowKey *key;
	int			i;

	if (rk->nrows == rk->maxrows)
	{
		rk->maxrows = Max(rk->maxrows * 2, 1024);
		rk->rows = rk->rows == NULL ?
			MemoryContextAllocHuge(rk->cxt, sizeof(ShardRowKey) * rk->maxrows) :
			repalloc_huge(rk->rows, sizeof(ShardRowKey) * rk->maxrows);
	}
	key = &rk->rows[rk->nrows++];
	key->shard = t->keyed;
	key->values = palloc(sizeof(ShardValue) * t->nkeys);
	for (i = 0; i < t->nkeys; i++)
	{
		key->values[i] = row[i];
		if (row[i].type == SQLITE_TEXT || row[i].type == SQLITE_BLOB)
		{
			char	   *copy = palloc(row[i].len + 1);

			memcpy(copy, row[i].u.p, row[i].len);
			copy[row[i].len] = '\0';
			key->values[i].u.p = copy;
		}
	}
	MemoryContextSwitchTo(oldcxt);
	return rk->nrows;
}

/*
 * row_shard_number
 *		The number of shard t among the shards a row-by-row UPDATE or
 *		DELETE read rows from, numbering it at its first row.  The number
 *		takes the low bits of each ctid, as many as the directory's shards
 *		need when the first row is read.
 */
static int
row_shard_number(ShardScanState *s, ShardTarget *t)
{
	ShardRowKeys *rk = s->row_keys;
	MemoryContext oldcxt;
	int			i;

	for (i = 0; i < rk->nread; i++)
		if (strcmp(rk->read[i].shard_id, t->info.shard_id) == 0)
			return i;
	if (rk->shard_bits == 0)
	{
		int			nshards = list_length(shard_directory_shards(s->dir));

		rk->shard_bits = 1;
		while ((1 << rk->shard_bits) < nshards && rk->shard_bits < 16)
			rk->shard_bits++;
		rk->read = MemoryContextAllocZero(rk->cxt, sizeof(ShardInfo) <<
										  rk->shard_bits);
	}
	if (rk->nread >= (1 << rk->shard_bits))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot change rows of table \"%s\" one by one on more than %d shards",
						s->topts->table, 1 << rk->shard_bits),
				 errdetail("Shards were added to the directory while the statement ran.")));
	oldcxt = MemoryContextSwitchTo(rk->cxt);
	rk->read[rk->nread].shard_id = pstrdup(t->info.shard_id);
	rk->read[rk->nread].path = pstrdup(t->info.path);
	MemoryContextSwitchTo(oldcxt);
	return rk->nread++;
}

/*
 * shard_row_set_identity
 *		Put the identity of the row just read from shard t into tid: the
 *		shard's number and the row's rowid (or its key's number), or an
 *		invalid ctid when the rowid does not fit beside the number.
 */
void
shard_row_set_identity(ShardScanState *s, ShardTarget *t, const ShardValue *row,
				 ItemPointer tid)
{
	int			shard;
	int			bits;
	int64		id;

	/* a view reads "rowid" as NULL: nothing to find its rows again by */
	if (t->keyed == NULL && t->nkeys > 0 && row[0].type != SQLITE_INTEGER)
		report_no_row_key(s, t);
	shard = row_shard_number(s, t);
	bits = s->row_keys->shard_bits;
	id = t->keyed != NULL ? remember_row_key(s, t, row) : s->cur_rowid;
	if (t->keyed == NULL && t->nkeys == 0)
		ItemPointerSetInvalid(tid);
	else if (id < 0 || id >= ((INT64CONST(1) << 48) - 0x10000) >> bits)
		ItemPointerSetInvalid(tid);
	else
		shard_rowid_to_tid((id << bits) | shard, tid);
}

/* What find_row_keys seeks: the scan of a result relation. */
typedef struct RowKeysSearch
{
	Index		rtindex;
	ShardRowKeys *found;
} RowKeysSearch;

/*
 * find_row_keys
 *		planstate_tree_walker's callback for shard_scan_row_keys: stops at
 *		our scan of the relation sought.
 */
static bool
find_row_keys(PlanState *ps, void *context)
{
	RowKeysSearch *search = (RowKeysSearch *) context;

	if (IsA(ps, ForeignScanState) &&
		((Scan *) ps->plan)->scanrelid == search->rtindex &&
		((ForeignScanState *) ps)->fdwroutine->IterateForeignScan ==
		shardIterateForeignScan &&
		((ForeignScanState *) ps)->fdw_state != NULL)
	{
		search->found =
			((ShardScanState *) ((ForeignScanState *) ps)->fdw_state)->row_keys;
		return true;
	}
	return planstate_tree_walker(ps, find_row_keys, context);
}

/*
 * shard_scan_row_keys
 *		The row keys of the scan of result relation rtindex, somewhere in
 *		the plan below a row-by-row UPDATE or DELETE, or NULL.
 */
ShardRowKeys *
shard_scan_row_keys(PlanState *below, Index rtindex)
{
	RowKeysSearch search;

	search.rtindex = rtindex;
	search.found = NULL;
	if (below != NULL)
		(void) find_row_keys(below, &search);
	return search.found;
}

/*
 * shard_row_keys_of
 *		The primary key columns by which the rows read from a shard are
 *		found again, or NIL when they are found by their rowid; *collations
 *		gets the collation the key compares each with (or NULL).
 */
List *
shard_row_keys_of(ShardRowKeys *keys, const char *shard_id,
				  List **collations)
{
	ListCell   *lc;

	*collations = NIL;
	if (keys == NULL)
		return NIL;
	foreach(lc, keys->shards)
	{
		ShardKeyedShard *keyed = lfirst(lc);

		if (strcmp(keyed->shard_id, shard_id) == 0)
		{
			*collations = keyed->collations;
			return keyed->keys;
		}
	}
	return NIL;
}

/*
 * shard_row_identity
 *		The shard a row of a row-by-row UPDATE or DELETE was read from, and
 *		in *id its rowid there or the number of its key, from the value of
 *		its ctid (shard_row_set_identity).
 */
ShardInfo *
shard_row_identity(ShardRowKeys *keys, int64 tid_value, int64 *id)
{
	int			shard;

	if (keys == NULL || keys->shard_bits == 0)
		elog(ERROR, "no rows were read for a row-by-row change");
	shard = (int) (tid_value & ((1 << keys->shard_bits) - 1));
	if (shard >= keys->nread)
		elog(ERROR, "shard %d of a row-by-row change is not known", shard);
	*id = tid_value >> keys->shard_bits;
	return &keys->read[shard];
}

/*
 * shard_row_key
 *		The key values of a row read from a keyed shard, by its number.
 */
const ShardValue *
shard_row_key(ShardRowKeys *keys, const char *shard_id, int64 n)
{
	if (keys == NULL || n < 1 || n > keys->nrows ||
		strcmp(keys->rows[n - 1].shard->shard_id, shard_id) != 0)
		elog(ERROR, "row key %lld of shard \"%s\" is not known",
			 (long long) n, shard_id);
	return keys->rows[n - 1].values;
}
