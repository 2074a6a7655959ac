/*-------------------------------------------------------------------------
 *
 * eageragg.c
 *		  Eager aggregation: a foreign table's rows grouped in the shards
 *		  before a join that PostgreSQL runs
 *
 * A report that joins a fact table of this wrapper with another table and
 * aggregates only the fact table's columns, as BI tools write them
 *
 *	 SELECT c.plan, count(*), sum(o.amount)
 *	 FROM orders o LEFT JOIN customers c ON o.customer_id = c.customer_id
 *	 GROUP BY c.plan
 *
 * need not bring every row of orders to PostgreSQL when the join cannot be
 * pushed (here it matches rows of different tenants): the same answer
 * comes from orders grouped by the columns the rest of the query uses,
 * with the aggregates' partial values, which the shards compute:
 *
 *	 SELECT c.plan, coalesce(int8(sum(o.n)), 0), sum(o.s)
 *	 FROM (SELECT customer_id, count(*) AS n, sum(amount) AS s
 *		   FROM orders GROUP BY customer_id) o
 *	 LEFT JOIN customers c ON o.customer_id = c.customer_id
 *	 GROUP BY c.plan
 *
 * Each group stands for its rows: they all join the same rows of the other
 * tables, since the join reads only the grouped columns, so each
 * aggregate over the joined rows is combined exactly from the groups'
 * (aggcombine.c).  The query is rewritten so only when:
 *
 * - it is a plain aggregating SELECT (no window function, set-returning
 *   function in its target list, sub-select, grouping set, WITH, locking
 *   clause or set operation);
 * - every aggregate reads one table of this wrapper (not inherited, no
 *   TABLESAMPLE, no row-level security) and is combinable;
 * - that table is not on the nullable side of an outer join, where a row
 *   with no match would be counted by count(*) but not by its group;
 * - each of its columns the rest of the query reads (join conditions,
 *   grouping keys, conditions on other tables too) is of a type whose
 *   equality means identical values (btree "equalimage": not numeric,
 *   floats, or text under a nondeterministic collation), so that a group's
 *   value is each of its rows'.
 *
 * Conditions of WHERE on that table alone filter it inside the grouping.
 * Whether the rewritten query is used is the planner's choice: both forms
 * are planned and the cheaper one kept, with the wrapper's costs of the
 * grouped fan-out, once ANALYZE has counted the table (the number of
 * groups is a guess before), and only where its statistics say the groups
 * are at most half its rows: a query is not planned twice for nothing.
 * Groups past hash_mem do not stop it: the merge of the grouping sets rows
 * aside on disk (merge.c), which its cost counts as PostgreSQL's hash
 * aggregation's.  sqlite_shard_fdw.eager_aggregate = off turns it off;
 * always takes the rewritten form wherever it is exact (to compare).
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/htup_details.h"
#include "access/nbtree.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_statistic.h"
#include "commands/defrem.h"
#include "foreign/fdwapi.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "compat.h"
#include "plan/aggcombine.h"
#include "plan/eageragg.h"

int			shard_eager_aggregate = EAGER_AGGREGATE_ON;

static const struct config_enum_entry eager_aggregate_options[] = {
	{"off", EAGER_AGGREGATE_OFF, false},
	{"on", EAGER_AGGREGATE_ON, false},
	{"always", EAGER_AGGREGATE_ALWAYS, false},
	{"true", EAGER_AGGREGATE_ON, true},
	{"false", EAGER_AGGREGATE_OFF, true},
	{"yes", EAGER_AGGREGATE_ON, true},
	{"no", EAGER_AGGREGATE_OFF, true},
	{"1", EAGER_AGGREGATE_ON, true},
	{"0", EAGER_AGGREGATE_OFF, true},
	{NULL, 0, false}
};

/* What rewriting one query works with. */
typedef struct EagerContext
{
	Query	   *query;
	Index		rti;			/* the table grouped early, or 0 */
	List	   *keys;			/* its columns read outside aggregates
								 * (attnos, in the groups' order) */
	List	   *parts;			/* TargetEntry per partial aggregate: the
								 * aggregate as the query writes it, and
								 * its column in the groups */
	bool		failed;			/* the query is not of the form */
} EagerContext;

/*
 * agg_varnos_walker
 *		Note in *rtis the range table entries the Vars inside an aggregate
 *		read; anything else than plain Vars of this level fails.
 */
static bool
agg_varnos_walker(Node *node, Bitmapset **rtis)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;

		if (v->varlevelsup != 0)
			return true;
		*rtis = bms_add_member(*rtis, v->varno);
		return false;
	}
	if (IsA(node, Aggref) || IsA(node, SubLink) || IsA(node, GroupingFunc) ||
		IsA(node, PlaceHolderVar) || IsA(node, WindowFunc))
		return true;
	return expression_tree_walker(node, agg_varnos_walker, (void *) rtis);
}

