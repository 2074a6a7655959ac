/*-------------------------------------------------------------------------
 *
 * order.c
 *		  ORDER BY and LIMIT of row scans, planned into the shards
 *
 * A query that reads one foreign table's rows and asks for the first few
 * in some order ("the latest ten orders") is answered by the shards: each
 * shard runs the ORDER BY with LIMIT offset + count, where an index serves
 * it, and the scan merges the shards' rows in order as they come, reading
 * each only as far as the merge takes its rows (scanmerge.c), or, for a
 * join the shards run, sorts the few rows that arrive (a bounded sort over
 * at most shards x (OFFSET + LIMIT) rows); it applies OFFSET and LIMIT.  A
 * scan of one shard whose order is exact streams the shard's rows as they
 * come, OFFSET and LIMIT included in its SQL.
 *
 * Planning follows postgres_fdw: a routed scan (tenant = value, one
 * shard) offers a path with the query's pathkeys, so that PostgreSQL needs
 * no Sort above it; the UPPERREL_FINAL stage offers a path that also
 * applies LIMIT and OFFSET.  That path is a ForeignScan with scanrelid 0
 * whose scan tuple has every column of the table in attribute order
 * (fdw_scan_tlist), so that the scan fills it exactly as it fills a table
 * row, and PostgreSQL projects the query's target from it.
 *
 * A key is pushed only where SQLite's order of the stored values is
 * PostgreSQL's order of the values the wrapper reads, as for conditions:
 *
 * - smallint, integer, bigint in columns declared with INTEGER or NUMERIC
 *   affinity (text that looks like a number is stored as one);
 * - text and unbounded varchar under the "C" collation, in columns with
 *   TEXT affinity in UTF-8 databases (COLLATE BINARY is then code point
 *   order);
 * - timestamp, timestamptz and date as the first key: SQLite orders the
 *   stored text, which is the time order only for the canonical form
 *   (YYYY-MM-DD HH:MM:SS[.fraction without trailing zeros], or YYYY-MM-DD
 *   for a date).  Each shard therefore returns its first rows among the
 *   canonical values, plus every row of another form (numbers, 'T', an
 *   offset, trailing zeros) that an offset or its form may move past the
 *   last of those (shardsql.c, append_window_sql; every such row when they do
 *   not fill the limit), and the scan's sort, by the values read, keeps
 *   the right ones.  So also for a time column of any table of a join the
 *   shards run: the join's SELECT names it SHARD_TIME_KEY_ALIAS, for the
 *   window's queries over the first rows to find it.
 *
 * NULLS FIRST and LAST are written out.  A shard that does not declare a
 * key column as the order needs (checked when it is read) returns all its
 * matching rows, unsorted, and the scan sorts them; so does a shard whose
 * conditions PostgreSQL rechecks.  Anything else (numeric, float, boolean,
 * other collations, expressions, conditions PostgreSQL evaluates, targets
 * that compute more than columns) is sorted and limited by PostgreSQL.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/syscache.h"

#include "compat.h"

/* Marks a final path (fdw_private) as this file's. */
#define ORDER_FINAL_MARK "ordered rows"

/* Marks a path sorted by a prefix of the query's order, with ties. */
#define ORDER_PREFIX_MARK "rows ordered by a prefix, with ties"

/*
 * The shards' work per matching row of an order they sort, in operators:
 * they read their first rows by an index, or sort what matches.
 */
#define ORDER_ROW_COST 0.1

/* One sort key of a row scan, as found in a pathkey. */
typedef struct OrderKey
{
	Var		   *var;			/* the column */
	Oid			sortop;			/* < or > of its type */
	Oid			coll;
	bool		desc;
	bool		nulls_first;
} OrderKey;

static void shard_order_prefix_path(PlannerInfo *root, RelOptInfo *baserel);
static bool join_keys_ok(PlannerInfo *root, RelOptInfo *joinrel,
						 List *pathkeys);
static bool join_key_needs(PlannerInfo *root, RelOptInfo *joinrel,
						   List *pathkeys, List **needs, List **relids);

/*
 * is_time_key
 *		A date or time type, pushed as the first key only (see the header).
 */
static bool
is_time_key(Oid typid)
{
	return typid == TIMESTAMPOID || typid == TIMESTAMPTZOID ||
		typid == DATEOID;
}

