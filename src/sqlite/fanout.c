/*-------------------------------------------------------------------------
 *
 * fanout.c
 *		  Worker threads that run shard statements in parallel
 *
 * This file must not include postgres.h: it runs on threads that
 * PostgreSQL knows nothing about, so it may call only SQLite, pthreads and
 * the C library.  The backend thread converts rows, merges and raises
 * errors; workers only step statements into batches.
 *
 * Hand-over: one mutex guards the whole fan-out.  Submitted statements
 * wait in a FIFO; a worker takes one, and for each batch it fills takes a
 * free batch from a fixed pool (waiting while the pool is empty: that is
 * the back-pressure that keeps memory flat), fills it outside the lock and
 * appends it to the event queue.  The end or failure of a statement is
 * queued after its last batch, so the backend sees them in order.
 *
 * A stepped job (fanout_submit_step) is read one batch at a time, of as
 * many rows as the backend asks: after each batch its reader, and the
 * statement open on the shard's handle, wait parked until the backend asks
 * for the next (fanout_resume).  The backend's in-order merge of the
 * shards' rows reads so: a shard's next rows only when the merge needs
 * them, every shard's statement open meanwhile, however few the workers.
 *
 * Stopping: fanout_destroy sets a flag, wakes every waiter and joins the
 * threads, so no thread outlives the scan that made it.  Each worker hands
 * the flag to shardio.c as its thread's stop flag, which the handlers every
 * shard handle has check: a running statement stops within a few thousand
 * SQLite instructions, and a wait for another process's lock within a few
 * milliseconds.  Only this fan-out's statements stop, never another scan's
 * on the same handle, since the check is the thread's, not the handle's.
 * A transaction that aborts stops every fan-out at once (fanout_stop_all)
 * before its shard handles roll back, as those would otherwise wait for
 * the workers' statements.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fanout.h"

/* A submitted job. */
typedef struct FanoutTask
{
	const FanoutJob *job;
	int			id;
	int			step_rows;		/* stepped: rows of the next batch; else 0 */
	struct ShardReader *reader; /* stepped: kept between batches */
	struct FanoutTask *next;
} FanoutTask;

/* An entry of the event queue. */
typedef struct FanoutQueued
{
	FanoutEvent ev;
	struct FanoutQueued *next;
} FanoutQueued;

struct Fanout
{
	pthread_mutex_t lock;
	pthread_cond_t work_cv;		/* workers: a task or a free batch */
	pthread_cond_t event_cv;	/* backend: an event */

	int			nthreads_alloc; /* room for this many workers ... */
	int			nthreads_max;	/* ... of which this many may start */
	int			nthreads;
	pthread_t  *threads;
	volatile int stopping;		/* read by the workers' SQLite handlers */
	int			lock_waits;		/* workers sleeping in a lock wait now
								 * (atomic; see fanout_lock_waits) */

	FanoutTask *queued_head;	/* FIFO of tasks not started */
	FanoutTask *queued_tail;
	FanoutTask *parked;			/* stepped tasks between batches */
	int			outstanding;	/* tasks submitted and not yet ended */

	ShardBatch **free_batches;	/* pool */
	int			nfree;

	FanoutQueued *events_head;
	FanoutQueued *events_tail;
	int			nomem;

	struct Fanout *prev;		/* live fan-outs of the process */
	struct Fanout *next;
};

/*
 * Every fan-out not yet destroyed.  Only the backend thread creates,
 * destroys and stops fan-outs, so the list needs no lock.
 */
static Fanout *live_fanouts = NULL;

/*
 * now_ms
 *		A monotonic clock in milliseconds.
 */
static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/*
 * push_event
 *		Queue an event for the backend; the lock is held.
 */
static void
push_event(Fanout *f, const FanoutEvent *ev)
{
	FanoutQueued *q = malloc(sizeof(FanoutQueued));

	if (q == NULL)
	{
		f->nomem = 1;
		if (ev->batch)
			f->free_batches[f->nfree++] = ev->batch;
		pthread_cond_broadcast(&f->event_cv);
		return;
	}
	q->ev = *ev;
	q->next = NULL;
	if (f->events_tail)
		f->events_tail->next = q;
	else
		f->events_head = q;
	f->events_tail = q;
	pthread_cond_signal(&f->event_cv);
}

