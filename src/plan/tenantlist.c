/*-------------------------------------------------------------------------
 *
 * tenantlist.c
 *		  Run-time tenant lists: the tenants another relation of the query
 *		  produces, computed once before a scan starts
 *
 * A query that joins a foreign table with a local one on the tenant column
 * (accounts JOIN orders USING (tenant_id) WHERE accounts.enterprise, or
 * orders.tenant_id IN (SELECT ...)) needs only the shards of the tenants
 * the local side produces.  In a nested loop the foreign scan is
 * parameterized by the outer row (planner.c); a hash or merge join reads
 * the foreign table once, and would read every shard.  So the scan may
 * instead start from a list: an InitPlan computes the distinct values of
 * the local side's column over the local rows its own conditions keep
 * (ARRAY(SELECT DISTINCT col FROM local WHERE ...)), and the scan routes
 * by them as by "tenant = ANY (array)".
 *
 * That is exact because the join clause can be enforced at the foreign
 * scan (join_clause_is_movable_to): a foreign row whose tenant the list
 * lacks would meet no local row.  The list may hold more values than the
 * join meets, never fewer: only conditions of the local relation that
 * compute the same value twice are copied (no volatile functions, nothing
 * from outer rows); a relation under row-level security or a security
 * barrier is not used at all, since its conditions would run in another
 * order.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/planner.h"
#include "optimizer/subselect.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"
#include "utils/typcache.h"

#include "compat.h"

/*
 * computed_once_walker
 *		Does an expression hold anything that a second evaluation could
 *		compute otherwise, or that only a surrounding plan supplies?
 */
static bool
computed_once_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return ((Param *) node)->paramkind != PARAM_EXTERN;
	if (IsA(node, SubPlan) || IsA(node, AlternativeSubPlan) ||
		IsA(node, SubLink) || IsA(node, PlaceHolderVar) ||
		IsA(node, Aggref) || IsA(node, WindowFunc) ||
		IsA(node, GroupingFunc))
		return true;
	if (IsA(node, Var) && ((Var *) node)->varlevelsup > 0)
		return true;
	return expression_tree_walker(node, computed_once_walker, context);
}

/*
 * same_twice
 *		Does an expression compute the same value whenever it is evaluated
 *		within the statement?
 */
static bool
same_twice(Node *expr)
{
	return !contain_volatile_functions(expr) &&
		!computed_once_walker(expr, NULL);
}

/*
 * shard_tenant_list_source_ok
 *		May the values of value, an expression of relation rel alone, be
 *		computed ahead of the scan, from rel's rows?  Its type needs an
 *		equality for the list's DISTINCT, found now rather than failing
 *		when the plan is made.
 */
bool
shard_tenant_list_source_ok(PlannerInfo *root, RelOptInfo *rel, Expr *value)
{
	RangeTblEntry *rte;
	ListCell   *lc;

	if (!OidIsValid(lookup_type_cache(exprType((Node *) value),
									  TYPECACHE_EQ_OPR)->eq_opr))
		return false;
	if (rel->reloptkind != RELOPT_BASEREL || rel->rtekind != RTE_RELATION ||
		!bms_is_empty(rel->lateral_relids))
		return false;
	rte = planner_rt_fetch(rel->relid, root);
	if (rte->tablesample != NULL || rte->securityQuals != NIL)
		return false;
	foreach(lc, rel->baserestrictinfo)
		if (lfirst_node(RestrictInfo, lc)->security_level > 0)
			return false;
	return same_twice((Node *) value) &&
		OidIsValid(get_array_type(exprType((Node *) value)));
}

/*
 * source_quals
 *		The conditions of rel that the list's query repeats.
 */
static List *
source_quals(RelOptInfo *rel)
{
	List	   *quals = NIL;
	ListCell   *lc;

	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);

		if (same_twice((Node *) ri->clause))
			quals = lappend(quals, ri->clause);
	}
	return quals;
}