/*
 * pathkey_key
 *		The column of this scan that a pathkey sorts by, if SQLite can sort
 *		it exactly as PostgreSQL does (see the header); first says whether
 *		it is the first key.
 */
static bool
pathkey_key(PlannerInfo *root, RelOptInfo *baserel, PathKey *pk, bool first,
			OrderKey *key)
{
	EquivalenceClass *ec = pk->pk_eclass;
	ListCell   *lc;
	Oid			ltop;
	Oid			gtop;

	if (ec->ec_has_volatile)
		return false;
	if (pk->pk_strategy != BTLessStrategyNumber &&
		pk->pk_strategy != BTGreaterStrategyNumber)
		return false;
	foreach(lc, ec->ec_members)
	{
		EquivalenceMember *em = lfirst(lc);
		Var		   *var;
		Oid			type;

		/* of a join the shards run: a column of one of its tables */
		if (em->em_is_const || em->em_is_child ||
			!(IS_JOIN_REL(baserel) ?
			  (bms_membership(em->em_relids) == BMS_SINGLETON &&
			   bms_is_subset(em->em_relids, baserel->relids)) :
			  bms_equal(em->em_relids, baserel->relids)))
			continue;
		var = shard_own_column(em->em_expr, baserel);
		if (var == NULL || var->varattno <= 0)
			continue;
		type = var->vartype;
		switch (type)
		{
			case INT2OID:
			case INT4OID:
			case INT8OID:
				break;
			case TEXTOID:
			case VARCHAROID:
				/* varchar(n) reads drop trailing spaces beyond n */
				if (type == VARCHAROID && var->vartypmod >= 0)
					continue;
				if (!OidIsValid(ec->ec_collation) ||
					!lc_collate_is_c(ec->ec_collation))
					continue;
				break;
			case TIMESTAMPOID:
			case TIMESTAMPTZOID:
			case DATEOID:
				if (!first)
					continue;
				break;
			default:
				continue;
		}
		/* the type's own ordering, not text_pattern_ops or a cross-type one */
		if (exprType((Node *) em->em_expr) != type)
			continue;
		get_sort_group_operators(type, false, false, false,
								 &ltop, NULL, &gtop, NULL);
		key->sortop = get_opfamily_member(pk->pk_opfamily, type, type,
										  pk->pk_strategy);
		if (key->sortop != (pk->pk_strategy == BTLessStrategyNumber ? ltop : gtop))
			continue;
		key->var = var;
		key->coll = ec->ec_collation;
		key->desc = (pk->pk_strategy == BTGreaterStrategyNumber);
		key->nulls_first = pk->pk_nulls_first;
		return true;
	}
	return false;
}

/*
 * order_keys
 *		The sort keys of pathkeys, or NIL (with *ok false) when one cannot
 *		be pushed.
 */
static List *
order_keys(PlannerInfo *root, RelOptInfo *baserel, List *pathkeys, bool *ok)
{
	List	   *keys = NIL;
	ListCell   *lc;

	*ok = true;
	foreach(lc, pathkeys)
	{
		OrderKey   *key = palloc0(sizeof(OrderKey));

		if (!pathkey_key(root, baserel, lfirst(lc), keys == NIL, key))
		{
			*ok = false;
			return NIL;
		}
		keys = lappend(keys, key);
	}
	return keys;
}

/*
 * key_need
 *		What a shard must declare of a key column for its own order to be
 *		trusted (a SHARD_NEEDS_ entry), or NULL for a time key, whose order
 *		the scan checks by its form instead.
 */
static char *
key_need(PlannerInfo *root, Var *var)
{
	RangeTblEntry *rte = planner_rt_fetch(var->varno, root);
	char		need;

	if (is_time_key(var->vartype))
		return NULL;
	need = (var->vartype == TEXTOID || var->vartype == VARCHAROID) ?
		SHARD_NEEDS_TEXT_ORDER : SHARD_NEEDS_INTEGER;
	return psprintf("%c%s", need, shard_column_name(rte->relid, var->varattno));
}

/*
 * shard_order_add_paths
 *		Offer a path of a routed scan (one tenant, so one shard) that
 *		returns its rows in the query's order, sorted by SQLite: no Sort is
 *		needed above it.  Paths of other scans are not ordered: their
 *		shards' rows would need a merge; but that of a limited query whose
 *		order the shards can sort only a prefix of is (see
 *		shard_order_prefix_path).
 */