/*
 * outside_walker
 *		Walk an expression of the query outside its aggregates: each Var of
 *		the table grouped early becomes one of its keys, each aggregate is
 *		checked (it reads that table alone) and its partial aggregates
 *		noted.
 */
static bool
outside_walker(Node *node, EagerContext *cx)
{
	if (node == NULL || cx->failed)
		return false;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;

		if (v->varlevelsup != 0 || v->varno == 0)
			cx->failed = true;
		else if (v->varno == cx->rti)
		{
			if (v->varattno <= 0)
				cx->failed = true;	/* a whole row or a system column */
			else
				cx->keys = list_append_unique_int(cx->keys, v->varattno);
		}
		else if (rt_fetch(v->varno, cx->query->rtable)->rtekind == RTE_JOIN)
			cx->failed = true;	/* join alias Vars are flattened first */
		return false;
	}
	if (IsA(node, Aggref))
	{
		Aggref	   *a = (Aggref *) node;
		Bitmapset  *rtis = NULL;
		List	   *parts = shard_aggregate_parts(a);
		ListCell   *lc;

		if (parts == NIL ||
			expression_tree_walker((Node *) a->args, agg_varnos_walker,
								   (void *) &rtis) ||
			agg_varnos_walker((Node *) a->aggfilter, &rtis))
		{
			cx->failed = true;
			return false;
		}
		if (rtis != NULL &&
			(bms_membership(rtis) != BMS_SINGLETON ||
			 !bms_is_member(cx->rti, rtis)))
		{
			cx->failed = true;
			return false;
		}
		foreach(lc, parts)
		{
			ListCell   *lp;
			bool		found = false;

			foreach(lp, cx->parts)
				if (equal(((TargetEntry *) lfirst(lp))->expr, lfirst(lc)))
					found = true;
			if (!found)
				cx->parts = lappend(cx->parts,
									makeTargetEntry(lfirst(lc), 0, NULL, false));
		}
		return false;
	}
	if (IsA(node, SubLink) || IsA(node, GroupingFunc) ||
		IsA(node, PlaceHolderVar) || IsA(node, WindowFunc))
	{
		cx->failed = true;
		return false;
	}
	return expression_tree_walker(node, outside_walker, (void *) cx);
}

/*
 * first_agg_walker
 *		Find the range table entry that the first aggregate with a column
 *		reads (the candidate to group early): *rti, or 0.
 */
static bool
first_agg_walker(Node *node, Index *rti)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		Bitmapset  *rtis = NULL;
		Aggref	   *a = (Aggref *) node;

		if (!expression_tree_walker((Node *) a->args, agg_varnos_walker,
									(void *) &rtis) &&
			bms_membership(rtis) == BMS_SINGLETON)
		{
			*rti = bms_singleton_member(rtis);
			return true;
		}
		return false;
	}
	return expression_tree_walker(node, first_agg_walker, (void *) rti);
}

/*
 * check_jointree
 *		Walk the join tree: the table grouped early must not be on the
 *		nullable side of an outer join, and the conditions of joins are
 *		read (outside aggregates) for its keys.
 */
static void
check_jointree(Node *node, bool nullable, EagerContext *cx)
{
	if (node == NULL || cx->failed)
		return;
	if (IsA(node, RangeTblRef))
	{
		if (((RangeTblRef *) node)->rtindex == cx->rti && nullable)
			cx->failed = true;
	}
	else if (IsA(node, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) node;

		switch (j->jointype)
		{
			case JOIN_INNER:
				check_jointree(j->larg, nullable, cx);
				check_jointree(j->rarg, nullable, cx);
				break;
			case JOIN_LEFT:
				check_jointree(j->larg, nullable, cx);
				check_jointree(j->rarg, true, cx);
				break;
			case JOIN_RIGHT:
				check_jointree(j->larg, true, cx);
				check_jointree(j->rarg, nullable, cx);
				break;
			case JOIN_FULL:
				check_jointree(j->larg, true, cx);
				check_jointree(j->rarg, true, cx);
				break;
			default:
				cx->failed = true;
				return;
		}
		outside_walker(j->quals, cx);
	}
	else if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			check_jointree(lfirst(lc), nullable, cx);
	}
	else
		cx->failed = true;
}

/*
 * key_type_is_exact
 *		Does equality of the type (under the collation) mean identical
 *		values, as btree deduplication asks of it?
 */
