/*-------------------------------------------------------------------------
 *
 * copybatch.c
 *		  A COPY's rows kept per shard and inserted in batches, each in the
 *		  order of the shard's primary key
 *
 * Consecutive rows of a COPY go to different shards; inserted one by one,
 * each finds its shard's index pages cold in the processor's caches, while
 * a batch sorted by the shard's primary key finds them warm.  A row's text
 * and blobs are copied into the batch's own memory, which is reset once
 * the batch is inserted; every batch is inserted once too many rows wait
 * over all shards, so memory stays bounded however many shards a COPY
 * writes.  A row that fails is reported when its batch is inserted, with
 * its tenant and COPY line (modify.c's error context).
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "commands/copy.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "exec/modify.h"

static void flush_target(ShardModifyState *ms, ModifyTarget *t);

/*
 * shard_copy_init_buffer
 *		Make room for a COPY's rows to a shard (the first of them),
 *		and find which of the values make up the shard's primary key, the
 *		order a batch is inserted in; none when the key is not written (an
 *		INTEGER PRIMARY KEY SQLite assigns, say).
 */
void
shard_copy_init_buffer(ShardModifyState *ms, ModifyTarget *t)
{
	int			nvalues = list_length(ms->target_attrs);
	List	   *collations;
	List	   *keys = shard_conn_primary_key(t->conn, ms->topts->table,
											  &collations);
	ListCell   *lc;

	t->nvalues = nvalues;
	t->maxbuffered = Min(ms->copy_batch, 64);
	t->buffered = palloc(sizeof(ShardValue) * nvalues * t->maxbuffered);
	t->buffered_tenants = palloc(sizeof(char *) * t->maxbuffered);
	t->buffered_lines = palloc(sizeof(uint64) * t->maxbuffered);
	t->buffer_cxt = AllocSetContextCreate(CurrentMemoryContext,
										  "sqlite_shard_fdw rows to insert",
										  ALLOCSET_DEFAULT_SIZES);
	t->sort_cols = palloc(sizeof(int) * (list_length(keys) + 1));
	t->nsort_cols = 0;
	foreach(lc, keys)
	{
		int			i;

		for (i = 0; i < nvalues; i++)
			if (pg_strcasecmp(t->colnames[i], lfirst(lc)) == 0)
				break;
		if (i == nvalues)
		{
			t->nsort_cols = 0;
			break;
		}
		t->sort_cols[t->nsort_cols++] = i;
	}
}

/*
 * copy_line
 *		The line of the COPY row being written, or 0 outside a COPY: read
 *		from the COPY's error context, which is the one that knows it.
 */
static uint64
copy_line(ShardModifyState *ms)
{
	ErrorContextCallback *e;

	if (ms->copy == NULL)
	{
		for (e = error_context_stack; e != NULL; e = e->previous)
			if (e->callback == CopyFromErrorCallback)
			{
				ms->copy = (CopyFromState) e->arg;
				break;
			}
		if (ms->copy == NULL)
			return 0;
	}
	return ms->copy->cur_lineno;
}

/*
 * shard_copy_buffer_row
 *		Keep the row whose values ms->values holds (routed to t, its tenant
 *		in ms->tenant) for its shard's batch: its text and blobs copied, as
 *		the row's memory goes with the next row.  A full batch, or too many
 *		rows over every shard, are inserted at once.
 */
void
shard_copy_buffer_row(ShardModifyState *ms, ModifyTarget *t)
{
	int			nvalues = t->nvalues;
	ShardValue *row;
	MemoryContext oldcxt;
	int			i;

	if (t->nbuffered == t->maxbuffered)
	{
		t->maxbuffered = Min(t->maxbuffered * 2, ms->copy_batch);
		t->buffered = repalloc(t->buffered,
							   sizeof(ShardValue) * nvalues * t->maxbuffered);
		t->buffered_tenants = repalloc(t->buffered_tenants,
									   sizeof(char *) * t->maxbuffered);
		t->buffered_lines = repalloc(t->buffered_lines,
									 sizeof(uint64) * t->maxbuffered);
	}
	row = &t->buffered[(size_t) t->nbuffered * nvalues];
	oldcxt = MemoryContextSwitchTo(t->buffer_cxt);

	for (i = 0; i < nvalues; i++)
	{
		row[i] = ms->values[i];
		if (row[i].type == SQLITE_TEXT || row[i].type == SQLITE_BLOB)
		{
			char	   *bytes = palloc(row[i].len + 1);

			memcpy(bytes, row[i].u.p, row[i].len);
			bytes[row[i].len] = '\0';
			row[i].u.p = bytes;
		}
	}
	t->buffered_tenants[t->nbuffered] = pstrdup(ms->tenant);
	t->buffered_lines[t->nbuffered] = copy_line(ms);
	MemoryContextSwitchTo(oldcxt);
	t->nbuffered++;
	ms->nbuffered++;

	if (t->nbuffered >= ms->copy_batch)
		flush_target(ms, t);
	else if (ms->nbuffered >= BUFFERED_ROWS_MAX(ms->copy_batch))
		shard_copy_flush(ms);
}

/*
 * value_class
 *		The rank of a value's type in SQLite's order: NULL, numbers, text,
 *		blobs.
 */
