/*-------------------------------------------------------------------------
 *
 * scanmerge.c
 *		  The in-order merge of the shards' rows of a sorted and limited
 *		  row scan
 *
 * A BI tool's table ("ORDER BY created_at DESC, id LIMIT 2000" over every
 * tenant) asks each shard for its first OFFSET + LIMIT rows.  Sorting all
 * of them (shards x 2,000 rows read, converted and sorted, to keep 2,000)
 * costs the backend far more than the shards' work.  Where every shard
 * returns its rows in the scan's order exactly, the scan merges them
 * instead, as PostgreSQL's MergeAppend does: a binary heap over each
 * shard's current row, the least on top; taking it converts that shard's
 * next row; the scan stops taking when LIMIT is reached (with ties, after
 * the rows that tie with the OFFSET + LIMIT'th on the first key, which
 * hold every row PostgreSQL's sort and Limit above may keep).  Only about
 * LIMIT rows, and one more per shard, are converted.
 *
 * A shard's order is exact when SQLite sorts its rows as PostgreSQL sorts
 * the values read (order.c): its query's ORDER BY and LIMIT, as for any
 * sorted scan.  With ties (a prefix of the order) a shard's rows come in
 * the prefix's order without LIMIT: the merge reads only as far as it
 * returns, ties included.  A time key's rows in the canonical form
 * come in their text's order, which is their time's; the rows of other
 * forms that may rank among the first (its window, shardsql.c) come before
 * them, marked in a last column, and are sorted here, with every other
 * shard's, into one more ordered source of the merge.  A shard's query
 * may come in two segments (shardsql.c, append_window_sql), whose second
 * window's rows come after the first segment's ordered rows, when the
 * merge reads that far: each ranks after every row returned so far, and
 * joins a heap of such rows, the merge's last source.  So is every row of
 * a shard whose declarations or rechecked conditions forbid its order
 * (shardsql.c, row_shard_sorts), read whole, and of a shard with ties
 * where no index gives the first key's order (it returns its first rows
 * and their ties: read without LIMIT, SQLite would sort every row before
 * the first).  A shard whose rows come out of order after all is an error,
 * never a wrong answer.
 *
 * Each shard is read in small batches, its statement open between them:
 * the first of about its share of OFFSET + LIMIT rows (at least
 * MERGE_MIN_ROWS), each next twice as large up to a batch's size.  A
 * limit of up to MERGE_BACKEND_MAX_ROWS rows is read by the backend itself
 * for as long as each shard answers within sqlite_shard_fdw.quick_shard_ms
 * (as scanread.c's quick reads), larger ones by the fan-out's workers as
 * stepped jobs (fanout.c): a worker reads a shard's next batch when the
 * merge has used half of its current one, so that the backend seldom
 * waits, unless the shard's pace so far says the rows it holds will do
 * (most shards of a fleet-wide limit need only their first batch).  No
 * batch asks for more rows than the merge may still return.  A shard
 * holds at most two batches (the one being merged and the next), so
 * memory is bounded by the shards, not by the limit.
 *
 * Each shard merged holds its handle, and so its descriptors, until it
 * ends.  Once the handles held fill the descriptor budget
 * (shard_conn_room_to_hold), the next shards are read whole into the sort
 * one after another, each let go before the next opens: a fleet of more
 * files than a backend may keep open is merged all the same.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "executor/executor.h"
#include "lib/binaryheap.h"
#include "lib/pairingheap.h"
#include "miscadmin.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/sortsupport.h"
#include "utils/tuplesort.h"

#include "compat.h"
#include "scan.h"

/*
 * The fewest rows asked of a shard at a time.  A fleet's latest 10 rows
 * take one to three of most of 16 shards' rows (one more each, the heap's):
 * each row read beyond costs SQLite a table row.
 */
#define MERGE_MIN_ROWS 3

/*
 * Limits up to this many rows (OFFSET + LIMIT) are read by the backend
 * while each shard is quick, as scanread.c's quick reads of up to
 * QUICK_MAX_ROWS rows are.
 */
#define MERGE_BACKEND_MAX_ROWS 1000

