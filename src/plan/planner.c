/*-------------------------------------------------------------------------
 *
 * planner.c
 *		  The handler and planner callbacks of sqlite_shard_fdw
 *
 * Planning splits a scan's conditions into those the shards evaluate and
 * those PostgreSQL evaluates (deparse.c decides), and finds the condition
 * that names tenants: "tenant = value" or "tenant = ANY (array)", where the
 * value is anything without columns or volatile functions (a constant, a
 * parameter, a stable expression).  The plan keeps that value as an
 * expression, not as a list of shards: the shards are looked up in the
 * directory when the executor starts, so a cached generic plan still routes
 * to wherever the tenant lives when it runs.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <math.h>

#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"

#include "compat.h"

/* Planner state of one foreign table scan (baserel->fdw_private). */
typedef struct ShardRelInfo
{
	List	   *remote_conds;	/* RestrictInfos the shards evaluate */
	List	   *local_conds;	/* RestrictInfos PostgreSQL evaluates */
	List	   *expanded;		/* row comparisons whose expansions are
								 * among remote_conds */
	Bitmapset  *attrs_used;		/* columns to fetch */
	ShardTableOptions *topts;	/* the table's options, read once */
	AttrNumber	tenant_attnum;
	double		scanned;		/* rows the shards look at: the table's, or
								 * the routed tenants' (estimate.c) */
	double		tenant_rows;	/* the routed tenants' rows, or -1 */
	double		cost_scale;		/* scanned over the rows estimated to be
								 * looked at (MIN_SCANNED_ROWS), >= 1 */
} ShardRelInfo;

/* Marks a path of add_tenant_list_paths (its fdw_private). */
#define TENANT_LIST_MARK "tenant list"

/* Rows assumed for a table of which nothing is known (estimate.c). */
#define DEFAULT_TUPLES 10000.0

/*
 * The least a table ANALYZE never measured, and a scan of it, are costed as
 * holding and looking at: a shard statement costs its preparing, binding
 * and read transaction however few rows it reads, so that work the shards
 * can do (a grouping) stays cheaper there than fetching even a few rows, as
 * it was costed when such a table was taken to hold DEFAULT_TUPLES rows.
 * Only costs: the rows a scan returns are estimated as they are, and
 * costed as the same share of the rows looked at (cost_scale, cost.c).
 */
#define MIN_SCANNED_ROWS 10000.0

PG_FUNCTION_INFO_V1(sqlite_shard_fdw_handler);

static void shardGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel,
								   Oid foreigntableid);
static void shardGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel,
								 Oid foreigntableid);
static void add_tenant_param_paths(PlannerInfo *root, RelOptInfo *baserel);
static void add_tenant_list_paths(PlannerInfo *root, RelOptInfo *baserel);
static ForeignScan *shardGetForeignPlan(PlannerInfo *root, RelOptInfo *baserel,
										Oid foreigntableid,
										ForeignPath *best_path, List *tlist,
										List *scan_clauses, Plan *outer_plan);

/*
 * sqlite_shard_fdw_handler
 *		The FdwRoutine of this wrapper.
 */
Datum
sqlite_shard_fdw_handler(PG_FUNCTION_ARGS)
{
	FdwRoutine *routine = makeNode(FdwRoutine);

	routine->GetForeignRelSize = shardGetForeignRelSize;
	routine->GetForeignPaths = shardGetForeignPaths;
	routine->GetForeignPlan = shardGetForeignPlan;
	routine->GetForeignJoinPaths = shardGetForeignJoinPaths;
	routine->GetForeignUpperPaths = shardGetForeignUpperPaths;
	routine->BeginForeignScan = shardBeginForeignScan;
	routine->IterateForeignScan = shardIterateForeignScan;
	routine->ReScanForeignScan = shardReScanForeignScan;
	routine->EndForeignScan = shardEndForeignScan;
	routine->ExplainForeignScan = shardExplainForeignScan;
	routine->AnalyzeForeignTable = shardAnalyzeForeignTable;
	routine->ImportForeignSchema = shardImportForeignSchema;

	routine->IsForeignRelUpdatable = shardIsForeignRelUpdatable;
	routine->PlanForeignModify = shardPlanForeignModify;
	routine->BeginForeignModify = shardBeginForeignModify;
	routine->ExecForeignInsert = shardExecForeignInsert;
	routine->ExecForeignBatchInsert = shardExecForeignBatchInsert;
	routine->GetForeignModifyBatchSize = shardGetForeignModifyBatchSize;
	routine->EndForeignModify = shardEndForeignModify;
	routine->BeginForeignInsert = shardBeginForeignInsert;
	routine->EndForeignInsert = shardEndForeignInsert;
	routine->ExplainForeignModify = shardExplainForeignModify;
	routine->AddForeignUpdateTargets = shardAddForeignUpdateTargets;
	routine->ExecForeignUpdate = shardExecForeignUpdate;
	routine->ExecForeignDelete = shardExecForeignDelete;
	routine->PlanDirectModify = shardPlanDirectModify;
	routine->BeginDirectModify = shardBeginDirectModify;
	routine->IterateDirectModify = shardIterateDirectModify;
	routine->EndDirectModify = shardEndDirectModify;
	routine->ExplainDirectModify = shardExplainDirectModify;
	routine->ExecForeignTruncate = shardExecForeignTruncate;

	PG_RETURN_POINTER(routine);
}

