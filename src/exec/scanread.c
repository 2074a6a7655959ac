/*-------------------------------------------------------------------------
 *
 * scanread.c
 *		  Reading the shards of a foreign scan: one after another or fanned
 *		  out to worker threads, rows converted and sorted
 *
 * Each shard runs its statement (shardsql.c), with the values bound,
 * inside one read transaction; rows come back in batches copied out of
 * SQLite (shardio.c), from the backend or from the fan-out's workers
 * (fanout.c), and are converted to the foreign table's types here.
 *
 * A scan of rows that also sorts and limits (order.c) asks each shard for
 * its first OFFSET + LIMIT rows in the query's order and merges them as
 * they come (scanmerge.c), or, where it cannot (a join's rows), sorts what
 * comes back with a bounded sort; one shard whose order is exact (no time
 * key, conditions all in SQLite, columns declared as the order needs)
 * instead runs OFFSET and LIMIT itself and its rows pass through as they
 * come.
 *
 * A scan that reads each shard to its end before it returns the shard's
 * rows (scan.c, check_statement_writes) keeps them converted in a
 * tuplestore, which spills to temporary files beyond work_mem as
 * PostgreSQL's own kept rows do.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"
#include "utils/tuplesort.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "scan.h"

/* Batches per fan-out worker: the bound on a fan-out's buffered rows. */
#define FANOUT_BATCHES_PER_WORKER 3

/* How long the backend waits for a worker before checking for cancel. */
#define FANOUT_WAIT_MS 10

/*
 * A sorted scan whose shards each return at most QUICK_MAX_ROWS rows (the
 * latest ten orders) reads them one after another in the backend for as
 * long as each takes under sqlite_shard_fdw.quick_shard_ms (0.25 ms, a
 * hidden setting for tests): a shard that answers from its index in tens
 * of microseconds costs less read here than handed to a worker thread and
 * back.  The first slower shard sends the rest to the threads.
 */
#define QUICK_MAX_ROWS 1000

/*
 * A quick read of this many shards or more shares them with worker
 * threads when, by the time of the first, the rest would keep the backend
 * busy for QUICK_SPLIT_MS or longer (a thread started and joined, and the
 * core it wakes, cost a good part of that): the backend reads the next
 * ones, a worker the last ones, each without waiting for the other
 * (start_quick_split).
 */
#define QUICK_SPLIT_MIN 4
#define QUICK_SPLIT_MS	0.3

/*
 * The most shards a split quick read queues for the workers at once (each
 * holds an open handle, a read transaction and batches meanwhile); the
 * backend reads the others.
 */
#define QUICK_SPLIT_MAX 16

/* Bytes converted rows may hold before the row context is reset. */
#define ROW_MEMORY_LIMIT	(256 * 1024)

static int	target_end(ShardScanState *s);
static void start_quick_split(ForeignScanState *node, double first_ms);

/*
 * shard_scan_report_read_error
 *		Raise the error a shard's read ended with.
 */
void
shard_scan_report_read_error(ShardScanState *s, ShardTarget *t, int rc,
							 const char *errbuf)
{
	if (rc == SQLITE_FULL && t->no_sql_groups)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cannot aggregate table \"%s\" inside shard \"%s\"",
						s->topts->table, t->info.shard_id),
				 errdetail("The shard has more than %d groups, too many to group outside SQLite, which orders the text of this UTF-16 database otherwise than PostgreSQL does.",
						   THREAD_AGG_MAX_GROUPS),
				 errhint("Set \"sqlite_shard_fdw.aggregate_pushdown\" to off to aggregate in PostgreSQL.")));
	shard_sqlite_error(ERROR, rc, t->info.shard_id, errbuf,
					   "could not read table \"%s\" on shard \"%s\"",
					   s->topts->table, t->info.shard_id);
}

/*
 * shard_warn_skipped
 *		Say that a missing shard is left out under on_missing_shard = skip:
 *		of a query's result, or (analyzed named) of a table's statistics.
 */