/* One ordered source of the merge: a shard, or the rows sorted here. */
typedef struct MergeSource
{
	ShardTarget *t;				/* the shard, or NULL: the sorted rows or
								 * the late ones */
	bool		late;			/* the late rows of other forms */
	bool		live;			/* in the heap, with a current row */
	int			task;			/* its position among the scan's targets */
	bool		in_fanout;		/* read by the fan-out, else by the backend */
	ShardBatch *batch;			/* the rows being merged */
	int			row;			/* the next of them */
	ShardBatch *next;			/* the fan-out's next batch, arrived */
	bool		requested;		/* a batch asked of the fan-out, to come */
	bool		final;			/* its last batch has arrived */
	bool		marked;			/* a time key's: its rows end with a mark,
								 * 1 for a row of another form */
	bool		has_row;		/* slot holds a row it returned */
	bool		ended;			/* its statement returned its last rows */
	int			want;			/* rows to ask for next */
	TupleTableSlot *slot;		/* its current row */
} MergeSource;

/* A row of another time form that came after its shard's ordered rows. */
typedef struct LateRow
{
	pairingheap_node ph;
	MinimalTuple tuple;
} LateRow;

struct ShardRowMerge
{
	MemoryContext cxt;
	ShardScanState *scan;
	int			nsources;		/* one per target, then the sorted rows,
								 * then the late ones */
	MergeSource *sources;
	binaryheap *heap;			/* sources with a current row */
	SortSupport ssup;			/* the scan's sort keys */
	int			last;			/* source of the row returned last, or -1 */
	Tuplesortstate *sorted;		/* rows of shards not read in order */
	pairingheap *late;			/* rows of other forms that came late */
	bool		late_added;		/* one came since the heap was built */
	TupleTableSlot *cmp_a;		/* late rows compared in these */
	TupleTableSlot *cmp_b;
	bool		draining;		/* the rows of other forms go to sorted */
	int64		emitted;		/* rows returned */
	bool		finished;		/* with ties: past the last one */
	Datum		tie_key;		/* with ties: the first key of the
								 * OFFSET + LIMIT'th row ... */
	bool		tie_null;		/* ... or its NULL */
	int			cap;			/* rows a batch holds */
	int			ncols;			/* columns a batch holds */
};

/*
 * shard_scan_stream_ok
 *		Does this sorted and limited row scan merge its shards' rows as they
 *		come?  Not one whose single shard passes its rows through (row_direct)
 *		or a join's; not one that reads each shard whole first (a statement
 *		that writes the table, the rows of a row-by-row UPDATE or DELETE).
 *		Nor one shard's by a time key: its first rows, which bound the window
 *		of other forms, would be found twice (sorted twice, where no index
 *		serves the order), to spare the sort of only OFFSET + LIMIT rows.
 */
bool
shard_scan_stream_ok(ShardScanState *s)
{
	return s->row_order && s->nsort > 0 && s->shard_bound >= 0 &&
		!s->row_direct && s->join == NULL && !s->materialize &&
		s->row_keys == NULL && s->targets != NIL &&
		(s->window == NIL || list_length(s->targets) > 1);
}

/*
 * shard_scan_merge_batch_rows
 *		The rows first asked of each shard: about its share of OFFSET +
 *		LIMIT and a quarter more, at least MERGE_MIN_ROWS.
 */
int
shard_scan_merge_batch_rows(ShardScanState *s)
{
	int			n = Max(list_length(s->targets), 1);
	int64		rows = s->shard_bound / n + s->shard_bound / (4 * n) + 1;

	return (int) Min(Max(rows, MERGE_MIN_ROWS), SCAN_BATCH_ROWS);
}

/*
 * batch_rows_left
 *		The rows to ask of a shard next: its batch size, but no more than
 *		the merge may still return before OFFSET + LIMIT (and one for the
 *		heap), at least MERGE_MIN_ROWS.  A shard's batches double, so its
 *		last one could otherwise read hundreds of rows where the merge
 *		takes a few.  Not with ties: the merge reads on past the bound
 *		while the first key ties, which may be many rows.
 */
static int
batch_rows_left(ShardRowMerge *m, MergeSource *src)
{
	int64		left = m->scan->shard_bound - m->emitted + 1;

	if (m->scan->ties != NIL)
		return src->want;
	return (int) Min(src->want, Max(left, MERGE_MIN_ROWS));
}