/*
 * expand_row_compare
 *		A row comparison (a, b) < (x, y), as keyset pagination writes it,
 *		as the equivalent a < x OR (a = x AND b < y) (with <= for the last
 *		column of <=, and likewise for > and >=), which the shards can
 *		evaluate where each comparison can be: the same truth value for
 *		every row, NULL included, since both stop at the first column that
 *		differs or is NULL.  NULL when an operator is not a btree one.
 */
static Expr *
expand_row_compare(RowCompareExpr *rc)
{
	List	   *ors = NIL;
	List	   *eqs = NIL;
	int			n = list_length(rc->opnos);
	int			i;

	if (rc->rctype == ROWCOMPARE_EQ || rc->rctype == ROWCOMPARE_NE)
		return NULL;
	for (i = 0; i < n; i++)
	{
		Oid			opno = list_nth_oid(rc->opnos, i);
		Oid			coll = list_nth_oid(rc->inputcollids, i);
		Expr	   *l = list_nth(rc->largs, i);
		Expr	   *r = list_nth(rc->rargs, i);
		List	   *interp = get_op_btree_interpretation(opno);
		OpBtreeInterpretation *bt;
		Oid			strict;
		Oid			eq;
		List	   *and;

		if (interp == NIL)
			return NULL;
		bt = linitial(interp);
		strict = get_opfamily_member(bt->opfamily_id, bt->oplefttype,
									 bt->oprighttype,
									 (rc->rctype == ROWCOMPARE_LT ||
									  rc->rctype == ROWCOMPARE_LE) ?
									 BTLessStrategyNumber :
									 BTGreaterStrategyNumber);
		eq = get_opfamily_member(bt->opfamily_id, bt->oplefttype,
								 bt->oprighttype, BTEqualStrategyNumber);
		if (!OidIsValid(strict) || !OidIsValid(eq))
			return NULL;
		/* the last column compares with the row's own operator */
		and = lappend(list_copy(eqs),
					  make_opclause(i == n - 1 ? opno : strict, BOOLOID, false,
									copyObject(l), copyObject(r),
									InvalidOid, coll));
		ors = lappend(ors, list_length(and) == 1 ? linitial(and) :
					  make_andclause(and));
		eqs = lappend(eqs, make_opclause(eq, BOOLOID, false, copyObject(l),
										 copyObject(r), InvalidOid, coll));
	}
	fix_opfuncids((Node *) ors);
	return list_length(ors) == 1 ? linitial(ors) : make_orclause(ors);
}

/*
 * shardGetForeignRelSize
 *		Split the conditions, note the columns to fetch, estimate the rows.
 */
static void
shardGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel,
					   Oid foreigntableid)
{
	ShardRelInfo *fpinfo = palloc0(sizeof(ShardRelInfo));
	Relation	rel;
	ShardTableOptions *topts;
	ListCell   *lc;
	double		tuples;
	double		rows;
	double		tenant_rows = -1;
	bool		analyzed;
	RestrictInfo *tenant_ri = NULL;
	ShardPruneKind kind;
	Expr	   *tenant_value;

	baserel->fdw_private = fpinfo;

	/*
	 * Column references name no alias but while a pushed join's SQL is
	 * written (join.c, upper.c); a planning that failed in between must not
	 * leave them so for the next.
	 */
	shard_deparse_set_qualified(false);

	rel = table_open(foreigntableid, NoLock);
	topts = shard_table_options(rel);
	fpinfo->topts = topts;
	fpinfo->tenant_attnum = topts->tenant_attnum;
	table_close(rel, NoLock);

	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);

		Expr	   *expansion;

		if (shard_is_pushable_expr(root, baserel, ri->clause))
			fpinfo->remote_conds = lappend(fpinfo->remote_conds, ri);
		else if (IsA(ri->clause, RowCompareExpr) &&
				 (expansion = expand_row_compare((RowCompareExpr *) ri->clause)) != NULL &&
				 shard_is_pushable_expr(root, baserel, expansion))
		{
			fpinfo->remote_conds =
				lappend(fpinfo->remote_conds,
						make_simple_restrictinfo_compat(root, expansion));
			fpinfo->expanded = lappend(fpinfo->expanded, ri);
		}
		else
		{
			Expr	   *narrowing = shard_prefilter_expr(root, baserel,
														 ri->clause);

			fpinfo->local_conds = lappend(fpinfo->local_conds, ri);
			/* the shards keep a superset; PostgreSQL still rechecks ri */
			if (narrowing != NULL)
				fpinfo->remote_conds =
					lappend(fpinfo->remote_conds,
							make_simple_restrictinfo_compat(root, narrowing));
		}
	}

	/*
	 * Fetch what the query uses and what its conditions need, and always
	 * the tenant column: rows of tenants being moved, or hidden from the
	 * user mapping, are filtered by it at run time.
	 */
	pull_varattnos((Node *) baserel->reltarget->exprs, baserel->relid,
				   &fpinfo->attrs_used);
	/*
	 * Columns of pushed conditions too: a shard whose schema makes SQLite
	 * compare differently is read without them, and PostgreSQL rechecks.
	 */
	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);

		pull_varattnos((Node *) ri->clause, baserel->relid,
					   &fpinfo->attrs_used);
	}
	if (fpinfo->tenant_attnum != InvalidAttrNumber)
		fpinfo->attrs_used =
			bms_add_member(fpinfo->attrs_used,
						   fpinfo->tenant_attnum - FirstLowInvalidHeapAttributeNumber);

	/*
	 * A table ANALYZE never measured is estimated from the shards, and a
	 * routed tenant from the directory, unless ANALYZE left statistics of
	 * the tenant column (estimate.c).
	 */
	rel = table_open(foreigntableid, NoLock);
	tenant_value = shard_find_tenant_clause(baserel, fpinfo->tenant_attnum,
											&tenant_ri, &kind);
	analyzed = baserel->tuples >= 0;
	tuples = baserel->tuples;
	if (!analyzed)
		tuples = shard_estimate_rows(rel, topts, tenant_value == NULL);
	if (tenant_value != NULL)
		tenant_rows = shard_estimate_tenant_rows(root, rel, topts, kind,
												 tenant_value);
	table_close(rel, NoLock);
	if (tuples <= 0)
		tuples = DEFAULT_TUPLES;
	tuples = Max(tuples, tenant_rows);
	if (tenant_rows >= 0)
		rows = tenant_rows *
			clauselist_selectivity(root,
								   list_delete_ptr(list_copy(baserel->baserestrictinfo),
												   tenant_ri),
								   0, JOIN_INNER, NULL);
	else
		rows = tuples * clauselist_selectivity(root,
											   baserel->baserestrictinfo, 0,
											   JOIN_INNER, NULL);
	baserel->rows = clamp_row_est(rows);
	baserel->tuples = analyzed ? tuples : Max(tuples, MIN_SCANNED_ROWS);
	fpinfo->scanned = analyzed ? tuples :
		Max(tenant_rows >= 0 ? tenant_rows : tuples, MIN_SCANNED_ROWS);
	fpinfo->cost_scale = analyzed ? 1 :
		fpinfo->scanned / Max(tenant_rows >= 0 ? tenant_rows : tuples, 1);

	/*
	 * The routed tenants' rows by ANALYZE's statistics of the tenant column,
	 * which a shard weighs against a time range's (timeindex.c); without
	 * them (the directory's average tenant) the shard counts.
	 */
	fpinfo->tenant_rows = -1;
	if (tenant_rows < 0 && tenant_ri != NULL && analyzed)
		fpinfo->tenant_rows = tuples *
			clause_selectivity(root, (Node *) tenant_ri, 0, JOIN_INNER, NULL);
}