static bool
key_type_is_exact(Oid type, Oid collation)
{
	Oid			opclass = GetDefaultOpClass(type, BTREE_AM_OID);
	Oid			opfamily;
	Oid			opcintype;
	Oid			proc;

	if (!OidIsValid(opclass))
		return false;
	opfamily = get_opclass_family(opclass);
	opcintype = get_opclass_input_type(opclass);
	proc = get_opfamily_proc(opfamily, opcintype, opcintype,
							 BTEQUALIMAGE_PROC);
	if (!OidIsValid(proc))
		return false;
	return DatumGetBool(OidFunctionCall1Coll(proc, collation,
											 ObjectIdGetDatum(opcintype)));
}

/*
 * list_position_int
 *		The position (from 0) of x in list, or -1.
 */
static int
list_position_int(List *list, int x)
{
	ListCell   *lc;

	foreach(lc, list)
		if (lfirst_int(lc) == x)
			return foreach_current_index(lc);
	return -1;
}

/*
 * remap_mutator
 *		An expression of the query over the groups: the table's keys become
 *		the groups' columns, its aggregates their combinations.
 */
static Node *
remap_mutator(Node *node, EagerContext *cx)
{
	if (node == NULL || cx->failed)
		return node;
	if (IsA(node, Var) && ((Var *) node)->varno == cx->rti &&
		((Var *) node)->varlevelsup == 0)
	{
		Var		   *v = (Var *) copyObject(node);
		int			pos = list_position_int(cx->keys, v->varattno);

		if (pos < 0)
		{
			cx->failed = true;
			return node;
		}
		v->varattno = pos + 1;
		v->varnosyn = 0;
		v->varattnosyn = 0;
		return (Node *) v;
	}
	if (IsA(node, Aggref))
	{
		Expr	   *e = shard_combine_aggregate((Aggref *) node, cx->parts,
												cx->rti);

		if (e == NULL)
			cx->failed = true;
		return (Node *) e;
	}
	return expression_tree_mutator(node, remap_mutator, (void *) cx);
}

/*
 * remap_jointree
 *		remap_mutator of the conditions of every join of the join tree.
 */
static void
remap_jointree(Node *node, EagerContext *cx)
{
	if (node == NULL)
		return;
	if (IsA(node, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) node;

		remap_jointree(j->larg, cx);
		remap_jointree(j->rarg, cx);
		j->quals = remap_mutator(j->quals, cx);
	}
	else if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			remap_jointree(lfirst(lc), cx);
	}
}

/*
 * query_form_ok
 *		Is the query a plain aggregating SELECT of more than one table, as
 *		its form goes?
 */
static bool
query_form_ok(Query *parse)
{
	return parse->commandType == CMD_SELECT && parse->utilityStmt == NULL &&
		parse->hasAggs && !parse->hasWindowFuncs && !parse->hasTargetSRFs &&
		!parse->hasSubLinks && !parse->hasRecursive &&
		!parse->hasModifyingCTE && !parse->hasForUpdate &&
		!parse->hasRowSecurity && parse->cteList == NIL &&
		parse->rowMarks == NIL && parse->setOperations == NULL &&
		parse->groupingSets == NIL && !parse->groupDistinct &&
		list_length(parse->rtable) >= 2;
}

/*
 * grouped_table_ok
 *		Is range table entry rte a table of this wrapper that can be
 *		grouped as it is read?
 */
static bool
grouped_table_ok(RangeTblEntry *rte)
{
	FdwRoutine *routine;

	if (rte->rtekind != RTE_RELATION ||
		rte->relkind != RELKIND_FOREIGN_TABLE ||
		(rte->inh && has_subclass(rte->relid)) ||
		rte->tablesample != NULL || rte->securityQuals != NIL)
		return false;
	routine = GetFdwRoutineByRelId(rte->relid);
	return routine->GetForeignUpperPaths == shardGetForeignUpperPaths;
}

/*
 * rel_reltuples
 *		The rows ANALYZE counted in a table, or -1 when it never did:
 *		without its statistics the number of groups is a guess, on which no
 *		choice should rest.
 */
static double
rel_reltuples(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	double		result;

	if (!HeapTupleIsValid(tup))
		return -1;
	result = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
	ReleaseSysCache(tup);
	return result;
}

/*
 * groups_estimate
 *		How many groups of the table's rows (rows of them) its columns keys
 *		make, from ANALYZE's distinct counts of each (a column without one:
 *		as many as rows).
 */
