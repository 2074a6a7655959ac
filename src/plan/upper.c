/*-------------------------------------------------------------------------
 *
 * upper.c
 *		  Aggregate pushdown: planning GROUP BY and aggregates in the shards
 *
 * A grouped query over one foreign table, all of whose conditions the
 * shards evaluate, is answered by the shards themselves.  Each shard groups
 * its rows and returns one row per group with partial aggregates; the
 * backend merges groups that several shards returned (merge.c).  When the
 * grouping includes the tenant column, every group lives in one shard and
 * the merge has nothing to combine: EXPLAIN calls that a full pushdown.
 *
 * Partials are chosen so that the merged result is exactly PostgreSQL's:
 *
 * - sum(bigint) is returned as the sums of the high and low 32 bits of
 *   each value, which cannot overflow in SQLite, and combined into numeric;
 *   sum(integer) and sum(smallint) fit SQLite's 64-bit sum.
 * - avg() is merged from sum and count, with numeric division for integer
 *   arguments (PostgreSQL's result type and scale) and float division for
 *   double precision.
 * - sum(double precision) uses total(), which never fails on overflow, with
 *   count() to tell "no rows" (NULL) from zero.
 * - min() and max() of text only under the C collation.
 * - bool_and and bool_or map the stored forms PostgreSQL's boolean input
 *   accepts to 0 and 1, and count what they could not read.
 * - count(DISTINCT x) groups the shards' rows by x as well, and the merge
 *   counts each distinct value once across shards.
 *
 * A guard column counts values whose storage class the aggregate cannot
 * take (text in an integer column, say); a shard that reports any makes the
 * query fail with an error naming it, rather than let SQLite's loose
 * arithmetic change the answer.
 *
 * Grouping keys are columns of integer, double precision or text type (text
 * grouped byte-wise, as PostgreSQL's deterministic collations compare),
 * date columns (the day the wrapper reads, as Unix seconds), and the time
 * buckets BI tools generate on timestamp and date columns:
 * date_trunc('year'|'quarter'|'month'|'week'|'day'|'hour'|'minute', ts)
 * and extract/date_part of year, quarter, month, day, hour, minute, dow,
 * isodow and doy, as one number per row (ssfdw_bucket: timepush.c writes
 * it, shardtime.c computes it from every stored form the wrapper accepts).
 * date_trunc in the session's TimeZone (of a date, or of a timestamptz
 * column) SQLite cannot compute: the shards group by a day or a time that
 * stands for the bucket (shard_time_key_unit), and the merge computes
 * date_trunc of it.
 *
 * A query that only counts rows, without GROUP BY, is counted by SQLite;
 * otherwise the reading threads aggregate the shards' rows (threadagg.c),
 * or SQLite's GROUP BY does where a shard has too many groups.
 *
 * Which aggregates the shards compute (also the variances of integers, and
 * FILTER and CASE inside aggregates) and the SQL of their partials are
 * aggpush.c's.  Window functions over the groups run in PostgreSQL above
 * the pushed grouping.  Anything else (ORDER BY inside an aggregate, other
 * aggregates, grouping sets, a condition PostgreSQL must evaluate) is not
 * pushed: the rows are fetched and PostgreSQL aggregates them.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"
#include "aggpush.h"
#include "threadagg.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "executor/nodeAgg.h"
#include "foreign/foreign.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/formatting.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/ruleutils.h"
#include "utils/selfuncs.h"

#include "compat.h"

#include "merge.h"
#include "mergecost.h"

/* GUC: push grouping and aggregates to the shards. */
bool		shard_aggregate_pushdown = true;

/* GUC: let the reading threads group the shards' rows (threadagg.c). */
bool		shard_thread_aggregation = true;

/* The shards' work per row they group, in operators (cost.c). */
#define GROUP_ROW_COST 0.25

/* Planner state of a pushed-down aggregation (upperrel->fdw_private). */
typedef struct ShardUpperInfo
{
	PlannerInfo *root;
	RelOptInfo *baserel;		/* the scanned foreign table, or a join the
								 * shards run (join.c) */
	bool		join;			/* baserel is a join */
	List	   *needs;			/* what the SQL assumes of shard columns */
	List	   *need_relids;	/* of a join: the table of each need */
	List	   *tlist;			/* TargetEntries: keys and aggregates */
	List	   *ops;			/* ShardAggOp per tlist entry */
	List	   *having;			/* conditions PostgreSQL applies after */
	Aggref	   *distinct;		/* the count(DISTINCT x), or NULL */
	PathTarget *target;			/* the grouping's output */
	List	   *group_clause;	/* its keys' SortGroupClauses: GROUP BY's,
								 * or those of SELECT DISTINCT */
	bool		by_tenant;		/* each group whole in one shard: grouped by
								 * the tenant column, or one tenant read */

	/* A final path (UPPERREL_FINAL): the scan sorts and limits too. */
	bool		final;
	List	   *sort_clauses;	/* ORDER BY's SortGroupClauses */
	List	   *sort_pos;		/* IntList: tlist position of each */
	List	   *sort_desc;		/* IntList: 1 where descending */
	List	   *sort_colls;		/* OidList: the collation each sorts by */
	Node	   *limit_offset;	/* Const or external Param, or NULL */
	Node	   *limit_count;
	List	   *bound_needs;	/* what the shards' bound needs besides
								 * needs (shards that miss it are read
								 * without it) */
} ShardUpperInfo;

/*
 * group_key_ok
 *		May a grouping expression be computed and grouped by in SQLite?
 */
static bool
group_key_ok(PlannerInfo *root, Expr *expr, RelOptInfo *baserel)
{
	Var		   *var = shard_own_column(expr, baserel);

	/*
	 * No cast that changes the type: SQLite groups the column's values (a
	 * varchar(n) column's as varchar's input reads them, so as text; a date
	 * column's as the days the wrapper reads).
	 */
	if (var)
		return exprType((Node *) expr) == var->vartype &&
			(var->vartype == DATEOID ||
			 shard_agg_groupable_type(var->vartype == VARCHAROID ? TEXTOID : var->vartype,
							-1, exprCollation((Node *) expr)));
	if (IsA(expr, FuncExpr) &&
		shard_time_deparse_bucket(NULL, root, (FuncExpr *) expr, baserel, 0))
		return true;
	return shard_time_key_form(root, expr, baserel, NULL, NULL);
}

/*
 * deparse_group_key
 *		Write a grouping expression; with for_group_by, text keys group
 *		byte-wise whatever collation the shard declared.  tz_param numbers
 *		the parameters of a time zone grid (key_trunc_unit), if any.
 */