/*
 * shard_tenant_list_values
 *		How many distinct values the list holds, as the planner estimates.
 */
double
shard_tenant_list_values(PlannerInfo *root, RelOptInfo *rel, Expr *value)
{
	return estimate_num_groups(root, list_make1(value), rel->rows, NULL,
							   NULL);
}

/*
 * shard_tenant_list_cost
 *		What computing the list costs: a scan of rel with its conditions
 *		(of a foreign table of this wrapper, its shards' scan, cost.c).
 */
Cost
shard_tenant_list_cost(PlannerInfo *root, RelOptInfo *rel)
{
	QualCost	qc;
	Cost		startup;
	Cost		total;

	if (rel->fdwroutine != NULL && rel->fdw_private != NULL &&
		rel->fdwroutine->GetForeignUpperPaths == shardGetForeignUpperPaths)
	{
		shard_cost_scan(root, rel, &startup, &total);
		return total + rel->rows * cpu_operator_cost;
	}

	cost_qual_eval(&qc, source_quals(rel), root);
	return rel->pages * seq_page_cost +
		rel->tuples * (cpu_tuple_cost + qc.per_tuple) + qc.startup +
		rel->rows * cpu_operator_cost;
}

/*
 * shard_tenant_list_param
 *		Plan "SELECT DISTINCT value FROM rel WHERE its conditions" as an
 *		InitPlan of root that returns the values as an array, and return the
 *		Param that holds it.  Called while the scan's plan is built, as
 *		planagg.c builds the InitPlans of min and max.
 */
Param *
shard_tenant_list_param(PlannerInfo *root, RelOptInfo *rel, Expr *value)
{
	Query	   *query = makeNode(Query);
	RangeTblEntry *rte = copyObject(planner_rt_fetch(rel->relid, root));
	Expr	   *target = copyObject(value);
	List	   *quals = copyObject(source_quals(rel));
	Oid			valtype = exprType((Node *) value);
	TargetEntry *tle;
	SortGroupClause *sgc = makeNode(SortGroupClause);
	RangeTblRef *rtr = makeNode(RangeTblRef);
	PlannerInfo *subroot;
	RelOptInfo *final_rel;
	Plan	   *plan;
	Param	   *param;
	SubPlan    *subplan;

	/* the relation alone, as range table entry 1 of its own query */
	ChangeVarNodes((Node *) target, rel->relid, 1, 0);
	ChangeVarNodes((Node *) quals, rel->relid, 1, 0);
	query->commandType = CMD_SELECT;
	query->querySource = QSRC_ORIGINAL;
	query->canSetTag = true;
	query->rtable = list_make1(rte);
	copy_rte_perms_compat(query, root, rte);
	rtr->rtindex = 1;
	query->jointree = makeFromExpr(list_make1(rtr),
								   quals == NIL ? NULL :
								   (Node *) make_ands_explicit(quals));
	tle = makeTargetEntry(target, 1, pstrdup("tenant"), false);
	tle->ressortgroupref = 1;
	query->targetList = list_make1(tle);

	/* DISTINCT: each tenant once */
	get_sort_group_operators(valtype, false, true, false,
							 &sgc->sortop, &sgc->eqop, NULL, &sgc->hashable);
	sgc->tleSortGroupRef = 1;
	sgc->nulls_first = false;
	query->distinctClause = list_make1(sgc);

	subroot = subquery_planner_compat(root->glob, query, root, false, 0.0);
	final_rel = fetch_upper_rel(subroot, UPPERREL_FINAL, NULL);
	plan = create_plan(subroot, final_rel->cheapest_total_path);

	/* an InitPlan of the query, its rows collected into an array */
	param = SS_make_initplan_output_param(root, get_array_type(valtype), -1,
										  exprCollation((Node *) value));
	SS_make_initplan_from_plan(root, subroot, plan, param);
	subplan = llast_node(SubPlan, root->init_plans);
	subplan->subLinkType = ARRAY_SUBLINK;
	return param;
}
