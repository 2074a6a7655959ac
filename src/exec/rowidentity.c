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
 * The shards are numbered as rows first come from them, in as many bits
 * as the shards the statement may read need when its first row is read:
 * those of the directory, or, on a fleet of one file per tenant, those the
 * scan reads (listing millions of files for the number would cost every
 * statement the listing, and a tenant-scoped login must not learn of other
 * tenants' files, even by a WARNING).  A row that does not fit (a shard
 * numbered past those bits, as the rescans of a parameterized scan read
 * other shards, or a rowid too large beside the number) has its shard and
 * rowid kept as a record, as a key is, and its ctid is the record's number
 * with ROW_RECORD set.
 *
 * The keys are kept as records one after another, each a small header and
 * the storage class and bytes of each key value, numbered by where they
 * start: an UPDATE that changes millions of rows of a WITHOUT ROWID table
 * looks any of them up at once, in whatever order the plan above the scan
 * hands the rows over.  They are held in memory up to work_mem, and beyond
 * it in a temporary file (BufFile, as a tuplestore spills), so that the
 * statement runs in bounded memory however many rows it changes.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "commands/tablespace.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "storage/buffile.h"
#include "storage/itemptr.h"

#include "scan.h"

/*
 * The header of a key's record; the key's values follow, each a storage
 * class byte and, for an integer or a real, its 8 bytes, for text or a
 * blob its length (4 bytes), its bytes and a NUL.  Records start on
 * multiples of KEY_ALIGN bytes, whose number (from 1) is the key's number:
 * ctids number 8 times as many bytes of keys as they would bytes.
 */
typedef struct ShardKeyRecord
{
	int32		len;			/* bytes of the values */
	int32		shard;			/* the number of the shard it was read from */
} ShardKeyRecord;

#define KEY_ALIGN	8

/*
 * The bit of a ctid's 48 that marks the number of a record (a row kept
 * whole: its shard and its rowid or key) rather than a shard and a rowid
 * packed together.
 */
#define ROW_RECORD	(INT64CONST(1) << 47)

static void read_key_bytes(ShardRowKeys *rk, int64 offset, void *dest,
						   size_t len);

/*
 * The identity of the rows a scan below a row-by-row UPDATE or DELETE
 * returned.  A row is changed on the shard it was read from, whatever the
 * directory says of its tenant (leftovers of a tenant the directory places
 * elsewhere, or does not know, are changed where they are, as a statement
 * that runs inside the shards changes them), so its ctid carries the
 * number of that shard in its low shard_bits bits, above them its rowid,
 * or for a keyed shard the number of its key's record.  The keys are kept
 * exactly as SQLite returned them, never converted to PostgreSQL types and
 * back, so that an UPDATE binds the very values the shard holds whatever
 * the column's affinity; only those of rows that pass the scan's own
 * recheck are kept.
 */
struct ShardRowKeys
{
	MemoryContext cxt;
	List	   *shards;			/* ShardKeyedShard */

	/* The keys' records: in mem while they fit in work_mem, then in file. */
	char	   *mem;
	int64		mem_size;		/* bytes allocated for mem */
	BufFile    *file;			/* every record, once they outgrew mem */
	bool		file_at_end;	/* its position is at size */
	int64		size;			/* bytes of records so far */
	int64		limit;			/* bytes mem may hold */
	StringInfoData record;		/* the record being written */
	StringInfoData fetched;		/* the values of the key last read */
	ShardValue *values;			/* ... and the key (shard_row_key) */
	int			maxvalues;

	ShardInfo  *read;			/* the shards rows came from, by number */
	int			nread;
	int			maxread;		/* entries read has room for */
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
	MemoryContext oldcxt;

	rk->cxt = AllocSetContextCreate(parent, "sqlite_shard_fdw row keys",
									ALLOCSET_DEFAULT_SIZES);
	rk->limit = (int64) work_mem * 1024;
	rk->file_at_end = true;
	oldcxt = MemoryContextSwitchTo(rk->cxt);
	initStringInfo(&rk->record);
	initStringInfo(&rk->fetched);
	MemoryContextSwitchTo(oldcxt);
	return rk;
}