/*
 * prefetch_worth
 *		Should a worker read a shard's next batch before the merge uses up
 *		the rows it holds?  Only where the shard's pace so far (its rows
 *		taken against the merge's rows returned), kept up to OFFSET +
 *		LIMIT and an eighth more, needs more rows than it holds: a first
 *		batch of about each shard's share mostly suffices, and a second
 *		batch read for each would cost the shards more than the merge
 *		takes.  A shard whose rows run out is read then, the merge waiting.
 */
static bool
prefetch_worth(ShardRowMerge *m, MergeSource *src)
{
	int64		taken = src->t->rows;
	int64		held = taken + (src->batch->nrows - src->row);
	int64		emitted = Max(m->emitted, 1);

	if (m->scan->ties != NIL && m->emitted >= m->scan->shard_bound)
		return true;
	return (double) taken * m->scan->shard_bound / emitted * 1.125 > held;
}

/*
 * slot_compare
 *		Which of two rows comes first by the scan's keys: < 0, 0 or > 0.
 */
static int
slot_compare(ShardRowMerge *m, TupleTableSlot *sa, TupleTableSlot *sb)
{
	ShardScanState *s = m->scan;
	int			i;

	for (i = 0; i < s->nsort; i++)
	{
		AttrNumber	attno = s->sort_attnos[i];
		Datum		da,
					db;
		bool		na,
					nb;
		int			cmp;

		da = slot_getattr(sa, attno, &na);
		db = slot_getattr(sb, attno, &nb);
		cmp = ApplySortComparator(da, na, db, nb, &m->ssup[i]);
		if (cmp != 0)
			return cmp;
	}
	return 0;
}

/*
 * heap_compare
 *		binaryheap's comparator: which of two sources' current rows comes
 *		first (the heap keeps its greatest on top, so the order is turned
 *		round).
 */
static int
heap_compare(Datum a, Datum b, void *arg)
{
	ShardRowMerge *m = (ShardRowMerge *) arg;

	return -slot_compare(m, m->sources[DatumGetInt32(a)].slot,
						 m->sources[DatumGetInt32(b)].slot);
}

/*
 * late_compare
 *		pairingheap's comparator of late rows: the first in the scan's order
 *		on top.
 */
static int
late_compare(const pairingheap_node *a, const pairingheap_node *b, void *arg)
{
	ShardRowMerge *m = (ShardRowMerge *) arg;
	const LateRow *ra = pairingheap_const_container(LateRow, ph, a);
	const LateRow *rb = pairingheap_const_container(LateRow, ph, b);

	ExecStoreMinimalTuple(ra->tuple, m->cmp_a, false);
	ExecStoreMinimalTuple(rb->tuple, m->cmp_b, false);
	return -slot_compare(m, m->cmp_a, m->cmp_b);
}

/*
 * late_add
 *		Keep a copy of slot's row, of another time form, that came after its
 *		shard's ordered rows: the next rebuild of the heap takes it in.
 */
static void
late_add(ShardRowMerge *m, TupleTableSlot *slot)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(m->cxt);
	LateRow    *row = palloc(sizeof(LateRow));

	row->tuple = ExecCopySlotMinimalTuple(slot);
	pairingheap_add(m->late, &row->ph);
	m->late_added = true;
	MemoryContextSwitchTo(oldcxt);
}

/*
 * late_next
 *		Make the first late row the late source's current row; false when
 *		there is none.
 */
static bool
late_next(ShardRowMerge *m, MergeSource *src)
{
	LateRow    *row;

	if (pairingheap_is_empty(m->late))
		return false;
	row = pairingheap_container(LateRow, ph, pairingheap_remove_first(m->late));
	ExecStoreMinimalTuple(row->tuple, src->slot, true);
	pfree(row);
	return true;
}

/*
 * late_rebuild
 *		Rows of other forms came late: the late source's current row goes
 *		back among them, the first of them becomes its current row, and the
 *		heap is built again over every source with a current row.  Rare: a
 *		shard read beyond its first segment that holds such rows.
 */
