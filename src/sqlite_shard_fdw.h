/*-------------------------------------------------------------------------
 *
 * sqlite_shard_fdw.h
 *		  Shared declarations of sqlite_shard_fdw, grouped by defining file
 *
 *-------------------------------------------------------------------------
 */
#ifndef SQLITE_SHARD_FDW_H
#define SQLITE_SHARD_FDW_H

#include "postgres.h"

#include "fmgr.h"
#include "foreign/fdwapi.h"
#include "lib/stringinfo.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "utils/rel.h"

#include "shardio.h"

struct ExplainState;

/* in option.c */

typedef struct ShardServerOptions
{
	Oid			serverid;
	char	   *servername;
	char	   *directory;		/* control database, absolute path */
	char	   *shard_path;		/* pattern with one %s, or NULL */
	int			busy_timeout_ms;
	int64		max_shard_bytes;
	bool		skip_missing;	/* on_missing_shard = skip */
	bool		allow_outside_paths;	/* shard files may be outside the
										 * directory's folder */
	bool		file_per_tenant;	/* layout 'file_per_tenant': each shard
									 * file is one tenant's */
	char	   *tenant_path;	/* pattern naming a tenant's file, or NULL */
	char	   *tenant_template;	/* database tenant_create copies, or NULL */
	char	   *archive_folder; /* where tenant_remove moves a tenant's
								 * file, or NULL: it deletes it */
} ShardServerOptions;

typedef struct ShardTableOptions
{
	char	   *table;			/* SQLite table name */
	char	   *tenant_column;	/* SQLite name of the tenant column, or NULL
								 * in a reference table */
	AttrNumber	tenant_attnum;	/* its foreign table column, or 0 */
	bool		reference;		/* distribution "reference": rows of no
								 * tenant, a copy in every shard */
	char	   *reference_shard;	/* the shard a reference table is read
									 * from, or NULL: the first */
	Oid			serverid;		/* the table's server */
	int			batch_size;		/* rows per batch insert */
	bool		auto_register;	/* INSERT registers unknown tenants */
	bool		missing_column_null;	/* missing_column = null: a shard
										 * lacking a column reads NULLs */
	bool		missing_table_empty;	/* missing_table = empty: a shard
										 * lacking the table reads no rows */
} ShardTableOptions;

extern int	shard_max_open_shards;
extern int	shard_fanout_parallelism;
extern double shard_quick_shard_ms;

extern ShardServerOptions *shard_server_options(Oid serverid);
extern ShardTableOptions *shard_table_options(Relation rel);
extern char *shard_column_name(Oid relid, AttrNumber attnum);
extern bool shard_table_is_reference(Oid relid);
extern List *shard_user_tenants(Oid serverid, Oid userid);
extern bool shard_analyze_values(Oid relid);
extern bool shard_table_truncatable(Oid relid);
extern void shard_require_file_privilege(bool write, const char *message,
										 const char *detail);
extern int	shard_file_tenant_column_kind(Oid relid, AttrNumber attnum);

/* in tenantfile.c */

extern void shard_tenant_path_check(const char *pattern);
extern bool shard_tenant_id_path_ok(const char *tenant);
extern void shard_tenant_id_path_check(const char *tenant);
extern char *shard_tenant_path_expand(const char *pattern, const char *tenant);
extern List *shard_tenant_path_discover(const char *pattern, const char *base,
										uint64 *generation);
extern void shard_append_column_sql(StringInfo buf, Oid relid,
									AttrNumber attnum);

/* in directory.c */

typedef struct ShardInfo
{
	char	   *shard_id;
	char	   *path;			/* absolute path of the shard file */
} ShardInfo;

/* Where a tenant's rows are, per the directory. */
typedef struct ShardLocation
{
	char	   *tenant;
	char	   *owner;			/* the shard that answers for the tenant */
	char	   *status;			/* ACTIVE, MIGRATING or DONE */
	char	   *shard_id;		/* shard_map.shard_id */
	char	   *target_shard_id;	/* shard_map.target_shard_id, or NULL */
} ShardLocation;

typedef struct ShardDirectory ShardDirectory;

/*
 * Called when a statement routes a tenant the directory has just read as
 * MIGRATING, with the tenant's shard and target: the control plane's move
 * code installs it (a fence left by a move whose session died is lifted),
 * so that the directory never calls up into the control plane.
 */
typedef void (*ShardMigratingHook) (ShardDirectory *dir,
									ShardServerOptions *opts,
									const char *tenant, const char *source,
									const char *target);

extern ShardMigratingHook shard_migrating_hook;

extern ShardDirectory *shard_directory_get(ShardServerOptions *opts);
extern ShardLocation *shard_directory_locate(ShardDirectory *dir,
											 const char *tenant);
extern ShardInfo *shard_directory_shard(ShardDirectory *dir,
										const char *shard_id);
extern List *shard_directory_shards(ShardDirectory *dir);
extern List *shard_directory_moving(ShardDirectory *dir);
extern List *shard_directory_stale_tenants(ShardDirectory *dir,
										   const char *shard_id);
extern sqlite3 *shard_directory_handle(ShardDirectory *dir);
extern void shard_directory_changed(ShardDirectory *dir);
extern void shard_directory_writer_gone(sqlite3 *db);
extern void shard_directory_report_missing(ShardServerOptions *opts) pg_attribute_noreturn();
extern bool shard_directory_has_column(sqlite3 *db, const char *table,
									   const char *column);
extern void shard_directory_require_columns(sqlite3 *db, const char *path,
											const char *table,
											const char *const *columns,
											const char *detail);
extern const char *shard_directory_owner_sql(ShardDirectory *dir);
extern List *shard_directory_tenants(ShardDirectory *dir,
									 const char *shard_id);
extern const char *shard_directory_file_tenant(ShardDirectory *dir,
											   const char *shard_id);

/* in shardpath.c */
extern char *shard_resolve_path(ShardServerOptions *opts, const char *path);
extern char *shard_resolve_checked_path(ShardServerOptions *opts,
										const char *shard_id,
										const char *path);
extern void shard_check_path_inside(const char *directory, bool allow_outside,
									const char *shard_id, const char *path,
									const char *resolved, bool from_pattern);

/* in reference.c */

extern ShardInfo *shard_reference_shard(ShardDirectory *dir,
										ShardTableOptions *topts,
										const char *relname);

/* in move.c */

extern void shard_move_define_gucs(void);
extern void shard_move_refuse_file_per_tenant(ShardServerOptions *opts,
											  const char *tenant);

/*
 * The message a moved tenant's fence raises in its old shard (movecopy.c
 * writes it into the fence's trigger, sqliteerror.c recognises it in a
 * failed write and reports a retryable error): one spelling for both.
 */
