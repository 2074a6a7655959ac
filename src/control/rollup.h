/*-------------------------------------------------------------------------
 *
 * rollup.h
 *		  What the rollup's declaration (rollup.c), its change capture in the
 *		  shards (rollupcapture.c) and its refresh (rolluprefresh.c) share
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARD_ROLLUP_H
#define SHARD_ROLLUP_H

#include "sqlite_shard_fdw.h"

#include "datatype/timestamp.h"

/* A rollup, as its catalog row and its source foreign table describe it. */
typedef struct Rollup
{
	Oid			relid;			/* the rollup table */
	char	   *relname;		/* its name, schema-qualified and quoted */
	Oid			source;			/* the foreign table aggregated */
	char	   *fill_query;		/* the SELECT whose rows the table holds */
	char	   *tenant_key;		/* the rollup table's tenant column */
	Oid			tenant_type;	/* its type, the source's tenant column's */
	ShardServerOptions *opts;	/* the source's server */
	char	   *table;			/* the SQLite table the source reads */
	char	   *tenant_column;	/* its tenant column, as the source names it */
	int			kind;			/* SHARDIO_TENANT_ kind of the tenant type */
} Rollup;

/* What a refresh takes of one shard's change log. */
typedef struct RollupShardLog
{
	char	   *shard_id;
	char	   *epoch;			/* the log's, "" when the shard lacks the
								 * table; NULL: the shard was skipped */
	int64		mark;			/* the last change taken */
	bool		reset;			/* the log's history is not the rollup's:
								 * every tenant of the shard is changed */
	List	   *tenants;		/* ids of the tenants changed since the
								 * rollup's mark */
	List	   *changed_at;		/* ... and the time of the last change of
								 * each, as a TimestampTz in a palloc'd int64 */
	bool		opened;			/* the shard was opened and its log read;
								 * false: skipped, its files unchanged */
	bool		quiet;			/* nothing logged above mark when read */
	char	   *file_state;		/* the state of its files to record with
								 * the mark (see rollupcapture.c), or NULL */
} RollupShardLog;

/* The advisory lock class of rollup refreshes: "roll". */
#define ROLLUP_LOCK_CLASS 0x726f6c6c

/* in rollup.c */
extern Rollup *rollup_load(Oid relid);
extern void rollup_require_unscoped(Rollup *r);
extern uint64 rollup_spi_run(const char *sql, int nargs, Oid *types,
							 Datum *values);

/* in rollupcapture.c */
extern List *rollup_capture_read(Rollup *r, bool install);
extern void rollup_capture_publish(Rollup *r, const char *tenant);

/* in rolluprefresh.c */
extern void rollup_refresh_full(Rollup *r, int64 *tenants, int64 *groups,
								TimestampTz *as_of);

#endif							/* SHARD_ROLLUP_H */