/*
 * shard_rel_deparse_conditions
 *		The SQL of the conditions a scan's shards evaluate, sharing one
 *		numbering of parameters, and in *tenant_sqls that of the condition
 *		the scan is routed by (which the shards' tenant filters enforce
 *		too: timeindex.c).
 */
List *
shard_rel_deparse_conditions(PlannerInfo *root, RelOptInfo *baserel,
							 List **params, List **param_kinds,
							 List **tenant_sqls)
{
	ShardRelInfo *fpinfo = (ShardRelInfo *) baserel->fdw_private;
	RestrictInfo *tenant_ri = NULL;
	ShardPruneKind kind;
	List	   *sqls = NIL;
	ListCell   *lc;

	*tenant_sqls = NIL;
	shard_find_tenant_clause(baserel, fpinfo->tenant_attnum, &tenant_ri,
							 &kind);
	foreach(lc, fpinfo->remote_conds)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		List	   *one = shard_deparse_conditions(root, baserel,
												   list_make1(ri),
												   params, param_kinds);

		sqls = list_concat(sqls, one);
		if (ri == tenant_ri)
			*tenant_sqls = one;
	}
	return sqls;
}

/*
 * shard_rel_tenant_rows
 *		The rows of the tenants a scan is routed to by ANALYZE's
 *		statistics, or -1.
 */
double
shard_rel_tenant_rows(RelOptInfo *baserel)
{
	return ((ShardRelInfo *) baserel->fdw_private)->tenant_rows;
}

/*
 * shard_rel_tenant_attnum
 *		The tenant column of a scanned foreign table.
 */
AttrNumber
shard_rel_tenant_attnum(RelOptInfo *baserel)
{
	return ((ShardRelInfo *) baserel->fdw_private)->tenant_attnum;
}

/*
 * shard_rel_table
 *		The SQLite table a scanned foreign table reads.
 */
const char *
shard_rel_table(RelOptInfo *baserel)
{
	return ((ShardRelInfo *) baserel->fdw_private)->topts->table;
}

/*
 * shard_rel_remote_conds
 *		The conditions of a scan that the shards evaluate.
 */
List *
shard_rel_remote_conds(RelOptInfo *baserel)
{
	return ((ShardRelInfo *) baserel->fdw_private)->remote_conds;
}

/*
 * shard_rel_cost_scale
 *		How many rows a row the scan returns stands for in costs: more than
 *		one where a table ANALYZE never measured is costed as holding at
 *		least MIN_SCANNED_ROWS rows.
 */
double
shard_rel_cost_scale(RelOptInfo *baserel)
{
	return ((ShardRelInfo *) baserel->fdw_private)->cost_scale;
}

/*
 * shard_rel_scanned
 *		The rows a scan's shards look at (estimate.c), for the costs of a
 *		join the shards run.
 */