void
shard_order_add_paths(PlannerInfo *root, RelOptInfo *baserel, double rows,
					  Cost total)
{
	ShardPruneKind kind;
	bool		ok;
	List	   *keys;

	if (root->query_pathkeys == NIL || !bms_is_empty(baserel->lateral_relids) ||
		!shard_rel_all_pushed(baserel))
		return;
	shard_order_prefix_path(root, baserel);
	if (shard_find_tenant_condition(baserel, shard_rel_tenant_attnum(baserel),
									&kind) == NULL || kind != PRUNE_EQ)
		return;
	keys = order_keys(root, baserel, root->query_pathkeys, &ok);
	if (!ok || is_time_key(((OrderKey *) linitial(keys))->var->vartype))
		return;
	/*
	 * Where no index serves the order, SQLite sorts every row before it
	 * returns the first: count the whole scan as start-up, so that a path
	 * that needs only the first row (min() as ORDER BY ... LIMIT 1) does
	 * not look cheaper than it is.
	 */
	total += rows * cpu_operator_cost;
	add_path(baserel, (Path *)
			 create_foreignscan_path_compat(root, baserel, NULL, rows,
											total, total,
											root->query_pathkeys, NULL, NULL,
											NIL));
}

/*
 * prefix_query_ok
 *		Is the query nothing but one foreign table's rows (baserel's),
 *		conditions all in the shards, plain columns out, an ORDER BY and a
 *		LIMIT the scan can evaluate when it starts?  Then the Limit node is
 *		the plan's top, and any path of the table ends below it, sorted to
 *		the whole order: a scan that returns only its shards' first rows
 *		(with ties) by a prefix of the order loses no row the limit keeps.
 */
static bool
prefix_query_ok(PlannerInfo *root, RelOptInfo *baserel)
{
	Query	   *parse = root->parse;
	ListCell   *lc;

	if (parse->commandType != CMD_SELECT || parse->limitCount == NULL ||
		parse->limitOption != LIMIT_OPTION_COUNT ||
		parse->sortClause == NIL || root->sort_pathkeys == NIL ||
		!equal(root->query_pathkeys, root->sort_pathkeys) ||
		parse->hasAggs || parse->groupClause || parse->groupingSets ||
		parse->havingQual || parse->hasWindowFuncs || parse->distinctClause ||
		parse->hasTargetSRFs || parse->rowMarks || parse->setOperations ||
		!shard_limit_value_ok(parse->limitOffset) ||
		!shard_limit_value_ok(parse->limitCount))
		return false;
	if (baserel->reloptkind != RELOPT_BASEREL ||
		!bms_equal(root->all_baserels, baserel->relids) ||
		!bms_is_empty(baserel->lateral_relids) ||
		!shard_rel_all_pushed(baserel))
		return false;
	foreach(lc, baserel->baserestrictinfo)
		if (((RestrictInfo *) lfirst(lc))->pseudoconstant)
			return false;

	/*
	 * Outputs that compute would be computed only for the rows the shards
	 * return (see final_target_plain); the final target is not made yet,
	 * the processed target list is.
	 */
	foreach(lc, root->processed_tlist)
	{
		Expr	   *expr = shard_strip_relabel(((TargetEntry *) lfirst(lc))->expr);
		Var		   *var = shard_own_column(expr, baserel);

		if (IsA(expr, Const))
			continue;
		if (var == NULL || var->varattno <= 0)
			return false;
	}
	return true;
}

/*
 * shard_order_prefix_path
 *		Offer a path that returns the table's rows sorted by the longest
 *		prefix of the query's ORDER BY that the shards can sort, when the
 *		rest of it cannot be (text under another collation, numeric, an
 *		expression, a time after the first key): each shard returns its
 *		first OFFSET + LIMIT rows by that prefix and every row tied with
 *		the last of them on the first key (SQLite has no WITH TIES), the
 *		scan merges them in the prefix's order, and PostgreSQL finishes the
 *		sort with an Incremental Sort and applies the limit above it.  An
 *		order the shards sort whole is a final path's
 *		(shard_order_final_paths) instead.
 *
 * A row among the first n of the whole order is among the first n by the
 * first key, so its first key is at or before the n-th smallest of the
 * fleet, which is at or before the n-th of its own shard: every shard's
 * rows up to and tied with its n-th hold every row the limit keeps.
 */