#define SHARD_FENCE_LEAD "tenant \""
#define SHARD_FENCE_MARK "\" has moved to shard \""
#define SHARD_FENCE_FORMAT \
	SHARD_FENCE_LEAD "%s" SHARD_FENCE_MARK "%s\": write it there"

/*
 * The message the fence of a removed tenant's file raises (removal.c
 * writes it, sqliteerror.c recognises it): the file goes once the
 * transaction that removed it has committed, and a writer that had it
 * open, or was waiting for its lock, must not write to it unseen.
 */
#define SHARD_REMOVED_MARK "\" was removed"
#define SHARD_REMOVED_FORMAT \
	SHARD_FENCE_LEAD "%s" SHARD_REMOVED_MARK ": its file is being deleted"

/* in connection.c */

typedef struct ShardConn ShardConn;

extern ShardConn *shard_conn_get(ShardServerOptions *opts, ShardInfo *shard,
								 bool missing_ok);
extern ShardConn *shard_conn_get_brief(ShardServerOptions *opts,
									   ShardInfo *shard, bool missing_ok);
extern ShardConn *shard_conn_get_locked(ShardServerOptions *opts,
										ShardInfo *shard, bool missing_ok);
extern sqlite3 *shard_conn_db(ShardConn *conn);
extern int	shard_conn_prepare(ShardConn *conn, const char *sql,
							   sqlite3_stmt **stmt, char *errbuf);
extern void shard_conn_unprepare(ShardConn *conn, sqlite3_stmt *stmt);
extern void shard_conn_forget_stmt(ShardConn *conn);
extern const char *shard_conn_file_tenant(sqlite3 *db);

/* in handlecache.c */
extern int	shard_open_shards_memory;
extern void shard_conn_define_gucs(void);
extern void shard_conn_note_fanout(int nfiles);
extern bool shard_conn_room_to_hold(void);

/* in progress.c */
extern void shard_progress_init(void);
extern void shard_progress_begin(const void *owner, Oid serverid, Oid relid,
								 int total);
extern void shard_progress_file_done(void);
extern void shard_progress_end(const void *owner);

/* What a pushed-down query assumes of a shard column's declared affinity. */
#define SHARD_NEEDS_TEXT	'T'	/* TEXT affinity */
#define SHARD_NEEDS_TEXT_ORDER 'O'	/* TEXT affinity, UTF-8 database */
#define SHARD_NEEDS_TEXT_EXTREMA 'X'	/* the same, unless min/max are
										 * computed by the reading thread */
#define SHARD_NEEDS_INTEGER 'I'
#define SHARD_NEEDS_NUMBER	'N'
extern void shard_conn_release(ShardConn *conn);
extern void shard_conn_end_reads(void);
extern ShardConn *shard_conn_get_for_write(ShardServerOptions *opts,
										   ShardInfo *shard);
extern ShardConn *shard_conn_directory_for_write(ShardServerOptions *opts,
												 bool create);
extern sqlite3 *shard_conn_directory_writer(const char *path,
											uint64 *generation);
extern int	shard_conn_write_failed(ShardConn *conn, int rc);
extern void shard_conn_check_no_reader(ShardConn *conn, const char *table);
extern uint64 shard_writes_begun;

/* What a file's first 100 bytes say it is (shard_file_kind). */
#define SHARD_FILE_UNKNOWN		0	/* could not be read */
#define SHARD_FILE_NOT_SQLITE	1	/* empty, short, or not SQLite's header */
#define SHARD_FILE_ROLLBACK		2	/* SQLite, rollback journal */
#define SHARD_FILE_WAL			3	/* SQLite, WAL mode */
extern int	shard_file_kind(const char *path);
extern char *shard_wal_folder_unwritable(const char *path);
extern void shard_check_wal_folder(const char *shard_id, const char *path);

/* in shardschema.c */
extern char *shard_conn_affinity_mismatch(ShardConn *conn, const char *table,
										  List *needs);
extern void shard_conn_check_table(ShardConn *conn, const char *relname,
								   const char *table, char **colnames,
								   int ncols);
extern bool shard_schema_meets(ShardServerOptions *opts, const char *table,
							   List *needs);
extern bool shard_conn_is_utf8(ShardConn *conn);
extern List *shard_conn_primary_key(ShardConn *conn, const char *table,
									 List **collations);
extern bool shard_conn_has_rowid(ShardConn *conn, const char *table);
extern List *shard_explain_row_key(ShardServerOptions *opts, const char *table,
								   List **collations);
extern char shard_conn_column_affinity(ShardConn *conn, const char *table,
									   const char *col);

/* in sqliteerror.c */

extern void shard_write_error(int rc, const char *shard_id,
							  const char *table, const char *tenant,
							  const char *msg, const char *fmt,...)
			pg_attribute_printf(6, 7);
extern int	shard_sqlite_sqlstate(int rc);
extern int	shard_errhint_write_access(const char *path, int rc);
extern int	shard_write_access_sqlstate(const char *path, int rc,
										int otherwise);
extern char *shard_format_message(const char *fmt, va_list args)
			pg_attribute_printf(1, 0);
extern void shard_sqlite_error(int elevel, int rc, const char *shard_id,
							   const char *msg, const char *fmt,...)
			pg_attribute_printf(5, 6);
extern void shard_directory_error(int rc, const char *path, const char *msg,
								  const char *fmt,...)
			pg_attribute_printf(4, 5);
extern int	shard_interrupts_pending(void);
extern void shard_check_lock_wait(int rc, bool is_directory,
								  const char *name);

/* in sqltext.c */

extern void shard_quote_identifier(StringInfo buf, const char *ident);
extern char *shard_unquote_identifier(const char *sql, const char **end);
extern void shard_append_sql_literal(StringInfo buf, const char *text);

/* in deparse.c */

/* How a pushed-down parameter is bound (fdw_private param kinds). */
typedef enum ShardParamKind
{
	SHARD_PARAM_SCALAR,			/* one value */
	SHARD_PARAM_JSON_ARRAY,		/* an array, bound as JSON for json_each() */
	SHARD_PARAM_TZ_GRID_CUT,	/* the session TimeZone's grid for a unit */
	SHARD_PARAM_TZ_GRID_STEP,	/* of the given seconds (ssfdw_tz_grid): */
	SHARD_PARAM_TZ_GRID_PHASE,	/* where it starts, its step and phase */
	SHARD_PARAM_STORE,			/* a value an UPDATE stores (store.c) */
	SHARD_PARAM_TIME = 64		/* and above: a time value's bound
								 * (timepush.c) */
} ShardParamKind;