static void
deparse_group_key(StringInfo buf, PlannerInfo *root, Expr *expr,
				  RelOptInfo *baserel, bool for_group_by, int tz_param)
{
	Var		   *var = shard_own_column(expr, baserel);

	if (var && var->vartype == DATEOID)
	{
		/*
		 * The day as the Unix seconds of its midnight, which the merge reads
		 * back as that date: whole days, in any year a date holds.
		 */
		appendStringInfoChar(buf, '(');
		shard_deparse_column_value(buf, root, var);
		appendStringInfo(buf, " * %d + %d)", SECS_PER_DAY,
						 (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY);
	}
	else if (var)
	{
		shard_deparse_column_value(buf, root, var);
		if (for_group_by && (var->vartype == TEXTOID ||
							 var->vartype == VARCHAROID))
			appendStringInfoString(buf, " COLLATE BINARY");
	}
	else if (!IsA(expr, FuncExpr) ||
			 !shard_time_deparse_bucket(buf, root, (FuncExpr *) expr, baserel,
										tz_param))
		shard_time_deparse_key_form(buf, root, expr, baserel, for_group_by,
									tz_param);
}

/*
 * add_output
 *		Add a key or aggregate to the scan's output unless it is there.
 */
static void
add_output(ShardUpperInfo *info, Expr *expr, int op)
{
	ListCell   *lc;
	TargetEntry *tle;

	foreach(lc, info->tlist)
		if (equal(((TargetEntry *) lfirst(lc))->expr, expr))
			return;
	tle = makeTargetEntry(expr, list_length(info->tlist) + 1, NULL, false);
	info->tlist = lappend(info->tlist, tle);
	info->ops = lappend_int(info->ops, op);
}

/*
 * add_column_need
 *		Note that a column must be declared to hold its type's storage
 *		class: numeric for numbers, TEXT affinity for text with text_need
 *		saying what else (SHARD_NEEDS_TEXT, _TEXT_ORDER or _TEXT_EXTREMA).
 */
static void
add_column_need(List **needs, PlannerInfo *root, Var *var, char text_need,
				List **relids)
{
	char		need;
	RangeTblEntry *rte;
	char	   *entry;
	ListCell   *lc;

	if (var->vartype == TEXTOID || var->vartype == VARCHAROID)
		need = text_need;
	else if (var->vartype == FLOAT8OID)
		need = SHARD_NEEDS_NUMBER;
	else
		need = SHARD_NEEDS_INTEGER;
	rte = planner_rt_fetch(var->varno, root);
	entry = psprintf("%c%s", need, shard_column_name(rte->relid, var->varattno));
	foreach(lc, *needs)
		if (strcmp(strVal(lfirst(lc)), entry) == 0 &&
			(relids == NULL ||
			 list_nth_int(*relids, foreach_current_index(lc)) == (int) var->varno))
			return;
	*needs = lappend(*needs, makeString(entry));
	/* of a join, whose tables join.c checks one by one */
	if (relids != NULL)
		*relids = lappend_int(*relids, var->varno);
}

/*
 * add_need
 *		Note what an aggregate assumes of its column's declared affinity:
 *		sums read integers or numbers, min and max compare them, and text
 *		only in TEXT columns.  Counts and keys assume nothing, since the
 *		merge regroups converted keys with PostgreSQL's equality, and the
 *		extremes of times nothing, since ssfdw_usecs and ssfdw_days read
 *		every stored form as the wrapper does.
 */
static void
add_need(ShardUpperInfo *info, Aggref *agg, int op)
{
	Var		   *arg = shard_agg_arg(agg, info->baserel);

	/* conditions of a FILTER or a CASE compare as in WHERE */
	if (agg->aggfilter != NULL)
		info->needs = shard_text_columns(info->root,
										 list_make1(agg->aggfilter),
										 info->needs);
	if (!agg->aggstar && arg == NULL)
	{
		CaseExpr   *ce = (CaseExpr *) shard_agg_input(agg);
		ListCell   *lc;

		foreach(lc, ce->args)
		{
			CaseWhen   *w = lfirst(lc);

			info->needs = shard_text_columns(info->root, list_make1(w->expr),
											 info->needs);
			if (!IsA(w->result, Const) && op != AGGOP_COUNT)
				add_column_need(&info->needs, info->root,
								shard_own_column(w->result, info->baserel),
								SHARD_NEEDS_TEXT_EXTREMA, NULL);
		}
		if (ce->defresult && !IsA(ce->defresult, Const) && op != AGGOP_COUNT)
			add_column_need(&info->needs, info->root,
							shard_own_column(ce->defresult, info->baserel),
							SHARD_NEEDS_TEXT_EXTREMA, NULL);
		return;
	}
	if (op == AGGOP_COUNT_STAR || op == AGGOP_COUNT ||
		op == AGGOP_COUNT_DISTINCT || op == AGGOP_BOOL_AND ||
		op == AGGOP_BOOL_OR || shard_agg_time_type(arg->vartype))
		return;
	add_column_need(&info->needs, info->root, arg,
					SHARD_NEEDS_TEXT_EXTREMA,
					info->join ? &info->need_relids : NULL);
}

/*
 * add_aggregates_of
 *		Add the aggregates an expression uses; false when one cannot be
 *		pushed, or when it uses a column outside an aggregate that is not a
 *		grouping key.
 */
static bool
add_aggregates_of(ShardUpperInfo *info, Expr *expr)
{
	List	   *items = pull_var_clause((Node *) expr, PVC_INCLUDE_AGGREGATES);
	ListCell   *lc;

	foreach(lc, items)
	{
		Node	   *item = lfirst(lc);

		if (IsA(item, Aggref))
		{
			Aggref	   *agg = (Aggref *) item;
			int			op = shard_agg_classify(info->root, agg, info->baserel);

			if (op < 0)
				return false;
			add_need(info, agg, op);
			if (op == AGGOP_COUNT_DISTINCT)
			{
				if (info->distinct != NULL &&
					!equal(shard_agg_arg(info->distinct, info->baserel),
						   shard_agg_arg(agg, info->baserel)))
					return false;	/* one distinct column at most */
				info->distinct = agg;
			}
			add_output(info, (Expr *) agg, op);
		}
		else
		{
			ListCell   *lc2;
			bool		found = false;

			/* A bare column must be one of the keys already added. */
			foreach(lc2, info->tlist)
				if (equal(((TargetEntry *) lfirst(lc2))->expr, item))
					found = true;
			if (!found)
				return false;
		}
	}
	return true;
}

/*
 * needs_query_state
 *		Does an expression read anything a scan cannot evaluate when it
 *		starts: a column, a value another plan node sets, a subquery?
 */
static bool
needs_query_state(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return ((Param *) node)->paramkind != PARAM_EXTERN;
	if (IsA(node, Var) || IsA(node, PlaceHolderVar) || IsA(node, SubLink) ||
		IsA(node, SubPlan) || IsA(node, Aggref) || IsA(node, WindowFunc))
		return true;
	return expression_tree_walker(node, needs_query_state, context);
}

/*
 * first_shard_meets
 *		Does the fleet's first shard declare its columns as needs says?
 *		(Every shard is checked again when it is read.)
 */
static bool
first_shard_meets(PlannerInfo *root, RelOptInfo *baserel, List *needs)
{
	Oid			relid = planner_rt_fetch(baserel->relid, root)->relid;

	return shard_schema_meets(shard_server_options(GetForeignTable(relid)->serverid),
							  shard_rel_table(baserel), needs);
}

/*
 * one_tenant
 *		Is a table's scan routed to one tenant, so that all its rows come
 *		from one shard?
 */
static bool
one_tenant(RelOptInfo *baserel)
{
	ShardPruneKind kind;

	return shard_find_tenant_condition(baserel, shard_rel_tenant_attnum(baserel),
									   &kind) != NULL && kind == PRUNE_EQ;
}

/*
 * shard_limit_value_ok
 *		Can the scan evaluate a LIMIT or OFFSET value when it starts?  A
 *		constant or a statement parameter, possibly cast, can.  (Also for
 *		order.c's row scans.)
 */
bool
shard_limit_value_ok(Node *node)
{
	return node == NULL ||
		(!needs_query_state(node, NULL) && !contain_volatile_functions(node));
}

/*
 * sort_key_ok
 *		Can each shard order its groups by the output at tlist position pos
 *		exactly as sgc orders them in PostgreSQL (under collation coll), so
 *		that a shard's first n groups include all of its groups among the
 *		first n overall?  Sets *desc for a descending sort.
 */
static bool
sort_key_ok(ShardUpperInfo *info, int pos, SortGroupClause *sgc, Oid coll,
			bool *desc)
{
	TargetEntry *tle = list_nth(info->tlist, pos);
	int			op = list_nth_int(info->ops, pos);
	Oid			type = exprType((Node *) tle->expr);
	Oid			ltop;
	Oid			gtop;

	get_sort_group_operators(type, false, false, false,
							 &ltop, NULL, &gtop, NULL);
	if (sgc->sortop != ltop && sgc->sortop != gtop)
		return false;
	*desc = (sgc->sortop == gtop);

	switch (op)
	{
		case AGGOP_COUNT_STAR:
		case AGGOP_COUNT:
		case AGGOP_SUM_INT:
		case AGGOP_SUM_INT8:
			return true;
		case AGGOP_KEY:
			if (shard_own_column(tle->expr, info->baserel) == NULL)
				return false;	/* a time bucket */
			/* FALLTHROUGH */
		case AGGOP_MIN:
		case AGGOP_MAX:
			if (type == INT2OID || type == INT4OID || type == INT8OID ||
				shard_agg_time_type(type))
				return true;
			if (type == TEXTOID || type == VARCHAROID)
				return OidIsValid(coll) && lc_collate_is_c(coll);
			return false;
		default:
			return false;
	}
}

/*
 * expr_width
 *		The estimated width of a grouping key or aggregate argument: a
 *		column's from its statistics, otherwise its type's.
 */
static int
expr_width(RelOptInfo *baserel, Expr *expr)
{
	Var		   *var = shard_own_column(expr, baserel);

	if (var != NULL && var->varattno <= baserel->max_attr &&
		baserel->attr_widths[var->varattno - baserel->min_attr] > 0)
		return baserel->attr_widths[var->varattno - baserel->min_attr];
	return get_typavgwidth(exprType((Node *) expr), exprTypmod((Node *) expr));
}

/*
 * merge_bytes
 *		The memory the merge of a pushed aggregation would take: its groups'
 *		hash table (keys, accumulators, and the text of text minima and
 *		maxima), and for count(DISTINCT x) the table of the (keys, x) pairs
 *		it has seen.
 */
static double
merge_bytes(PlannerInfo *root, ShardUpperInfo *info, List *keys,
			double groups, double input_rows)
{
	int			key_width = 0;
	int			text_width = 0;
	double		bytes;
	ListCell   *lc,
			   *lc_op;

	forboth(lc, info->tlist, lc_op, info->ops)
	{
		Expr	   *expr = ((TargetEntry *) lfirst(lc))->expr;
		int			op = lfirst_int(lc_op);
		Var		   *arg;

		if (op == AGGOP_KEY)
			key_width += expr_width(info->baserel, expr);
		else if (op == AGGOP_MIN || op == AGGOP_MAX)
		{
			arg = shard_agg_arg((Aggref *) expr, info->baserel);
			if (arg != NULL &&
				(arg->vartype == TEXTOID || arg->vartype == VARCHAROID))
				text_width += expr_width(info->baserel, (Expr *) arg);
		}
	}
	bytes = groups * shard_merge_group_bytes(list_length(info->tlist),
											 key_width + text_width);
	if (info->distinct)
	{
		Var		   *x = shard_agg_arg(info->distinct, info->baserel);
		double		pairs;

		pairs = shard_merge_groups(root, info->baserel,
								   lappend(list_copy(keys), x), input_rows);
		bytes += pairs * shard_merge_group_bytes(0, key_width +
												 expr_width(info->baserel,
															(Expr *) x));
	}
	return bytes;
}

/*
 * grouped_foreign_path
 *		The path shardGetForeignUpperPaths offered for the grouping, or
 *		NULL.
 */
static Path *
grouped_foreign_path(RelOptInfo *grouped)
{
	ListCell   *lc;

	foreach(lc, grouped->pathlist)
		if (IsA(lfirst(lc), ForeignPath))
			return (Path *) lfirst(lc);
	return NULL;
}

/*
 * final_target_plain
 *		Is every output of the query a grouping key or aggregate as the
 *		scan returns it?  The scan computes its outputs only for the groups
 *		it returns, where PostgreSQL computes them for every group: an
 *		expression that fails on a group past the limit (a division by
 *		zero) must not be hidden.
 */
static bool
final_target_plain(PlannerInfo *root, ShardUpperInfo *info)
{
	ListCell   *lc;

	foreach(lc, root->upper_targets[UPPERREL_FINAL]->exprs)
	{
		Node	   *expr = lfirst(lc);
		ListCell   *lc2;
		bool		found = false;

		if (IsA(shard_strip_relabel((Expr *) expr), Const))
			continue;
		foreach(lc2, info->tlist)
			if (equal(shard_strip_relabel(((TargetEntry *) lfirst(lc2))->expr),
					  shard_strip_relabel((Expr *) expr)))
				found = true;
		if (!found)
			return false;
	}
	return true;
}

/*
 * add_final_path
 *		When each group lives in one shard and nothing filters groups after
 *		the shards, offer a path that also does ORDER BY and LIMIT: every
 *		shard returns only its first OFFSET + LIMIT groups in the query's
 *		order, and the scan sorts what arrives and applies the limit.
 */
static void
add_final_path(PlannerInfo *root, RelOptInfo *input_rel,
			   RelOptInfo *output_rel, FinalPathExtraData *extra)
{
	Query	   *parse = root->parse;
	RelOptInfo *grouped = fetch_upper_rel(root, UPPERREL_GROUP_AGG, NULL);
	ShardUpperInfo *info = (ShardUpperInfo *) grouped->fdw_private;
	ShardUpperInfo *final;
	Path	   *gpath;
	List	   *bound_relids = NIL;
	ListCell   *lc;
	ListCell   *lc_op;
	double		rows;
	Cost		startup;

	if (!extra->limit_needed || info == NULL || info->final ||
		output_rel->fdw_private != NULL)
		return;
	if (!info->by_tenant || info->distinct != NULL || info->having != NIL)
		return;
	if (parse->distinctClause || parse->rowMarks ||
		parse->limitOption != LIMIT_OPTION_COUNT ||
		!shard_limit_value_ok(parse->limitOffset) ||
		!shard_limit_value_ok(parse->limitCount))
		return;
	if (input_rel != (parse->sortClause ?
					  fetch_upper_rel(root, UPPERREL_ORDERED, NULL) : grouped))
		return;
	gpath = grouped_foreign_path(grouped);
	if (gpath == NULL || !final_target_plain(root, info))
		return;

	final = palloc(sizeof(ShardUpperInfo));
	*final = *info;
	final->final = true;
	final->bound_needs = NIL;

	/*
	 * A shard's bound ranks its groups one by one, so no group may reach
	 * the merge in pieces: key columns must be declared to hold their
	 * type's storage class (so that 5 and '5' are one group; a shard that
	 * does not declare them so is read without its bound), and float keys
	 * (1 and 1.0, 0 and -0) are left to PostgreSQL.  Date keys and the time
	 * buckets SQLite computes have one form per group whatever the column
	 * holds; but the merge's date_trunc of a time zone grid, or of a date
	 * (where a zone skipped a day, two days are one bucket), puts several
	 * shard groups in one.
	 */
	forboth(lc, info->tlist, lc_op, info->ops)
	{
		Expr	   *expr = ((TargetEntry *) lfirst(lc))->expr;
		Var		   *var = shard_own_column(expr, info->baserel);

		if (lfirst_int(lc_op) != AGGOP_KEY)
			continue;
		if (IsA(expr, FuncExpr) &&
			shard_time_key_unit((FuncExpr *) expr, info->baserel, NULL, NULL) != NULL)
			return;
		if (var == NULL &&
			shard_time_key_form(root, expr, info->baserel, NULL, NULL))
			return;
		if (var == NULL || var->vartype == DATEOID)
			continue;
		if (var->vartype == FLOAT8OID)
			return;
		add_column_need(&final->bound_needs, root, var, SHARD_NEEDS_TEXT,
						info->join ? &bound_relids : NULL);
	}
	final->sort_clauses = NIL;
	final->sort_pos = NIL;
	final->sort_desc = NIL;
	final->sort_colls = NIL;
	foreach(lc, parse->sortClause)
	{
		SortGroupClause *sgc = lfirst(lc);
		Node	   *expr = get_sortgroupclause_expr(sgc, root->processed_tlist);
		ListCell   *lc2;
		int			pos = -1;
		Oid			coll = exprCollation(expr);
		bool		desc;
		Var		   *var;

		foreach(lc2, info->tlist)
			if (equal(shard_strip_relabel(((TargetEntry *) lfirst(lc2))->expr),
					  shard_strip_relabel((Expr *) expr)))
				pos = foreach_current_index(lc2);
		if (pos < 0 || !sort_key_ok(info, pos, sgc, coll, &desc))
			return;
		final->sort_clauses = lappend(final->sort_clauses, sgc);
		final->sort_pos = lappend_int(final->sort_pos, pos);
		final->sort_desc = lappend_int(final->sort_desc, desc);
		final->sort_colls = lappend_oid(final->sort_colls, coll);

		/* SQLite orders a text key right in UTF-8 databases only. */
		var = shard_own_column(((TargetEntry *) list_nth(info->tlist, pos))->expr,
					  info->baserel);
		if (list_nth_int(info->ops, pos) == AGGOP_KEY && var != NULL &&
			var->vartype != DATEOID)
			add_column_need(&final->bound_needs, root, var,
							SHARD_NEEDS_TEXT_ORDER,
							info->join ? &bound_relids : NULL);
	}
	if (final->bound_needs != NIL &&
		!(info->join ?
		  shard_join_schema_meets(root, info->baserel,
								  list_concat_copy(info->needs,
												   final->bound_needs),
								  list_concat_copy(info->need_relids,
												   bound_relids)) :
		  first_shard_meets(root, info->baserel,
							list_concat_copy(info->needs, final->bound_needs))))
		return;
	final->limit_offset = parse->limitOffset;
	final->limit_count = parse->limitCount;

	/*
	 * The grouping's cost, less the merging of the groups the shards' bound
	 * keeps back (gpath's startup counts one operator per group); sorting a
	 * shard's groups is cheap next to its scan.
	 */
	rows = gpath->rows;
	if (extra->count_est > 0 && extra->count_est < rows)
		rows = extra->count_est;
	startup = gpath->startup_cost - (gpath->rows - rows) * cpu_operator_cost;
	Assert(startup >= 0);
	output_rel->fdw_private = final;
	add_path(output_rel, (Path *)
			 create_foreign_upper_path_compat(root, output_rel,
											  root->upper_targets[UPPERREL_FINAL],
											  rows, startup,
											  startup + rows * cpu_tuple_cost,
											  parse->sortClause ?
											  root->sort_pathkeys : NIL,
											  NULL, NIL));
}

/*
 * shardGetForeignUpperPaths
 *		Offer a path that aggregates in the shards, when every part of the
 *		grouping and every aggregate can be computed there exactly.
 */
void
shardGetForeignUpperPaths(PlannerInfo *root, UpperRelationKind stage,
						  RelOptInfo *input_rel, RelOptInfo *output_rel,
						  void *extra)
{
	Query	   *parse = root->parse;
	GroupPathExtraData *gextra = (GroupPathExtraData *) extra;
	PathTarget *target;
	ShardUpperInfo *info;
	List	   *keys = NIL;
	ListCell   *lc;
	AttrNumber	tenant_attnum;
	double		input_rows;
	double		groups;
	double		bytes = 0;
	ShardQueryCost q = {0};
	Cost		startup,
				total;
	int			i;

	if (stage == UPPERREL_FINAL)
	{
		add_final_path(root, input_rel, output_rel,
					   (FinalPathExtraData *) extra);
		shard_order_final_paths(root, input_rel, output_rel,
								(FinalPathExtraData *) extra);
		return;
	}
	/*
	 * The grouping's input must be the scan alone, and one that needs no
	 * outer rows: a scan with LATERAL references is parameterized by other
	 * relations, which a path over it would have to pass on (postgres_fdw
	 * likewise pushes no join with LATERAL references).  Values of outer
	 * query levels arrive as executor parameters instead, which the pushed
	 * query binds each time the scan restarts.
	 */
	if ((stage != UPPERREL_GROUP_AGG && stage != UPPERREL_DISTINCT) ||
		!shard_aggregate_pushdown ||
		output_rel->fdw_private != NULL ||
		!(input_rel->reloptkind == RELOPT_BASEREL ||
		  shard_join_rel_pushed(input_rel)) ||
		input_rel->fdw_private == NULL ||
		!bms_is_empty(input_rel->lateral_relids))
		return;
	if (parse->groupingSets || parse->hasTargetSRFs ||
		(!IS_JOIN_REL(input_rel) && !shard_rel_all_pushed(input_rel)))
		return;

	/*
	 * Window functions run over the grouping's output (its target is the
	 * windows' input: keys and aggregates), so the grouping is pushed as
	 * any other; not a SELECT DISTINCT, which applies after the windows.
	 */
	if (parse->hasWindowFuncs && stage != UPPERREL_GROUP_AGG)
		return;

	/*
	 * SELECT DISTINCT of the scan's own rows (no grouping below it, no
	 * DISTINCT ON) is a grouping by every output column without
	 * aggregates, which the shards compute as GROUP BY: a shard returns
	 * each value once, not every row (a BI tool's list of a column's
	 * values).
	 */
	if (stage == UPPERREL_DISTINCT)
	{
		if (parse->hasAggs || parse->groupClause != NIL ||
			parse->havingQual != NULL || parse->hasDistinctOn ||
			parse->distinctClause == NIL)
			return;
		gextra = NULL;
	}
	else if (gextra->patype != PARTITIONWISE_AGGREGATE_NONE)
		return;

	/*
	 * A join the shards run is aggregated as a table is, over the rows of
	 * its SQL (join.c), its columns named by their tables' aliases; not by
	 * time buckets, nor sorted and limited per shard (add_final_path).
	 */
	info = palloc0(sizeof(ShardUpperInfo));
	info->root = root;
	info->baserel = input_rel;
	info->join = IS_JOIN_REL(input_rel);
	tenant_attnum = info->join ? 0 : shard_rel_tenant_attnum(input_rel);
	target = root->upper_targets[stage];
	info->target = target;
	info->group_clause = stage == UPPERREL_DISTINCT ?
		parse->distinctClause : parse->groupClause;

	/* Keys first, in the order of the grouping target. */
	i = 0;
	foreach(lc, target->exprs)
	{
		Expr	   *expr = (Expr *) lfirst(lc);
		Index		sgref = get_pathtarget_sortgroupref(target, i);

		i++;
		if (sgref == 0 ||
			get_sortgroupref_clause_noerr(sgref, info->group_clause) == NULL)
			continue;
		if (!group_key_ok(root, expr, input_rel))
			return;
		add_output(info, expr, AGGOP_KEY);
		keys = lappend(keys, expr);
		if (shard_own_column(expr, input_rel) == NULL)
			continue;			/* a time bucket */
		if (info->join ?
			shard_join_tenant_key(root, input_rel,
								  shard_own_column(expr, input_rel)) :
			shard_own_column(expr, input_rel)->varattno == tenant_attnum)
			info->by_tenant = true;
	}
	if (list_length(keys) != list_length(info->group_clause))
		return;
	/* one tenant's rows are on one shard: its groups are whole there */
	if (info->join ? shard_join_one_tenant(root, input_rel) :
		one_tenant(input_rel))
		info->by_tenant = true;

	/* Then everything else the target and HAVING compute from groups. */
	i = 0;
	foreach(lc, target->exprs)
	{
		Index		sgref = get_pathtarget_sortgroupref(target, i);

		i++;
		if (sgref != 0 &&
			get_sortgroupref_clause_noerr(sgref, info->group_clause) != NULL)
			continue;
		if (!add_aggregates_of(info, (Expr *) lfirst(lc)))
			return;
	}
	if (gextra != NULL && gextra->havingQual)
	{
		if (!add_aggregates_of(info, (Expr *) gextra->havingQual))
			return;
		foreach(lc, (List *) gextra->havingQual)
			info->having = lappend(info->having, lfirst(lc));
	}

	/*
	 * The SQL assumes the shards declare the compared and summed columns
	 * suitably; a fleet whose (first) shard does not is aggregated by
	 * PostgreSQL instead.
	 */
	if (info->join)
	{
		/* the join's tables carry what their conditions assume */
		if (!shard_join_schema_meets(root, input_rel, info->needs,
									 info->need_relids))
			return;
	}
	else
	{
		info->needs = shard_text_columns(root,
										 extract_actual_clauses(shard_rel_remote_conds(input_rel), false),
										 info->needs);
		if (!first_shard_meets(root, input_rel, info->needs))
			return;
	}

	input_rows = input_rel->rows;
	groups = keys ? shard_merge_groups(root, input_rel, keys, input_rows) : 1;

	/*
	 * The merge keeps its groups within hash_mem (work_mem times
	 * hash_mem_multiplier) and sets the rows of the others aside on disk,
	 * as PostgreSQL's hash aggregation does; that is costed below.  Its
	 * table of count(DISTINCT x)'s (keys, x) pairs does not spill: a
	 * grouping whose pairs would not fit is left to PostgreSQL, which
	 * aggregates the shards' rows within its limit.
	 */
	if (keys != NIL || info->distinct != NULL)
		bytes = merge_bytes(root, info, keys, groups, input_rows);
	if (info->distinct != NULL && bytes > (double) get_hash_memory_limit())
		return;

	/*
	 * The shards scan and group; the backend merges one row per group and
	 * shard (one per group when the groups are whole in their shards)
	 * before it returns the first.  Cheaper than fetching every row, which
	 * is the point.
	 */
	q.nshards = shard_cost_shards(root, input_rel);
	q.scanned = shard_cost_scanned(input_rel);
	q.pushed_rows = input_rows * shard_cost_scale(input_rel);
	q.pushed_per_row = GROUP_ROW_COST;
	q.merged = info->by_tenant ? groups :
		shard_merged_rows(root, input_rel, keys, tenant_attnum, groups,
						  q.nshards, input_rows);
	q.returned = groups;
	shard_cost_query(&q, &startup, &total);
	if (keys != NIL)
		shard_merge_spill_cost(groups, bytes, q.merged,
							   target->width +
							   list_length(info->tlist) * (int) sizeof(ShardValue),
							   &startup, &total);

	output_rel->fdw_private = info;
	add_path(output_rel, (Path *)
			 create_foreign_upper_path_compat(root, output_rel, target, groups,
											  startup, total, NIL, NULL, NIL));
}

/*
 * append_failing
 *		Add a condition to the "group the merge rejects" term of a shard's
 *		ORDER BY (a NULL condition counts as false).
 */
static void
append_failing(StringInfo sql, const char *cond)
{
	appendStringInfo(sql, "%sifnull(%s, 0)", sql->len > 0 ? " OR " : "(", cond);
}

/*
 * explain_context
 *		The context EXPLAIN's text of the sort keys is written in: the one
 *		table of the scan (its Vars renumbered to 1), or every table of the
 *		join by the names EXPLAIN gives them.
 */
static List *
explain_context(ShardUpperInfo *info)
{
	PlannedStmt *stmt;
	RangeTblEntry *rte;

	if (!info->join)
	{
		rte = planner_rt_fetch(info->baserel->relid, info->root);
		return deparse_context_for(get_rel_name(rte->relid), rte->relid);
	}
	stmt = makeNode(PlannedStmt);
	stmt->rtable = info->root->parse->rtable;
	return deparse_context_for_plan_tree(stmt,
										 select_rtable_names_for_explain(stmt->rtable,
																		 info->baserel->relids));
}

/*
 * final_order
 *		What a final path's scan needs to sort and limit (the
 *		FdwScanOrder* list, see sqlite_shard_fdw.h): the merge's sort keys,
 *		the ORDER BY each shard runs, the same order for thread
 *		aggregation, the LIMIT and OFFSET values, and the order as EXPLAIN
 *		shows it.  Groups the merge rejects (or whose keys it may: the key
 *		checks) come first in each shard, so that no bound hides the error.
 */
static List *
final_order(ShardUpperInfo *info, SelectList *sl, List *cols, int guard_col,
			int keycheck_col)
{
	List	   *dpcontext = explain_context(info);
	List	   *attnos = NIL;
	List	   *sortops = NIL;
	List	   *colls = NIL;
	List	   *nulls = NIL;
	List	   *ta_sorts = NIL;
	StringInfoData sql;
	StringInfoData text;
	ListCell   *lc1,
			   *lc2,
			   *lc3,
			   *lc4;

	initStringInfo(&sql);
	initStringInfo(&text);

	/*
	 * First the groups the merge rejects: values of the wrong storage class
	 * (the guard), unreadable booleans, finite double precision values
	 * adding up to infinity.
	 */
	if (guard_col >= 0)
		append_failing(&sql, psprintf("(%s) > 0",
									  (char *) list_nth(sl->exprs, guard_col)));
	if (keycheck_col >= 0)
		append_failing(&sql, psprintf("(%s) > 0",
									  (char *) list_nth(sl->exprs, keycheck_col)));
	forboth(lc1, info->ops, lc2, cols)
	{
		List	   *c = lfirst(lc2);

		if (lfirst_int(lc1) == AGGOP_BOOL_AND || lfirst_int(lc1) == AGGOP_BOOL_OR)
			append_failing(&sql, psprintf("(%s) > 0",
										  (char *) list_nth(sl->exprs, lsecond_int(c))));
		else if (lfirst_int(lc1) == AGGOP_SUM_FLOAT ||
				 lfirst_int(lc1) == AGGOP_AVG_FLOAT)
			append_failing(&sql, psprintf("abs(%s) = 9e999 AND (%s) = 0",
										  (char *) list_nth(sl->exprs, linitial_int(c)),
										  (char *) list_nth(sl->exprs, lthird_int(c))));
	}
	if (sql.len > 0)
		appendStringInfoString(&sql, ") DESC");
	forfour(lc1, info->sort_clauses, lc2, info->sort_pos, lc3, info->sort_desc,
			lc4, info->sort_colls)
	{
		SortGroupClause *sgc = lfirst(lc1);
		int			pos = lfirst_int(lc2);
		bool		desc = lfirst_int(lc3);
		Oid			coll = lfirst_oid(lc4);
		TargetEntry *tle = list_nth(info->tlist, pos);
		int			op = list_nth_int(info->ops, pos);
		List	   *c = list_nth(cols, pos);
		const char *dir = psprintf("%s%s", desc ? " DESC" : "",
								   sgc->nulls_first ? " NULLS FIRST" : " NULLS LAST");
		Oid			type = exprType((Node *) tle->expr);
		Node	   *expr;

		attnos = lappend_int(attnos, pos + 1);
		sortops = lappend_oid(sortops, sgc->sortop);
		colls = lappend_oid(colls, coll);
		nulls = lappend_int(nulls, sgc->nulls_first);

		if (sql.len > 0)
			appendStringInfoString(&sql, ", ");
		if (op == AGGOP_SUM_INT8)
		{
			/* high + carry of the low halves, then the low 32 bits */
			char	   *hi = list_nth(sl->exprs, linitial_int(c));
			char	   *lo = list_nth(sl->exprs, lsecond_int(c));

			appendStringInfo(&sql, "(%s) + ((%s) >> 32)%s, (%s) & 4294967295%s",
							 hi, lo, dir, lo, dir);
			ta_sorts = lappend_int(ta_sorts, linitial_int(c));
			ta_sorts = lappend_int(ta_sorts, lsecond_int(c));
		}
		else
		{
			appendStringInfo(&sql, "(%s)%s%s",
							 (char *) list_nth(sl->exprs, linitial_int(c)),
							 type == TEXTOID || type == VARCHAROID ?
							 " COLLATE BINARY" : "",
							 dir);
			ta_sorts = lappend_int(ta_sorts, linitial_int(c));
			ta_sorts = lappend_int(ta_sorts, -1);
		}
		ta_sorts = lappend_int(ta_sorts, desc);
		ta_sorts = lappend_int(ta_sorts, sgc->nulls_first);

		/*
		 * As EXPLAIN shows a Sort node's keys; the context is the one
		 * table's, or the join's tables by the names EXPLAIN gives them.
		 */
		expr = copyObject((Node *) tle->expr);
		if (!info->join)
			ChangeVarNodes(expr, info->baserel->relid, 1, 0);
		appendStringInfo(&text, "%s%s%s%s%s", text.len > 0 ? ", " : "",
						 deparse_expression(expr, dpcontext, info->join, false),
						 coll != exprCollation((Node *) tle->expr) ?
						 psprintf(" COLLATE %s", generate_collation_name(coll)) : "",
						 desc ? " DESC" : "",
						 sgc->nulls_first != desc ?
						 (sgc->nulls_first ? " NULLS FIRST" : " NULLS LAST") : "");
	}

	return lappend(lappend(lappend(lappend(list_make4(list_make4(attnos, sortops, colls, nulls),
													  makeString(sql.data),
													  ta_sorts,
													  makeString(text.data)),
										   info->bound_needs),
								   makeInteger(keycheck_col)),
						   NIL),	/* no time window: groups sort exactly */
				   NIL);		/* no ties: the whole order is sorted */
}

/*
 * append_select
 *		"SELECT exprs FROM table" (SELECT NULL without expressions), or with
 *		rows, thread aggregation's input "SELECT ssfdw_rows(exprs) FROM
 *		table", which hands each row to the reading thread's aggregation
 *		inside one step of SQLite (threadagg.c); of a join (table NULL),
 *		"SELECT ... FROM ", its FROM clause built for each shard
 *		(joinscan.c).
 */
static void
append_select(StringInfo buf, List *exprs, const char *table, bool rows)
{
	ListCell   *lc;

	appendStringInfoString(buf, rows ? "SELECT ssfdw_rows(" : "SELECT ");
	foreach(lc, exprs)
		appendStringInfo(buf, "%s%s", foreach_current_index(lc) > 0 ? ", " : "",
						 (char *) lfirst(lc));
	if (exprs == NIL && !rows)
		appendStringInfoString(buf, "NULL");
	appendStringInfoString(buf, rows ? ") FROM " : " FROM ");
	if (table != NULL)
		shard_quote_identifier(buf, table);
}

/*
 * count_column
 *		The shard column counting the values that fail checks, or -1 when
 *		there are none.
 */
static int
count_column(SelectList *sl, List *checks, int op)
{
	StringInfoData sum;
	ListCell   *lc;

	if (checks == NIL)
		return -1;
	initStringInfo(&sum);
	foreach(lc, checks)
		appendStringInfo(&sum, "%s%s", sum.len > 0 ? " + " : "",
						 (char *) lfirst(lc));
	return shard_agg_select_col(sl, psprintf("sum(%s)", sum.data), op, NULL, NULL);
}

/*
 * only_counts
 *		Are all aggregates of the query count(*) or count(x)?
 */
static bool
only_counts(List *ops)
{
	ListCell   *lc;

	foreach(lc, ops)
		if (lfirst_int(lc) != AGGOP_COUNT_STAR && lfirst_int(lc) != AGGOP_COUNT)
			return false;
	return true;
}

/*
 * shard_upper_plan
 *		The ForeignScan of a pushed-down aggregation: the shard query, how
 *		to merge its rows, and HAVING for PostgreSQL to apply.
 */
ForeignScan *
shard_upper_plan(PlannerInfo *root, RelOptInfo *upperrel, List *tlist,
				 Plan *outer_plan)
{
	ShardUpperInfo *info = (ShardUpperInfo *) upperrel->fdw_private;
	RelOptInfo *baserel = info->baserel;
	PathTarget *target = info->target;
	SelectList	sl = {NIL, NIL, NIL, NIL, NIL, NIL, NULL, NULL};
	StringInfoData raw_sql;
	StringInfoData select_sql;
	List	   *where_sqls;
	List	   *tenant_sqls = NIL;
	StringInfoData group_sql;
	List	   *params = NIL;
	List	   *param_kinds = NIL;
	List	   *cols = NIL;
	List	   *types = NIL;
	List	   *eqops = NIL;
	List	   *colls = NIL;
	List	   *distinct = NIL;
	ShardScanPrivate priv;
	ListCell   *lc,
			   *lc_op;
	ShardPruneKind prune_kind;
	Expr	   *prune_expr;
	int			guard_col = -1;
	int			keycheck_col = -1;
	List	   *key_truncs = NIL;
	bool		split_keys = false;
	List	   *join = NIL;
	bool		qualified;

	initStringInfo(&select_sql);
	initStringInfo(&group_sql);

	/*
	 * The conditions' parameters first; those of the keys follow.  A join's
	 * columns name their tables' aliases (reset on an error by the next
	 * planning, planner.c).
	 */
	if (info->join)
		join = shard_join_private(root, baserel, info->needs,
								  info->need_relids, &params, &param_kinds,
								  &where_sqls, &prune_expr, &prune_kind);
	else
		where_sqls = shard_rel_deparse_conditions(root, baserel, &params,
												  &param_kinds, &tenant_sqls);
	qualified = shard_deparse_set_qualified(info->join);
	sl.params = &params;
	sl.param_kinds = &param_kinds;

	forboth(lc, info->tlist, lc_op, info->ops)
	{
		TargetEntry *tle = lfirst(lc);
		int			op = lfirst_int(lc_op);

		if (op == AGGOP_KEY)
		{
			SortGroupClause *sgc = NULL;
			StringInfoData key;
			char	   *unit = NULL;
			char	   *zone = NULL;
			List	   *form = NIL;
			int			grid = 0;
			int			tz_param = 0;
			ListCell   *lc2;
			int			i = 0;

			/*
			 * A time zone grid's start, step and phase, bound when the scan
			 * runs (scan.c, bind_tz_grid), as the TimeZone may change until
			 * then: each parameter is "<longest step>[ <zone>]".
			 */
			if (IsA(tle->expr, FuncExpr))
				unit = shard_time_key_unit((FuncExpr *) tle->expr, baserel, &grid,
									  &zone);
			/* a bucket form: the merge computes it of a stand-in */
			if (unit == NULL &&
				shard_time_key_form(root, tle->expr, baserel, &grid, &zone))
				form = shard_time_key_form_merge(root, tle->expr, baserel);
			/* the merge may put several shard groups in one bucket */
			if (unit != NULL || form != NIL)
				split_keys = true;
			if (grid > 0)
			{
				Const	   *g;

				g = makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
							  CStringGetTextDatum(zone ?
												  psprintf("%d %s", grid, zone) :
												  psprintf("%d", grid)),
							  false, false);

				params = lappend(params, g);
				param_kinds = lappend_int(param_kinds, SHARD_PARAM_TZ_GRID_CUT);
				tz_param = list_length(params);
				params = lappend(params, copyObject(g));
				param_kinds = lappend_int(param_kinds, SHARD_PARAM_TZ_GRID_STEP);
				params = lappend(params, copyObject(g));
				param_kinds = lappend_int(param_kinds, SHARD_PARAM_TZ_GRID_PHASE);
			}

			initStringInfo(&key);
			deparse_group_key(&key, root, tle->expr, baserel, false, tz_param);
			/* time buckets read their column with its errors (timepush.c) */
			if (shard_own_column(tle->expr, baserel) != NULL && info->final)
			{
				/* a shard's bound must not hide a key the merge rejects */
				StringInfoData kc;

				initStringInfo(&kc);
				shard_deparse_column_ref(&kc, root, shard_own_column(tle->expr, baserel));
				shard_agg_guard_column(&sl, kc.data, exprType((Node *) tle->expr), true);
			}
			cols = lappend(cols, list_make1_int(shard_agg_select_col(&sl, key.data,
														   TA_KEY, key.data,
														   NULL)));
			key_truncs = lappend(key_truncs, unit == NULL ? form :
								 list_make4(makeInteger(((FuncExpr *) tle->expr)->funcid),
											makeString(unit),
											makeInteger(grid == 0),
											makeString(zone ? zone : "")));
			if (group_sql.len > 0)
				appendStringInfoString(&group_sql, ", ");
			deparse_group_key(&group_sql, root, tle->expr, baserel, true,
							  tz_param);
			types = lappend_oid(types, exprType((Node *) tle->expr));

			/* The key's equality: the one its GROUP BY clause uses. */
			foreach(lc2, target->exprs)
			{
				Index		sgref = get_pathtarget_sortgroupref(target, i);

				if (sgref && equal(lfirst(lc2), tle->expr))
					sgc = get_sortgroupref_clause_noerr(sgref,
														info->group_clause);
				i++;
			}
			if (sgc == NULL)
				elog(ERROR, "grouping key has no GROUP BY clause");
			eqops = lappend_oid(eqops, sgc->eqop);
			colls = lappend_oid(colls, exprCollation((Node *) tle->expr));
		}
		else
		{
			Aggref	   *agg = (Aggref *) tle->expr;

			cols = lappend(cols, shard_agg_partial_cols(&sl, root, agg, op, baserel));
			key_truncs = lappend(key_truncs, NIL);
			types = lappend_oid(types, shard_agg_input_type(agg, baserel));
		}
	}

	/* count(DISTINCT x) groups by x too; the merge counts values once. */
	if (info->distinct)
	{
		Var		   *x = shard_agg_arg(info->distinct, baserel);
		StringInfoData xs;
		Oid			eqop;

		initStringInfo(&xs);
		shard_deparse_column_ref(&xs, root, x);
		if (group_sql.len > 0)
			appendStringInfoString(&group_sql, ", ");
		appendStringInfoString(&group_sql, xs.data);
		if (x->vartype == TEXTOID || x->vartype == VARCHAROID)
			appendStringInfoString(&group_sql, " COLLATE BINARY");
		get_sort_group_operators(x->vartype, false, true, false,
								 NULL, &eqop, NULL, NULL);
		distinct = list_make4_int(shard_agg_select_col(&sl, xs.data, TA_KEY, xs.data, NULL),
								  x->vartype, eqop,
								  info->distinct->inputcollid);
	}
	guard_col = count_column(&sl, sl.guards, TA_GUARD);
	keycheck_col = count_column(&sl, sl.keychecks, TA_KEYCHECK);

	append_select(&select_sql, sl.exprs,
				  info->join ? NULL : shard_rel_table(baserel), false);

	/*
	 * The raw inputs, for thread aggregation; none when only counting rows
	 * without grouping them or checking values.  SQLite then neither sorts
	 * nor hands each row to a thread, and counts a whole table from its
	 * smallest b-tree.
	 */
	initStringInfo(&raw_sql);
	if (group_sql.len > 0 || guard_col >= 0 || keycheck_col >= 0 ||
		!only_counts(info->ops))
		append_select(&raw_sql, sl.raws,
					  info->join ? NULL : shard_rel_table(baserel), true);
	shard_deparse_set_qualified(qualified);
	if (group_sql.len > 0)
	{
		char	   *g = pstrdup(group_sql.data);

		resetStringInfo(&group_sql);
		appendStringInfo(&group_sql, " GROUP BY %s", g);
	}

	if (!info->join)
		prune_expr = shard_find_tenant_condition(baserel,
												 shard_rel_tenant_attnum(baserel),
												 &prune_kind);
	if (prune_expr != NULL)
		params = lappend(params, prune_expr);

	shard_scan_private_init(&priv);
	priv.select_sql = select_sql.data;
	priv.where_sqls = where_sqls;
	priv.param_kinds = param_kinds;
	priv.prune_kind = prune_kind;
	priv.mode = (info->by_tenant && info->distinct == NULL && !split_keys) ?
		SCAN_AGG_FULL : SCAN_AGG_PARTIAL;
	priv.group_sql = group_sql.data;
	priv.agg_ops = info->ops;
	priv.agg_cols = cols;
	priv.agg_types = types;
	priv.key_eqops = eqops;
	priv.key_colls = colls;
	priv.distinct = distinct;
	priv.guard_col = guard_col;
	priv.needs = info->join ? NIL : info->needs;
	priv.join = join;
	priv.raw_sql = raw_sql.data;
	priv.thread_agg = sl.ta;
	priv.thread_guards = sl.ta_guards;
	priv.key_truncs = key_truncs;
	priv.tenant_only = !info->join && shard_rel_tenant_only(baserel);
	priv.tenant_rows = info->join ? -1 : shard_rel_tenant_rows(baserel);
	priv.tenant_sqls = tenant_sqls;
	if (info->final)
	{
		priv.order = final_order(info, &sl, cols, guard_col, keycheck_col);
		/* OFFSET and LIMIT go between the values to bind and the tenant */
		priv.nlimit_exprs = 2;
		params = list_insert_nth(params,
								 list_length(params) - (prune_expr ? 1 : 0),
								 info->limit_offset);
		params = list_insert_nth(params,
								 list_length(params) - (prune_expr ? 1 : 0),
								 info->limit_count);
	}

	return make_foreignscan(tlist, info->having, 0, params,
							shard_scan_private_list(&priv),
							info->tlist, NIL, outer_plan);
}