/*
 * run_task
 *		Step one statement to its end, batch by batch; the lock is held on
 *		entry and exit, and released while SQLite works.
 */
static void
run_task(Fanout *f, FanoutTask *task)
{
	FanoutEvent ev;
	ShardReader *reader;

	memset(&ev, 0, sizeof(ev));
	pthread_mutex_unlock(&f->lock);
	reader = task->reader ? task->reader : shard_reader_start(task->job);
	pthread_mutex_lock(&f->lock);
	task->reader = NULL;
	if (reader == NULL)
	{
		ev.kind = FANOUT_FAILED;
		ev.rc = SQLITE_NOMEM;
		snprintf(ev.errmsg, SHARDIO_ERRLEN, "out of memory");
	}

	while (reader != NULL)
	{
		ShardBatch *batch;
		int			rc;

		while (f->nfree == 0 && !f->stopping)
			pthread_cond_wait(&f->work_cv, &f->lock);
		if (f->stopping)
			break;
		batch = f->free_batches[--f->nfree];

		memset(&ev, 0, sizeof(ev));
		pthread_mutex_unlock(&f->lock);
		if (task->step_rows > 0 && task->step_rows < batch->maxrows)
		{
			/* a stepped batch: as many rows as were asked */
			int			maxrows = batch->maxrows;

			batch->maxrows = task->step_rows;
			rc = shard_reader_next(reader, batch, ev.errmsg);
			batch->maxrows = maxrows;
		}
		else
			rc = shard_reader_next(reader, batch, ev.errmsg);
		pthread_mutex_lock(&f->lock);

		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		{
			f->free_batches[f->nfree++] = batch;
			ev.kind = FANOUT_FAILED;
			ev.rc = rc;
			break;
		}
		if (batch->nrows == 0)
			ev.tail_ms = batch->fill_ms;
		if (batch->nrows > 0)
		{
			FanoutEvent bev;

			memset(&bev, 0, sizeof(bev));
			bev.kind = FANOUT_BATCH;
			bev.task = task->id;
			bev.batch = batch;
			bev.last = (rc == SQLITE_DONE);
			push_event(f, &bev);
		}
		else
			f->free_batches[f->nfree++] = batch;
		if (rc == SQLITE_DONE)
		{
			ev.kind = FANOUT_DONE;
			break;
		}
		if (task->step_rows > 0 && batch->nrows > 0)
		{
			/* stepped: wait, statement open, for fanout_resume */
			task->reader = reader;
			task->next = f->parked;
			f->parked = task;
			return;
		}
	}

	/*
	 * Let go of everything on the shard's handle before the backend hears
	 * that the job ended: once it has, it finalizes the statement and may
	 * close the handle, and nothing here may touch them any more.
	 */
	pthread_mutex_unlock(&f->lock);
	shard_reader_free(reader);
	pthread_mutex_lock(&f->lock);
	if (!f->stopping && (ev.kind == FANOUT_DONE || ev.kind == FANOUT_FAILED))
	{
		ev.task = task->id;
		push_event(f, &ev);
	}
}

/* The state of reading one job. */
struct ShardReader
{
	const FanoutJob *job;
	ThreadAgg  *agg;			/* thread aggregation, or NULL */
	int			consumed;		/* every raw row is in agg */
	sqlite3_stmt *fallback;		/* the GROUP BY query after SQLITE_FULL */
};

static int	reader_fill(ShardReader *r, ShardBatch *batch, char *errbuf);

/*
 * shard_reader_start
 *		Begin reading a job; NULL when memory runs out.
 */
ShardReader *
shard_reader_start(const FanoutJob *job)
{
	ShardReader *r = calloc(1, sizeof(ShardReader));

	if (r == NULL)
		return NULL;
	r->job = job;
	if (job->started)
		*job->started = 1;
	if (job->agg)
	{
		r->agg = threadagg_create(job->agg, job->agg_bound);
		if (r->agg == NULL)
		{
			free(r);
			return NULL;
		}
	}
	return r;
}

/*
 * shard_reader_next
 *		Fill a batch with the job's next rows: the statement's rows, or the
 *		partial-aggregate rows of thread aggregation (which first reads the
 *		whole shard), or, when the shard has more groups than thread
 *		aggregation keeps, the rows of the GROUP BY query run by SQLite.
 *		Returns SQLITE_ROW when more may follow, SQLITE_DONE, or an error.
 *		The batch keeps the time it took to fill: what its rows cost the
 *		shard, without the waits for a free batch between calls.
 */