extern Expr *shard_strip_relabel(Expr *expr);
extern Var *shard_own_column(Expr *expr, RelOptInfo *baserel);
extern bool shard_is_pushable_expr(PlannerInfo *root, RelOptInfo *baserel,
								   Expr *expr);
extern void shard_deparse_select(StringInfo buf, PlannerInfo *root,
								 RelOptInfo *baserel, Relation rel,
								 const char *table, Bitmapset *attrs_used,
								 List **retrieved_attrs);
extern List *shard_deparse_conditions(PlannerInfo *root, RelOptInfo *baserel,
									  List *conds, List **params,
									  List **param_kinds);
extern bool shard_deparse_set_qualified(bool qualified);
extern List *shard_deparse_qualified_conditions(PlannerInfo *root,
												RelOptInfo *baserel,
												List *conds, List **params,
												List **param_kinds);
extern void shard_deparse_column_ref(StringInfo buf, PlannerInfo *root,
									 Var *var);
extern void shard_deparse_column_value(StringInfo buf, PlannerInfo *root,
									   Var *var);
extern bool shard_sql_may_fail(const char *sql);
extern void shard_join_conditions(StringInfo buf, List *sqls);
extern List *shard_text_columns(PlannerInfo *root, List *exprs, List *needs);
extern char *shard_like_to_glob(const char *pattern, int len);
extern Expr *shard_prefilter_expr(PlannerInfo *root, RelOptInfo *baserel,
								  Expr *clause);
extern bool shard_is_pushable_filter(PlannerInfo *root, RelOptInfo *baserel,
									 Expr *expr);
extern bool shard_agg_case_ok(PlannerInfo *root, RelOptInfo *baserel,
							  Expr *expr);
extern void shard_deparse_agg_expr(StringInfo buf, PlannerInfo *root,
								   RelOptInfo *baserel, Expr *expr,
								   List **params, List **param_kinds);
extern void shard_deparse_agg_case_scale(StringInfo buf, PlannerInfo *root,
										 RelOptInfo *baserel, CaseExpr *ce,
										 List **params, List **param_kinds);

/* in timepush.c */

/*
 * Starts and separates the fields of a time column's index range; starts
 * one that a shard declaring the column TEXT reads.
 */
#define SHARD_TIME_RANGE_MARK	'\001'
#define SHARD_TIME_TEXT_RANGE_MARK '\002'

extern char *shard_const_text(Expr *expr);
extern Var *shard_time_date_of_timestamp(Expr *expr, RelOptInfo *baserel);
extern Var *shard_time_epoch_of(Expr *expr, RelOptInfo *baserel);
extern Var *shard_time_bucket_column(FuncExpr *func, RelOptInfo *baserel);
extern char *shard_time_key_unit(FuncExpr *func, RelOptInfo *baserel,
								 int *grid, char **zone);
extern bool shard_time_deparse_bucket(StringInfo buf, PlannerInfo *root,
									  FuncExpr *func, RelOptInfo *baserel,
									  int tz_param);
extern double shard_time_bucket_groups(PlannerInfo *root, Expr *expr,
									   RelOptInfo *baserel, double input_rows);
extern int64 shard_time_gcd(int64 a, int64 b);
extern bool shard_time_column_span(PlannerInfo *root, Var *var, double *secs);

extern bool shard_time_deparse_column_value(StringInfo buf,
											PlannerInfo *root, Var *var);
extern bool shard_time_comparable(Expr *col, Oid valtype);
extern void shard_time_deparse_comparison(StringInfo buf, StringInfo range,
										  PlannerInfo *root,
										  const char *colexpr, Var *colvar,
										  Oid coltypid, const char *op,
										  Expr *val, List **params,
										  List **param_kinds);
extern void shard_time_deparse_in_range(StringInfo range, PlannerInfo *root,
										Var *colvar, Oid coltypid, Expr *arr,
										List **params, List **param_kinds);
extern List *shard_time_range_append(List *safe, List *marks);
extern List *shard_time_merge_checks(List *sqls);
extern List *shard_time_ranges_for_shard(List *conds, ShardConn *conn,
										 const char *table);
extern List *shard_time_ranges_text_only(List *conds, const char *column);

/* A time range of a shard's conditions, in Unix seconds. */
typedef struct ShardTimeRange
{
	char	   *column;			/* the stored column (SQLite's name) */
	double		lo;				/* from, or -inf */
	double		hi;				/* to, or +inf */
} ShardTimeRange;

extern List *shard_time_range_seconds(List *conds, const ShardValue *binds,
									  int nbinds);
extern bool shard_time_bind(int kind, Datum value, ShardValue *out,
							int64 grid[3]);

/* in bucketform.c */
extern bool shard_time_key_form(PlannerInfo *root, Expr *expr,
								RelOptInfo *baserel, int *grid, char **zone);
extern void shard_time_deparse_key_form(StringInfo buf, PlannerInfo *root,
										Expr *expr, RelOptInfo *baserel,
										bool for_group_by, int tz_param);
extern List *shard_time_key_form_merge(PlannerInfo *root, Expr *expr,
									   RelOptInfo *baserel);
extern void *shard_time_key_form_start(Expr *expr);
extern Datum shard_time_key_form_value(void *form, Datum value, bool *isnull);
extern double shard_time_key_form_groups(PlannerInfo *root, Expr *expr,
										 RelOptInfo *baserel,
										 double input_rows);

/* in convert.c */

/* What a column needs to turn SQLite values into Datums. */
typedef struct ShardColumnConv
{
	Oid			typid;
	int32		typmod;
	Oid			basetype;		/* typid with domains stripped */
	FmgrInfo	infunc;			/* input function, for text forms */
	Oid			ioparam;
} ShardColumnConv;

extern void shard_conv_init(ShardColumnConv *conv, Oid typid, int32 typmod);
extern Datum shard_value_to_datum(ShardColumnConv *conv, const ShardValue *v,
								  bool *isnull);
extern bool shard_datum_to_value(Datum value, Oid typid, ShardValue *out);
extern bool shard_type_is_bindable(Oid typid);

/* in tenantlist.c */

extern bool shard_tenant_list_source_ok(PlannerInfo *root, RelOptInfo *rel,
										Expr *value);
extern double shard_tenant_list_values(PlannerInfo *root, RelOptInfo *rel,
									   Expr *value);
extern Cost shard_tenant_list_cost(PlannerInfo *root, RelOptInfo *rel);
extern Param *shard_tenant_list_param(PlannerInfo *root, RelOptInfo *rel,
									  Expr *value);

/* in planner.c */