static double
groups_estimate(Oid relid, List *keys, double rows)
{
	double		groups = 1;
	ListCell   *lc;

	foreach(lc, keys)
	{
		HeapTuple	tup = SearchSysCache3(STATRELATTINH,
										  ObjectIdGetDatum(relid),
										  Int16GetDatum(lfirst_int(lc)),
										  BoolGetDatum(false));
		double		distinct = rows;

		if (HeapTupleIsValid(tup))
		{
			float4		d = ((Form_pg_statistic) GETSTRUCT(tup))->stadistinct;

			if (d > 0)
				distinct = d;
			else if (d < 0)
				distinct = -d * rows;
			ReleaseSysCache(tup);
		}
		groups *= Max(distinct, 1);
	}
	return Min(groups, rows);
}

/*
 * largest_own_table
 *		For a query whose aggregates read no column (count(*) alone), the
 *		table of this wrapper to group early: of those it reads, the one
 *		with the most rows.  Returns its range table index, or 0.
 */
static Index
largest_own_table(Query *q)
{
	Index		best = 0;
	double		best_rows = -2;
	ListCell   *lc;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		double		rows;

		if (!grouped_table_ok(rte))
			continue;
		rows = rel_reltuples(rte->relid);
		if (rows > best_rows)
		{
			best = foreach_current_index(lc) + 1;
			best_rows = rows;
		}
	}
	return best;
}

/*
 * groups_query
 *		The query of the groups: the table's keys and partial aggregates,
 *		over its rows that conds (of the table alone) keep.
 */
static Query *
groups_query(EagerContext *cx, RangeTblEntry *rte, List *conds)
{
	Query	   *g = makeNode(Query);
	RangeTblRef *rtr = makeNode(RangeTblRef);
	Node	   *quals;
	ListCell   *lc;
	AttrNumber	resno = 0;

	g->commandType = CMD_SELECT;
	g->querySource = QSRC_ORIGINAL;
	g->canSetTag = true;
	g->rtable = list_make1(copyObject(rte));
	rtr->rtindex = 1;
	quals = conds == NIL ? NULL : (Node *) make_ands_explicit(conds);
	quals = copyObject(quals);
	ChangeVarNodes(quals, cx->rti, 1, 0);
	g->jointree = makeFromExpr(list_make1(rtr), quals);
	g->hasAggs = true;

	foreach(lc, cx->keys)
	{
		AttrNumber	attno = lfirst_int(lc);
		Oid			type;
		int32		typmod;
		Oid			coll;
		Oid			sortop;
		Oid			eqop;
		bool		hashable;
		TargetEntry *tle;
		SortGroupClause *sgc = makeNode(SortGroupClause);

		get_atttypetypmodcoll(rte->relid, attno, &type, &typmod, &coll);
		get_sort_group_operators(type, true, true, false, &sortop, &eqop,
								 NULL, &hashable);
		resno++;
		tle = makeTargetEntry((Expr *) makeVar(1, attno, type, typmod, coll, 0),
							  resno, get_attname(rte->relid, attno, false),
							  false);
		tle->ressortgroupref = resno;
		sgc->tleSortGroupRef = resno;
		sgc->eqop = eqop;
		sgc->sortop = sortop;
		sgc->nulls_first = false;
		sgc->hashable = hashable;
		g->targetList = lappend(g->targetList, tle);
		g->groupClause = lappend(g->groupClause, sgc);
	}
	foreach(lc, cx->parts)
	{
		TargetEntry *part = lfirst(lc);
		Expr	   *agg = copyObject(part->expr);

		ChangeVarNodes((Node *) agg, cx->rti, 1, 0);
		part->resno = ++resno;
		g->targetList = lappend(g->targetList,
								makeTargetEntry(agg, resno,
												psprintf("part%d", resno),
												false));
	}
	return g;
}

/*
 * shard_eager_aggregate_query
 *		The query rewritten to group a table of this wrapper before its
 *		joins, or NULL when it is not of the form (see above), or when
 *		need_stats and the table was never analyzed.
 */