double
shard_rel_scanned(RelOptInfo *baserel)
{
	return ((ShardRelInfo *) baserel->fdw_private)->scanned;
}

/*
 * shard_rel_options
 *		The options of a scanned foreign table.
 */
ShardTableOptions *
shard_rel_options(RelOptInfo *baserel)
{
	return ((ShardRelInfo *) baserel->fdw_private)->topts;
}

/*
 * shard_rel_all_pushed
 *		Do the shards evaluate every condition of the scan?  Only then may
 *		they aggregate its rows.
 */
bool
shard_rel_all_pushed(RelOptInfo *baserel)
{
	return ((ShardRelInfo *) baserel->fdw_private)->local_conds == NIL;
}

/*
 * shard_rel_tenant_only
 *		Do the conditions the shards evaluate read only the tenant column?
 *		Then SQLite chooses between reading the tenant's index and the whole
 *		table (shardsql.c, large_tenant_without_stats).
 */
bool
shard_rel_tenant_only(RelOptInfo *baserel)
{
	ShardRelInfo *fpinfo = (ShardRelInfo *) baserel->fdw_private;
	ListCell   *lc;

	foreach(lc, fpinfo->remote_conds)
	{
		Bitmapset  *attrs = NULL;

		pull_varattnos((Node *) lfirst_node(RestrictInfo, lc)->clause,
					   baserel->relid, &attrs);
		if (bms_num_members(attrs) != 1 ||
			!bms_is_member(fpinfo->tenant_attnum - FirstLowInvalidHeapAttributeNumber,
						   attrs))
			return false;
	}
	return true;
}

/*
 * shardGetForeignPaths
 *		One path: the shards do the pushed filtering, so its cost counts
 *		the rows that come back plus a start-up cost per scan.
 *
 * A relation with LATERAL references (a placeholder over another
 * relation's column that must be computed in this scan's output, as below
 * an outer join) can be scanned only inside a loop over those relations:
 * its path is parameterized by them, as file_fdw's and postgres_fdw's are.
 * A path without them would read such a value from the foreign row.  The
 * join clauses that become evaluable here come with the parameterization
 * (evaluated by PostgreSQL; a tenant condition among them also chooses
 * the shards per outer row, see shardGetForeignPlan).
 */
static void
shardGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel,
					 Oid foreigntableid)
{
	Relids		required_outer = baserel->lateral_relids;
	double		rows = baserel->rows;
	Cost		startup;
	Cost		total;

	/* the shards return baserel->rows; the join clauses keep ppi_rows */
	if (!bms_is_empty(required_outer))
		rows = get_baserel_parampathinfo(root, baserel,
										 required_outer)->ppi_rows;
	shard_cost_scan(root, baserel, &startup, &total);
	add_path(baserel, (Path *)
			 create_foreignscan_path_compat(root, baserel, NULL, rows,
											startup, total, NIL,
											required_outer, NULL, NIL));
	if (bms_is_empty(required_outer))
		shard_order_add_paths(root, baserel, rows, total);
	add_tenant_param_paths(root, baserel);
	add_tenant_list_paths(root, baserel);
}

/*
 * prune_value_ok
 *		Can the value side of a tenant condition be computed when the
 *		executor starts (or, with outer, each time the scan restarts for
 *		another row of those relations, whose columns it may read), and
 *		does its text form name the tenant the way the directory stores it?
 */
static bool
prune_value_ok(PlannerInfo *root, Expr *val, Oid valtype, Relids outer)
{
	if (!shard_tenant_value_type_ok(valtype))
		return false;
	if (bms_is_empty(outer) ? contain_var_clause((Node *) val) :
		!bms_is_subset(pull_varnos(root, (Node *) val), outer))
		return false;
	return !contain_volatile_functions((Node *) val) &&
		!contain_subplans((Node *) val) &&
		!contain_agg_clause((Node *) val) &&
		!contain_window_function((Node *) val);
}

/*
 * is_tenant_column
 *		Is expr the tenant column of this scan (maybe relabeled)?
 */
static bool
is_tenant_column(Expr *expr, RelOptInfo *baserel, AttrNumber tenant_attnum)
{
	while (expr && IsA(expr, RelabelType))
		expr = ((RelabelType *) expr)->arg;
	return expr && IsA(expr, Var) && ((Var *) expr)->varno == baserel->relid &&
		((Var *) expr)->varlevelsup == 0 &&
		tenant_attnum != InvalidAttrNumber &&
		((Var *) expr)->varattno == tenant_attnum;
}

/*
 * equality_ok
 *		Is opno a btree equality whose matches are exactly the values with
 *		the same text form?  Non-deterministic collations are not.
 */
static bool
equality_ok(Oid opno, Oid inputcollid)
{
	if (get_mergejoin_opfamilies(opno) == NIL)
		return false;
	if (OidIsValid(inputcollid) && !get_collation_isdeterministic(inputcollid))
		return false;
	return true;
}

/*
 * tenant_equality_value
 *		The value side of "tenant = value" (either way round), when it can
 *		route the scan (prune_value_ok); NULL otherwise.
 */
