/*-------------------------------------------------------------------------
 *
 * estimate.c
 *		  Row estimates of foreign tables that ANALYZE has not measured
 *
 * Before ANALYZE a foreign table has no row count, and PostgreSQL's
 * defaults (a guess, and one row in two hundred for "tenant = value") make
 * the planner's choices on a fresh fleet arbitrary.  This file estimates
 * what is cheap to know exactly enough:
 *
 * - The rows of the table on a shard: the row count SQLite's own ANALYZE
 *   left in sqlite_stat1, when the shard has it; otherwise a walk down the
 *   left edge of the table's B-tree through the dbstat virtual table (a
 *   few pages read: the fan-out of each interior page on the way down,
 *   times the cells of the first leaves), which lands within a factor of
 *   about 1.5 of the count for tables filled in any order; otherwise the
 *   file's size over the table's estimated row width.  At most
 *   ESTIMATE_MAX_SHARDS shards are opened, spread over the fleet; the
 *   rows of the others are their file size times the rows per byte of
 *   those opened.
 * - The tenants of each shard, from the directory: a routed tenant is
 *   estimated at the rows of the shard that owns it divided by the
 *   shard's tenants (the average tenant there; a tenant much bigger or
 *   smaller than its neighbours is estimated as they are).  Counting them
 *   reads all of shard_map, so it is done only for queries that name a
 *   tenant, and kept per server for TENANT_CACHE_SECS seconds.
 *
 * A table's figures are kept for ESTIMATE_CACHE_SECS seconds (and dropped
 * when the table changes, ANALYZE included), so planning reads shards at
 * most that often.  They are read through the backend's cached handles,
 * as the scan the plan is for reads them (see shard_rows): a shard that is
 * missing or without the table is left out, one locked past the busy
 * timeout is the scan's error, raised a wait earlier, and nothing here
 * raises an error the scan would not.
 *
 * A role restricted by a user mapping's "tenants" must not learn where
 * other tenants live or how big their shards are, so where value
 * statistics are off (analyze_values, see analyze.c) every tenant is
 * estimated as the fleet's average tenant.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <math.h>

#include "catalog/pg_statistic.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

/* Shards opened to estimate a table; the rest scale by file size. */
#define ESTIMATE_MAX_SHARDS 16

/* How long a table's figures are used before they are read again. */
#define ESTIMATE_CACHE_SECS 60

/* How long a server's tenant counts are used. */
#define TENANT_CACHE_SECS 600

/* dbstat rows read for one table: the left edge and its first leaves. */
#define DBSTAT_ROWS 64

/* One shard's figures for a table. */
typedef struct ShardFigures
{
	char	   *shard_id;
	double		bytes;			/* file and write-ahead log */
	double		rows;			/* rows of the table there, or -1 */
} ShardFigures;

/*
 * A foreign table's figures (the cache entry, keyed by relid): the shards
 * looked at so far, and once every shard was (complete), the total.
 */
typedef struct TableFigures
{
	Oid			relid;
	bool		valid;
	TimestampTz made;
	MemoryContext cxt;			/* holds shards */
	List	   *shards;			/* ShardFigures */
	bool		complete;		/* every shard of the fleet is in shards */
	double		rows;			/* when complete: over every shard */
} TableFigures;

/* A server's tenants per shard (the cache entry, keyed by serverid). */
typedef struct TenantCounts
{
	Oid			serverid;
	bool		valid;
	TimestampTz made;
	int			nshards;
	char	  **shard_ids;		/* in EstimateContext */
	double	   *tenants;
	double		total;
} TenantCounts;

static HTAB *EstimateCache = NULL;
static HTAB *TenantCache = NULL;
static MemoryContext EstimateContext = NULL;

/*
 * estimate_invalidate
 *		Relcache callback: forget a changed table's figures (all of them for
 *		a reset), so that ALTER and ANALYZE take effect at once.
 */
static void
estimate_invalidate(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	TableFigures *tf;

	if (EstimateCache == NULL)
		return;
	hash_seq_init(&status, EstimateCache);
	while ((tf = hash_seq_search(&status)) != NULL)
		if (!OidIsValid(relid) || tf->relid == relid)
			tf->valid = false;
}

/*
 * leading_integer
 *		The first integer of an sqlite_stat1 "stat" text, or -1.
 */