static void
shard_order_prefix_path(PlannerInfo *root, RelOptInfo *baserel)
{
	List	   *prefix = NIL;
	ListCell   *lc;
	ShardQueryCost q = {0};
	double		rows;
	Cost		startup;
	Cost		total;

	if (!prefix_query_ok(root, baserel))
		return;
	foreach(lc, root->query_pathkeys)
	{
		OrderKey	key;

		if (!pathkey_key(root, baserel, lfirst(lc), prefix == NIL, &key))
			break;
		prefix = lappend(prefix, lfirst(lc));
	}
	if (prefix == NIL ||
		list_length(prefix) == list_length(root->query_pathkeys))
		return;

	/*
	 * The first rows of each shard come back (of one shard for one
	 * tenant), ordered by the prefix: PostgreSQL's Incremental Sort above
	 * sorts only the first groups, which the limit needs.  The shards read
	 * them by an index, as a final path's.
	 */
	q.nshards = shard_cost_shards(root, baserel);
	rows = baserel->rows;
	if (root->limit_tuples > 0 && root->limit_tuples * q.nshards < rows)
		rows = root->limit_tuples * q.nshards;
	q.scanned = shard_cost_scanned(baserel);
	q.pushed_rows = baserel->rows * shard_cost_scale(baserel);
	q.pushed_per_row = ORDER_ROW_COST;
	q.returned = baserel->rows * shard_cost_scale(baserel);
	if (root->limit_tuples > 0)
		q.returned = Min(q.returned, root->limit_tuples * q.nshards);
	shard_cost_query(&q, &startup, &total);
	add_path(baserel, (Path *)
			 create_foreignscan_path_compat(root, baserel, NULL, rows,
											startup, total, prefix, NULL,
											NULL,
											list_make1(makeString(ORDER_PREFIX_MARK))));
}

/*
 * shard_order_is_prefix
 *		Is best_path a path of shard_order_prefix_path?
 */
bool
shard_order_is_prefix(ForeignPath *best_path)
{
	List	   *p = best_path->fdw_private;

	return list_length(p) == 1 && IsA(linitial(p), String) &&
		strcmp(strVal(linitial(p)), ORDER_PREFIX_MARK) == 0;
}

/*
 * final_target_plain
 *		Is every output of the query a column of the scan (or a constant)?
 *		PostgreSQL would compute other outputs for every row it sorts; the
 *		scan computes them only for the rows it returns, and an expression
 *		that fails on a row past the limit must not be hidden.  Whole-row
 *		and system columns are not in the scan's tuple.
 */
static bool
final_target_plain(PlannerInfo *root, RelOptInfo *baserel)
{
	ListCell   *lc;

	foreach(lc, root->upper_targets[UPPERREL_FINAL]->exprs)
	{
		Expr	   *expr = shard_strip_relabel((Expr *) lfirst(lc));
		Var		   *var = shard_own_column(expr, baserel);

		if (IsA(expr, Const))
			continue;
		if (var == NULL || var->varattno <= 0)
			return false;
	}
	return true;
}

/*
 * shard_order_final_paths
 *		At UPPERREL_FINAL, offer a path that sorts and limits one foreign
 *		table's rows in the shards, when the query is nothing but that
 *		table's rows, ORDER BY columns and LIMIT.
 */