/* Positions in a ForeignScan's fdw_private. */
enum FdwScanPrivateIndex
{
	FdwScanPrivateSelectSql,	/* String: SELECT columns FROM table */
	FdwScanPrivateWhereSql,		/* List of String: pushed conditions */
	FdwScanPrivateRetrievedAttrs,	/* IntList of fetched attribute numbers */
	FdwScanPrivateParamKinds,	/* IntList of ShardParamKind */
	FdwScanPrivatePruneKind,	/* Integer: ShardPruneKind */
	FdwScanPrivateMode,			/* Integer: ShardScanMode */
	FdwScanPrivateGroupSql,		/* String: " GROUP BY ...", or "" */
	FdwScanPrivateAggOps,		/* IntList: ShardAggOp per output column */
	FdwScanPrivateAggCols,		/* List of IntLists: shard columns of each */
	FdwScanPrivateAggTypes,		/* OidList: argument or key type of each */
	FdwScanPrivateKeyEqops,		/* OidList: equality operator per key */
	FdwScanPrivateKeyColls,		/* OidList: collation per key */
	FdwScanPrivateDistinct,		/* IntList: shard column, type, eqop,
								 * collation of count(DISTINCT x), or NIL */
	FdwScanPrivateGuardCol,		/* Integer: shard column counting values of
								 * the wrong storage class, or -1 */
	FdwScanPrivateNeeds,		/* List of String: a SHARD_NEEDS_ letter and
								 * a column, what the query assumes of each */
	FdwScanPrivateSafeWhereSql,	/* List of String: the pushed conditions
								 * that use no text column */
	FdwScanPrivateRawSql,		/* String: SELECT of the aggregates' inputs,
								 * for thread aggregation, or "" where
								 * SQLite aggregates */
	FdwScanPrivateThreadAgg,	/* IntList: ThreadAggOp, raw, arg per shard
								 * column */
	FdwScanPrivateThreadGuards,	/* IntList: raw column, TA_OK_ mask, low,
								 * high, key check per storage-class check */
	FdwScanPrivateOrder,		/* List (FdwScanOrderIndex) when the scan
								 * also sorts and limits, or NIL */
	FdwScanPrivateKeyTrunc,		/* List per output column: for a key the
								 * shards return as a date or a time that
								 * stands for its bucket, the function
								 * (Integer), its unit (String, or ""),
								 * whether a date (Integer) and the zone it
								 * reads the time in (String, "": the
								 * TimeZone); otherwise NIL */
	FdwScanPrivateLimitExprs,	/* Integer: 2 when fdw_exprs holds OFFSET
								 * and LIMIT (NULL when absent) after the
								 * values to bind, else 0 */
	FdwScanPrivateModifySql,	/* String: "UPDATE t SET ..." or "DELETE
								 * FROM t" of a direct modification, or "" */
	FdwScanPrivateModifyReturning,	/* IntList: the attnums its RETURNING
									 * reads, or NIL */
	FdwScanPrivateModifySetAttnums,	/* IntList: the column each new value
										 * of a direct UPDATE is for (the
										 * last values to bind) */
	FdwScanPrivateModifyBigintBounds,	/* IntList: pairs of a bigint
										 * column whose new value the shards
										 * compute and the parameter that
										 * bounds it (64, or 53 bits) */
	FdwScanPrivateModifySetProcessed,	/* Integer: a direct modification
										 * counts its rows in es_processed
										 * (its ModifyTable's canSetTag) */
	FdwScanPrivateMaterialize,	/* Integer: read each shard to the end
								 * before returning its rows (below a
								 * row-by-row UPDATE or DELETE) */
	FdwScanPrivateTenantOnly,	/* Integer: the pushed conditions read only
								 * the tenant column */
	FdwScanPrivateJoin,			/* List (FdwScanJoinIndex) of a join the
								 * shards run, or NIL */
	FdwScanPrivateTenantRows,	/* Float: the routed tenants' estimated
								 * rows, or -1 (timeindex.c) */
	FdwScanPrivateTenantSqls,	/* List of String: the pushed SQL of the
								 * condition the scan is routed by, or NIL */
	FdwScanPrivateCount
};

/* Positions in FdwScanPrivateOrder. */
enum FdwScanOrderIndex
{
	FdwScanOrderMergeKeys,		/* List of IntList attnos, OidList sort
								 * operators, OidList collations, IntList
								 * nulls_first */
	FdwScanOrderSql,			/* String: ORDER BY terms for each shard */
	FdwScanOrderThreadSorts,	/* IntList: column, low column or -1,
								 * descending, nulls_first per key */
	FdwScanOrderText,			/* String: the order, for EXPLAIN */
	FdwScanOrderBoundNeeds,		/* List of String: what each shard's bound
								 * needs besides FdwScanPrivateNeeds; a
								 * shard that misses it is not bounded */
	FdwScanOrderKeyCheckCol,	/* Integer: shard column counting keys the
								 * merge may not convert, or -1 */
	FdwScanOrderWindow,			/* List: a row scan's first key of a time
								 * type: column SQL, "canonical form"
								 * predicate, descending, date, its name
								 * among the selected columns; else NIL */
	FdwScanOrderTies,			/* List: a row scan sorted by a prefix of
								 * the query's order (order.c), whose shards
								 * return their first rows and every row
								 * tied with the last on the first key: its
								 * column SQL, " COLLATE BINARY" or "",
								 * descending, nulls_first; else NIL */
	FdwScanOrderCount
};

/* The name of a join's time sort key in its shards' SELECT (order.c) */
#define SHARD_TIME_KEY_ALIAS "ssfdw_time_key"

/*
 * Positions in FdwScanPrivateJoin: a join the shards run.  Its SELECT
 * (FdwScanPrivateSelectSql) ends in "FROM "; the FROM clause is built for
 * each shard from the parts, each table read as itself or, when the shard
 * filters its rows, as "(SELECT * FROM table WHERE ...) AS rN".
 */
enum FdwScanJoinIndex
{
	FdwScanJoinRelations,		/* String: the joined relations, for EXPLAIN */
	FdwScanJoinFromParts,		/* List: String text and Integer positions in
								 * FdwScanJoinTables, the FROM clause */
	FdwScanJoinTables,			/* List per table (FdwScanJoinTableIndex) */
	FdwScanJoinOutTables,		/* List of String: each output column's
								 * SQLite table, for messages */
	FdwScanJoinOutColumns,		/* List of String: and its SQLite name */
	FdwScanJoinCount
};