static Expr *
tenant_equality_value(PlannerInfo *root, Expr *clause, RelOptInfo *baserel,
					  AttrNumber tenant_attnum, Relids outer)
{
	OpExpr	   *op;
	Expr	   *val = NULL;

	if (!IsA(clause, OpExpr) || list_length(((OpExpr *) clause)->args) != 2)
		return NULL;
	op = (OpExpr *) clause;
	if (!equality_ok(op->opno, op->inputcollid))
		return NULL;
	if (is_tenant_column(linitial(op->args), baserel, tenant_attnum))
		val = lsecond(op->args);
	else if (is_tenant_column(lsecond(op->args), baserel, tenant_attnum))
		val = linitial(op->args);
	if (val && prune_value_ok(root, val, exprType((Node *) val), outer))
		return val;
	return NULL;
}

/*
 * tenant_or_list
 *		"tenant = v1 OR tenant = v2 OR ...", every arm an equality of the
 *		tenant column with a value of one type, as the array of the values,
 *		for routing as "= ANY": otherwise such a scan would read every shard,
 *		and with them a tenant's rows on a shard that does not own it (a
 *		copy or leftovers the directory does not record).  NULL when an arm
 *		is anything else.
 */
static Expr *
tenant_or_list(PlannerInfo *root, BoolExpr *or, RelOptInfo *baserel,
			   AttrNumber tenant_attnum, Relids outer)
{
	List	   *values = NIL;
	Oid			valtype = InvalidOid;
	ListCell   *lc;
	ArrayExpr  *arr;

	foreach(lc, or->args)
	{
		Expr	   *val = tenant_equality_value(root, lfirst(lc), baserel,
												tenant_attnum, outer);

		if (val == NULL ||
			(OidIsValid(valtype) && exprType((Node *) val) != valtype))
			return NULL;
		valtype = exprType((Node *) val);
		values = lappend(values, val);
	}
	if (values == NIL || !OidIsValid(get_array_type(valtype)))
		return NULL;
	arr = makeNode(ArrayExpr);
	arr->array_typeid = get_array_type(valtype);
	arr->element_typeid = valtype;
	arr->elements = values;
	arr->multidims = false;
	arr->location = -1;
	return (Expr *) arr;
}

/*
 * find_tenant_condition
 *		The value (or array of values) that one of clauses (RestrictInfos)
 *		pins the tenant column to, or NULL; values may read the columns of
 *		the relations in outer (a parameterized scan's).  An OR of tenant
 *		equalities counts as an array of their values.
 */
static Expr *
find_tenant_condition(PlannerInfo *root, List *clauses, RelOptInfo *baserel,
					  AttrNumber tenant_attnum, Relids outer,
					  ShardPruneKind *kind)
{
	ListCell   *lc;

	foreach(lc, clauses)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		Expr	   *clause = ri->clause;

		if (IsA(clause, OpExpr))
		{
			Expr	   *val = tenant_equality_value(root, clause, baserel,
													tenant_attnum, outer);

			if (val != NULL)
			{
				*kind = PRUNE_EQ;
				return val;
			}
		}
		else if (is_orclause(clause))
		{
			Expr	   *arr = tenant_or_list(root, (BoolExpr *) clause,
											 baserel, tenant_attnum, outer);

			if (arr != NULL)
			{
				*kind = PRUNE_ANY;
				return arr;
			}
		}
		else if (IsA(clause, ScalarArrayOpExpr))
		{
			ScalarArrayOpExpr *saop = (ScalarArrayOpExpr *) clause;
			Expr	   *arr = lsecond(saop->args);
			Oid			elemtype = get_element_type(exprType((Node *) arr));

			if (saop->useOr && equality_ok(saop->opno, saop->inputcollid) &&
				is_tenant_column(linitial(saop->args), baserel, tenant_attnum) &&
				OidIsValid(elemtype) &&
				prune_value_ok(root, arr, elemtype, outer))
			{
				*kind = PRUNE_ANY;
				return arr;
			}
		}
	}
	*kind = PRUNE_NONE;
	return NULL;
}

/*
 * shard_find_tenant_condition
 *		The value (or array of values) that a condition of the scan pins the
 *		tenant column to, or NULL when the scan must read every shard.
 */
Expr *
shard_find_tenant_condition(RelOptInfo *baserel, AttrNumber tenant_attnum,
							ShardPruneKind *kind)
{
	return find_tenant_condition(NULL, baserel->baserestrictinfo, baserel,
								 tenant_attnum, NULL, kind);
}

/*
 * shard_find_tenant_clause
 *		shard_find_tenant_condition, also giving the condition (clause) the
 *		value comes from.
 */
Expr *
shard_find_tenant_clause(RelOptInfo *baserel, AttrNumber tenant_attnum,
						 RestrictInfo **clause, ShardPruneKind *kind)
{
	ListCell   *lc;

	foreach(lc, baserel->baserestrictinfo)
	{
		Expr	   *val = find_tenant_condition(NULL, list_make1(lfirst(lc)),
												baserel, tenant_attnum, NULL,
												kind);

		if (val != NULL)
		{
			*clause = lfirst(lc);
			return val;
		}
	}
	*kind = PRUNE_NONE;
	return NULL;
}

/*
 * tenant_ec_member
 *		Is an equivalence class member this scan's tenant column?  (The
 *		callback of generate_implied_equalities_for_column.)
 */