void
shard_order_final_paths(PlannerInfo *root, RelOptInfo *input_rel,
						RelOptInfo *output_rel, FinalPathExtraData *extra)
{
	Query	   *parse = root->parse;
	RelOptInfo *baserel;
	List	   *keys = NIL;
	bool		ok = true;
	ShardQueryCost q = {0};
	double		rows;
	Cost		startup;
	Cost		total;
	int			relid;
	ListCell   *lc;

	if (!extra->limit_needed || parse->limitCount == NULL ||
		parse->commandType != CMD_SELECT ||
		parse->limitOption != LIMIT_OPTION_COUNT ||
		parse->hasAggs || parse->groupClause || parse->groupingSets ||
		parse->havingQual || parse->hasWindowFuncs || parse->distinctClause ||
		parse->hasTargetSRFs || parse->rowMarks || parse->setOperations ||
		!shard_limit_value_ok(parse->limitOffset) ||
		!shard_limit_value_ok(parse->limitCount))
		return;
	if (bms_membership(root->all_baserels) != BMS_SINGLETON)
	{
		/* the rows of a join the shards run, every condition included */
		baserel = find_join_rel(root, root->all_baserels);
		if (baserel == NULL || !shard_join_rel_pushed(baserel) ||
			!join_keys_ok(root, baserel, parse->sortClause ?
						  root->sort_pathkeys : NIL))
			return;
		relid = 0;
	}
	else
	{
		relid = bms_singleton_member(root->all_baserels);
		baserel = find_base_rel(root, relid);
	}
	if (relid == 0)
		;						/* a join, checked above */
	else if (baserel->reloptkind != RELOPT_BASEREL ||
		baserel->rtekind != RTE_RELATION ||
		planner_rt_fetch(relid, root)->relkind != RELKIND_FOREIGN_TABLE ||
		baserel->fdwroutine == NULL ||
		baserel->fdwroutine->GetForeignUpperPaths != shardGetForeignUpperPaths ||
		baserel->fdw_private == NULL ||
		!bms_is_empty(baserel->lateral_relids) ||
		!shard_rel_all_pushed(baserel))
		return;
	/* a condition without columns gates the plan in a Result node */
	foreach(lc, relid == 0 ? NIL : baserel->baserestrictinfo)
		if (((RestrictInfo *) lfirst(lc))->pseudoconstant)
			return;
	if (parse->sortClause)
	{
		if (root->sort_pathkeys == NIL)
			return;
		keys = order_keys(root, baserel, root->sort_pathkeys, &ok);
		if (!ok)
			return;
	}
	if (!final_target_plain(root, baserel))
		return;

	/*
	 * The shards read their first rows by an index or sort what matches;
	 * either way far less comes back than the whole table.
	 */
	rows = baserel->rows;
	if (extra->count_est > 0 && extra->count_est < rows)
		rows = extra->count_est;
	q.nshards = shard_cost_shards(root, baserel);
	if (keys != NIL)
	{
		q.scanned = shard_cost_scanned(baserel);
		q.pushed_rows = baserel->rows * shard_cost_scale(baserel);
		q.pushed_per_row = ORDER_ROW_COST;
		q.returned = Min(rows * q.nshards, q.pushed_rows);
	}
	else
	{
		/* unsorted, each shard stops at the limit, the scan when it has it */
		q.returned = rows;
	}
	shard_cost_query(&q, &startup, &total);
	add_path(output_rel, (Path *)
			 create_foreign_upper_path_compat(root, output_rel,
											  root->upper_targets[UPPERREL_FINAL],
											  rows, startup, total,
											  parse->sortClause ?
											  root->sort_pathkeys : NIL,
											  NULL,
											  list_make1(makeString(ORDER_FINAL_MARK))));
}

/*
 * join_keys_ok
 *		Does the fleet's first shard declare the key columns of an order of
 *		a join's rows as SQLite's order of them needs?  A join's shards are
 *		bounded alike: one that declares a key otherwise is an error, as for
 *		the join's own columns (joinscan.c), not a shard read unsorted.
 */
static bool
join_keys_ok(PlannerInfo *root, RelOptInfo *joinrel, List *pathkeys)
{
	List	   *needs = NIL;
	List	   *relids = NIL;

	if (!join_key_needs(root, joinrel, pathkeys, &needs, &relids))
		return false;
	return shard_join_schema_meets(root, joinrel, needs, relids);
}

/*
 * join_key_needs
 *		What each key of an order of a join's rows needs of its column
 *		(*needs), and of which table (*relids); false when a key cannot be
 *		pushed.
 */
static bool
join_key_needs(PlannerInfo *root, RelOptInfo *joinrel, List *pathkeys,
			   List **needs, List **relids)
{
	List	   *keys;
	ListCell   *lc;
	bool		ok;

	keys = order_keys(root, joinrel, pathkeys, &ok);
	if (!ok)
		return false;
	foreach(lc, keys)
	{
		OrderKey   *key = lfirst(lc);
		char	   *need = key_need(root, key->var);

		/* a time key's order is checked by the form of each value read */
		if (need == NULL)
			continue;
		*needs = lappend(*needs, makeString(need));
		*relids = lappend_int(*relids, key->var->varno);
	}
	return true;
}

/*
 * shard_order_join_needs
 *		What the order of a final path over a join (the query's ORDER BY)
 *		needs of each table's columns, for join.c to check on every shard.
 */