static double
leading_integer(const char *text)
{
	char	   *end;
	double		v;

	if (text == NULL)
		return -1;
	v = strtod(text, &end);
	if (end == text || v < 0)
		return -1;
	return v;
}

/*
 * stat1_rows
 *		The rows sqlite_stat1 records for the table (the first number of
 *		its rows: of the table, or of each of its indexes), or -1 when the
 *		shard has no such row.
 */
static double
stat1_rows(sqlite3 *db, const char *table)
{
	sqlite3_stmt *stmt;
	char		errbuf[SHARDIO_ERRLEN];
	double		rows = -1;

	if (shardio_prepare(db, "SELECT stat FROM sqlite_stat1 WHERE tbl = ?1",
						0, &stmt, errbuf) != SQLITE_OK)
		return -1;				/* no sqlite_stat1 */
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_STATIC);
	while (sqlite3_step(stmt) == SQLITE_ROW)
		rows = Max(rows,
				   leading_integer((const char *) sqlite3_column_text(stmt, 0)));
	sqlite3_finalize(stmt);
	return rows;
}

/*
 * shard_btree_rows
 *		The rows of the table's B-tree, from its left edge: dbstat lists
 *		the pages depth first, so its first rows are the root, the first
 *		interior page of each level and the first leaves.  The fan-outs of
 *		those interior pages multiplied, times the cells of an average
 *		first leaf, estimate the leaves' cells: the rows.  -1 when dbstat
 *		is missing or the table is not there.
 */
double
shard_btree_rows(sqlite3 *db, const char *table)
{
	sqlite3_stmt *stmt;
	char		errbuf[SHARDIO_ERRLEN];
	double		fanout = 1;
	double		leaf_cells = 0;
	int			leaves = 0;
	int			depth = 0;

	if (shardio_prepare(db,
						"SELECT path, pagetype, ncell FROM dbstat "
						"WHERE name = ?1 LIMIT " CppAsString2(DBSTAT_ROWS),
						0, &stmt, errbuf) != SQLITE_OK)
		return -1;				/* a library without dbstat */
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_STATIC);
	while (sqlite3_step(stmt) == SQLITE_ROW)
	{
		const char *path = (const char *) sqlite3_column_text(stmt, 0);
		const char *type = (const char *) sqlite3_column_text(stmt, 1);
		double		ncell = sqlite3_column_double(stmt, 2);
		int			level = 0;
		const char *p;

		if (path == NULL || type == NULL)
			continue;
		for (p = path; *p; p++)
			level += (*p == '/');
		if (strcmp(type, "internal") == 0)
		{
			/* only the left edge, one page a level, before any leaf */
			if (leaves == 0 && level == depth + 1)
			{
				fanout *= ncell + 1;
				depth = level;
			}
			else
				break;
		}
		else if (strcmp(type, "leaf") == 0)
		{
			leaf_cells += ncell;
			leaves++;
		}
	}
	sqlite3_finalize(stmt);
	if (leaves == 0)
		return -1;
	return fanout * (leaf_cells / leaves);
}

/*
 * size_rows
 *		The rows a file of the shard's size would hold at the table's
 *		estimated row width: the last resort, an overestimate where the
 *		shard holds other tables too.
 */
static double
size_rows(sqlite3 *db, Relation rel)
{
	sqlite3_stmt *stmt;
	char		errbuf[SHARDIO_ERRLEN];
	double		bytes = -1;
	int32		width = 0;
	int			i;

	if (shardio_prepare(db,
						"SELECT page_count * page_size FROM pragma_page_count, "
						"pragma_page_size",
						0, &stmt, errbuf) != SQLITE_OK)
		return -1;
	if (sqlite3_step(stmt) == SQLITE_ROW)
		bytes = sqlite3_column_double(stmt, 0);
	sqlite3_finalize(stmt);
	if (bytes < 0)
		return -1;
	for (i = 0; i < RelationGetDescr(rel)->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), i);

		if (!att->attisdropped)
			width += get_typavgwidth(att->atttypid, att->atttypmod);
	}
	/* a record's header and a cell's pointer, rowid and length */
	return bytes / (width + 12);
}