int
shard_reader_next(ShardReader *r, ShardBatch *batch, char *errbuf)
{
	double		start = now_ms();
	int			rc = reader_fill(r, batch, errbuf);

	batch->fill_ms = now_ms() - start;
	return rc;
}

/*
 * reader_fill
 *		The work of shard_reader_next, which times it.
 */
static int
reader_fill(ShardReader *r, ShardBatch *batch, char *errbuf)
{
	int			rc;

	batch->prep = NULL;
	batch->nprep = 0;
	if (r->fallback)
		return shardio_fetch(r->fallback, batch, errbuf);
	if (r->agg == NULL)
	{
		batch->prep = r->job->prep;
		batch->nprep = r->job->nprep;
		return shardio_fetch(r->job->stmt, batch, errbuf);
	}

	if (!r->consumed)
	{
		rc = threadagg_consume(r->agg, r->job->stmt, errbuf);
		if (rc == SQLITE_FULL && r->job->fallback_sql == NULL)
		{
			/* too many groups, and no GROUP BY query to hand them to */
			errbuf[0] = '\0';
			return SQLITE_FULL;
		}
		if (rc == SQLITE_FULL)
		{
			sqlite3	   *db = sqlite3_db_handle(r->job->stmt);

			threadagg_free(r->agg);
			r->agg = NULL;
			sqlite3_reset(r->job->stmt);
			rc = shardio_prepare(db, r->job->fallback_sql, 0, &r->fallback,
								 errbuf);
			if (rc == SQLITE_OK)
				rc = shardio_bind(r->fallback, 1, r->job->binds,
								  r->job->nbinds < sqlite3_bind_parameter_count(r->fallback) ?
								  r->job->nbinds :
								  sqlite3_bind_parameter_count(r->fallback),
								  errbuf);
			if (rc != SQLITE_OK)
				return rc;
			return shardio_fetch(r->fallback, batch, errbuf);
		}
		if (rc != SQLITE_DONE)
			return rc;
		r->consumed = 1;
	}
	return threadagg_emit(r->agg, batch, errbuf);
}

/*
 * shard_reader_free
 *		Release what reading a job allocated (not the job's statement).
 */
void
shard_reader_free(ShardReader *r)
{
	if (r == NULL)
		return;
	threadagg_free(r->agg);
	if (r->fallback)
		sqlite3_finalize(r->fallback);
	free(r);
}

/*
 * worker_main
 *		A worker: take tasks until the fan-out stops.
 */