void
shard_order_join_needs(PlannerInfo *root, RelOptInfo *joinrel, List **needs,
					   List **relids)
{
	if (!join_key_needs(root, joinrel,
						root->parse->sortClause ? root->sort_pathkeys : NIL,
						needs, relids))
		elog(ERROR, "ordered foreign path has a key the shards cannot sort");
}

/*
 * shard_order_key_vars
 *		The columns a final path over a join sorts its rows by (the query's
 *		ORDER BY), for the join's scan tuple to carry them: the scan sorts
 *		the shards' rows by them.
 */
List *
shard_order_key_vars(PlannerInfo *root, RelOptInfo *joinrel)
{
	List	   *vars = NIL;
	List	   *keys;
	ListCell   *lc;
	bool		ok;

	keys = order_keys(root, joinrel,
					  root->parse->sortClause ? root->sort_pathkeys : NIL,
					  &ok);
	if (!ok)
		elog(ERROR, "ordered foreign path has a key the shards cannot sort");
	foreach(lc, keys)
		vars = lappend(vars, ((OrderKey *) lfirst(lc))->var);
	return vars;
}

/*
 * shard_order_time_key_var
 *		The column of a final path over a join whose values are its first
 *		sort key when that is a date or time, else NULL: join.c names it
 *		SHARD_TIME_KEY_ALIAS in the shards' SELECT, for the window's
 *		queries over the first rows (shardsql.c) to find it among the join's
 *		columns, whatever their names.
 */
Var *
shard_order_time_key_var(PlannerInfo *root, RelOptInfo *joinrel)
{
	List	   *vars = shard_order_key_vars(root, joinrel);

	if (vars == NIL || !is_time_key(((Var *) linitial(vars))->vartype))
		return NULL;
	return linitial(vars);
}

/*
 * shard_order_is_final
 *		Is best_path a final path of shard_order_final_paths?
 */
bool
shard_order_is_final(ForeignPath *best_path)
{
	List	   *p = best_path->fdw_private;

	return list_length(p) == 1 && IsA(linitial(p), String) &&
		strcmp(strVal(linitial(p)), ORDER_FINAL_MARK) == 0;
}

/*
 * shard_order_base_rel
 *		The one scanned foreign table of a final path's query, or the join
 *		the shards run.
 */
RelOptInfo *
shard_order_base_rel(PlannerInfo *root)
{
	if (bms_membership(root->all_baserels) != BMS_SINGLETON)
		return find_join_rel(root, root->all_baserels);
	return find_base_rel(root, bms_singleton_member(root->all_baserels));
}

/*
 * shard_order_scan_tlist
 *		The scan tuple of a final path: every column of the table, in
 *		attribute order (a NULL where a column was dropped), so that
 *		column n of the table is column n of the scan tuple.
 */
List *
shard_order_scan_tlist(PlannerInfo *root, RelOptInfo *baserel, Relation rel)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	List	   *tlist = NIL;
	int			i;

	for (i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);
		Expr	   *expr;

		if (att->attisdropped)
			expr = (Expr *) makeNullConst(INT4OID, -1, InvalidOid);
		else
			expr = (Expr *) makeVar(baserel->relid, att->attnum, att->atttypid,
									att->atttypmod, att->attcollation, 0);
		tlist = lappend(tlist, makeTargetEntry(expr, i + 1, NULL, false));
	}
	return tlist;
}

/*
 * time_window
 *		The FdwScanOrderWindow entry of a first key of a date or time type:
 *		the column, its predicate "stored in the canonical form", whether
 *		descending, whether a date, and the column's name among the first
 *		rows' columns (of a join, its alias in the SELECT; join.c); NIL
 *		otherwise.
 */
static List *
time_window(PlannerInfo *root, OrderKey *key, bool join)
{
	StringInfoData col;
	StringInfoData canon;
	bool		old;

	if (!is_time_key(key->var->vartype))
		return NIL;
	initStringInfo(&col);
	old = shard_deparse_set_qualified(join);
	shard_deparse_column_ref(&col, root, key->var);
	shard_deparse_set_qualified(old);
	initStringInfo(&canon);
	appendStringInfo(&canon, "ssfdw_time_canon(%s, %d)", col.data,
					 key->var->vartype == DATEOID);
	return lappend(list_make4(makeString(col.data), makeString(canon.data),
							  makeInteger(key->desc),
							  makeInteger(key->var->vartype == DATEOID)),
				   makeString(join ? SHARD_TIME_KEY_ALIAS : col.data));
}