/*
 * shard_row_keys_end
 *		The statement is done with the keys: close their temporary file now
 *		rather than at the end of the transaction.
 */
void
shard_row_keys_end(ShardRowKeys *rk)
{
	if (rk == NULL)
		return;
	if (rk->file != NULL)
		BufFileClose(rk->file);
	rk->file = NULL;
	rk->size = 0;
	rk->file_at_end = true;
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
 * key_file_seek
 *		Put the position of the keys' file at offset, or fail.
 */
static void
key_file_seek(ShardRowKeys *rk, int64 offset)
{
	/* BufFileSeek carries an offset past a segment into the next ones */
	if (BufFileSeek(rk->file, 0, (off_t) offset, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not seek in temporary file of row keys")));
	rk->file_at_end = (offset == rk->size);
}

/*
 * append_key_record
 *		Add rk->record to the keys' records, in memory while they fit in
 *		work_mem, else in the temporary file, which takes every record once
 *		they no longer fit.
 */
static void
append_key_record(ShardRowKeys *rk)
{
	int64		len = rk->record.len;

	if (rk->file == NULL && rk->size + len > rk->limit)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(rk->cxt);

		/* in temp_tablespaces; closed by the resource owner after an error */
		PrepareTempTablespaces();
		rk->file = BufFileCreateTemp(false);
		MemoryContextSwitchTo(oldcxt);
		if (rk->size > 0)
			BufFileWrite(rk->file, rk->mem, rk->size);
		if (rk->mem != NULL)
			pfree(rk->mem);
		rk->mem = NULL;
		rk->mem_size = 0;
		rk->file_at_end = true;
	}
	if (rk->file != NULL)
	{
		if (!rk->file_at_end)
			key_file_seek(rk, rk->size);
		BufFileWrite(rk->file, rk->record.data, len);
	}
	else
	{
		if (rk->size + len > rk->mem_size)
		{
			int64		size = Max(rk->mem_size * 2, 8192);

			while (size < rk->size + len)
				size *= 2;
			size = Min(size, rk->limit);	/* which holds size + len */
			rk->mem = rk->mem == NULL ?
				MemoryContextAllocHuge(rk->cxt, size) :
				repalloc_huge(rk->mem, size);
			rk->mem_size = size;
		}
		memcpy(rk->mem + rk->size, rk->record.data, len);
	}
	rk->size += len;
}

/*
 * remember_row_key
 *		Keep the key of a row read from a keyed shard (its first nkeys
 *		values, exactly as SQLite returned them: storage class and bytes),
 *		or the rowid of a row kept as a record, and return its number, for
 *		a row-by-row UPDATE or DELETE to find the row again by.
 */
static int64
remember_row_key(ShardRowKeys *rk, const ShardValue *row, int nkeys,
				 int shard)
{
	StringInfo	buf = &rk->record;
	ShardKeyRecord header;
	int64		offset = rk->size;
	int			i;

	resetStringInfo(buf);
	header.len = 0;
	header.shard = shard;
	appendBinaryStringInfo(buf, (char *) &header, sizeof(header));
	for (i = 0; i < nkeys; i++)
	{
		char		type = (char) row[i].type;
		int32		len = row[i].len;

		appendBinaryStringInfo(buf, &type, 1);
		switch (row[i].type)
		{
			case SQLITE_INTEGER:
				appendBinaryStringInfo(buf, (char *) &row[i].u.i,
									   sizeof(row[i].u.i));
				break;
			case SQLITE_FLOAT:
				appendBinaryStringInfo(buf, (char *) &row[i].u.d,
									   sizeof(row[i].u.d));
				break;
			case SQLITE_TEXT:
			case SQLITE_BLOB:
				appendBinaryStringInfo(buf, (char *) &len, sizeof(len));
				appendBinaryStringInfo(buf, row[i].u.p, len);
				appendStringInfoChar(buf, '\0');
				break;
			default:
				break;			/* NULL: the class alone */
		}
	}
	header.len = buf->len - sizeof(header);
	memcpy(buf->data, &header, sizeof(header));
	while (buf->len % KEY_ALIGN != 0)
		appendStringInfoChar(buf, '\0');
	append_key_record(rk);
	return offset / KEY_ALIGN + 1;
}

/*
 * row_shard_number
 *		The number of shard t among the shards a row-by-row UPDATE or
 *		DELETE read rows from, numbering it at its first row.  When the
 *		first row is read, the ctid's low bits that pack the number are
 *		sized for the shards the statement may read: the directory's, or
 *		on a fleet of one file per tenant the scan's own (see the head of
 *		this file).
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
		int			nshards = s->opts->file_per_tenant ?
			list_length(s->targets) :
			list_length(shard_directory_shards(s->dir));

		rk->shard_bits = 1;
		while ((1 << rk->shard_bits) < nshards && rk->shard_bits < 16)
			rk->shard_bits++;
	}
	if (rk->nread == rk->maxread)
	{
		int			n = Max(rk->maxread * 2, 1 << rk->shard_bits);

		rk->read = rk->read == NULL ?
			MemoryContextAllocZero(rk->cxt, sizeof(ShardInfo) * n) :
			repalloc(rk->read, sizeof(ShardInfo) * n);
		rk->maxread = n;
	}
	oldcxt = MemoryContextSwitchTo(rk->cxt);
	rk->read[rk->nread].shard_id = pstrdup(t->info.shard_id);
	rk->read[rk->nread].path = pstrdup(t->info.path);
	MemoryContextSwitchTo(oldcxt);
	return rk->nread++;
}

/*
 * shard_row_set_identity
 *		Put the identity of the row just read from shard t into tid: the
 *		shard's number and the row's rowid (or its key's number), or, when
 *		they do not fit together, the number of a record of both.
 */
void
shard_row_set_identity(ShardScanState *s, ShardTarget *t, const ShardValue *row,
				 ItemPointer tid)
{
	ShardRowKeys *rk = s->row_keys;
	int			shard;
	int			bits;
	int64		id;

	/* a view reads "rowid" as NULL: nothing to find its rows again by */
	if (t->keyed == NULL && t->nkeys > 0 && row[0].type != SQLITE_INTEGER)
		report_no_row_key(s, t);
	if (t->keyed == NULL && t->nkeys == 0)
	{
		ItemPointerSetInvalid(tid);
		return;
	}
	shard = row_shard_number(s, t);
	bits = rk->shard_bits;
	id = t->keyed != NULL ? remember_row_key(rk, row, t->nkeys, shard) :
		s->cur_rowid;
	if (shard < (1 << bits) && id >= 0 && id < (ROW_RECORD >> bits))
	{
		shard_rowid_to_tid((id << bits) | shard, tid);
		return;
	}

	/* kept whole: the key's record, or a record of the shard and rowid */
	if (t->keyed == NULL)
	{
		ShardValue	rowid;

		memset(&rowid, 0, sizeof(rowid));
		rowid.type = SQLITE_INTEGER;
		rowid.u.i = s->cur_rowid;
		id = remember_row_key(rk, &rowid, 1, shard);
	}
	if (id >= ROW_RECORD - 0x10000)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cannot change more rows of table \"%s\" one by one in one statement",
						s->topts->table)));
	shard_rowid_to_tid(ROW_RECORD | id, tid);
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
	if (tid_value & ROW_RECORD)
	{
		int64		n = tid_value & ~ROW_RECORD;
		ShardKeyRecord header;
		List	   *collations;

		/* a record: its shard, then its key's number or its rowid */
		if (n < 1 || (n - 1) * KEY_ALIGN + (int64) sizeof(header) > keys->size)
			elog(ERROR, "row record %lld of a row-by-row change is not known",
				 (long long) n);
		read_key_bytes(keys, (n - 1) * KEY_ALIGN, &header, sizeof(header));
		shard = header.shard;
		if (shard < 0 || shard >= keys->nread)
			elog(ERROR, "shard %d of a row-by-row change is not known", shard);
		if (shard_row_keys_of(keys, keys->read[shard].shard_id,
							  &collations) != NIL)
			*id = n;
		else
		{
			const ShardValue *rowid = shard_row_key(keys,
													keys->read[shard].shard_id,
													n);

			if (rowid[0].type != SQLITE_INTEGER)
				elog(ERROR, "row record %lld of a row-by-row change holds no rowid",
					 (long long) n);
			*id = rowid[0].u.i;
		}
		return &keys->read[shard];
	}
	shard = (int) (tid_value & ((1 << keys->shard_bits) - 1));
	if (shard >= keys->nread)
		elog(ERROR, "shard %d of a row-by-row change is not known", shard);
	*id = tid_value >> keys->shard_bits;
	return &keys->read[shard];
}