static void *
worker_main(void *arg)
{
	Fanout	   *f = (Fanout *) arg;

	shardio_thread_stop_flag(&f->stopping);
	shardio_thread_lock_waits(&f->lock_waits);
	pthread_mutex_lock(&f->lock);
	for (;;)
	{
		FanoutTask *task;

		while (f->queued_head == NULL && !f->stopping)
			pthread_cond_wait(&f->work_cv, &f->lock);
		if (f->stopping)
			break;
		task = f->queued_head;
		f->queued_head = task->next;
		if (f->queued_head == NULL)
			f->queued_tail = NULL;
		run_task(f, task);
		if (task->reader == NULL)
			free(task);			/* else parked */
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/*
 * fanout_create
 *		A fan-out of up to nthreads workers sharing nbatches batches of
 *		batch_rows rows of ncols columns.  NULL when memory runs out.
 */
Fanout *
fanout_create(int nthreads, int ncols, int batch_rows, int nbatches)
{
	Fanout	   *f = calloc(1, sizeof(Fanout));
	int			i;

	if (f == NULL)
		return NULL;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->work_cv, NULL);
	pthread_cond_init(&f->event_cv, NULL);
	f->nthreads_alloc = f->nthreads_max = nthreads < 1 ? 1 : nthreads;
	f->threads = calloc(f->nthreads_alloc, sizeof(pthread_t));
	f->free_batches = calloc(nbatches, sizeof(ShardBatch *));
	f->next = live_fanouts;
	if (live_fanouts)
		live_fanouts->prev = f;
	live_fanouts = f;
	if (f->threads == NULL || f->free_batches == NULL)
	{
		fanout_destroy(f);
		return NULL;
	}
	for (i = 0; i < nbatches; i++)
	{
		ShardBatch *b = shardio_batch_create(ncols, batch_rows);

		if (b == NULL)
		{
			fanout_destroy(f);
			return NULL;
		}
		f->free_batches[f->nfree++] = b;
	}
	return f;
}

/*
 * start_worker
 *		Start one more worker with every signal blocked, so that signals
 *		meant for the backend (cancel, timeout, termination) reach only the
 *		backend thread.  The lock is held.
 */
static int
start_worker(Fanout *f)
{
	sigset_t	all,
				old;
	int			rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&f->threads[f->nthreads], NULL, worker_main, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return rc;
	f->nthreads++;
	return 0;
}

/*
 * fanout_submit
 *		Queue a job; its events carry the id "task".
 *		Returns 0, or an errno value when no worker could be started.
 */
int
fanout_submit(Fanout *f, const FanoutJob *job, int task)
{
	return fanout_submit_step(f, job, task, 0);
}

/*
 * fanout_submit_step
 *		Queue a stepped job (rows > 0; see the file header): its first batch,
 *		of at most rows rows, then nothing until fanout_resume.  With rows
 *		0, an ordinary job, read to its end.  Returns as fanout_submit.
 */
int
fanout_submit_step(Fanout *f, const FanoutJob *job, int task, int rows)
{
	FanoutTask *t = calloc(1, sizeof(FanoutTask));
	int			rc = 0;

	if (t == NULL)
		return ENOMEM;
	t->job = job;
	t->id = task;
	t->step_rows = rows < 0 ? 0 : rows;
	pthread_mutex_lock(&f->lock);
	if (f->queued_tail)
		f->queued_tail->next = t;
	else
		f->queued_head = t;
	f->queued_tail = t;
	f->outstanding++;
	if (f->nthreads < f->nthreads_max && f->nthreads < f->outstanding)
		rc = start_worker(f);
	if (rc != 0 && f->nthreads > 0)
		rc = 0;					/* the running workers will get to it */
	pthread_cond_signal(&f->work_cv);
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/*
 * fanout_limit_threads
 *		Let at most n workers run (at least one, at most fanout_create's
 *		count); those already running go on.
 */
void
fanout_limit_threads(Fanout *f, int n)
{
	pthread_mutex_lock(&f->lock);
	f->nthreads_max = n < 1 ? 1 : (n > f->nthreads_alloc ? f->nthreads_alloc : n);
	if (f->nthreads < f->nthreads_max && f->nthreads < f->outstanding)
		(void) start_worker(f);
	pthread_mutex_unlock(&f->lock);
}

/*
 * fanout_resume
 *		Ask a parked stepped job for its next batch, of at most rows rows,
 *		ahead of the jobs that have not started.  Returns 0, or -1 when the
 *		job is not parked (its batch is still being read, or it ended).
 */
int
fanout_resume(Fanout *f, int task, int rows)
{
	FanoutTask **p;
	FanoutTask *t = NULL;

	pthread_mutex_lock(&f->lock);
	for (p = &f->parked; *p != NULL; p = &(*p)->next)
	{
		if ((*p)->id != task)
			continue;
		t = *p;
		*p = t->next;
		break;
	}
	if (t != NULL)
	{
		t->step_rows = rows < 1 ? 1 : rows;
		t->next = f->queued_head;
		f->queued_head = t;
		if (f->queued_tail == NULL)
			f->queued_tail = t;
		pthread_cond_signal(&f->work_cv);
	}
	pthread_mutex_unlock(&f->lock);
	return t != NULL ? 0 : -1;
}

/*
 * fanout_take_queued
 *		Take back the job queued last that no worker has started, for the
 *		backend to run itself: its id, or -1 when every job has started.
 */
int
fanout_take_queued(Fanout *f)
{
	FanoutTask *prev = NULL;
	FanoutTask *t;
	int			id = -1;

	pthread_mutex_lock(&f->lock);
	for (t = f->queued_head; t && t->next; t = t->next)
		prev = t;
	if (t != NULL && t->reader == NULL)
	{
		if (prev)
			prev->next = NULL;
		else
			f->queued_head = NULL;
		f->queued_tail = prev;
		f->outstanding--;
		id = t->id;
		free(t);
	}
	pthread_mutex_unlock(&f->lock);
	return id;
}

/*
 * fanout_next
 *		The next event, waiting up to timeout_ms for one; the backend calls
 *		this in a loop and checks for interrupts between calls.
 */
void
fanout_next(Fanout *f, int timeout_ms, FanoutEvent *ev)
{
	struct timespec deadline;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long) (timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L)
	{
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}

	pthread_mutex_lock(&f->lock);
	for (;;)
	{
		if (f->nomem)
		{
			memset(ev, 0, sizeof(*ev));
			ev->kind = FANOUT_NOMEM;
			break;
		}
		if (f->events_head)
		{
			FanoutQueued *q = f->events_head;

			f->events_head = q->next;
			if (f->events_head == NULL)
				f->events_tail = NULL;
			*ev = q->ev;
			free(q);
			if (ev->kind == FANOUT_DONE || ev->kind == FANOUT_FAILED)
				f->outstanding--;
			break;
		}
		if (f->outstanding == 0)
		{
			memset(ev, 0, sizeof(*ev));
			ev->kind = FANOUT_IDLE;
			break;
		}
		if (pthread_cond_timedwait(&f->event_cv, &f->lock, &deadline) == ETIMEDOUT)
		{
			memset(ev, 0, sizeof(*ev));
			ev->kind = FANOUT_TIMEOUT;
			break;
		}
	}
	pthread_mutex_unlock(&f->lock);
}

/*
 * fanout_lock_waits
 *		How many of the workers wait for another process's lock right now:
 *		the backend names its own wait after it.
 */
int
fanout_lock_waits(Fanout *f)
{
	return __atomic_load_n(&f->lock_waits, __ATOMIC_RELAXED);
}

/*
 * fanout_release_batch
 *		Give a batch back to the pool once its rows are converted.
 */
void
fanout_release_batch(Fanout *f, ShardBatch *batch)
{
	pthread_mutex_lock(&f->lock);
	f->free_batches[f->nfree++] = batch;
	pthread_cond_signal(&f->work_cv);
	pthread_mutex_unlock(&f->lock);
}

/*
 * fanout_stop
 *		Tell a fan-out's workers to stop, interrupting the statements and
 *		the lock waits they are in, without waiting for them.
 */
static void
fanout_stop(Fanout *f)
{
	pthread_mutex_lock(&f->lock);
	f->stopping = 1;
	pthread_cond_broadcast(&f->work_cv);
	pthread_cond_broadcast(&f->event_cv);
	pthread_mutex_unlock(&f->lock);
}

/*
 * fanout_stop_all
 *		Stop every fan-out of the process, without waiting: for a
 *		transaction that aborts, whose scans are destroyed only after its
 *		shard handles are rolled back.  Each must still be destroyed.
 */
void
fanout_stop_all(void)
{
	Fanout	   *f;

	for (f = live_fanouts; f != NULL; f = f->next)
		fanout_stop(f);
}

/*
 * fanout_destroy
 *		Stop every worker (interrupting the statements they run), join
 *		them and free everything.  The statements themselves belong to the
 *		caller, who finalizes them afterwards on its own thread.
 */
void
fanout_destroy(Fanout *f)
{
	int			i;
	FanoutQueued *q;
	FanoutTask *t;

	if (f == NULL)
		return;
	if (f->prev)
		f->prev->next = f->next;
	else
		live_fanouts = f->next;
	if (f->next)
		f->next->prev = f->prev;

	fanout_stop(f);
	for (i = 0; i < f->nthreads; i++)
		pthread_join(f->threads[i], NULL);

	/* Batches still queued as events go back to the pool to be freed. */
	for (q = f->events_head; q != NULL;)
	{
		FanoutQueued *next = q->next;

		if (q->ev.batch)
			shardio_batch_free(q->ev.batch);
		free(q);
		q = next;
	}
	for (t = f->queued_head; t != NULL;)
	{
		FanoutTask *next = t->next;

		shard_reader_free(t->reader);
		free(t);
		t = next;
	}
	for (t = f->parked; t != NULL;)
	{
		FanoutTask *next = t->next;

		shard_reader_free(t->reader);
		free(t);
		t = next;
	}
	for (i = 0; i < f->nfree; i++)
		shardio_batch_free(f->free_batches[i]);
	pthread_cond_destroy(&f->work_cv);
	pthread_cond_destroy(&f->event_cv);
	pthread_mutex_destroy(&f->lock);
	free(f->free_batches);
	free(f->threads);
	free(f);
}