void
shard_warn_skipped(const ShardInfo *shard, const char *analyzed)
{
	ereport(WARNING,
			(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
			 errmsg("skipping shard \"%s\": file \"%s\" does not exist",
					shard->shard_id, shard->path),
			 analyzed == NULL ?
			 errdetail("The server option \"on_missing_shard\" is \"skip\", so the result lacks this shard's rows.") :
			 errdetail("The server option \"on_missing_shard\" is \"skip\", so the statistics of \"%s\" lack this shard's rows.",
					   analyzed)));
}

/*
 * shard_scan_start_shard
 *		Open a shard and prepare and bind its statement.  Returns false when
 *		the shard is missing and the server skips missing shards.
 */
bool
shard_scan_start_shard(ForeignScanState *node, ShardTarget *t)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	MemoryContext oldcxt;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	/*
	 * A table the statement writes is read before the statement writes:
	 * read later (another scan of it, a rescan with other values), it would
	 * show the rows written since.
	 */
	if (s->written && t == linitial(s->targets) &&
		shard_writes_begun != s->writes_at_start)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read table \"%s\" after its statement began to change it",
						s->topts->table),
				 errdetail("A statement reads the table it writes before it writes; read later (a second scan of it, a subquery that refers to the row being changed, a lateral reference), it would show the rows written."),
				 errhint("Read the rows once, into a temporary table or a WITH ... AS MATERIALIZED query, and change the table from there.")));

	/* a shard the statement will write is locked before it is read */
	t->conn = s->written ?
		shard_conn_get_locked(s->opts, &t->info, s->opts->skip_missing) :
		shard_conn_get(s->opts, &t->info, s->opts->skip_missing);
	if (t->conn == NULL)
	{
		shard_warn_skipped(&t->info, NULL);
		return false;
	}

	oldcxt = MemoryContextSwitchTo(s->resolve_cxt);
	s->cur = t;					/* for messages */

	/*
	 * A fan-out shows its progress to other sessions (progress.c), and
	 * tells the handle cache how many files it reads (connection.c).
	 */
	if (list_length(s->targets) > 1)
	{
		shard_conn_note_fanout(list_length(s->targets));
		shard_progress_begin(s, s->opts->serverid,
							 s->rel ? RelationGetRelid(s->rel) : InvalidOid,
							 list_length(s->targets));
	}

	/*
	 * The values to bind, computed when the first shard is read: a scan
	 * that reads none (no shard, a missing one skipped, LIMIT 0) computes
	 * nothing that could fail.
	 */
	if (!s->params_ready)
	{
		shard_scan_eval_params(s, node->ss.ps.ps_ExprContext);
		s->params_ready = true;
	}

	if (t->sql == NULL)
		shard_scan_plan_shard(s, t);
	for (;;)
	{
		rc = shard_conn_prepare(t->conn, t->sql, &t->stmt, errbuf);
		if (rc == SQLITE_OK)
			break;
		switch (shard_scan_schema_drift(s, t, s->rel))
		{
			case SHARD_DRIFT_COLUMNS:
				shard_scan_plan_shard(s, t);
				continue;
			case SHARD_DRIFT_NO_TABLE:
				/* read as empty: a shard without rows */
				MemoryContextSwitchTo(oldcxt);
				t->no_table = true;
				shard_conn_release(t->conn);
				t->conn = NULL;
				return false;
			default:
				break;
		}
		shard_scan_prepare_failed(s, t, rc, errbuf, s->rel);
		/* a WITHOUT ROWID table: retry by its primary key, or without */
		t->no_rowid = true;
		if (s->row_keys == NULL)
			s->with_rowid = false;
		shard_scan_plan_shard(s, t);
	}

	/* A degraded shard's query uses some planned parameters: up to its last. */
	if (t->degraded)
		rc = shardio_bind(t->stmt, 1, t->binds,
						  Min(t->nbinds, sqlite3_bind_parameter_count(t->stmt)),
						  errbuf);
	else
		rc = shardio_bind(t->stmt, 1, t->binds, t->nbinds, errbuf);
	if (rc != SQLITE_OK)
		shard_sqlite_error(ERROR, rc, t->info.shard_id, errbuf,
						   "could not bind the values of the query of table \"%s\" on shard \"%s\"",
						   s->topts->table, t->info.shard_id);

	memset(&t->job, 0, sizeof(t->job));
	t->reader_began = 0;
	t->elapsed_ms = 0;
	t->job.stmt = t->stmt;
	t->job.started = &t->reader_began;
	if (s->prep && t->nkeys <= 1)
	{
		t->job.prep = s->prep + 1 - t->nkeys;
		t->job.nprep = s->nretrieved + t->nkeys;
	}
	else if (s->prep)
	{
		/* key columns are kept as they are, like the rowid */
		unsigned char *prep = palloc(t->nkeys + s->nretrieved);

		memset(prep, SHARDIO_PREP_NONE, t->nkeys);
		memcpy(prep + t->nkeys, s->prep + 1, s->nretrieved);
		t->job.prep = prep;
		t->job.nprep = s->nretrieved + t->nkeys;
	}
	if (s->agg_spec)
	{
		t->job.agg = s->agg_spec;
		t->job.agg_bound = t->unbounded ? -1 : s->shard_bound;
		t->job.fallback_sql = t->fallback_sql;
		t->job.binds = t->binds;
		t->job.nbinds = t->nbinds;
	}
	MemoryContextSwitchTo(oldcxt);

	t->done = false;
	t->read = true;
	t->rows = 0;
	INSTR_TIME_SET_CURRENT(t->started);
	return true;
}