static void
late_rebuild(ShardRowMerge *m)
{
	MergeSource *late = &m->sources[m->nsources - 1];
	int			i;

	m->late_added = false;
	if (late->live)
		late_add(m, late->slot);
	m->late_added = false;
	late->live = late_next(m, late);
	binaryheap_reset(m->heap);
	for (i = 0; i < m->nsources; i++)
		if (m->sources[i].live)
			binaryheap_add_unordered(m->heap, Int32GetDatum(i));
	binaryheap_build(m->heap);
}

/*
 * start_sorted
 *		Begin the sort of the rows not read in order, bounded by OFFSET +
 *		LIMIT unless the shards return ties.
 */
static void
start_sorted(ForeignScanState *node, ShardRowMerge *m)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	MemoryContext oldcxt;

	if (m->sorted != NULL)
		return;
	oldcxt = MemoryContextSwitchTo(m->cxt);
	m->sorted = tuplesort_begin_heap_compat(node->ss.ss_ScanTupleSlot->tts_tupleDescriptor,
											s->nsort, s->sort_attnos,
											s->sort_ops, s->sort_colls,
											s->sort_nulls, work_mem);
	if (s->ties == NIL)
		tuplesort_set_bound(m->sorted, s->shard_bound);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * merge_memory_callback
 *		Give back the batches of a merge whose memory goes away before the
 *		scan ended it, as after an error.
 */
static void
merge_memory_callback(void *arg)
{
	ShardRowMerge *m = (ShardRowMerge *) arg;

	if (m->scan->rmerge == m)
		shard_scan_merge_end(m->scan, false);
}

/*
 * read_serial
 *		Read a shard's next batch in the backend, of at most src->want rows;
 *		a shard that ends gives its statement and handle back at once.
 */
static void
read_serial(ShardScanState *s, ShardRowMerge *m, MergeSource *src)
{
	ShardTarget *t = src->t;
	char		errbuf[SHARDIO_ERRLEN];
	int			maxrows;
	int			rc;

	if (src->batch == NULL)
	{
		src->batch = shardio_batch_create(m->ncols, m->cap);
		if (src->batch == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
	}
	if (t->reader == NULL)
	{
		t->reader = shard_reader_start(&t->job);
		if (t->reader == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
	}
	s->cur = t;
	maxrows = src->batch->maxrows;
	src->batch->maxrows = Min(src->want, maxrows);
	rc = shard_reader_next(t->reader, src->batch, errbuf);
	src->batch->maxrows = maxrows;
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		shard_scan_report_read_error(s, t, rc, errbuf);
	t->elapsed_ms += src->batch->fill_ms;
	src->row = 0;
	src->want = Min(src->want * 2, m->cap);
	if (rc == SQLITE_DONE)
	{
		src->ended = true;
		t->done = true;
		shard_scan_finish_shard(t);
	}
}

/*
 * request_batch
 *		Ask the fan-out for a shard's next batch.
 */
static void
request_batch(ShardScanState *s, ShardRowMerge *m, MergeSource *src)
{
	src->want = batch_rows_left(m, src);
	if (fanout_resume(s->fanout, src->task, src->want) != 0)
		elog(ERROR, "shard \"%s\" is not waiting for the merge",
			 src->t->info.shard_id);
	src->requested = true;
	src->want = Min(src->want * 2, m->cap);
}

/*
 * wait_event
 *		Take the fan-out's next event: a batch or the end of a shard merged
 *		here, or a failure to report.
 */
static void
wait_event(ShardScanState *s, ShardRowMerge *m)
{
	FanoutEvent ev;
	MergeSource *src;

	shard_scan_next_event(s, &ev);
	switch (ev.kind)
	{
		case FANOUT_BATCH:
			src = &m->sources[ev.task];
			Assert(src->next == NULL);
			src->next = ev.batch;
			src->requested = false;
			src->final = ev.last;
			src->t->elapsed_ms += ev.batch->fill_ms;
			break;
		case FANOUT_DONE:
			src = &m->sources[ev.task];
			src->ended = true;
			src->requested = false;
			src->t->done = true;
			src->t->elapsed_ms += ev.tail_ms;
			shard_scan_finish_shard(src->t);
			s->inflight--;
			break;
		case FANOUT_FAILED:
			s->cur = NULL;
			shard_scan_report_read_error(s, m->sources[ev.task].t, ev.rc,
										 ev.errmsg);
			break;
		case FANOUT_NOMEM:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory"),
					 errdetail("A thread reading table \"%s\" for a fan-out ran out of memory.",
							   s->topts->table)));
			break;
		case FANOUT_TIMEOUT:
		case FANOUT_IDLE:
			elog(ERROR, "fan-out ended before the merge had every shard's rows");
			break;
	}
}