/*
 * shard_rows
 *		The table's rows on one shard, or -1 when the shard cannot tell.
 *
 * Read through the backend's own handle on the shard, as the scan that
 * the plan is for will read it: a second handle on the same file in the
 * process would share its POSIX locks, which closing it can release under
 * the first.  So the shard is opened, and its failures raised, as the scan
 * would; a missing shard is left out (the scan decides, by
 * on_missing_shard).  The read transaction ends here (shard_conn_get_brief):
 * a statement that writes the shard must not find a snapshot of planning
 * open that it would have to turn into a write.
 */
static double
shard_rows(ShardServerOptions *opts, ShardInfo *shard, Relation rel,
		   const char *table)
{
	ShardConn  *conn;
	sqlite3    *db;
	sqlite3_stmt *stmt;
	char		errbuf[SHARDIO_ERRLEN];
	char	   *name = NULL;
	double		rows = -1;
	int			rc;

	conn = shard_conn_get_brief(opts, shard, true);
	if (conn == NULL)
		return -1;
	db = shard_conn_db(conn);

	/*
	 * The table's name as the shard spells it (SQLite ignores case).  This
	 * first read waits for another process's lock as the scan would; a
	 * wait that reached the busy timeout, or that a cancel ended, is
	 * raised now rather than waited for again by the scan.
	 */
	rc = shardio_prepare(db,
						 "SELECT name FROM sqlite_schema WHERE type = 'table' "
						 "AND name = ?1 COLLATE NOCASE",
						 0, &stmt, errbuf);
	if (rc == SQLITE_OK)
	{
		sqlite3_bind_text(stmt, 1, table, -1, SQLITE_STATIC);
		rc = sqlite3_step(stmt);
		if (rc == SQLITE_ROW)
			name = pstrdup((const char *) sqlite3_column_text(stmt, 0));
		sqlite3_finalize(stmt);
	}
	if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_INTERRUPT)
	{
		shard_conn_release(conn);
		shard_check_lock_wait(rc, false, shard->shard_id);
		return -1;
	}
	if (name != NULL)
	{
		rows = stat1_rows(db, name);
		if (rows < 0)
			rows = shard_btree_rows(db, name);
		if (rows < 0)
			rows = size_rows(db, rel);
	}
	shard_conn_release(conn);
	return rows;
}

/*
 * shard_figures
 *		A shard's figures for the table, read the first time they are
 *		asked for (the rows are -1 when the shard could not be read).
 */
static ShardFigures *
shard_figures(TableFigures *tf, ShardInfo *info, Relation rel,
			  ShardTableOptions *topts)
{
	ShardFigures *sf;
	ListCell   *lc;
	MemoryContext oldcxt;

	foreach(lc, tf->shards)
	{
		sf = lfirst(lc);
		if (strcmp(sf->shard_id, info->shard_id) == 0)
			return sf;
	}
	oldcxt = MemoryContextSwitchTo(tf->cxt);
	sf = palloc(sizeof(ShardFigures));
	sf->shard_id = pstrdup(info->shard_id);
	sf->bytes = shard_file_bytes(info->path);
	sf->rows = shard_rows(shard_server_options(topts->serverid), info, rel,
						  topts->table);
	tf->shards = lappend(tf->shards, sf);
	MemoryContextSwitchTo(oldcxt);
	return sf;
}

/*
 * complete_figures
 *		Read the rows of up to ESTIMATE_MAX_SHARDS shards spread over the
 *		fleet (those already read count among them); every other shard's
 *		rows are its size times the rows per byte of those read.  Lists
 *		every shard, so only for a scan that will read them all: a shard
 *		the directory cannot name (a path outside its folder) is the same
 *		error the scan would raise.
 */
