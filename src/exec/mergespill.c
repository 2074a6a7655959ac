/*-------------------------------------------------------------------------
 *
 * mergespill.c
 *		  Shard rows the aggregate merge sets aside on disk
 *
 * The merge of the shards' partial aggregates (merge.c) keeps its groups
 * in a hash table within hash_mem.  Once the table is full, as in
 * PostgreSQL's own hash aggregation, rows of the groups already in it are
 * still combined there, and rows of new groups are written here, into one
 * of a few partitions chosen by bits of the hash of their keys, so that
 * every row of a group lands in the same partition.  After the groups in
 * memory are returned, each partition is read back and merged as the input
 * was: with a full table again, into partitions of its own by the next
 * bits of the hash.
 *
 * What is written is the shard's row itself (its SQLite values and the
 * shard it came from), not an accumulator: merged later, it goes through
 * the same code as any row does, so every aggregate the merge knows comes
 * out as it would in memory, and an error about a value still names its
 * shard.  Each partition is a temporary BufFile with one block of buffer:
 * the number of partitions is bounded so their buffers take a quarter of
 * hash_mem at most.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "port/pg_bitutils.h"

#include "mergespill.h"

/* Fewest and most partitions a pass writes (PostgreSQL's hash agg's). */
#define MERGE_SPILL_MIN_PARTITIONS	4
#define MERGE_SPILL_MAX_PARTITIONS	256

/* What precedes a row's values on disk. */
typedef struct SpilledRowHeader
{
	uint32		len;			/* bytes after this header */
	int32		ncols;
	int32		shard_len;		/* bytes of the shard's name, then NUL */
} SpilledRowHeader;

/*
 * merge_spill_partitions
 *		How many partitions a pass writes when the table has hash_mem: as
 *		many as a quarter of it buffers, a power of two between 4 and 256,
 *		fewer when the hash has fewer bits left; 0 when it has none (the
 *		table then grows instead, as PostgreSQL's does).
 */
int
merge_spill_partitions(Size hash_mem, int used_bits)
{
	Size		n = hash_mem / 4 / BLCKSZ;
	int			bits;

	n = Max(n, MERGE_SPILL_MIN_PARTITIONS);
	n = Min(n, MERGE_SPILL_MAX_PARTITIONS);
	bits = pg_leftmost_one_pos32((uint32) n);
	if (used_bits + bits > 32)
		bits = 32 - used_bits;
	return bits > 0 ? 1 << bits : 0;
}

/*
 * merge_spill_begin
 *		Start a pass's partitions: each row goes to the one its hash's next
 *		bits after used_bits choose.  The files are created as rows come.
 */
MergeSpill *
merge_spill_begin(int npartitions, int used_bits)
{
	MergeSpill *sp = palloc0(sizeof(MergeSpill));
	int			bits = pg_leftmost_one_pos32((uint32) npartitions);

	sp->npartitions = npartitions;
	sp->used_bits = used_bits + bits;
	sp->shift = 32 - sp->used_bits;
	sp->parts = palloc0(sizeof(MergeSpillBatch) * npartitions);
	return sp;
}

/*
 * merge_spill_row
 *		Write a shard's row to its partition; returns the bytes written.
 *		The file is created in the memory context current here, which must
 *		last as long as the merge.
 */