/*
 * source_advance
 *		Make the next row of a source its current row (converted, in its
 *		own slot); false when it has no more.
 */
static bool
source_advance(ForeignScanState *node, ShardRowMerge *m, MergeSource *src)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	TupleTableSlot *scanslot = node->ss.ss_ScanTupleSlot;

	if (src->late)
		return late_next(m, src);
	if (src->t == NULL)
		return m->sorted != NULL &&
			tuplesort_gettupleslot(m->sorted, true, false, src->slot, NULL);

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (src->batch && src->row < src->batch->nrows)
		{
			int			ncols = src->batch->ncols;
			ShardValue *row = &src->batch->values[(size_t) src->row * ncols];
			bool		other_form;

			src->row++;
			src->t->rows++;
			/* half the batch used: the next one is read meanwhile */
			if (src->in_fanout && !src->requested && !src->final &&
				!src->ended && src->next == NULL &&
				src->row * 2 >= src->batch->nrows &&
				prefetch_worth(m, src))
				request_batch(s, m, src);
			s->cur = src->t;
			other_form = src->marked && row[ncols - 1].type == SQLITE_INTEGER &&
				row[ncols - 1].u.i == 1;
			if (other_form && !m->draining && !src->has_row)
				elog(ERROR, "shard \"%s\" returned a row of another time form out of place",
					 src->t->info.shard_id);
			if (!shard_scan_convert_row(node, row, scanslot))
				continue;
			/* the first window's rows are sorted, a later one's kept late */
			if (other_form && !src->has_row)
			{
				tuplesort_puttupleslot(m->sorted, scanslot);
				continue;
			}
			if (other_form)
			{
				late_add(m, scanslot);
				continue;
			}
			/* the rows of a source must come in order */
			if (src->has_row && slot_compare(m, src->slot, scanslot) > 0)
				elog(ERROR, "shard \"%s\" returned rows out of the order asked",
					 src->t->info.shard_id);
			ExecCopySlot(src->slot, scanslot);
			src->has_row = true;
			return true;
		}

		/* The batch is used up: the next one. */
		if (!src->in_fanout)
		{
			if (src->ended)
				return false;
			src->want = batch_rows_left(m, src);
			read_serial(s, m, src);
			continue;
		}
		if (src->batch)
			fanout_release_batch(s->fanout, src->batch);
		src->batch = NULL;
		if (src->next == NULL && !src->requested && !src->final &&
			!src->ended)
			request_batch(s, m, src);
		while (src->next == NULL && src->requested)
			wait_event(s, m);
		if (src->next == NULL)
			return false;
		src->batch = src->next;
		src->next = NULL;
		src->row = 0;
	}
}

/*
 * read_whole_sorted
 *		Read every row of a shard whose order cannot be trusted into the
 *		merge's sort (bounded by OFFSET + LIMIT unless the shards return
 *		ties), which joins the merge as one ordered source.
 */
static void
read_whole_sorted(ForeignScanState *node, ShardRowMerge *m,
				  MergeSource *src)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	TupleTableSlot *scanslot = node->ss.ss_ScanTupleSlot;

	start_sorted(node, m);
	src->want = m->cap;
	while (!src->ended)
	{
		int			r;

		read_serial(s, m, src);
		for (r = 0; r < src->batch->nrows; r++)
		{
			CHECK_FOR_INTERRUPTS();
			src->t->rows++;
			s->cur = src->t;
			if (shard_scan_convert_row(node,
									   &src->batch->values[(size_t) r * src->batch->ncols],
									   scanslot))
				tuplesort_puttupleslot(m->sorted, scanslot);
		}
	}
	src->row = src->batch ? src->batch->nrows : 0;
	ExecClearTuple(scanslot);
}