/* Positions in each table's List of FdwScanJoinTables. */
enum FdwScanJoinTableIndex
{
	FdwScanJoinTableName,		/* String: SQLite table */
	FdwScanJoinTableAlias,		/* String: its alias in the query, "rN" */
	FdwScanJoinTableTenant,		/* String: SQLite name of its tenant column */
	FdwScanJoinTableRelname,	/* String: the foreign table, for messages */
	FdwScanJoinTableConds,		/* List of String: its pushed conditions */
	FdwScanJoinTableNeeds,		/* List of String: what the join assumes of
								 * its columns (SHARD_NEEDS_) */
	FdwScanJoinTableColumns,	/* List of String: its SQLite columns */
	FdwScanJoinTableCount
};

/* What a scan returns (FdwScanPrivateMode). */
typedef enum ShardScanMode
{
	SCAN_ROWS,					/* the table's rows */
	SCAN_AGG_PARTIAL,			/* partial aggregates, merged by group */
	SCAN_AGG_FULL				/* whole groups: grouped by the tenant, or
								 * one tenant read */
} ShardScanMode;

/*
 * How each output column of an aggregate scan is computed from the shard
 * columns (FdwScanPrivateAggOps).
 */
typedef enum ShardAggOp
{
	AGGOP_KEY,					/* a grouping key: one column */
	AGGOP_COUNT_STAR,			/* count(*): one column */
	AGGOP_COUNT,				/* count(x): one column */
	AGGOP_SUM_INT,				/* sum(int2|int4): sum */
	AGGOP_SUM_INT8,				/* sum(int8): sum of high and low halves */
	AGGOP_SUM_FLOAT,			/* sum(float8): total, count, infinities */
	AGGOP_AVG_INT,				/* avg(int2|int4): sum, count */
	AGGOP_AVG_INT8,				/* avg(int8): high, low, count */
	AGGOP_AVG_FLOAT,			/* avg(float8): total, count, infinities */
	AGGOP_MIN,					/* min(x): one column */
	AGGOP_MAX,					/* max(x): one column */
	AGGOP_BOOL_AND,				/* bool_and: min of 0/1, unreadable count */
	AGGOP_BOOL_OR,				/* bool_or: max of 0/1, unreadable count */
	AGGOP_COUNT_DISTINCT,		/* count(DISTINCT x): no column of its own */
	AGGOP_VAR_POP,				/* var_pop of integers: count, sum (of int8:
								 * high and low), sum of squares */
	AGGOP_VAR_SAMP,				/* var_samp, variance: the same */
	AGGOP_STDDEV_POP,			/* stddev_pop: the same */
	AGGOP_STDDEV_SAMP,			/* stddev_samp, stddev: the same */
	AGGOP_SUM_NUMCASE			/* sum of a CASE of integral numeric
								 * constants: sum, largest scale */
} ShardAggOp;

/*
 * How a scan picks its shards.  With PRUNE_EQ or PRUNE_ANY, the last
 * element of fdw_exprs is the tenant value (or array of values).
 */
typedef enum ShardPruneKind
{
	PRUNE_NONE,					/* every shard */
	PRUNE_EQ,					/* tenant = value */
	PRUNE_ANY					/* tenant = ANY (array) */
} ShardPruneKind;

extern AttrNumber shard_rel_tenant_attnum(RelOptInfo *baserel);
extern Expr *shard_find_tenant_clause(RelOptInfo *baserel,
									  AttrNumber tenant_attnum,
									  RestrictInfo **clause,
									  ShardPruneKind *kind);
extern Expr *shard_find_tenant_condition(RelOptInfo *baserel,
										 AttrNumber tenant_attnum,
										 ShardPruneKind *kind);
extern List *shard_rel_remote_conds(RelOptInfo *baserel);
extern const char *shard_rel_table(RelOptInfo *baserel);
extern bool shard_rel_all_pushed(RelOptInfo *baserel);
extern bool shard_rel_tenant_only(RelOptInfo *baserel);
extern double shard_rel_tenant_rows(RelOptInfo *baserel);
extern List *shard_rel_deparse_conditions(PlannerInfo *root,
										  RelOptInfo *baserel, List **params,
										  List **param_kinds,
										  List **tenant_sqls);
extern double shard_rel_scanned(RelOptInfo *baserel);
extern double shard_rel_cost_scale(RelOptInfo *baserel);
extern ShardTableOptions *shard_rel_options(RelOptInfo *baserel);

/* in join.c */

extern bool shard_join_pushdown;

extern void shardGetForeignJoinPaths(PlannerInfo *root, RelOptInfo *joinrel,
									 RelOptInfo *outerrel,
									 RelOptInfo *innerrel, JoinType jointype,
									 JoinPathExtraData *extra);
extern ForeignScan *shard_join_plan(PlannerInfo *root, RelOptInfo *joinrel,
									ForeignPath *best_path, List *tlist,
									Plan *outer_plan, bool final);
extern bool shard_join_rel_pushed(RelOptInfo *rel);
extern bool shard_join_one_tenant(PlannerInfo *root, RelOptInfo *joinrel);
extern bool shard_join_one_shard(PlannerInfo *root, RelOptInfo *joinrel);
extern double shard_join_scanned(RelOptInfo *joinrel);
extern double shard_join_cost_scale(RelOptInfo *joinrel);
extern bool shard_join_tenant_key(PlannerInfo *root, RelOptInfo *joinrel,
								  Var *var);
extern bool shard_join_schema_meets(PlannerInfo *root, RelOptInfo *joinrel,
									List *needs, List *relids);
extern List *shard_join_private(PlannerInfo *root, RelOptInfo *joinrel,
								List *needs, List *relids, List **params,
								List **param_kinds, List **where_sqls,
								Expr **route, ShardPruneKind *kind);

/* in joinscan.c */

typedef struct ShardJoinScan ShardJoinScan;

extern ShardJoinScan *shard_join_scan_create(List *join);
extern const char *shard_join_relations(ShardJoinScan *j);
extern bool shard_join_reads_table(ShardJoinScan *j, const char *table);
extern void shard_join_check_shard(ShardJoinScan *j, ShardConn *conn,
								   const char *shard_id);
extern void shard_join_check_tables(ShardJoinScan *j, ShardConn *conn);
extern void shard_join_append_from(StringInfo sql, ShardJoinScan *j,
								   ShardConn *conn, int tenant_kind,
								   List *tenants, List *excluded,
								   int nparams, List **extra);

/* in estimate.c */

extern double shard_btree_rows(sqlite3 *db, const char *table);
extern double shard_estimate_rows(Relation rel, ShardTableOptions *topts,
								  bool read_all);
extern double shard_estimate_tenant_rows(PlannerInfo *root, Relation rel,
										 ShardTableOptions *topts,
										 ShardPruneKind kind, Expr *value);