static bool
tenant_ec_member(PlannerInfo *root, RelOptInfo *rel, EquivalenceClass *ec,
				 EquivalenceMember *em, void *arg)
{
	return is_tenant_column(em->em_expr, rel, *(AttrNumber *) arg);
}

/*
 * tenant_join_clauses
 *		The join clauses that the scan may enforce (a foreign row that fails
 *		one meets no row of the other relations), from the scan's join
 *		conditions and the equivalence classes of its tenant column: those
 *		that pin the tenant to another relation's value route it.
 */
static List *
tenant_join_clauses(PlannerInfo *root, RelOptInfo *baserel)
{
	ShardRelInfo *fpinfo = (ShardRelInfo *) baserel->fdw_private;
	List	   *clauses = NIL;
	ListCell   *lc;

	foreach(lc, baserel->joininfo)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);

		if (join_clause_is_movable_to(ri, baserel))
			clauses = lappend(clauses, ri);
	}
	if (baserel->has_eclass_joins)
		clauses = list_concat(clauses,
							  generate_implied_equalities_for_column(root,
																	 baserel,
																	 tenant_ec_member,
																	 &fpinfo->tenant_attnum,
																	 baserel->lateral_referencers));
	return clauses;
}

/*
 * statement_writes_table
 *		Does the statement this query belongs to (the query, or one it is a
 *		subquery of) write the SQLite table topts names, through any foreign
 *		table of the same server?  A scan of it must read it once, before
 *		the statement writes (scan.c, check_statement_writes), so it gets no
 *		path that reads it again for every outer row.
 */
static bool
statement_writes_table(PlannerInfo *root, ShardTableOptions *topts)
{
	PlannerInfo *r;

	for (r = root; r != NULL; r = r->parent_root)
	{
		Query	   *parse = r->parse;
		RangeTblEntry *rte;
		Relation	rel;
		bool		same;

		if (parse->commandType == CMD_SELECT || parse->resultRelation == 0)
			continue;
		rte = rt_fetch(parse->resultRelation, parse->rtable);
		if (rte->relkind != RELKIND_FOREIGN_TABLE ||
			GetForeignServerIdByRelId(rte->relid) != topts->serverid)
			continue;
		rel = table_open(rte->relid, NoLock);
		/* SQLite's table names ignore ASCII case */
		same = (pg_strcasecmp(shard_table_options(rel)->table,
							  topts->table) == 0);
		table_close(rel, NoLock);
		if (same)
			return true;
	}
	return false;
}

/*
 * add_tenant_param_paths
 *		Paths that read, per row of other relations, only the tenant that
 *		row names: a join or semi-join with a local table on the tenant
 *		column (JOIN accounts USING (tenant_id), tenant_id IN (SELECT ...))
 *		then opens one shard per outer row and reads that tenant's rows
 *		through its index, instead of every row of the fleet.
 *
 * As postgres_fdw does, the candidate clauses are the join clauses that
 * could be evaluated at this scan and the equalities an equivalence class
 * implies for the tenant column; each set of outer relations gets one path,
 * costed per loop as a routed scan of one tenant on a shard already open.  The clauses
 * themselves stay PostgreSQL's to evaluate; shardGetForeignPlan finds the
 * tenant value among them, and the executor chooses the shard again for
 * every outer row.  PostgreSQL weighs these paths against the hash and
 * merge joins over the whole table.
 */
static void
add_tenant_param_paths(PlannerInfo *root, RelOptInfo *baserel)
{
	ShardRelInfo *fpinfo = (ShardRelInfo *) baserel->fdw_private;
	List	   *clauses = NIL;
	List	   *done = NIL;
	double		tenant_rows;
	ListCell   *lc;

	if (fpinfo->tenant_attnum == InvalidAttrNumber ||
		statement_writes_table(root, fpinfo->topts))
		return;
	clauses = tenant_join_clauses(root, baserel);

	foreach(lc, clauses)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		Relids		outer;
		ParamPathInfo *ppi;
		ShardPruneKind kind;
		Expr	   *value;
		ListCell   *lc2;
		bool		seen = false;
		double		rows;
		Relation	rel;
		ShardQueryCost q;
		Cost		startup;
		Cost		total;

		outer = bms_union(bms_difference(ri->clause_relids, baserel->relids),
						  baserel->lateral_relids);
		if (bms_is_empty(outer))
			continue;
		value = find_tenant_condition(root, list_make1(ri), baserel,
									  fpinfo->tenant_attnum, outer, &kind);
		if (value == NULL)
			continue;
		foreach(lc2, done)
			if (bms_equal(outer, (Relids) lfirst(lc2)))
				seen = true;
		if (seen || bms_equal(outer, baserel->lateral_relids))
			continue;
		done = lappend(done, outer);

		/*
		 * Without value statistics of the tenant column, PostgreSQL would
		 * take one row in two hundred for a tenant: the directory's average
		 * tenant is better (estimate.c), kept by the scan's own conditions.
		 */
		ppi = get_baserel_parampathinfo(root, baserel, outer);
		rows = ppi->ppi_rows;
		rel = table_open(planner_rt_fetch(baserel->relid, root)->relid,
						 NoLock);
		tenant_rows = shard_estimate_tenant_rows(root, rel, fpinfo->topts,
												 kind, value);
		table_close(rel, NoLock);
		if (tenant_rows >= 0)
			rows = clamp_row_est(tenant_rows *
								 clauselist_selectivity(root,
														baserel->baserestrictinfo,
														0, JOIN_INNER, NULL));
		memset(&q, 0, sizeof(q));
		/* the tenant's rows, read by its index: no minimum (cost_scale) */
		q.nshards = 1;
		q.rescan = true;
		q.scanned = rows;
		q.returned = rows;
		shard_cost_query(&q, &startup, &total);
		add_path(baserel, (Path *)
				 create_foreignscan_path_compat(root, baserel, NULL, rows,
												startup, total,
												NIL, outer, NULL, NIL));
	}
}