/*
 * merge_start
 *		Start every shard's statement, read or ask for its first rows, and
 *		build the heap of the sources' first rows.
 */
static void
merge_start(ForeignScanState *node)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	TupleDesc	desc = node->ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	int			ntargets = list_length(s->targets);
	int			first = shard_scan_merge_batch_rows(s);
	bool		parallel;
	ShardRowMerge *m;
	MemoryContext cxt;
	MemoryContext oldcxt;
	MemoryContextCallback *cb;
	int			i;

	cxt = AllocSetContextCreate(node->ss.ps.state->es_query_cxt,
								"sqlite_shard_fdw merge",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	m = palloc0(sizeof(ShardRowMerge));
	m->cxt = cxt;
	m->scan = s;
	m->cap = SCAN_BATCH_ROWS;
	/* a time key's rows end with the mark of another form */
	m->ncols = s->batch_cols + (s->window != NIL ? 1 : 0);
	m->last = -1;
	m->nsources = ntargets + 2;
	m->sources = palloc0(sizeof(MergeSource) * m->nsources);
	for (i = 0; i < m->nsources; i++)
		m->sources[i].slot = MakeSingleTupleTableSlot(desc,
													  &TTSOpsMinimalTuple);
	m->ssup = palloc0(sizeof(SortSupportData) * s->nsort);
	for (i = 0; i < s->nsort; i++)
	{
		SortSupport ssup = &m->ssup[i];

		ssup->ssup_cxt = cxt;
		ssup->ssup_collation = s->sort_colls[i];
		ssup->ssup_nulls_first = s->sort_nulls[i];
		ssup->ssup_attno = s->sort_attnos[i];
		ssup->abbreviate = false;
		PrepareSortSupportFromOrderingOp(s->sort_ops[i], ssup);
	}
	m->heap = binaryheap_allocate(m->nsources, heap_compare, m);
	m->late = pairingheap_allocate(late_compare, m);
	m->cmp_a = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	m->cmp_b = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	m->sources[ntargets + 1].late = true;
	m->sources[ntargets + 1].task = ntargets + 1;
	cb = palloc0(sizeof(MemoryContextCallback));
	cb->func = merge_memory_callback;
	cb->arg = m;
	MemoryContextRegisterResetCallback(cxt, cb);
	MemoryContextSwitchTo(oldcxt);
	s->rmerge = m;

	/*
	 * A small limit: the backend reads while each shard is quick; the
	 * first slow one sends the rest to the workers.
	 */
	parallel = shard_fanout_parallelism > 1 && ntargets > 1 &&
		s->shard_bound > MERGE_BACKEND_MAX_ROWS;
	s->quick_reads = 0;
	for (i = 0; i < ntargets; i++)
	{
		MergeSource *src = &m->sources[i];
		bool		held;

		src->t = list_nth(s->targets, i);
		src->task = i;
		src->want = first;
		/* past the descriptor budget, a file is read at once and let go */
		held = shard_conn_room_to_hold();
		if (!shard_scan_start_shard(node, src->t))
		{
			src->ended = true;
			continue;
		}
		if (!held || src->t->unbounded || src->t->degraded ||
			src->t->merge_sorted)
		{
			read_whole_sorted(node, m, src);
			continue;
		}
		src->marked = (s->window != NIL);
		if (!parallel)
		{
			read_serial(s, m, src);
			s->quick_reads++;
			if (src->batch->fill_ms >= shard_quick_shard_ms &&
				shard_fanout_parallelism > 1 && i < ntargets - 1)
				parallel = true;
			continue;
		}
		if (s->fanout == NULL)
		{
			s->fanout = fanout_create(Min(shard_fanout_parallelism, ntargets),
									  m->ncols, m->cap, 2 * ntargets + 1);
			if (s->fanout == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("out of memory")));
		}
		if (fanout_submit_step(s->fanout, &src->t->job, i, src->want) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					 errmsg("could not start a fan-out worker thread"),
					 errdetail("The thread was to read table \"%s\" on shard \"%s\".",
							   s->topts->table, src->t->info.shard_id)));
		s->inflight++;
		src->in_fanout = true;
		src->requested = true;
		src->want = Min(src->want * 2, m->cap);
	}

	/*
	 * Every shard's first row in order, the rows of other forms before it
	 * sorted; then the first of those.
	 */
	if (s->window != NIL)
		start_sorted(node, m);
	m->draining = true;
	for (i = 0; i < ntargets; i++)
		if (source_advance(node, m, &m->sources[i]))
		{
			m->sources[i].live = true;
			binaryheap_add_unordered(m->heap, Int32GetDatum(i));
		}
	m->draining = false;
	if (m->sorted != NULL)
	{
		tuplesort_performsort(m->sorted);
		m->sources[ntargets].task = ntargets;
		if (source_advance(node, m, &m->sources[ntargets]))
		{
			m->sources[ntargets].live = true;
			binaryheap_add_unordered(m->heap, Int32GetDatum(ntargets));
		}
	}
	binaryheap_build(m->heap);
}