static int
value_class(const ShardValue *v)
{
	switch (v->type)
	{
		case SQLITE_NULL:
			return 0;
		case SQLITE_INTEGER:
		case SQLITE_FLOAT:
			return 1;
		case SQLITE_TEXT:
			return 2;
		default:
			return 3;
	}
}

/*
 * compare_values
 *		Order two values as SQLite's BINARY collation does.  Only the speed
 *		of a batch depends on it: a key of another collation is merely
 *		inserted in a less helpful order.
 */
static int
compare_values(const ShardValue *a, const ShardValue *b)
{
	int			ca = value_class(a);
	int			cb = value_class(b);
	int			c;

	if (ca != cb)
		return ca < cb ? -1 : 1;
	if (ca == 0)
		return 0;
	if (ca == 1)
	{
		if (a->type == SQLITE_INTEGER && b->type == SQLITE_INTEGER)
			return a->u.i < b->u.i ? -1 : a->u.i > b->u.i ? 1 : 0;
		else
		{
			double		da = a->type == SQLITE_INTEGER ? (double) a->u.i : a->u.d;
			double		db = b->type == SQLITE_INTEGER ? (double) b->u.i : b->u.d;

			return da < db ? -1 : da > db ? 1 : 0;
		}
	}
	c = memcmp(a->u.p, b->u.p, Min(a->len, b->len));
	if (c != 0)
		return c;
	return a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
}

/*
 * compare_buffered
 *		qsort_arg comparator of the numbers of two buffered rows of a
 *		target: by its primary key, then as they came (rows with equal keys
 *		fail on the same row as unsorted).
 */
static int
compare_buffered(const void *a, const void *b, void *arg)
{
	ModifyTarget *t = (ModifyTarget *) arg;
	int			ra = *(const int *) a;
	int			rb = *(const int *) b;
	int			nvalues = t->nvalues;
	int			k;

	for (k = 0; k < t->nsort_cols; k++)
	{
		int			c = compare_values(&t->buffered[(size_t) ra * nvalues + t->sort_cols[k]],
									   &t->buffered[(size_t) rb * nvalues + t->sort_cols[k]]);

		if (c != 0)
			return c;
	}
	return ra < rb ? -1 : ra > rb ? 1 : 0;
}

/*
 * flush_target
 *		Insert the rows buffered for a shard, in the order of its primary
 *		key, each reported (its tenant and COPY line) if it fails.
 */
static void
flush_target(ShardModifyState *ms, ModifyTarget *t)
{
	ErrorContextCallback errcallback;
	int			nvalues = list_length(ms->target_attrs);
	int		   *order;
	bool		sorted = true;
	int			k;

	if (t->nbuffered == 0)
		return;

	order = palloc(sizeof(int) * t->nbuffered);
	for (k = 0; k < t->nbuffered; k++)
	{
		order[k] = k;
		if (k > 0 && t->nsort_cols > 0 && sorted)
			sorted = compare_buffered(&order[k - 1], &order[k], t) < 0;
	}
	if (!sorted)
		qsort_arg(order, t->nbuffered, sizeof(int), compare_buffered, t);

	errcallback.callback = shard_modify_error_callback;
	errcallback.arg = ms;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;
	ms->shard_id = t->shard_id;
	ms->col = -1;

	for (k = 0; k < t->nbuffered; k++)
	{
		int			r = order[k];
		char		errbuf[SHARDIO_ERRLEN];
		int			rc;

		CHECK_FOR_INTERRUPTS();
		ms->tenant = t->buffered_tenants[r];
		ms->copy_line = t->buffered_lines[r];
		rc = shardio_bind(t->stmt, 1, &t->buffered[(size_t) r * nvalues],
						  nvalues, errbuf);
		if (rc != SQLITE_OK)
			shard_sqlite_error(ERROR, rc, t->shard_id, errbuf,
							   shard_write_failure(CMD_INSERT, false),
							   ms->topts->table, t->shard_id);
		rc = sqlite3_step(t->stmt);
		if (rc != SQLITE_DONE)
		{
			const char *msg = pstrdup(sqlite3_errmsg(shard_conn_db(t->conn)));

			rc = sqlite3_extended_errcode(shard_conn_db(t->conn));
			sqlite3_reset(t->stmt);
			rc = shard_conn_write_failed(t->conn, rc);
			shard_write_error(rc, t->shard_id, ms->topts->table, ms->tenant,
							  msg, shard_write_failure(CMD_INSERT, false),
							  ms->topts->table, t->shard_id);
		}
		sqlite3_reset(t->stmt);
		sqlite3_clear_bindings(t->stmt);
	}

	error_context_stack = errcallback.previous;
	ms->copy_line = 0;
	ms->nbuffered -= t->nbuffered;
	t->nbuffered = 0;
	MemoryContextReset(t->buffer_cxt);
	pfree(order);
}

/*
 * shard_copy_flush
 *		Insert the rows buffered for every shard, shard after shard.
 */
void
shard_copy_flush(ShardModifyState *ms)
{
	ListCell   *lc;

	foreach(lc, ms->targets)
		flush_target(ms, (ModifyTarget *) lfirst(lc));
}