/*
 * shard_scan_finish_shard
 *		A shard returned all its rows: close its statement, give its handle
 *		back and, for a direct modification (run in the backend, without a
 *		reader), note its time.  A read's time is that of its batches.
 */
void
shard_scan_finish_shard(ShardTarget *t)
{
	instr_time	now;

	if (t->job.stmt == NULL)
	{
		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, t->started);
		t->elapsed_ms = INSTR_TIME_GET_MILLISEC(now);
	}
	shard_progress_file_done();
	shard_reader_free(t->reader);
	t->reader = NULL;
	if (t->stmt)
		shard_conn_unprepare(t->conn, t->stmt);
	t->stmt = NULL;
	if (t->conn)
		shard_conn_release(t->conn);
	t->conn = NULL;
}

/*
 * shard_scan_next_batch_serial
 *		Fill the scan's own batch from the shard being read, moving to the
 *		next shard when one ends.  Returns false when every shard is done.
 */
bool
shard_scan_next_batch_serial(ForeignScanState *node)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	for (;;)
	{
		ShardTarget *t = s->serial;

		if (t == NULL)
		{
			if (s->next_target >= target_end(s))
			{
				int			task;

				if (s->fanout == NULL)
					return false;
				/* a split quick read: what the worker has not started */
				task = fanout_take_queued(s->fanout);
				if (task < 0)
					return shard_scan_next_batch_parallel(node);
				s->inflight--;
				t = list_nth(s->targets, task);
			}
			else
			{
				t = list_nth(s->targets, s->next_target++);
				if (!shard_scan_start_shard(node, t))
					continue;
			}
			s->serial = t;
			if (s->quick)
				s->quick_reads++;
		}
		if (t->done)
		{
			shard_scan_finish_shard(t);
			s->serial = NULL;
			/* a slow shard: the threads read the rest */
			if (s->quick && t->elapsed_ms >= shard_quick_shard_ms)
			{
				s->quick = false;
				if (s->fanout)
					fanout_limit_threads(s->fanout, shard_fanout_parallelism);
				if (shard_scan_use_fanout(s))
					return shard_scan_next_batch_parallel(node);
			}
			if (s->quick && s->end_target < 0)
				start_quick_split(node, t->elapsed_ms);
			continue;
		}

		if (s->own_batch == NULL)
		{
			s->own_batch = shardio_batch_create(s->batch_cols, SCAN_BATCH_ROWS);
			if (s->own_batch == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("out of memory")));
		}
		s->cur = t;
		if (t->reader == NULL)
		{
			t->reader = shard_reader_start(&t->job);
			if (t->reader == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("out of memory")));
		}
		rc = shard_reader_next(t->reader, s->own_batch, errbuf);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			shard_scan_report_read_error(s, t, rc, errbuf);
		t->done = (rc == SQLITE_DONE);
		t->elapsed_ms += s->own_batch->fill_ms;
		s->batch = s->own_batch;
		s->batch_row = 0;
		return true;
	}
}