Query *
shard_eager_aggregate_query(Query *parse, bool need_stats)
{
	EagerContext cx;
	Query	   *q;
	Query	   *groups;
	RangeTblEntry *rte;
	char	   *alias;
	List	   *inner = NIL;
	List	   *outer = NIL;
	List	   *colnames = NIL;
	ListCell   *lc;
	Index		rti = 0;

	if (!query_form_ok(parse))
		return NULL;
	q = copyObject(parse);
	/* USING columns and join aliases read as the tables' own columns */
	q->targetList = (List *)
		flatten_join_alias_vars_compat(q, (Node *) q->targetList);
	q->havingQual = flatten_join_alias_vars_compat(q, q->havingQual);
	q->jointree = (FromExpr *)
		flatten_join_alias_vars_compat(q, (Node *) q->jointree);
	(void) query_tree_walker(q, first_agg_walker, (void *) &rti,
							 QTW_IGNORE_RANGE_TABLE);
	if (rti == 0)
		rti = largest_own_table(q);
	if (rti == 0)
		return NULL;
	rte = rt_fetch(rti, q->rtable);
	if (!grouped_table_ok(rte) ||
		(need_stats && rel_reltuples(rte->relid) < 0))
		return NULL;

	memset(&cx, 0, sizeof(cx));
	cx.query = q;
	cx.rti = rti;
	check_jointree((Node *) q->jointree, false, &cx);

	/* WHERE: conditions on the table alone filter it inside the grouping */
	foreach(lc, make_ands_implicit((Expr *) q->jointree->quals))
	{
		Bitmapset  *rtis = pull_varnos_of_level(NULL, lfirst(lc), 0);

		if (bms_equal(rtis, bms_make_singleton(rti)) &&
			!contain_volatile_functions(lfirst(lc)))
			inner = lappend(inner, lfirst(lc));
		else
		{
			outer = lappend(outer, lfirst(lc));
			outside_walker(lfirst(lc), &cx);
		}
	}
	foreach(lc, q->targetList)
		outside_walker((Node *) ((TargetEntry *) lfirst(lc))->expr, &cx);
	outside_walker(q->havingQual, &cx);
	if (cx.failed)
		return NULL;
	foreach(lc, cx.keys)
	{
		Oid			type;
		int32		typmod;
		Oid			coll;

		get_atttypetypmodcoll(rte->relid, lfirst_int(lc), &type, &typmod,
							  &coll);
		if (!key_type_is_exact(type, coll))
			return NULL;
	}
	/* planned twice only where grouping could at least halve the rows */
	if (need_stats &&
		groups_estimate(rte->relid, cx.keys, rel_reltuples(rte->relid)) * 2 >
		rel_reltuples(rte->relid))
		return NULL;

	/* the table's entry becomes the groups, read with its own checks */
	groups = groups_query(&cx, rte, inner);
	foreach(lc, groups->targetList)
		colnames = lappend(colnames,
						   makeString(pstrdup(((TargetEntry *) lfirst(lc))->resname)));
	q->jointree->quals = outer == NIL ? NULL :
		(Node *) make_ands_explicit(outer);
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		tle->expr = (Expr *) remap_mutator((Node *) tle->expr, &cx);
	}
	q->havingQual = remap_mutator(q->havingQual, &cx);
	q->jointree->quals = remap_mutator(q->jointree->quals, &cx);
	remap_jointree((Node *) q->jointree, &cx);
	if (cx.failed)
		return NULL;

	alias = rte->eref->aliasname;
	shard_rte_read_groups(rte, groups, alias, colnames);
	/* join RTEs' alias lists still name the table's columns: unused now */
	foreach(lc, q->rtable)
	{
		RangeTblEntry *r = lfirst(lc);

		if (r->rtekind == RTE_JOIN)
			r->joinaliasvars = NIL;
	}
	return q;
}

/*
 * shard_eager_aggregate_plan
 *		Plan a query both as it is and grouped early, when it can be, and
 *		keep the cheaper plan; plan is the planner to call.
 */
PlannedStmt *
shard_eager_aggregate_plan(Query *parse, const char *query_string,
						   int cursorOptions, ParamListInfo boundParams,
						   planner_hook_type plan)
{
	Query	   *q = NULL;
	PlannedStmt *eager;
	PlannedStmt *plain;

	if (shard_eager_aggregate != EAGER_AGGREGATE_OFF)
		q = shard_eager_aggregate_query(parse,
										shard_eager_aggregate == EAGER_AGGREGATE_ON);
	if (q == NULL)
		return plan(parse, query_string, cursorOptions, boundParams);
	eager = plan(q, query_string, cursorOptions, boundParams);
	if (shard_eager_aggregate == EAGER_AGGREGATE_ALWAYS)
		return eager;
	plain = plan(parse, query_string, cursorOptions, boundParams);
	if (eager->planTree->total_cost < plain->planTree->total_cost)
		return eager;
	return plain;
}

/*
 * shard_eageragg_init
 *		Define the setting (at load).
 */
void
shard_eageragg_init(void)
{
	DefineCustomEnumVariable("sqlite_shard_fdw.eager_aggregate",
							 "Groups a foreign table's rows in the shards before a join PostgreSQL runs, where that is exact.",
							 "on does so where the plan is cheaper; always wherever it is exact; off never.",
							 &shard_eager_aggregate,
							 EAGER_AGGREGATE_ON,
							 eager_aggregate_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
}
