/*-------------------------------------------------------------------------
 *
 * fanout.h
 *		  Plain-C interface of the fan-out worker threads
 *
 * A Fanout runs shard statements on worker threads.  The backend prepares
 * and binds each statement (on its own thread, through the connection
 * cache), submits it, and then takes events back: a batch of rows, the end
 * of a statement, or its failure.  Workers fill batches from a fixed pool
 * and wait when the pool is empty, so memory stays bounded whatever the
 * result size.  Nothing here uses PostgreSQL: workers call only SQLite and
 * the C library, with every signal blocked.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FANOUT_H
#define FANOUT_H

#include "shardio.h"
#include "threadagg.h"

typedef struct Fanout Fanout;

/*
 * What to read from one shard: a prepared, bound statement, and for an
 * aggregate scan read by thread aggregation (agg set), the partial-aggregate
 * SQL to prepare and bind instead when the shard has too many groups (NULL:
 * an error then).
 * Everything here stays valid and unchanged until the job ends.
 */
typedef struct FanoutJob
{
	sqlite3_stmt *stmt;
	const ThreadAggSpec *agg;
	long long	agg_bound;		/* groups agg returns, or -1 (threadagg.c) */
	const char *fallback_sql;
	const ShardValue *binds;
	int			nbinds;
	const unsigned char *prep;	/* SHARDIO_PREP_ per column of stmt's rows,
								 * or NULL */
	int			nprep;
	int		   *started;		/* set to 1 when a reader begins it, or
								 * NULL; for EXPLAIN ANALYZE, read by the
								 * backend once the job ended or its
								 * fan-out is destroyed */
} FanoutJob;

/* A job being read into batches, by a worker or by the backend itself. */
typedef struct ShardReader ShardReader;

extern ShardReader *shard_reader_start(const FanoutJob *job);
extern int	shard_reader_next(ShardReader *r, ShardBatch *batch, char *errbuf);
extern void shard_reader_free(ShardReader *r);

/* What fanout_next returns. */
typedef enum FanoutEventKind
{
	FANOUT_TIMEOUT,				/* nothing arrived in time; ask again */
	FANOUT_IDLE,				/* no statement is queued or running */
	FANOUT_BATCH,				/* rows from a statement */
	FANOUT_DONE,				/* a statement returned all its rows */
	FANOUT_FAILED,				/* a statement failed: see rc and errmsg */
	FANOUT_NOMEM				/* the fan-out itself ran out of memory */
} FanoutEventKind;

typedef struct FanoutEvent
{
	FanoutEventKind kind;
	int			task;			/* the id given to fanout_submit */
	ShardBatch *batch;			/* FANOUT_BATCH: give back with
								 * fanout_release_batch */
	int			last;			/* FANOUT_BATCH: the statement's last rows
								 * (its FANOUT_DONE follows) */
	int			rc;				/* FANOUT_FAILED: SQLite result code */
	char		errmsg[SHARDIO_ERRLEN];
	double		tail_ms;		/* FANOUT_DONE: time of the reader's last
								 * call, when it returned no rows (the time
								 * of the others is in their batches) */
} FanoutEvent;

extern Fanout *fanout_create(int nthreads, int ncols, int batch_rows,
							 int nbatches);
extern int	fanout_submit(Fanout *f, const FanoutJob *job, int task);
extern int	fanout_submit_step(Fanout *f, const FanoutJob *job, int task,
							   int rows);
extern int	fanout_resume(Fanout *f, int task, int rows);
extern void fanout_limit_threads(Fanout *f, int n);
extern int	fanout_take_queued(Fanout *f);
extern void fanout_next(Fanout *f, int timeout_ms, FanoutEvent *ev);
extern void fanout_release_batch(Fanout *f, ShardBatch *batch);
extern int	fanout_lock_waits(Fanout *f);
extern void fanout_destroy(Fanout *f);
extern void fanout_stop_all(void);

#endif							/* FANOUT_H */