/*
 * target_end
 *		Where the targets the backend itself reads or hands out one by one
 *		end: after them, a split quick read's share of the threads.
 */
static int
target_end(ShardScanState *s)
{
	return s->end_target >= 0 ? s->end_target : list_length(s->targets);
}

/*
 * submit_shard
 *		Hand a started shard to the scan's fan-out.
 */
static void
submit_shard(ShardScanState *s, ShardTarget *t, int task)
{
	if (fanout_submit(s->fanout, &t->job, task) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start a fan-out worker thread"),
				 errdetail("The thread was to read table \"%s\" on shard \"%s\".",
						   s->topts->table, t->info.shard_id)));
	s->inflight++;
}

/*
 * start_quick_split
 *		After the first shard of a quick read of QUICK_SPLIT_MIN shards or
 *		more, which took first_ms: when the rest would take the backend
 *		QUICK_SPLIT_MS or longer at that pace, queue the last of them (all
 *		but a parallelism'th, QUICK_SPLIT_MAX at most) for one worker thread
 *		fewer than fanout_parallelism, so that the backend, reading the next
 *		ones, and
 *		the workers keep every core on shards that each take tens of
 *		microseconds, with no hand-over to wait for.  The backend then
 *		takes back those no worker has started (fanout_take_queued) and
 *		reads the rest of the workers' rows from the fan-out.  Decided
 *		once: the other shards stay the backend's, unless one of them is
 *		slow (shard_scan_next_batch_serial hands the rest to the threads then).
 */
static void
start_quick_split(ForeignScanState *node, double first_ms)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	int			ntargets = list_length(s->targets);
	int			nleft = ntargets - s->next_target;
	int			nback = Min(nleft - nleft / Max(shard_fanout_parallelism, 1),
							QUICK_SPLIT_MAX);
	int			task;

	s->end_target = ntargets;
	if (ntargets < QUICK_SPLIT_MIN || shard_fanout_parallelism < 2 ||
		s->materialize || s->fanout != NULL ||
		first_ms * nleft < QUICK_SPLIT_MS)
		return;
	s->fanout = fanout_create(shard_fanout_parallelism, s->batch_cols,
							  SCAN_BATCH_ROWS, 2 * nback + 1);
	if (s->fanout == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	fanout_limit_threads(s->fanout, shard_fanout_parallelism - 1);
	for (task = ntargets - 1; task >= ntargets - nback; task--)
	{
		ShardTarget *t = list_nth(s->targets, task);

		/* the backend reads those it cannot hold queued (handlecache.c) */
		if (!shard_conn_room_to_hold())
			break;
		s->end_target = task;
		if (shard_scan_start_shard(node, t))
			submit_shard(s, t, task);
	}
}

/*
 * shard_scan_next_event
 *		The fan-out's next event, however long it takes: Ctrl-C and
 *		statement_timeout are checked after every wait, so that a fan-out
 *		whose files each end at once stops as promptly as one that waits.
 */
void
shard_scan_next_event(ShardScanState *s, FanoutEvent *ev)
{
	for (;;)
	{
		/* named after what the workers wait for (waits.c) */
		pgstat_report_wait_start(fanout_lock_waits(s->fanout) > 0 ?
								 shard_wait_event_lock() :
								 shard_wait_event_fanout());
		fanout_next(s->fanout, FANOUT_WAIT_MS, ev);
		pgstat_report_wait_end();
		CHECK_FOR_INTERRUPTS();
		if (ev->kind != FANOUT_TIMEOUT)
			return;
	}
}

/*
 * shard_scan_next_batch_parallel
 *		Keep up to sqlite_shard_fdw.fanout_parallelism shards running on
 *		worker threads and take the next batch any of them produced.
 *		Returns false when every shard is done.
 */
