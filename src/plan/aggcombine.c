/*-------------------------------------------------------------------------
 *
 * aggcombine.c
 *		  An aggregate computed again from the partial aggregates of groups
 *		  of its rows: which partial aggregates it needs, and how they
 *		  combine
 *
 * Two rewrites of a query read groups instead of rows: answering from a
 * rollup (rollupanswer.c), whose table holds each group's aggregates, and
 * eager aggregation (eageragg.c), which groups one table's rows before a
 * join.  Both compute the query's aggregates from the groups' by the one
 * rule here, so that what one treats as exact the other does too:
 *
 * - count(...) is the sum of the groups' counts, as bigint, and 0 (not
 *   NULL) over no group;
 * - sum(x) is the sum of the groups' sums (a sum of bigint sums, numeric,
 *   is made bigint again where the query's sum is bigint);
 * - min(x) and max(x) are the min and max of the groups';
 * - avg(x) is the sum of the groups' sums divided by the sum of their
 *   counts: as numeric division for integers and numerics (the scale of
 *   PostgreSQL's own avg), as float division for double precision;
 * - each with its FILTER, which the groups' aggregates apply.
 *
 * Any other aggregate (DISTINCT, ORDER BY, ordered-set, of another
 * schema) is not combinable.  rollup_create stores, for each aggregate, the
 * parts shard_aggregate_parts names, so that the rollup holds what the
 * rule finds.  Both rewrites read the groups through a range table entry
 * that shard_rte_read_groups makes of the table's own.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "catalog/pg_aggregate.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "plan/aggcombine.h"

/*
 * make_agg
 *		The aggregate pg_catalog.name over column col of the groups' rows
 *		(range table entry varno), or NULL when there is none of its type.
 */
static Expr *
make_agg(const char *name, TargetEntry *col, Index varno)
{
	Var		   *v = makeVar(varno, col->resno, exprType((Node *) col->expr),
							exprTypmod((Node *) col->expr),
							exprCollation((Node *) col->expr), 0);
	Oid			argtype = v->vartype;
	Oid			fn = LookupFuncName(list_make2(makeString("pg_catalog"),
											   makeString(pstrdup(name))),
									1, &argtype, true);
	Aggref	   *agg;

	if (!OidIsValid(fn) || get_func_prokind(fn) != PROKIND_AGGREGATE)
		return NULL;
	agg = makeNode(Aggref);
	agg->aggfnoid = fn;
	agg->aggtype = get_func_rettype(fn);
	agg->aggcollid = (strcmp(name, "sum") == 0) ? InvalidOid : v->varcollid;
	agg->inputcollid = v->varcollid;
	agg->aggtranstype = InvalidOid;
	agg->aggargtypes = list_make1_oid(argtype);
	agg->args = list_make1(makeTargetEntry((Expr *) v, 1, NULL, false));
	agg->aggkind = AGGKIND_NORMAL;
	agg->agglevelsup = 0;
	agg->aggsplit = AGGSPLIT_SIMPLE;
	agg->aggno = -1;
	agg->aggtransno = -1;
	agg->location = -1;
	return (Expr *) agg;
}

/*
 * call1
 *		fn(arg), of result type rettype.
 */
static Expr *
call1(Oid fn, Oid rettype, Expr *arg)
{
	return (Expr *) makeFuncExpr(fn, rettype, list_make1(arg), InvalidOid,
								 InvalidOid, COERCE_EXPLICIT_CALL);
}

/*
 * find_part
 *		The column of the groups holding aggregate a, or NULL.
 */
static TargetEntry *
find_part(List *parts, Aggref *a)
{
	ListCell   *lc;

	foreach(lc, parts)
		if (equal(((TargetEntry *) lfirst(lc))->expr, a))
			return lfirst(lc);
	return NULL;
}

/*
 * avg_part
 *		The sum (or count) of avg a's argument, with its FILTER, as the
 *		parser makes it, or NULL when its argument's type has no sum.
 */
static Aggref *
avg_part(Aggref *a, bool count)
{
	Aggref	   *part = copyObject(a);
	Oid			argtype = linitial_oid(a->aggargtypes);

	if (count)
	{
		part->aggfnoid = F_COUNT_ANY;
		part->aggtype = INT8OID;
	}
	else
	{
		part->aggfnoid = LookupFuncName(list_make2(makeString("pg_catalog"),
												   makeString("sum")),
										1, &argtype, true);
		if (!OidIsValid(part->aggfnoid))
			return NULL;
		part->aggtype = get_func_rettype(part->aggfnoid);
	}
	part->aggcollid = InvalidOid;
	part->aggtranstype = InvalidOid;
	return part;
}

/*
 * combinable_name
 *		The name of aggregate a when it is one the rule above combines, in
 *		its plain form, or NULL.
 */
static char *
combinable_name(Aggref *a)
{
	char	   *name;

	if (a->agglevelsup != 0 || a->aggkind != AGGKIND_NORMAL ||
		a->aggdistinct != NIL || a->aggorder != NIL ||
		a->aggdirectargs != NIL || a->aggsplit != AGGSPLIT_SIMPLE ||
		get_func_namespace(a->aggfnoid) != PG_CATALOG_NAMESPACE)
		return NULL;
	name = get_func_name(a->aggfnoid);
	if (strcmp(name, "avg") != 0 && strcmp(name, "count") != 0 &&
		strcmp(name, "sum") != 0 && strcmp(name, "min") != 0 &&
		strcmp(name, "max") != 0)
		return NULL;
	return name;
}