/*
 * read_key_bytes
 *		Copy len bytes of the keys' records from offset into dest.
 */
static void
read_key_bytes(ShardRowKeys *rk, int64 offset, void *dest, size_t len)
{
	size_t		nread;

	if (rk->file == NULL)
	{
		memcpy(dest, rk->mem + offset, len);
		return;
	}
	key_file_seek(rk, offset);
	nread = BufFileRead(rk->file, dest, len);
	if (nread != len)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read from temporary file of row keys: read only %zu of %zu bytes",
						nread, len)));
	rk->file_at_end = (offset + len == rk->size);
}

/*
 * shard_row_key
 *		The key values of a row read from a keyed shard, by its number, as
 *		SQLite returned them; valid until the next call.
 */
const ShardValue *
shard_row_key(ShardRowKeys *keys, const char *shard_id, int64 n)
{
	ShardKeyRecord header;
	int64		offset = (n - 1) * KEY_ALIGN;
	MemoryContext oldcxt;
	char	   *p;
	char	   *end;
	int			nvalues = 0;

	if (keys == NULL || n < 1 || offset + (int64) sizeof(header) > keys->size)
		elog(ERROR, "row key %lld of shard \"%s\" is not known",
			 (long long) n, shard_id);
	read_key_bytes(keys, offset, &header, sizeof(header));
	if (header.shard < 0 || header.shard >= keys->nread ||
		strcmp(keys->read[header.shard].shard_id, shard_id) != 0 ||
		header.len < 0 || offset + sizeof(header) + header.len > keys->size)
		elog(ERROR, "row key %lld of shard \"%s\" is not known",
			 (long long) n, shard_id);

	/* the values' bytes, each text or blob followed by a NUL */
	oldcxt = MemoryContextSwitchTo(keys->cxt);
	resetStringInfo(&keys->fetched);
	enlargeStringInfo(&keys->fetched, header.len);
	read_key_bytes(keys, offset + sizeof(header), keys->fetched.data,
				   header.len);
	keys->fetched.len = header.len;
	MemoryContextSwitchTo(oldcxt);

	p = keys->fetched.data;
	end = p + header.len;
	while (p < end)
	{
		ShardValue *v;
		int32		len;

		if (nvalues == keys->maxvalues)
		{
			keys->maxvalues = Max(keys->maxvalues * 2, 4);
			keys->values = keys->values == NULL ?
				MemoryContextAlloc(keys->cxt,
								   sizeof(ShardValue) * keys->maxvalues) :
				repalloc(keys->values, sizeof(ShardValue) * keys->maxvalues);
		}
		v = &keys->values[nvalues++];
		memset(v, 0, sizeof(ShardValue));
		v->type = (unsigned char) *p++;
		switch (v->type)
		{
			case SQLITE_INTEGER:
				memcpy(&v->u.i, p, sizeof(v->u.i));
				p += sizeof(v->u.i);
				break;
			case SQLITE_FLOAT:
				memcpy(&v->u.d, p, sizeof(v->u.d));
				p += sizeof(v->u.d);
				break;
			case SQLITE_TEXT:
			case SQLITE_BLOB:
				memcpy(&len, p, sizeof(len));
				p += sizeof(len);
				v->len = len;
				v->u.p = p;
				p += len + 1;	/* and its NUL */
				break;
			default:
				break;
		}
	}
	return keys->values;
}