/*
 * shard_scan_merge_next
 *		The merge's next row in the scan's order into slot, the shards'
 *		first rows read when first called; false (slot cleared) after the
 *		last.  The source of the row returned before moves on only now, so
 *		a shard is read no further than the rows taken need.
 */
bool
shard_scan_merge_next(ForeignScanState *node, TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	ShardRowMerge *m = s->rmerge;

	if (m == NULL)
	{
		merge_start(node);
		m = s->rmerge;
	}
	else if (m->last >= 0)
	{
		if (source_advance(node, m, &m->sources[m->last]))
			binaryheap_replace_first(m->heap, Int32GetDatum(m->last));
		else
		{
			m->sources[m->last].live = false;
			(void) binaryheap_remove_first(m->heap);
		}
		if (m->late_added)
			late_rebuild(m);
	}
	m->last = -1;
	if (m->finished || binaryheap_empty(m->heap))
	{
		ExecClearTuple(slot);
		return false;
	}
	m->last = DatumGetInt32(binaryheap_first(m->heap));

	/*
	 * With ties, the rows after the OFFSET + LIMIT'th that tie with it on
	 * the first key, and no more: any other ranks after that many rows.
	 */
	if (s->ties != NIL && m->emitted >= s->shard_bound)
	{
		bool		isnull;
		Datum		d = slot_getattr(m->sources[m->last].slot,
									 s->sort_attnos[0], &isnull);

		if (ApplySortComparator(d, isnull, m->tie_key, m->tie_null,
								&m->ssup[0]) != 0)
		{
			m->finished = true;
			ExecClearTuple(slot);
			return false;
		}
	}
	ExecCopySlot(slot, m->sources[m->last].slot);
	if (++m->emitted == s->shard_bound && s->ties != NIL)
	{
		AttrNumber	attno = s->sort_attnos[0];
		Form_pg_attribute att = TupleDescAttr(slot->tts_tupleDescriptor,
											  attno - 1);
		MemoryContext oldcxt = MemoryContextSwitchTo(m->cxt);
		Datum		d = slot_getattr(slot, attno, &m->tie_null);

		m->tie_key = m->tie_null ? (Datum) 0 :
			datumCopy(d, att->attbyval, att->attlen);
		MemoryContextSwitchTo(oldcxt);
	}
	return true;
}

/*
 * shard_scan_merge_end
 *		Give back the merge's batches (to the fan-out, which must still
 *		exist, or freed) and, with release, its sort and memory; after an
 *		error the resource owner closes the sort's files and the query's
 *		memory takes the rest.
 */
void
shard_scan_merge_end(ShardScanState *s, bool release)
{
	ShardRowMerge *m = s->rmerge;
	int			i;

	if (m == NULL)
		return;
	s->rmerge = NULL;
	for (i = 0; i < m->nsources; i++)
	{
		MergeSource *src = &m->sources[i];

		if (src->in_fanout && s->fanout != NULL)
		{
			if (src->batch)
				fanout_release_batch(s->fanout, src->batch);
			if (src->next)
				fanout_release_batch(s->fanout, src->next);
		}
		else if (!src->in_fanout)
			shardio_batch_free(src->batch);
		src->batch = NULL;
		src->next = NULL;
	}
	if (!release)
		return;
	if (m->sorted != NULL)
		tuplesort_end(m->sorted);
	MemoryContextDelete(m->cxt);
}