/*
 * shard_order_private
 *		The FdwScanOrder* list of a row scan ordered by pathkeys (NIL: only
 *		limited): the keys for the scan's sort (scan tuple attribute
 *		numbers), the ORDER BY each shard runs, the order as EXPLAIN shows
 *		it, what each shard must declare for its own order to be trusted,
 *		and the window of a time key.
 */
List *
shard_order_private(PlannerInfo *root, RelOptInfo *baserel, List *pathkeys,
					List *scan_tlist)
{
	List	   *attnos = NIL;
	List	   *sortops = NIL;
	List	   *colls = NIL;
	List	   *nulls = NIL;
	List	   *needs = NIL;
	List	   *window = NIL;
	List	   *keys;
	StringInfoData sql;
	StringInfoData text;
	ListCell   *lc;
	bool		ok;

	keys = order_keys(root, baserel, pathkeys, &ok);
	if (!ok)
		elog(ERROR, "ordered foreign path has a key the shards cannot sort");
	initStringInfo(&sql);
	initStringInfo(&text);
	foreach(lc, keys)
	{
		OrderKey   *key = lfirst(lc);
		RangeTblEntry *rte = planner_rt_fetch(key->var->varno, root);
		char	   *need = key_need(root, key->var);
		const char *dir = psprintf("%s%s", key->desc ? " DESC" : "",
								   key->nulls_first ? " NULLS FIRST" : " NULLS LAST");

		/* a join's scan tuple is its fdw_scan_tlist */
		attnos = lappend_int(attnos, scan_tlist == NIL ? key->var->varattno :
							 tlist_member((Expr *) key->var, scan_tlist)->resno);
		sortops = lappend_oid(sortops, key->sortop);
		colls = lappend_oid(colls, key->coll);
		nulls = lappend_int(nulls, key->nulls_first);
		/* a join's tables carry its keys' needs (join.c) */
		if (need != NULL && scan_tlist == NIL)
			needs = lappend(needs, makeString(need));
		if (foreach_current_index(lc) == 0)
			window = time_window(root, key, scan_tlist != NIL);

		if (sql.len > 0)
			appendStringInfoString(&sql, ", ");
		{
			bool		old = shard_deparse_set_qualified(scan_tlist != NIL);

			shard_deparse_column_ref(&sql, root, key->var);
			shard_deparse_set_qualified(old);
		}
		if (key->var->vartype == TEXTOID || key->var->vartype == VARCHAROID)
			appendStringInfoString(&sql, " COLLATE BINARY");
		appendStringInfoString(&sql, dir);

		/* As EXPLAIN shows a Sort node's keys. */
		appendStringInfo(&text, "%s%s%s%s", text.len > 0 ? ", " : "",
						 quote_identifier(get_attname(rte->relid,
													  key->var->varattno,
													  false)),
						 key->desc ? " DESC" : "",
						 key->nulls_first != key->desc ?
						 (key->nulls_first ? " NULLS FIRST" : " NULLS LAST") : "");
	}
	return lappend(lappend(lappend(lappend(list_make4(list_make4(attnos, sortops, colls, nulls),
													  makeString(sql.data),
													  NIL,
													  makeString(text.data)),
										   needs),
								   makeInteger(-1)),
						   window),
				   NIL);
}

/*
 * shard_order_prefix_private
 *		The FdwScanOrder* list of a path of shard_order_prefix_path: that of
 *		its pathkeys, with the FdwScanOrderTies entry of its first key.
 */
List *
shard_order_prefix_private(PlannerInfo *root, RelOptInfo *baserel,
						   List *pathkeys)
{
	List	   *order = shard_order_private(root, baserel, pathkeys, NIL);
	OrderKey	key;
	StringInfoData col;

	if (!pathkey_key(root, baserel, linitial(pathkeys), true, &key))
		elog(ERROR, "ordered foreign path has a key the shards cannot sort");
	initStringInfo(&col);
	shard_deparse_column_ref(&col, root, key.var);
	llast(order) = list_make4(makeString(col.data),
							  makeString((key.var->vartype == TEXTOID ||
										  key.var->vartype == VARCHAROID) ?
										 " COLLATE BINARY" : ""),
							  makeInteger(key.desc),
							  makeInteger(key.nulls_first));
	return order;
}