/* in cost.c */

/* What a shard query does, for shard_cost_query. */
typedef struct ShardQueryCost
{
	int			nshards;		/* shards it runs in */
	bool		rescan;			/* a routed restart for an outer row */
	double		scanned;		/* rows the shards look at */
	double		pushed_rows;	/* rows a pushed sort or grouping handles */
	double		pushed_per_row; /* its cost per row, in operators (0: none) */
	double		merged;			/* groups of each shard the backend merges */
	double		returned;		/* rows that come back */
	Cost		local_startup;	/* the backend's own conditions: start-up */
	Cost		local_per_row;	/* and per row returned */
} ShardQueryCost;

extern int	shard_cost_shards(PlannerInfo *root, RelOptInfo *rel);
extern double shard_cost_scanned(RelOptInfo *rel);
extern double shard_cost_scale(RelOptInfo *rel);
extern void shard_cost_scan(PlannerInfo *root, RelOptInfo *baserel,
							Cost *startup, Cost *total);
extern void shard_cost_query(const ShardQueryCost *q, Cost *startup,
							 Cost *total);

/* in order.c */

extern void shard_order_add_paths(PlannerInfo *root, RelOptInfo *baserel,
								  double rows, Cost total);
extern void shard_order_final_paths(PlannerInfo *root, RelOptInfo *input_rel,
									RelOptInfo *output_rel,
									FinalPathExtraData *extra);
extern bool shard_order_is_final(ForeignPath *best_path);
extern bool shard_order_is_prefix(ForeignPath *best_path);
extern List *shard_order_prefix_private(PlannerInfo *root,
										RelOptInfo *baserel, List *pathkeys);
extern RelOptInfo *shard_order_base_rel(PlannerInfo *root);
extern List *shard_order_scan_tlist(PlannerInfo *root, RelOptInfo *baserel,
									Relation rel);
extern List *shard_order_private(PlannerInfo *root, RelOptInfo *baserel,
								 List *pathkeys, List *scan_tlist);
extern List *shard_order_key_vars(PlannerInfo *root, RelOptInfo *joinrel);
extern Var *shard_order_time_key_var(PlannerInfo *root, RelOptInfo *joinrel);
extern void shard_order_join_needs(PlannerInfo *root, RelOptInfo *joinrel,
								   List **needs, List **relids);

/* in private.c */

/* A foreign scan's fdw_private, decoded (see FdwScanPrivateIndex). */
typedef struct ShardScanPrivate
{
	char	   *select_sql;
	List	   *where_sqls;
	List	   *retrieved_attrs;
	List	   *param_kinds;
	ShardPruneKind prune_kind;
	ShardScanMode mode;
	char	   *group_sql;
	List	   *agg_ops;
	List	   *agg_cols;
	List	   *agg_types;
	List	   *key_eqops;
	List	   *key_colls;
	List	   *distinct;
	int			guard_col;
	List	   *needs;
	List	   *safe_where_sqls;
	char	   *raw_sql;
	List	   *thread_agg;
	List	   *thread_guards;
	List	   *order;
	List	   *key_truncs;
	int			nlimit_exprs;
	char	   *modify_sql;
	List	   *modify_returning;
	List	   *modify_set_attnums;
	List	   *modify_bigint_bounds;
	bool		modify_set_processed;
	bool		materialize;
	bool		tenant_only;
	List	   *join;
	double		tenant_rows;
	List	   *tenant_sqls;
} ShardScanPrivate;

extern void shard_scan_private_init(ShardScanPrivate *p);
extern List *shard_scan_private_list(const ShardScanPrivate *p);
extern void shard_scan_private_read(List *l, ShardScanPrivate *p);

/* in upper.c */

extern bool shard_aggregate_pushdown;
extern bool shard_thread_aggregation;

extern void shardGetForeignUpperPaths(PlannerInfo *root,
									  UpperRelationKind stage,
									  RelOptInfo *input_rel,
									  RelOptInfo *output_rel, void *extra);
extern bool shard_limit_value_ok(Node *node);
extern ForeignScan *shard_upper_plan(PlannerInfo *root, RelOptInfo *upperrel,
									 List *tlist, Plan *outer_plan);

/* in scan.c */

extern void shardBeginForeignScan(ForeignScanState *node, int eflags);
extern TupleTableSlot *shardIterateForeignScan(ForeignScanState *node);
extern void shardReScanForeignScan(ForeignScanState *node);
extern void shardEndForeignScan(ForeignScanState *node);

/* in scanexplain.c */
extern void shardExplainForeignScan(ForeignScanState *node,
									struct ExplainState *es);

/* in scanread.c */
extern void shard_warn_skipped(const ShardInfo *shard, const char *analyzed);

/* in directmodify.c */
extern void shardBeginDirectModify(ForeignScanState *node, int eflags);
extern TupleTableSlot *shardIterateDirectModify(ForeignScanState *node);
extern void shardEndDirectModify(ForeignScanState *node);
extern void shardExplainDirectModify(ForeignScanState *node,
									 struct ExplainState *es);

/* in refwrite.c */
extern void shard_reference_check_writer(Relation rel, Oid serverid,
										 Oid userid);
extern void shard_reference_refuse_row_modify(Relation rel,
											  CmdType operation);
extern AttrNumber shard_reference_returning_attnum(Relation rel);
extern void shard_reference_report_differ(const char *relname,
										  const char *shard_id, int64 n,
										  const char *lead_id, int64 lead_n);
extern void shard_reference_direct_begin(ForeignScanState *node);

/* in truncate.c */
extern void shardExecForeignTruncate(List *rels, DropBehavior behavior,
									 bool restart_seqs);

/* in rowidentity.c */
typedef struct ShardRowKeys ShardRowKeys;
extern void shard_rowid_to_tid(int64 rowid, ItemPointer tid);
extern ShardRowKeys *shard_scan_row_keys(PlanState *below, Index rtindex);
extern List *shard_row_keys_of(ShardRowKeys *keys, const char *shard_id,
							   List **collations);
extern const ShardValue *shard_row_key(ShardRowKeys *keys,
									   const char *shard_id, int64 n);
extern ShardInfo *shard_row_identity(ShardRowKeys *keys, int64 tid_value,
									 int64 *id);

/* in store.c */

/* What a column needs to turn Datums into the values a shard stores. */
typedef struct ShardStoreConv
{
	Oid			typid;
	Oid			basetype;		/* typid with domains stripped */
	FmgrInfo	outfunc;		/* output function, for text forms */
} ShardStoreConv;

extern void shard_store_init(ShardStoreConv *conv, Oid typid);
extern void shard_store_value(ShardStoreConv *conv, Datum value, bool isnull,
							  ShardValue *out);