bool
shard_scan_next_batch_parallel(ForeignScanState *node)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	int			ntargets = list_length(s->targets);

	if (s->fanout == NULL)
	{
		int			nworkers = Min(shard_fanout_parallelism, ntargets);

		s->fanout = fanout_create(nworkers, s->batch_cols, SCAN_BATCH_ROWS,
								  nworkers * FANOUT_BATCHES_PER_WORKER);
		if (s->fanout == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
	}

	for (;;)
	{
		FanoutEvent ev;
		ShardTarget *t;

		while (s->inflight < shard_fanout_parallelism &&
			   s->next_target < target_end(s) &&
			   (s->inflight == 0 || shard_conn_room_to_hold()))
		{
			int			task = s->next_target++;

			t = list_nth(s->targets, task);
			if (shard_scan_start_shard(node, t))
				submit_shard(s, t, task);
		}

		shard_scan_next_event(s, &ev);
		switch (ev.kind)
		{
			case FANOUT_TIMEOUT:
				break;
			case FANOUT_IDLE:
				if (s->next_target >= target_end(s))
					return false;
				break;
			case FANOUT_BATCH:
				t = list_nth(s->targets, ev.task);
				t->elapsed_ms += ev.batch->fill_ms;
				s->cur = t;
				s->batch = ev.batch;
				s->batch_row = 0;
				return true;
			case FANOUT_DONE:
				t = list_nth(s->targets, ev.task);
				t->done = true;
				t->elapsed_ms += ev.tail_ms;
				shard_scan_finish_shard(t);
				s->inflight--;
				break;
			case FANOUT_FAILED:
				t = list_nth(s->targets, ev.task);
				s->cur = NULL;
				shard_scan_report_read_error(s, t, ev.rc, ev.errmsg);
				break;
			case FANOUT_NOMEM:
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("out of memory"),
						 errdetail("A thread reading table \"%s\" for a fan-out ran out of memory.",
								   s->topts->table)));
				break;
		}
	}
}

/*
 * shard_scan_use_fanout
 *		Read shards in parallel when there is more than one to read,
 *		parallelism is allowed, and the scan neither keeps its rows
 *		(materialize) nor reads quick shards in the backend.
 */
bool
shard_scan_use_fanout(ShardScanState *s)
{
	return shard_fanout_parallelism > 1 && list_length(s->targets) > 1 &&
		!s->materialize && !s->quick;
}

/*
 * shard_scan_convert_row
 *		Convert row, which shard s->cur returned, into slot, with its
 *		identity for a row-by-row UPDATE or DELETE in the slot's ctid.
 *		False when the conditions PostgreSQL rechecks for a degraded shard
 *		reject it.
 */
bool
shard_scan_convert_row(ForeignScanState *node, const ShardValue *row,
					   TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	int			off = s->cur->nkeys;
	ListCell   *lc;
	MemoryContext oldcxt;
	int			i = 0;

	/*
	 * The previous row is dead now; resetting for every row costs more
	 * than the few bytes each leaves, so reset once they add up.
	 */
	if (MemoryContextMemAllocated(s->row_cxt, false) > ROW_MEMORY_LIMIT)
		MemoryContextReset(s->row_cxt);
	oldcxt = MemoryContextSwitchTo(s->row_cxt);
	ExecClearTuple(slot);
	memset(slot->tts_isnull, true,
		   sizeof(bool) * slot->tts_tupleDescriptor->natts);
	s->cur_rowid = (off && s->cur->keyed == NULL) ? row[0].u.i : 0;
	foreach(lc, s->retrieved_attrs)
	{
		AttrNumber	attnum = lfirst_int(lc);

		s->cur_col = i;
		slot->tts_values[attnum - 1] =
			shard_value_to_datum(&s->convs[i], &row[off + i],
								 &slot->tts_isnull[attnum - 1]);
		i++;
	}
	s->cur_col = -1;
	MemoryContextSwitchTo(oldcxt);

	ExecStoreVirtualTuple(slot);
	ItemPointerSetInvalid(&slot->tts_tid);
	if (s->cur->degraded && s->recheck_quals != NIL)
	{
		ExprContext *econtext = node->ss.ps.ps_ExprContext;

		if (s->recheck == NULL)
		{
			MemoryContext qcxt = MemoryContextSwitchTo(node->ss.ps.state->es_query_cxt);

			s->recheck = ExecInitQual(s->recheck_quals, (PlanState *) node);
			MemoryContextSwitchTo(qcxt);
		}
		/* skipped rows leave nothing behind in per-tuple memory */
		ResetExprContext(econtext);
		econtext->ecxt_scantuple = slot;
		if (!ExecQual(s->recheck, econtext))
			return false;
	}

	/*
	 * The row's identity for a row-by-row UPDATE or DELETE: the shard it
	 * came from, its rowid or key there.  A key is kept only for a row the
	 * recheck passed.
	 */
	if (s->row_keys != NULL)
		shard_row_set_identity(s, s->cur, row, &slot->tts_tid);
	else if (off)
		shard_rowid_to_tid(s->cur_rowid, &slot->tts_tid);
	return true;
}