/*
 * is_tenant_list_path
 *		Is path one of add_tenant_list_paths?
 */
static bool
is_tenant_list_path(ForeignPath *path)
{
	List	   *p = path->fdw_private;

	return list_length(p) == 3 && IsA(linitial(p), String) &&
		strcmp(strVal(linitial(p)), TENANT_LIST_MARK) == 0;
}

/*
 * add_tenant_list_paths
 *		Offer a path that reads only the tenants another relation of the
 *		query produces, computed before the scan starts (tenantlist.c): for
 *		a hash or merge join with a local table on the tenant column, where
 *		no outer row drives the scan.  Costed as the scan of those tenants
 *		plus the other relation's scan, which computes the list; one per
 *		relation.
 */
static void
add_tenant_list_paths(PlannerInfo *root, RelOptInfo *baserel)
{
	ShardRelInfo *fpinfo = (ShardRelInfo *) baserel->fdw_private;
	Relids		done = NULL;
	ListCell   *lc;

	if (fpinfo->tenant_attnum == InvalidAttrNumber ||
		!bms_is_empty(baserel->lateral_relids) ||
		statement_writes_table(root, fpinfo->topts))
		return;
	foreach(lc, tenant_join_clauses(root, baserel))
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		Relids		outer = bms_difference(ri->clause_relids, baserel->relids);
		RelOptInfo *source;
		ShardPruneKind kind;
		Expr	   *value;
		double		scanned;
		double		values;
		double		rows;
		Relation	rel;
		ShardQueryCost q;
		Cost		startup;
		Cost		total;
		int			relid;

		if (!bms_get_singleton_member(outer, &relid) ||
			bms_is_member(relid, done))
			continue;
		source = find_base_rel(root, relid);
		value = find_tenant_condition(root, list_make1(ri), baserel,
									  fpinfo->tenant_attnum, outer, &kind);
		if (value == NULL || kind != PRUNE_EQ ||
			!shard_tenant_list_source_ok(root, source, value))
			continue;
		done = bms_add_member(done, relid);

		rel = table_open(planner_rt_fetch(baserel->relid, root)->relid,
						 NoLock);
		scanned = shard_estimate_tenant_rows(root, rel, fpinfo->topts, kind,
											 value);
		table_close(rel, NoLock);
		if (scanned < 0)
			continue;
		values = shard_tenant_list_values(root, source, value);
		scanned *= values;
		if (scanned >= fpinfo->scanned)
			continue;
		rows = clamp_row_est(scanned *
							 clauselist_selectivity(root,
													baserel->baserestrictinfo,
													0, JOIN_INNER, NULL));
		memset(&q, 0, sizeof(q));
		/* the listed tenants' shards, at most */
		q.nshards = Min(shard_cost_shards(root, baserel),
						(int) Min(ceil(values), (double) INT_MAX));
		q.scanned = scanned;
		q.returned = rows * fpinfo->cost_scale;
		q.local_startup = shard_tenant_list_cost(root, source);
		shard_cost_query(&q, &startup, &total);
		add_path(baserel, (Path *)
				 create_foreignscan_path_compat(root, baserel, NULL, rows,
												startup, total, NIL, NULL,
												NULL,
												list_make3(makeString(TENANT_LIST_MARK),
														   makeInteger(relid),
														   value)));
	}
}

/*
 * shardGetForeignPlan
 *		Build the ForeignScan: the shard query's text and parameters, the
 *		columns it returns, and the tenant condition for pruning.
 */