extern void shard_store_fit(ShardStoreConv *conv, Datum value, char affinity,
							ShardValue *v, const char *column,
							const char *table, const char *shard_id);

/* in modifyplan.c */
/* Positions in a ModifyTable's fdw_private for a row-by-row write. */
enum FdwModifyPrivateIndex
{
	FdwModifyPrivateTargetAttrs,	/* IntList: columns the INSERT sets */
	FdwModifyPrivateReturningAttrs, /* IntList: columns RETURNING reads */
	FdwModifyPrivateOnConflictNothing,	/* Integer: ON CONFLICT DO NOTHING */
	FdwModifyPrivateOperation,	/* Integer: CMD_INSERT, _UPDATE or _DELETE */
	FdwModifyPrivateCount
};

extern void shard_report_tenant_change(Relation rel);
extern char *shard_tenant_junk_name(AttrNumber tenant_attnum);
extern int	shardIsForeignRelUpdatable(Relation rel);
extern bool shardPlanDirectModify(PlannerInfo *root, ModifyTable *plan,
								  Index resultRelation, int subplan_index);
extern List *shardPlanForeignModify(PlannerInfo *root, ModifyTable *plan,
									Index resultRelation, int subplan_index);
extern void shardAddForeignUpdateTargets(PlannerInfo *root, Index rtindex,
										 RangeTblEntry *target_rte,
										 Relation target_relation);

/* in modify.c */
extern bool shard_auto_register;
extern const char *shard_write_failure(CmdType operation, bool prepare);

extern TupleTableSlot *shardExecForeignUpdate(EState *estate,
											  ResultRelInfo *rinfo,
											  TupleTableSlot *slot,
											  TupleTableSlot *planSlot);
extern void shardBeginForeignModify(ModifyTableState *mtstate,
									ResultRelInfo *rinfo, List *fdw_private,
									int subplan_index, int eflags);
extern void shardBeginForeignInsert(ModifyTableState *mtstate,
									ResultRelInfo *rinfo);
extern TupleTableSlot *shardExecForeignInsert(EState *estate,
											  ResultRelInfo *rinfo,
											  TupleTableSlot *slot,
											  TupleTableSlot *planSlot);
extern TupleTableSlot **shardExecForeignBatchInsert(EState *estate,
													ResultRelInfo *rinfo,
													TupleTableSlot **slots,
													TupleTableSlot **planSlots,
													int *numSlots);
extern int	shardGetForeignModifyBatchSize(ResultRelInfo *rinfo);
extern TupleTableSlot *shardExecForeignDelete(EState *estate,
											  ResultRelInfo *rinfo,
											  TupleTableSlot *slot,
											  TupleTableSlot *planSlot);
extern void shard_returning_to_slot(sqlite3_stmt *stmt, sqlite3 *db,
									List *attnums, ShardColumnConv *convs,
									TupleTableSlot *slot, int *col);
extern void shardEndForeignModify(EState *estate, ResultRelInfo *rinfo);
extern void shardEndForeignInsert(EState *estate, ResultRelInfo *rinfo);
extern void shardExplainForeignModify(ModifyTableState *mtstate,
									  ResultRelInfo *rinfo, List *fdw_private,
									  int subplan_index,
									  struct ExplainState *es);

/* in tenant.c */

/* How the values of a tenant column read as tenant ids. */
typedef struct ShardTenantIdConv
{
	FmgrInfo	outfunc;		/* the type's output function */
	bool		padded;			/* char(n): the pad is not the id's */
} ShardTenantIdConv;

extern char *shard_tenant_id_text(const char *text);
extern void shard_tenant_id_init(ShardTenantIdConv *conv, Oid typid);
extern char *shard_tenant_id_of(ShardTenantIdConv *conv, Datum value);
extern char *shard_tenant_id(Oid typid, Datum value);

/* sqlite_shard_fdw.unknown_tenants */
#define UNKNOWN_TENANTS_OFF		0	/* read nothing, say nothing */
#define UNKNOWN_TENANTS_WARNING	1	/* warn of rows the shards hold */
#define UNKNOWN_TENANTS_ERROR	2	/* refuse the read then */
extern int	shard_unknown_tenants;
extern void shard_check_unknown_tenant(ShardServerOptions *opts,
									   ShardDirectory *dir,
									   ShardTableOptions *topts, int kind,
									   const char *tenant);
extern bool shard_tenant_value_type_ok(Oid typid);
extern void shard_tenant_store_id(ShardValue *v, const char *id);
extern Datum shard_tenant_id_datum(const char *id);
extern List *shard_tenant_ids_text(List *ids);

/* in tenantrule.c */

/*
 * The tables of a shard (sqlite_schema AS m) that may hold tenants' rows:
 * neither SQLite's own, nor the extension's bookkeeping ("ssfdw_", a
 * move's "_ssfdw_" log and fences), nor virtual tables.
 */
#define SHARD_APP_TABLES \
	"m.type = 'table' " \
	"AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' " \
	"AND m.name NOT LIKE 'ssfdw\\_%' ESCAPE '\\' " \
	"AND m.name NOT LIKE '\\_ssfdw\\_%' ESCAPE '\\' " \
	"AND coalesce(m.sql, '') NOT LIKE 'CREATE VIRTUAL%'"

/* How a shard's tenant column is compared with tenant ids. */
typedef struct ShardTenantRule
{
	int			kind;			/* SHARDIO_TENANT_ kind, integers by bits */
	char		affinity;		/* the declaration's affinity ('I', 'T', 'B',
								 * 'R', 'N'), or 0: unknown */
	bool		binary;			/* declared collation BINARY */
	const char *file_tenant;	/* a tenant file's tenant: every row is its
								 * own (layout 'file_per_tenant'), or NULL */
} ShardTenantRule;

/* Flags of shard_tenant_condition. */
#define SHARD_TENANT_NO_INDEX	0x01	/* a form no tenant index serves */

/* A table that a foreign table of a server reads. */
typedef struct ShardSpecTable
{
	char	   *table;			/* SQLite table */
	char	   *column;			/* its tenant column */
	int			kind;			/* of the foreign table's column for it */
	bool		reference;		/* no tenant's: a reference table */
} ShardSpecTable;

/* Which tables of a server's shards hold tenants' rows. */
typedef struct ShardTenantSpec
{
	List	   *named;			/* ShardSpecTable */
	List	   *columns;		/* tenant column names of the other tables */
	int			kind;			/* ... and their kind */
} ShardTenantSpec;