int64
merge_spill_row(MergeSpill *sp, uint32 hash, const ShardValue *row,
				int ncols, const char *shard_id)
{
	MergeSpillBatch *b;
	SpilledRowHeader hdr;
	int			c;

	b = &sp->parts[sp->shift >= 32 ? 0 :
				   (hash >> sp->shift) & (sp->npartitions - 1)];
	if (b->file == NULL)
	{
		b->file = BufFileCreateTemp(false);
		b->used_bits = sp->used_bits;
	}

	hdr.ncols = ncols;
	hdr.shard_len = strlen(shard_id);
	hdr.len = sizeof(ShardValue) * ncols + hdr.shard_len + 1;
	for (c = 0; c < ncols; c++)
		if (row[c].type == SQLITE_TEXT || row[c].type == SQLITE_BLOB)
			hdr.len += row[c].len + 1;

	BufFileWrite(b->file, &hdr, sizeof(hdr));
	BufFileWrite(b->file, (void *) shard_id, hdr.shard_len + 1);
	BufFileWrite(b->file, (void *) row, sizeof(ShardValue) * ncols);
	/* text and blob bytes follow the values, in column order */
	for (c = 0; c < ncols; c++)
		if (row[c].type == SQLITE_TEXT || row[c].type == SQLITE_BLOB)
		{
			static const char nul = '\0';

			if (row[c].len > 0)
				BufFileWrite(b->file, (void *) row[c].u.p, row[c].len);
			BufFileWrite(b->file, (void *) &nul, 1);
		}
	b->rows++;
	b->bytes += sizeof(hdr) + hdr.len;
	return sizeof(hdr) + hdr.len;
}

/*
 * merge_spill_finish
 *		End a pass: the partitions that received rows, ready to be read,
 *		are appended to batches, which is returned.
 */
List *
merge_spill_finish(MergeSpill *sp, List *batches)
{
	int			i;

	for (i = 0; i < sp->npartitions; i++)
	{
		MergeSpillBatch *b = &sp->parts[i];

		if (b->file == NULL)
			continue;
		if (BufFileSeek(b->file, 0, 0, SEEK_SET) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not rewind the aggregate merge's temporary file: %m")));
		batches = lappend(batches, palloc(sizeof(MergeSpillBatch)));
		*(MergeSpillBatch *) llast(batches) = *b;
	}
	pfree(sp->parts);
	pfree(sp);
	return batches;
}

/*
 * read_exactly
 *		Read size bytes of a batch; false at its end, an error if it ends
 *		within a row.
 */
static bool
read_exactly(MergeSpillBatch *b, void *ptr, size_t size, bool eof_ok)
{
	size_t		got = BufFileRead(b->file, ptr, size);

	if (got == size)
		return true;
	if (got == 0 && eof_ok)
		return false;
	ereport(ERROR,
			(errcode_for_file_access(),
			 errmsg("could not read the aggregate merge's temporary file: read only %zu of %zu bytes",
					got, size)));
	return false;
}

/*
 * merge_spill_read
 *		The next row of a batch, into the reader's buffers (valid until the
 *		next call); false after the last.
 */
bool
merge_spill_read(MergeSpillBatch *b, MergeSpillReader *rd,
				 const ShardValue **row, int *ncols, const char **shard_id)
{
	SpilledRowHeader hdr;
	char	   *p;
	int			c;

	if (!read_exactly(b, &hdr, sizeof(hdr), true))
		return false;
	resetStringInfo(&rd->buf);
	enlargeStringInfo(&rd->buf, hdr.len);
	read_exactly(b, rd->buf.data, hdr.len, false);

	p = rd->buf.data;
	*shard_id = p;
	p += hdr.shard_len + 1;
	if (hdr.ncols > rd->maxcols)
	{
		rd->values = rd->values == NULL ?
			palloc(sizeof(ShardValue) * hdr.ncols) :
			repalloc(rd->values, sizeof(ShardValue) * hdr.ncols);
		rd->maxcols = hdr.ncols;
	}
	memcpy(rd->values, p, sizeof(ShardValue) * hdr.ncols);
	p += sizeof(ShardValue) * hdr.ncols;
	for (c = 0; c < hdr.ncols; c++)
		if (rd->values[c].type == SQLITE_TEXT ||
			rd->values[c].type == SQLITE_BLOB)
		{
			rd->values[c].u.p = p;
			p += rd->values[c].len + 1;
		}
	*row = rd->values;
	*ncols = hdr.ncols;
	return true;
}

/*
 * merge_spill_close
 *		Delete a batch's file.
 */
void
merge_spill_close(MergeSpillBatch *b)
{
	if (b->file)
		BufFileClose(b->file);
	b->file = NULL;
}