/*
 * start_store
 *		Make the store of the rows a scan reads whole: the scan's row type
 *		and, last, the ctid of each row (as an int8, block and offset).  It
 *		holds up to work_mem in memory and the rest in temporary files, as
 *		PostgreSQL keeps rows for later; it is read forward only, and again
 *		from the start by a rescan (tuplestore_rescan).
 */
static void
start_store(ForeignScanState *node, TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	MemoryContext oldcxt;

	if (s->mat_store != NULL)
		return;
	oldcxt = MemoryContextSwitchTo(node->ss.ps.state->es_query_cxt);
	if (s->mat_slot == NULL)
	{
		TupleDesc	scandesc = slot->tts_tupleDescriptor;
		int			natts = scandesc->natts;
		TupleDesc	desc = CreateTemplateTupleDesc(natts + 1);
		int			i;

		for (i = 1; i <= natts; i++)
			TupleDescCopyEntry(desc, i, scandesc, i);
		TupleDescInitEntry(desc, natts + 1, "ctid", INT8OID, -1, 0);
		s->mat_slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
		s->mat_values = palloc(sizeof(Datum) * (natts + 1));
		s->mat_isnull = palloc0(sizeof(bool) * (natts + 1));
	}
	s->mat_store = tuplestore_begin_heap(false, false, work_mem);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * read_shard_whole
 *		Read all of shard t's rows, convert each once (slot serves for it)
 *		and put those the recheck passes into the scan's store with their
 *		ctids, then close the shard's statement: no read of the shard is
 *		under way when its rows are handed over.
 */
static void
read_shard_whole(ForeignScanState *node, ShardTarget *t, TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	int			ncols = Max(s->batch_cols, s->nretrieved + t->nkeys);
	int			natts = slot->tts_tupleDescriptor->natts;
	TupleDesc	desc = s->mat_slot->tts_tupleDescriptor;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;

	/* a keyed shard's rows lead with the columns of its key */
	if (s->own_batch != NULL && s->own_batch->maxcols < ncols)
	{
		shardio_batch_free(s->own_batch);
		s->own_batch = NULL;
	}
	if (s->own_batch == NULL)
		s->own_batch = shardio_batch_create(ncols, SCAN_BATCH_ROWS);
	t->reader = s->own_batch ? shard_reader_start(&t->job) : NULL;
	if (t->reader == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	s->cur = t;
	do
	{
		ShardBatch *b = s->own_batch;
		int			r;

		rc = shard_reader_next(t->reader, b, errbuf);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			shard_scan_report_read_error(s, t, rc, errbuf);
		t->elapsed_ms += b->fill_ms;
		for (r = 0; r < b->nrows; r++)
		{
			ItemPointer tid = &slot->tts_tid;

			CHECK_FOR_INTERRUPTS();
			t->rows++;
			if (!shard_scan_convert_row(node, &b->values[(size_t) r * b->ncols], slot))
				continue;
			memcpy(s->mat_values, slot->tts_values, sizeof(Datum) * natts);
			memcpy(s->mat_isnull, slot->tts_isnull, sizeof(bool) * natts);
			s->mat_values[natts] =
				Int64GetDatum(((int64) ItemPointerGetBlockNumberNoCheck(tid) << 16) |
							  ItemPointerGetOffsetNumberNoCheck(tid));
			tuplestore_putvalues(s->mat_store, desc, s->mat_values,
								 s->mat_isnull);
		}
	} while (rc == SQLITE_ROW);
	ExecClearTuple(slot);
	t->done = true;
	shard_scan_finish_shard(t);
}

/*
 * fill_store
 *		Read the next shard whole into the scan's store, in place of the
 *		rows of the one before, which were all returned: the scan below a
 *		row-by-row UPDATE or DELETE, whose writes to the shard must not
 *		meet a read of it still under way.  Any other scan of a table the
 *		statement writes (read_all_first) reads every shard before its first
 *		row and keeps the rows for a rescan (check_statement_writes).
 *		False when no shard is left.
 */
static bool
fill_store(ForeignScanState *node, TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;

	if (s->read_all_first && s->mat_complete)
		return false;
	start_store(node, slot);
	if (!s->read_all_first)
	{
		ExecClearTuple(s->mat_slot);
		tuplestore_clear(s->mat_store);
	}
	if (s->next_target >= list_length(s->targets))
	{
		s->mat_complete = s->read_all_first;
		return false;
	}
	do
	{
		ShardTarget *t = list_nth(s->targets, s->next_target++);

		if (shard_scan_start_shard(node, t))
			read_shard_whole(node, t, slot);
	} while (s->read_all_first &&
			 s->next_target < list_length(s->targets));
	s->mat_complete = s->read_all_first;
	return true;
}

/*
 * next_row_stored
 *		The next row of a scan that reads shards whole, from its store:
 *		the converted row and its ctid.  False (slot cleared) after the
 *		last.
 */
static bool
next_row_stored(ForeignScanState *node, TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	int			natts = slot->tts_tupleDescriptor->natts;

	for (;;)
	{
		MemoryContext oldcxt;
		bool		found = false;

		CHECK_FOR_INTERRUPTS();

		/*
		 * A row read back from a temporary file is allocated in the current
		 * context and freed by the next read: not the per-tuple context
		 * the executor calls the scan in, which is reset between rows.
		 */
		if (s->mat_store != NULL)
		{
			oldcxt = MemoryContextSwitchTo(node->ss.ps.state->es_query_cxt);
			found = tuplestore_gettupleslot(s->mat_store, true, false,
											s->mat_slot);
			MemoryContextSwitchTo(oldcxt);
		}
		if (found)
		{
			int64		tid;

			slot_getallattrs(s->mat_slot);
			ExecClearTuple(slot);
			memcpy(slot->tts_values, s->mat_slot->tts_values,
				   sizeof(Datum) * natts);
			memcpy(slot->tts_isnull, s->mat_slot->tts_isnull,
				   sizeof(bool) * natts);
			ExecStoreVirtualTuple(slot);
			tid = DatumGetInt64(s->mat_slot->tts_values[natts]);
			ItemPointerSet(&slot->tts_tid, (BlockNumber) (tid >> 16),
						   (OffsetNumber) (tid & 0xFFFF));
			return true;
		}
		if (!fill_store(node, slot))
		{
			ExecClearTuple(slot);
			return false;
		}
	}
}

/*
 * shard_scan_next_row
 *		Convert the next row any shard returns into slot, reading batches
 *		as they are used up; false (slot cleared) after the last.
 */
bool
shard_scan_next_row(ForeignScanState *node, TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;

	if (s->materialize)
		return next_row_stored(node, slot);

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();

		if (s->batch && s->batch_row < s->batch->nrows)
		{
			ShardValue *row = &s->batch->values[(size_t) s->batch_row *
												s->batch->ncols];

			s->batch_row++;
			s->cur->rows++;
			if (shard_scan_convert_row(node, row, slot))
				return true;
			continue;
		}

		/* The batch is used up: hand it back and get the next. */
		if (s->batch && s->fanout && s->batch != s->own_batch)
			fanout_release_batch(s->fanout, s->batch);
		s->batch = NULL;

		if (!(shard_scan_use_fanout(s) ? shard_scan_next_batch_parallel(node) :
			  shard_scan_next_batch_serial(node)))
		{
			ExecClearTuple(slot);
			return false;
		}
	}
}

/*
 * sort_rows
 *		Put every row the shards return into the scan's sort, bounded by
 *		OFFSET + LIMIT unless the shards return ties.
 */
static void
sort_rows(ForeignScanState *node, TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	MemoryContext oldcxt;

	oldcxt = MemoryContextSwitchTo(node->ss.ps.state->es_query_cxt);
	if (s->sortslot == NULL)
		s->sortslot = MakeSingleTupleTableSlot(slot->tts_tupleDescriptor,
											   &TTSOpsMinimalTuple);
	s->sort = tuplesort_begin_heap_compat(slot->tts_tupleDescriptor, s->nsort,
										  s->sort_attnos, s->sort_ops,
										  s->sort_colls, s->sort_nulls,
										  work_mem);
	/* with ties, every row read is kept: PostgreSQL limits above */
	if (s->shard_bound >= 0 && s->ties == NIL)
		tuplesort_set_bound(s->sort, s->shard_bound);
	MemoryContextSwitchTo(oldcxt);
	if (s->pending_first)
		tuplesort_puttupleslot(s->sort, slot);
	s->pending_first = false;
	while (shard_scan_next_row(node, slot))
		tuplesort_puttupleslot(s->sort, slot);
	tuplesort_performsort(s->sort);
	s->sorted = true;
}

/*
 * shard_scan_next_ordered_row
 *		The next row of a scan that sorts and limits the shards' rows
 *		itself: from its sort, or as they come when only limited; OFFSET
 *		skipped, nothing after LIMIT (no shard is read further).  A scan
 *		whose shards return ties returns every row, sorted by the prefix,
 *		for PostgreSQL to finish the sort and apply OFFSET and LIMIT.
 */
bool
shard_scan_next_ordered_row(ForeignScanState *node, TupleTableSlot *slot)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;

	/* shards whose rows arrive in order: merged as they come */
	if (!s->order_started && shard_scan_stream_ok(s))
	{
		s->stream = true;
		s->order_started = true;
	}

	/*
	 * Whether one shard's rows may pass through is known once its query is
	 * planned (shard_scan_plan_shard), which reading its first row does.
	 */
	if (!s->order_started)
	{
		bool		have;

		/* few rows of each shard, all sorted here: maybe read them here */
		s->quick = (s->nsort > 0 && s->shard_bound >= 0 &&
					s->shard_bound <= QUICK_MAX_ROWS &&
					shard_fanout_parallelism > 1 &&
					list_length(s->targets) > 1);
		s->quick_reads = 0;
		have = shard_scan_next_row(node, slot);

		s->order_started = true;
		if (s->row_direct || !have)
			return have;
		s->pending_first = true;
	}
	if (s->row_direct)
		return shard_scan_next_row(node, slot);

	for (;;)
	{
		if (s->limit_count >= 0 && s->returned >= s->limit_count &&
			s->ties == NIL)
		{
			ExecClearTuple(slot);
			return false;
		}
		if (s->stream)
		{
			if (!shard_scan_merge_next(node, slot))
				return false;
		}
		else if (s->nsort > 0)
		{
			if (!s->sorted)
				sort_rows(node, slot);
			if (!tuplesort_gettupleslot(s->sort, true, false, s->sortslot,
										NULL))
			{
				ExecClearTuple(slot);
				return false;
			}
			ExecCopySlot(slot, s->sortslot);
		}
		else if (s->pending_first)
			s->pending_first = false;
		else if (!shard_scan_next_row(node, slot))
			return false;
		if (s->skipped < s->limit_offset && s->ties == NIL)
		{
			s->skipped++;
			continue;
		}
		s->returned++;
		return true;
	}
}

/*
 * shard_scan_end_row_sort
 *		Drop an ordered row scan's sort and counts, to start over.
 */
void
shard_scan_end_row_sort(ShardScanState *s)
{
	if (s->sort)
		tuplesort_end(s->sort);
	s->sort = NULL;
	s->sorted = false;
	s->order_started = false;
	s->stream = false;
	s->quick = false;
	s->pending_first = false;
	s->skipped = 0;
	s->returned = 0;
}