extern int	shard_tenant_kind(Oid typid);
extern char shard_declared_affinity(const char *decl);
extern void shard_tenant_rule_init(ShardTenantRule *rule, int kind,
								   const char *decl, const char *collseq);
extern void shard_tenant_rule_lookup(ShardTenantRule *rule, sqlite3 *db,
									 const char *table, const char *column,
									 int kind);
extern void shard_tenant_key(StringInfo buf, const char *qual,
							 const char *column, const ShardTenantRule *rule);
extern void shard_tenant_match(StringInfo buf, const char *qual,
							   const char *column, const ShardTenantRule *rule,
							   const char *param);
extern bool shard_tenant_indexed(const ShardTenantRule *rule);
extern ShardValue shard_tenant_condition(StringInfo buf, const char *column,
										 const ShardTenantRule *rule,
										 List *ids, bool negate, int paramno,
										 int flags);
extern void shard_tenant_trigger_match(StringInfo buf, const char *row,
									   const char *column,
									   const ShardTenantRule *rule,
									   const char *id);
extern void shard_tenant_row_condition(StringInfo buf, const char *column,
									   Oid typid, int32 typmod, int paramno);
extern void shard_tenant_file_row_condition(StringInfo buf, int paramno);
extern ShardTenantSpec *shard_tenant_spec(Oid serverid);
extern const char *shard_tenant_spec_table(ShardTenantSpec *spec,
										   const char *table, List *columns,
										   int *kind);

/* in timeindex.c */
extern const char *shard_time_index_choose(ShardConn *conn, const char *table,
										   const char *tenant_column,
										   const ShardTenantRule *rule,
										   List *tenants, List *conds,
										   const ShardValue *binds,
										   int nbinds, double tenant_rows);
extern const char *shard_time_index_choose_order(ShardConn *conn,
												 const char *table,
												 const char *tenant_column,
												 const ShardTenantRule *rule,
												 List *tenants,
												 const char *column,
												 bool desc, bool is_date,
												 double bound,
												 double tenant_rows);
extern bool shard_index_orders(ShardConn *conn, const char *table,
							   const char *column);

/* in control/tenantcreate.c */

extern void shard_tenant_file_copy(ShardServerOptions *opts, sqlite3 *src,
								   const char *tenant, const char *target);

/* in admin.c */

extern void shard_tenant_auto_register(ShardServerOptions *opts,
									   const char *tenant);
extern char *shard_register_tenant(ShardServerOptions *opts,
								   const char *tenant, const char *shard_id,
								   bool existing_ok, int64 expected,
								   bool *added);
extern bool shard_register_shard(ShardServerOptions *opts,
								 const char *shard_id, const char *path,
								 bool existing_ok);
extern ShardServerOptions *shard_admin_server(Name servername);
extern ShardServerOptions *shard_admin_server_arg(FunctionCallInfo fcinfo);
extern void shard_require_admin(const char *message, const char *detail);
extern void shard_admin_write_failed(ShardServerOptions *opts, sqlite3 *db,
									 const char *fmt);

/* One shard's load, for listing, placement and statistics. */
typedef struct ShardLoad
{
	ShardInfo  *info;
	int64		tenants;		/* it answers for */
	int64		bytes;			/* file and write-ahead log; -1: missing */
} ShardLoad;

extern ShardLoad *shard_loads(ShardServerOptions *opts, ShardDirectory *dir,
							  sqlite3 *db, int *nshards);
extern ShardInfo *shard_admin_shard(ShardServerOptions *opts,
									ShardDirectory *dir, const char *shard_id);

/* in fleetstats.c */

/* One tenant's share of a shard. */
typedef struct ShardTenantStat
{
	char	   *tenant;
	int64		rows;			/* in every tenant table */
	double		bytes;			/* estimated */
	List	   *table_rows;		/* (table name, ShardTenantRows *) pairs */
	bool		planned;		/* shard_rebalance_plan moves it */
} ShardTenantStat;

/* One shard's size and, when asked for, its tenants. */
typedef struct ShardFleetStat
{
	ShardInfo  *info;
	int64		file_bytes;		/* -1: the file is missing */
	int64		wal_bytes;
	int64		page_size;
	int64		page_count;
	int64		freelist_count;
	int			ntenants;		/* tenants it answers for */
	ShardTenantStat *tenants;	/* those, ordered by id */
	bool		dbstat;			/* bytes estimated from dbstat */
} ShardFleetStat;

extern List *shard_fleet_owners(ShardDirectory *dir);
extern List *shard_fleet_owned(List *owners, int *pos, const char *shard_id);
extern ShardFleetStat *shard_fleet_stats(ShardServerOptions *opts,
										 ShardInfo *info, List *owned,
										 bool tenants, bool missing_ok);
extern int64 shard_fleet_used_bytes(const ShardFleetStat *fs);

/* in tenantrows.c */

/* A table of a shard with the tenant column, as the shard spells both. */
typedef struct ShardTenantTable
{
	char	   *table;
	char	   *column;
	ShardTenantRule rule;		/* how its rows are a tenant's */
} ShardTenantTable;

/* One tenant's rows in a table; tenant NULL for rows of no tenant. */
typedef struct ShardTenantRows
{
	char	   *tenant;
	int64		rows;
} ShardTenantRows;

extern List *shard_tenant_table_counts(ShardConn *conn, const char *shard_id,
									   ShardTenantTable *tt);
extern int64 shard_tenant_table_rows(ShardConn *conn, const char *shard_id,
									 ShardTenantTable *tt, const char *tenant,
									 bool delete);
extern List *shard_server_tenant_tables(ShardConn *conn, const char *shard_id,
										 ShardTenantSpec *spec);

/* in import.c */

extern List *shardImportForeignSchema(ImportForeignSchemaStmt *stmt,
									  Oid serverOid);

/* in commitlog.c */

extern void shard_commitlog_define_gucs(void);
extern char *shard_commitlog_path(const char *directory);
extern int	shard_commitlog_begin(const char *directory, int n,
								  char **shard_ids, char **paths, int64 *id,
								  char *errbuf);
extern int	shard_commitlog_committed(const char *directory, int64 id,
									  int position, char *errbuf);
extern void shard_commitlog_end(const char *directory, int64 id,
								const char *error);

/* in waits.c */

extern uint32 shard_wait_event_fanout(void);
extern uint32 shard_wait_event_lock(void);
extern void shard_report_lock_wait(int waiting);
extern void shard_waits_init(void);

/* in analyze.c */

extern bool shardAnalyzeForeignTable(Relation relation,
									 AcquireSampleRowsFunc *func,
									 BlockNumber *totalpages);
extern double shard_file_bytes(const char *path);

#endif							/* SQLITE_SHARD_FDW_H */