/*
 * shard_aggregate_parts
 *		The aggregates, over the same rows, that each group must hold for a
 *		to be combined from the groups' (a itself, or avg's sum and count),
 *		or NIL when a is not combinable.
 */
List *
shard_aggregate_parts(Aggref *a)
{
	char	   *name = combinable_name(a);
	Aggref	   *s;

	if (name == NULL)
		return NIL;
	if (strcmp(name, "avg") != 0)
		return list_make1(a);
	s = avg_part(a, false);
	if (s == NULL)
		return NIL;
	return list_make2(s, avg_part(a, true));
}

/*
 * shard_combine_aggregate
 *		The expression computing aggregate a from the groups' partial
 *		aggregates, or NULL.  parts are the groups' columns (TargetEntry:
 *		the aggregate as the query writes it, and its resno), read from
 *		range table entry varno.
 */
Expr *
shard_combine_aggregate(Aggref *a, List *parts, Index varno)
{
	char	   *name = combinable_name(a);
	TargetEntry *col;
	Expr	   *e;

	if (name == NULL)
		return NULL;
	if (strcmp(name, "avg") == 0)
	{
		Aggref	   *sp = avg_part(a, false);
		TargetEntry *s = sp ? find_part(parts, sp) : NULL;
		TargetEntry *n = find_part(parts, avg_part(a, true));
		Expr	   *sum_s,
				   *sum_n;

		if (s == NULL || n == NULL)
			return NULL;
		sum_s = make_agg("sum", s, varno);
		sum_n = make_agg("sum", n, varno);
		if (sum_s == NULL || sum_n == NULL)
			return NULL;
		/* numeric_div(sum, count), as PostgreSQL's avg of integers */
		if (a->aggtype == NUMERICOID && exprType((Node *) sum_s) == NUMERICOID)
			return (Expr *) makeFuncExpr(F_NUMERIC_DIV, NUMERICOID,
										 list_make2(sum_s, sum_n), InvalidOid,
										 InvalidOid, COERCE_EXPLICIT_CALL);
		/* float8 division, as float8_avg (the sum of float4 is float4) */
		if (a->aggtype == FLOAT8OID && exprType((Node *) sum_s) == FLOAT8OID)
			return (Expr *) makeFuncExpr(F_FLOAT8DIV, FLOAT8OID,
										 list_make2(sum_s,
													call1(F_FLOAT8_NUMERIC,
														  FLOAT8OID, sum_n)),
										 InvalidOid, InvalidOid,
										 COERCE_EXPLICIT_CALL);
		return NULL;
	}
	col = find_part(parts, a);
	if (col == NULL)
		return NULL;
	if (strcmp(name, "count") == 0)
	{
		/* coalesce(int8(sum(count)), 0): count is 0, not NULL, of no row */
		CoalesceExpr *c = makeNode(CoalesceExpr);

		e = make_agg("sum", col, varno);
		if (e == NULL || exprType((Node *) e) != NUMERICOID)
			return NULL;
		c->coalescetype = INT8OID;
		c->coalescecollid = InvalidOid;
		c->args = list_make2(call1(F_INT8_NUMERIC, INT8OID, e),
							 makeConst(INT8OID, -1, InvalidOid, 8,
									   Int64GetDatum(0), false,
									   FLOAT8PASSBYVAL));
		c->location = -1;
		return (Expr *) c;
	}
	e = make_agg(name, col, varno);
	if (e == NULL)
		return NULL;
	if (exprType((Node *) e) == a->aggtype)
		return e;
	/* sum of bigint sums (of integers) is numeric: bigint, as theirs */
	if (strcmp(name, "sum") == 0 && a->aggtype == INT8OID &&
		exprType((Node *) e) == NUMERICOID)
		return call1(F_INT8_NUMERIC, INT8OID, e);
	return NULL;
}

/*
 * shard_rte_read_groups
 *		Make range table entry rte, a table's, read the rows of query
 *		groups instead (its columns named colnames, the entry named alias).
 *		The table's privileges are checked where groups reads it.
 */
void
shard_rte_read_groups(RangeTblEntry *rte, Query *groups, const char *alias,
					  List *colnames)
{
	rte->rtekind = RTE_SUBQUERY;
	rte->subquery = groups;
	rte->security_barrier = false;
	rte->relid = InvalidOid;
	rte->relkind = 0;
	rte->rellockmode = 0;
	rte->tablesample = NULL;
	rte->inh = false;
	rte->requiredPerms = 0;
	rte->checkAsUser = InvalidOid;
	rte->selectedCols = NULL;
	rte->insertedCols = NULL;
	rte->updatedCols = NULL;
	rte->extraUpdatedCols = NULL;
	rte->alias = makeAlias(alias, NIL);
	rte->eref = makeAlias(alias, colnames);
}