static ForeignScan *
shardGetForeignPlan(PlannerInfo *root, RelOptInfo *baserel,
					Oid foreigntableid, ForeignPath *best_path, List *tlist,
					List *scan_clauses, Plan *outer_plan)
{
	ShardRelInfo *fpinfo;
	bool		final = false;
	List	   *scan_tlist = NIL;
	Index		scanrelid;
	List	   *local_exprs = NIL;
	List	   *params = NIL;
	List	   *param_kinds = NIL;
	List	   *retrieved_attrs;
	ShardScanPrivate priv;
	StringInfoData select_sql;
	List	   *all_sqls = NIL;
	List	   *safe_sqls = NIL;
	List	   *tenant_sqls = NIL;
	RestrictInfo *tenant_ri = NULL;
	Relation	rel;
	ShardPruneKind prune_kind;
	Expr	   *prune_expr;
	ListCell   *lc;

	/*
	 * A final path of order.c scans the table's rows, sorted and limited,
	 * into a tuple of all its columns (scanrelid 0, fdw_scan_tlist), which
	 * PostgreSQL projects: its conditions are the table's, all pushed.
	 */
	if (IS_UPPER_REL(baserel) && shard_order_is_final(best_path))
	{
		final = true;
		baserel = shard_order_base_rel(root);
		if (IS_JOIN_REL(baserel))
			return shard_join_plan(root, baserel, best_path, tlist,
								   outer_plan, true);
		foreigntableid = planner_rt_fetch(baserel->relid, root)->relid;
		scan_clauses = baserel->baserestrictinfo;
	}
	else if (IS_UPPER_REL(baserel))
		return shard_upper_plan(root, baserel, tlist, outer_plan);
	else if (IS_JOIN_REL(baserel))
		return shard_join_plan(root, baserel, best_path, tlist, outer_plan,
							   false);
	fpinfo = (ShardRelInfo *) baserel->fdw_private;
	scanrelid = final ? 0 : baserel->relid;

	/* PostgreSQL filters only by the conditions the shards cannot run. */
	foreach(lc, scan_clauses)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);

		if (ri->pseudoconstant)
			continue;
		if (list_member_ptr(fpinfo->remote_conds, ri) ||
			list_member_ptr(fpinfo->expanded, ri))
			continue;
		local_exprs = lappend(local_exprs, ri->clause);
	}

	initStringInfo(&select_sql);
	rel = table_open(foreigntableid, NoLock);
	shard_deparse_select(&select_sql, root, baserel, rel, fpinfo->topts->table,
						 fpinfo->attrs_used,
						 &retrieved_attrs);
	if (final)
		scan_tlist = shard_order_scan_tlist(root, baserel, rel);
	table_close(rel, NoLock);
	/*
	 * Each condition separately, sharing one numbering of parameters: the
	 * conditions that compare no text column also make up the query for a
	 * shard whose text columns SQLite would compare differently (shardsql.c).
	 */
	shard_find_tenant_clause(baserel, fpinfo->tenant_attnum, &tenant_ri,
							 &prune_kind);
	foreach(lc, fpinfo->remote_conds)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		List	   *one = shard_deparse_conditions(root, baserel,
												   list_make1(ri),
												   &params, &param_kinds);

		all_sqls = list_concat(all_sqls, one);
		if (shard_text_columns(root, list_make1(ri->clause), NIL) == NIL)
			safe_sqls = list_concat(safe_sqls, one);
		if (ri == tenant_ri)
			tenant_sqls = one;
	}

	/*
	 * A parameterized scan may also be pruned by a join clause that pins
	 * the tenant to the outer row's value: its Vars become the nestloop's
	 * parameters (createplan.c replaces them in fdw_exprs), so the shards
	 * are chosen again for each outer row.  PostgreSQL still evaluates the
	 * clause itself, among the local conditions.
	 */
	prune_expr = shard_find_tenant_condition(baserel, fpinfo->tenant_attnum,
											 &prune_kind);
	if (prune_expr == NULL && best_path->path.param_info != NULL)
		prune_expr = find_tenant_condition(root,
										   best_path->path.param_info->ppi_clauses,
										   baserel, fpinfo->tenant_attnum,
										   best_path->path.param_info->ppi_req_outer,
										   &prune_kind);

	/* A tenant list path routes by the list an InitPlan computes. */
	if (prune_expr == NULL && is_tenant_list_path(best_path))
	{
		prune_expr = (Expr *)
			shard_tenant_list_param(root,
									find_base_rel(root,
												  intVal(lsecond(best_path->fdw_private))),
									lthird(best_path->fdw_private));
		prune_kind = PRUNE_ANY;
	}

	shard_scan_private_init(&priv);

	/*
	 * An ordered path's shards sort (and a final path's limit, or a prefix
	 * path's with ties: order.c); OFFSET and LIMIT go between the values to
	 * bind and the tenant value.
	 */
	if (shard_order_is_prefix(best_path))
		priv.order = shard_order_prefix_private(root, baserel,
												best_path->path.pathkeys);
	else if (final || best_path->path.pathkeys != NIL)
		priv.order = shard_order_private(root, baserel,
										 final ? (root->parse->sortClause ?
												  root->sort_pathkeys : NIL) :
										 best_path->path.pathkeys, NIL);
	if (final || shard_order_is_prefix(best_path))
	{
		priv.nlimit_exprs = 2;
		params = lappend(params, root->parse->limitOffset);
		params = lappend(params, root->parse->limitCount);
	}
	if (prune_expr != NULL)
		params = lappend(params, prune_expr);

	priv.select_sql = select_sql.data;
	priv.where_sqls = all_sqls;
	priv.retrieved_attrs = retrieved_attrs;
	priv.param_kinds = param_kinds;
	priv.prune_kind = prune_kind;
	priv.needs = shard_text_columns(root,
									extract_actual_clauses(fpinfo->remote_conds,
														   false),
									NIL);
	priv.safe_where_sqls = safe_sqls;
	priv.tenant_only = shard_rel_tenant_only(baserel);
	priv.tenant_rows = shard_rel_tenant_rows(baserel);
	priv.tenant_sqls = tenant_sqls;

	/*
	 * The pushed conditions double as recheck conditions: a shard that
	 * declares a compared text column without TEXT affinity is read without
	 * them, and PostgreSQL evaluates them instead (shardsql.c).
	 */
	return make_foreignscan(tlist, local_exprs, scanrelid, params,
							shard_scan_private_list(&priv), scan_tlist,
							extract_actual_clauses(fpinfo->remote_conds, false),
							outer_plan);
}