static void
complete_figures(TableFigures *tf, Relation rel, ShardTableOptions *topts)
{
	ShardDirectory *dir = shard_directory_get(shard_server_options(topts->serverid));
	List	   *shards = shard_directory_shards(dir);
	int			n = list_length(shards);
	double		step = n > ESTIMATE_MAX_SHARDS ?
		(double) n / ESTIMATE_MAX_SHARDS : 1;
	double		sampled_rows = 0;
	double		sampled_bytes = 0;
	List	   *all = NIL;
	ListCell   *lc;
	int			i;

	for (i = 0; i < Min(n, ESTIMATE_MAX_SHARDS); i++)
	{
		ShardFigures *sf = shard_figures(tf, list_nth(shards,
													  (int) floor(i * step)),
										 rel, topts);

		if (sf->rows < 0)
			continue;
		sampled_rows += sf->rows;
		sampled_bytes += sf->bytes;
	}
	tf->rows = 0;
	foreach(lc, shards)
	{
		ShardInfo  *info = lfirst(lc);
		ShardFigures *sf = NULL;
		ListCell   *lc2;

		foreach(lc2, tf->shards)
			if (strcmp(((ShardFigures *) lfirst(lc2))->shard_id,
					   info->shard_id) == 0)
				sf = lfirst(lc2);
		if (sf == NULL)
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(tf->cxt);

			sf = palloc(sizeof(ShardFigures));
			sf->shard_id = pstrdup(info->shard_id);
			sf->bytes = shard_file_bytes(info->path);
			sf->rows = -1;
			MemoryContextSwitchTo(oldcxt);
		}
		if (sf->rows < 0)
			sf->rows = sampled_bytes > 0 ?
				sf->bytes * sampled_rows / sampled_bytes : 0;
		tf->rows += sf->rows;
		all = lappend(all, sf);
	}
	/* the shards of the fleet now, in its order */
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(tf->cxt);

		tf->shards = list_copy(all);
		MemoryContextSwitchTo(oldcxt);
	}
	tf->complete = true;
}

/*
 * estimate_cache_init
 *		Create the caches and their context, once per backend.
 */
static void
estimate_cache_init(void)
{
	HASHCTL		ctl;

	if (EstimateCache != NULL)
		return;
	EstimateContext = AllocSetContextCreate(CacheMemoryContext,
											"sqlite_shard_fdw estimates",
											ALLOCSET_SMALL_SIZES);
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(TableFigures);
	ctl.hcxt = EstimateContext;
	EstimateCache = hash_create("sqlite_shard_fdw estimates", 16, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	ctl.entrysize = sizeof(TenantCounts);
	TenantCache = hash_create("sqlite_shard_fdw tenant counts", 4, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	CacheRegisterRelcacheCallback(estimate_invalidate, (Datum) 0);
}

/*
 * count_tenants
 *		Read how many tenants each shard answers for (the target of a
 *		tenant whose move is DONE, else its shard_id), through the
 *		directory's handle; a lock held on the directory is waited for and
 *		reported as any read of it is.
 */
static void
count_tenants(TenantCounts *tc, ShardServerOptions *opts)
{
	ShardDirectory *dir = shard_directory_get(opts);
	sqlite3    *db = shard_directory_handle(dir);
	sqlite3_stmt *stmt;
	char		errbuf[SHARDIO_ERRLEN];
	List	   *ids = NIL;
	List	   *counts = NIL;
	ListCell   *lc;
	MemoryContext oldcxt;
	int			rc;
	int			i;

	rc = shardio_prepare(db,
						 psprintf("SELECT %s AS owner, count(*) FROM shard_map "
								  "GROUP BY owner", shard_directory_owner_sql(dir)),
						 0, &stmt, errbuf);
	if (rc == SQLITE_OK)
	{
		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		{
			const char *owner = (const char *) sqlite3_column_text(stmt, 0);

			ids = lappend(ids, pstrdup(owner ? owner : ""));
			counts = lappend_int(counts, sqlite3_column_int(stmt, 1));
		}
		if (rc != SQLITE_DONE)
			strlcpy(errbuf, sqlite3_errmsg(db), SHARDIO_ERRLEN);
		sqlite3_finalize(stmt);
		if (rc == SQLITE_DONE)
			rc = SQLITE_OK;
	}
	if (rc != SQLITE_OK)
	{
		shard_check_lock_wait(rc, true, opts->directory);
		ereport(ERROR,
				(errcode(shard_sqlite_sqlstate(rc)),
				 errmsg("could not count the tenants of each shard in directory \"%s\"",
						opts->directory),
				 errdetail_internal("%s", errbuf)));
	}

	if (tc->shard_ids)
	{
		for (i = 0; i < tc->nshards; i++)
			pfree(tc->shard_ids[i]);
		pfree(tc->shard_ids);
		pfree(tc->tenants);
		tc->shard_ids = NULL;
		tc->nshards = 0;
	}
	oldcxt = MemoryContextSwitchTo(EstimateContext);
	tc->shard_ids = palloc0(sizeof(char *) * Max(list_length(ids), 1));
	tc->tenants = palloc0(sizeof(double) * Max(list_length(ids), 1));
	MemoryContextSwitchTo(oldcxt);
	tc->total = 0;
	i = 0;
	foreach(lc, ids)
	{
		tc->shard_ids[i] = MemoryContextStrdup(EstimateContext, lfirst(lc));
		tc->tenants[i] = list_nth_int(counts, i);
		tc->total += tc->tenants[i];
		i++;
	}
	tc->nshards = i;
	tc->made = GetCurrentTimestamp();
	tc->valid = true;
}

/*
 * tenant_counts
 *		A server's tenants per shard, from the cache while they are fresh.
 */
static TenantCounts *
tenant_counts(Oid serverid)
{
	TenantCounts *tc;
	bool		found;

	estimate_cache_init();
	tc = hash_search(TenantCache, &serverid, HASH_ENTER, &found);
	if (!found)
	{
		tc->valid = false;
		tc->shard_ids = NULL;
		tc->nshards = 0;
	}
	if (!tc->valid ||
		TimestampDifferenceExceeds(tc->made, GetCurrentTimestamp(),
								   TENANT_CACHE_SECS * 1000))
	{
		tc->valid = false;
		count_tenants(tc, shard_server_options(serverid));
	}
	return tc;
}

/*
 * table_figures
 *		A table's cache entry, emptied when its figures are too old.
 */
static TableFigures *
table_figures(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	TableFigures *tf;
	bool		found;

	estimate_cache_init();
	tf = hash_search(EstimateCache, &relid, HASH_ENTER, &found);
	if (!found)
	{
		tf->cxt = AllocSetContextCreate(EstimateContext,
										"sqlite_shard_fdw table estimate",
										ALLOCSET_SMALL_SIZES);
		tf->valid = false;
	}
	if (!tf->valid ||
		TimestampDifferenceExceeds(tf->made, GetCurrentTimestamp(),
								   ESTIMATE_CACHE_SECS * 1000))
	{
		MemoryContextReset(tf->cxt);
		tf->shards = NIL;
		tf->complete = false;
		tf->rows = 0;
		tf->made = GetCurrentTimestamp();
		tf->valid = true;
	}
	return tf;
}

/*
 * shard_estimate_rows
 *		The rows of a foreign table that ANALYZE has not measured, over
 *		every shard, or -1 when unknown.  Only with read_all (a scan that
 *		reads every shard) are the shards listed and read for it; a routed
 *		scan takes the total if an earlier query left it.
 */
double
shard_estimate_rows(Relation rel, ShardTableOptions *topts, bool read_all)
{
	TableFigures *tf = table_figures(rel);

	/* A reference table is read from one shard's copy. */
	if (topts->reference)
	{
		ShardDirectory *dir = shard_directory_get(shard_server_options(topts->serverid));
		ShardFigures *sf;

		sf = shard_figures(tf, shard_reference_shard(dir, topts,
													 RelationGetRelationName(rel)),
						   rel, topts);
		return sf->rows > 0 ? sf->rows : -1;
	}
	/*
	 * One file per tenant: a scoped login's fan-out reads only its own
	 * tenants' files, so planning must open no other.
	 */
	if (read_all &&
		shard_server_options(topts->serverid)->file_per_tenant &&
		shard_user_tenants(topts->serverid, GetUserId()) != NIL)
		read_all = false;
	if (!tf->complete && read_all)
		complete_figures(tf, rel, topts);
	return tf->complete && tf->rows > 0 ? tf->rows : -1;
}

/*
 * tenants_on
 *		The tenants a shard answers for.
 */
static double
tenants_on(TenantCounts *tc, const char *shard_id)
{
	int			i;

	for (i = 0; i < tc->nshards; i++)
		if (strcmp(tc->shard_ids[i], shard_id) == 0)
			return tc->tenants[i];
	return 0;
}

/*
 * average_tenant
 *		The rows of the fleet's average tenant: the total over every
 *		tenant when it is known; else, where allowed (known_ok), over the
 *		shards read so far and their tenants; else -1.
 */
static double
average_tenant(TableFigures *tf, TenantCounts *tc, bool known_ok)
{
	double		rows = 0;
	double		tenants = 0;
	ListCell   *lc;

	if (tf->complete)
		return tf->rows / tc->total;
	if (!known_ok)
		return -1;
	foreach(lc, tf->shards)
	{
		ShardFigures *sf = lfirst(lc);

		if (sf->rows < 0)
			continue;
		rows += sf->rows;
		tenants += tenants_on(tc, sf->shard_id);
	}
	return tenants > 0 ? rows / tenants : -1;
}

/*
 * tenant_rows
 *		The estimated rows of one tenant: its owner shard's rows over the
 *		shard's tenants; 0 for a tenant the directory does not know, -1
 *		when its shard could not be read.  Only the shard a routed scan
 *		reads is opened.
 */
static double
tenant_rows(TableFigures *tf, TenantCounts *tc, ShardDirectory *dir,
			Relation rel, ShardTableOptions *topts, const char *tenant)
{
	ShardLocation *loc = shard_directory_locate(dir, tenant);
	ShardInfo  *info;
	ShardFigures *sf;
	double		tenants;

	if (loc == NULL)
		return 0;
	info = shard_directory_shard(dir, loc->owner);
	if (info == NULL)
		return 0;
	sf = shard_figures(tf, info, rel, topts);
	tenants = tenants_on(tc, loc->owner);
	if (sf->rows < 0)
		return -1;
	return tenants > 0 ? sf->rows / tenants : 0;
}

/*
 * shard_estimate_tenant_rows
 *		The rows a tenant condition keeps (kind and value as
 *		shard_find_tenant_condition gives them), or -1 to let PostgreSQL
 *		estimate them: when the tenant column has value statistics from
 *		ANALYZE, which are better, or when nothing is known.
 *
 * Constant tenants are located in the directory, each the average tenant
 * of its shard; a value known only when the query runs is the fleet's
 * average tenant, and so is every tenant where value statistics are off
 * (from the total only, so that the estimate says nothing of any shard).
 */
double
shard_estimate_tenant_rows(PlannerInfo *root, Relation rel,
						   ShardTableOptions *topts, ShardPruneKind kind,
						   Expr *value)
{
	Oid			relid = RelationGetRelid(rel);
	bool		values_ok = shard_analyze_values(relid);
	TableFigures *tf;
	TenantCounts *tc;
	ShardDirectory *dir;
	double		rows = 0;
	Const	   *c;
	ArrayType  *arr = NULL;

	if (SearchSysCacheExists3(STATRELATTINH, ObjectIdGetDatum(relid),
							  Int16GetDatum(topts->tenant_attnum),
							  BoolGetDatum(false)))
		return -1;
	tf = table_figures(rel);
	tc = tenant_counts(topts->serverid);
	if (tc->total <= 0)
		return -1;

	value = (Expr *) estimate_expression_value(root, (Node *) value);
	c = IsA(value, Const) ? (Const *) value : NULL;
	if (c != NULL && c->constisnull)
		return 0;
	if (c != NULL && kind == PRUNE_ANY)
		arr = DatumGetArrayTypeP(c->constvalue);

	if (c == NULL || !values_ok)
	{
		double		avg = average_tenant(tf, tc, values_ok);
		double		n = 1;

		/* each element of a constant array names a tenant */
		if (arr != NULL)
			n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
		return avg < 0 ? -1 : avg * n;
	}

	dir = shard_directory_get(shard_server_options(topts->serverid));
	if (arr == NULL)
		return tenant_rows(tf, tc, dir, rel, topts,
						   shard_tenant_id(c->consttype, c->constvalue));
	else
	{
		Oid			elemtype = ARR_ELEMTYPE(arr);
		int16		typlen;
		bool		typbyval;
		char		typalign;
		Datum	   *elems;
		bool	   *nulls;
		int			nelems,
					i;

		get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
		deconstruct_array(arr, elemtype, typlen, typbyval, typalign,
						  &elems, &nulls, &nelems);
		for (i = 0; i < nelems; i++)
		{
			double		r;

			if (nulls[i])
				continue;
			r = tenant_rows(tf, tc, dir, rel, topts,
							shard_tenant_id(elemtype, elems[i]));
			if (r < 0)
				return -1;
			rows += r;
		}
	}
	return rows;
}
