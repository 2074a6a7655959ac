/*-------------------------------------------------------------------------
 *
 * aggpush.c
 *		  Which aggregates the shards compute, and the SQL of their partials
 *
 * upper.c plans a grouping in the shards; this file decides, aggregate by
 * aggregate, whether the shards can compute it exactly (shard_agg_classify)
 * and writes the columns each shard returns for it, in SQL and as thread
 * aggregation's operations on raw columns (shard_agg_partial_cols), with
 * the guards that make a value of the wrong storage class an error rather
 * than an answer.  See upper.c's header for the partials of each
 * aggregate; besides those:
 *
 * - var_pop, var_samp, stddev_pop and stddev_samp (and variance, stddev)
 *   of smallint, integer and bigint return the count, the sum (of a
 *   bigint, its high and low 32 bits) and the exact sum of squares,
 *   ssfdw_sumsq (threadagg.c, 192 bits, as decimal text); merge.c applies
 *   PostgreSQL's numeric formula and scale.  Not of double precision,
 *   whose Youngs-Cramer accumulation gives results that depend on the
 *   order of the rows, nor of numeric, which SQLite cannot sum exactly.
 * - An aggregate's FILTER (WHERE cond), and an argument that is a CASE of
 *   conditions with integer constants or columns as results, are computed
 *   in SQLite when their conditions are what WHERE would push, without
 *   values computed at scan start (deparse.c, shard_is_pushable_filter):
 *   SQLite's CASE WHEN, like FILTER, takes a row only where the condition
 *   is true.  A FILTER makes the aggregate's input NULL in the other rows,
 *   which every partial skips.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"
#include "aggpush.h"
#include "threadagg.h"

#include "access/transam.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"

/*
 * shard_agg_time_type
 *		A date or time type whose extremes shards compute as integers
 *		(ssfdw_usecs, ssfdw_days), ordered as PostgreSQL orders the values.
 */
bool
shard_agg_time_type(Oid typid)
{
	return typid == TIMESTAMPOID || typid == TIMESTAMPTZOID ||
		typid == DATEOID;
}

/*
 * shard_agg_groupable_type
 *		Do SQLite's groups of this type's stored values match PostgreSQL's
 *		equality?  Text needs a deterministic collation and a UTF-8 database;
 *		not varchar(n), whose input drops trailing spaces beyond n (so that
 *		'a' and 'a ' are one value) and rejects longer text: grouping keys
 *		read such a column through ssfdw_varchar instead (group_key_ok).
 */
bool
shard_agg_groupable_type(Oid typid, int32 typmod, Oid collid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT8OID:
			return true;
		case VARCHAROID:
			if (typmod >= 0)
				return false;
			/* FALLTHROUGH */
		case TEXTOID:
			return GetDatabaseEncoding() == PG_UTF8 &&
				(collid == DEFAULT_COLLATION_OID ||
				 (OidIsValid(collid) && get_collation_isdeterministic(collid)));
		default:
			return false;
	}
}

/*
 * shard_agg_input
 *		The expression an aggregate of one argument reads.
 */
Expr *
shard_agg_input(Aggref *agg)
{
	return ((TargetEntry *) linitial(agg->args))->expr;
}

/*
 * shard_agg_input_type
 *		The type of an aggregate's argument, a column's own type (not that
 *		of a cast it is relabelled by), or InvalidOid for count(*).
 */
Oid
shard_agg_input_type(Aggref *agg, RelOptInfo *baserel)
{
	Var		   *var;

	if (agg->aggstar)
		return InvalidOid;
	var = shard_own_column(shard_agg_input(agg), baserel);
	return var ? var->vartype : exprType((Node *) shard_agg_input(agg));
}

/*
 * shard_agg_classify
 *		Which partial aggregate computes agg, or -1 when it cannot be
 *		pushed.  The argument is a column, or of a table's scan a CASE of
 *		pushable conditions and integer results (shard_agg_case_ok); a
 *		FILTER must be a condition the shards evaluate exactly.
 */
int
shard_agg_classify(PlannerInfo *root, Aggref *agg, RelOptInfo *baserel)
{
	char	   *name;
	Oid			argtype;
	Var		   *arg = NULL;

	if (agg->aggfnoid >= FirstGenbkiObjectId ||
		agg->aggorder != NIL || agg->aggkind != AGGKIND_NORMAL ||
		agg->agglevelsup != 0 || agg->aggsplit != AGGSPLIT_SIMPLE ||
		agg->aggvariadic)
		return -1;
	if (agg->aggfilter != NULL &&
		(agg->aggdistinct != NIL || IS_JOIN_REL(baserel) ||
		 !shard_is_pushable_filter(root, baserel, agg->aggfilter)))
		return -1;
	name = get_func_name(agg->aggfnoid);
	if (name == NULL)
		return -1;

	/* count(*) FILTER (...) counts the rows its condition holds for */
	if (agg->aggstar)
		return strcmp(name, "count") != 0 || agg->aggdistinct != NIL ? -1 :
			agg->aggfilter ? AGGOP_COUNT : AGGOP_COUNT_STAR;
	if (list_length(agg->args) != 1)
		return -1;
	arg = shard_own_column(shard_agg_input(agg), baserel);
	if (arg == NULL &&
		(IS_JOIN_REL(baserel) || agg->aggdistinct != NIL ||
		 !shard_agg_case_ok(root, baserel, shard_agg_input(agg))))
		return -1;
	argtype = shard_agg_input_type(agg, baserel);

	if (agg->aggdistinct != NIL)
	{
		if (strcmp(name, "count") == 0 &&
			shard_agg_groupable_type(argtype, arg->vartypmod, agg->inputcollid))
			return AGGOP_COUNT_DISTINCT;
		return -1;
	}
	if (strcmp(name, "count") == 0)
	{
		/*
		 * count(x) counts what the rows would read without error: only
		 * types whose stored values the guards check (shard_agg_partial_cols), or
		 * that ssfdw_usecs and ssfdw_days read (times).
		 */
		if (argtype == INT2OID || argtype == INT4OID ||
			argtype == INT8OID || argtype == FLOAT8OID ||
			shard_agg_time_type(argtype) ||
			((argtype == TEXTOID ||
			  (argtype == VARCHAROID && arg->vartypmod < 0)) &&
			 GetDatabaseEncoding() == PG_UTF8))
			return AGGOP_COUNT;
		return -1;
	}
	if (strcmp(name, "sum") == 0 || strcmp(name, "avg") == 0)
	{
		bool		sum = (name[0] == 's');

		if (argtype == INT2OID || argtype == INT4OID)
			return sum ? AGGOP_SUM_INT : AGGOP_AVG_INT;
		if (argtype == INT8OID)
			return sum ? AGGOP_SUM_INT8 : AGGOP_AVG_INT8;
		if (argtype == FLOAT8OID)
			return sum ? AGGOP_SUM_FLOAT : AGGOP_AVG_FLOAT;
		/* a numeric CASE of integral constants (shard_agg_case_ok) */
		if (argtype == NUMERICOID && arg == NULL && sum)
			return AGGOP_SUM_NUMCASE;
		return -1;
	}
	if (strcmp(name, "min") == 0 || strcmp(name, "max") == 0)
	{
		bool		ok;

		if (argtype == TEXTOID ||
			(argtype == VARCHAROID && arg->vartypmod < 0))
			ok = GetDatabaseEncoding() == PG_UTF8 &&
				OidIsValid(agg->inputcollid) &&
				lc_collate_is_c(agg->inputcollid);
		else
			ok = (argtype == INT2OID || argtype == INT4OID ||
				  argtype == INT8OID || argtype == FLOAT8OID ||
				  shard_agg_time_type(argtype));
		if (!ok)
			return -1;
		return name[1] == 'i' ? AGGOP_MIN : AGGOP_MAX;
	}
	if (argtype == INT2OID || argtype == INT4OID || argtype == INT8OID)
	{
		/*
		 * The variances of integers, from the count, the sum and the exact
		 * sum of squares (ssfdw_sumsq), with PostgreSQL's numeric formula
		 * (merge.c).  Not of double precision, whose Youngs-Cramer sums
		 * depend on the order of the rows, nor of numeric, which SQLite
		 * cannot sum exactly.
		 */
		if (strcmp(name, "var_pop") == 0)
			return AGGOP_VAR_POP;
		if (strcmp(name, "var_samp") == 0 || strcmp(name, "variance") == 0)
			return AGGOP_VAR_SAMP;
		if (strcmp(name, "stddev_pop") == 0)
			return AGGOP_STDDEV_POP;
		if (strcmp(name, "stddev_samp") == 0 || strcmp(name, "stddev") == 0)
			return AGGOP_STDDEV_SAMP;
	}
	if (argtype == BOOLOID && strcmp(name, "bool_and") == 0)
		return AGGOP_BOOL_AND;
	if (argtype == BOOLOID && strcmp(name, "bool_or") == 0)
		return AGGOP_BOOL_OR;
	return -1;
}

/*
 * shard_agg_arg
 *		The column an aggregate reads, or NULL for a CASE (or count(*)).
 */
Var *
shard_agg_arg(Aggref *agg, RelOptInfo *baserel)
{
	return agg->aggstar ? NULL : shard_own_column(shard_agg_input(agg), baserel);
}

/*
 * raw_col
 *		The raw column of an input expression, added if new.
 */
static int
raw_col(SelectList *sl, const char *expr)
{
	ListCell   *lc;

	foreach(lc, sl->raws)
		if (strcmp((char *) lfirst(lc), expr) == 0)
			return foreach_current_index(lc);
	sl->raws = lappend(sl->raws, pstrdup(expr));
	return list_length(sl->raws) - 1;
}

/*
 * shard_agg_select_col
 *		The column of an expression in the select list, added if new (with
 *		how thread aggregation computes it: op on the raw column input, and
 *		arg, a second raw column, or of TA_TIME_MIN and TA_TIME_MAX the
 *		number saying how times are read): avg and sum of one column share
 *		their partial sums.
 */
int
shard_agg_select_col(SelectList *sl, char *expr, int op, const char *input,
		   const char *arg)
{
	ListCell   *lc;

	foreach(lc, sl->exprs)
		if (strcmp((char *) lfirst(lc), expr) == 0)
			return foreach_current_index(lc);
	sl->exprs = lappend(sl->exprs, expr);
	sl->ta = lappend_int(sl->ta, op);
	sl->ta = lappend_int(sl->ta, input ? raw_col(sl, input) : -1);
	sl->ta = lappend_int(sl->ta, op == TA_TIME_MIN || op == TA_TIME_MAX ?
						 atoi(arg) : arg ? raw_col(sl, arg) : -1);
	return list_length(sl->exprs) - 1;
}

/*
 * add_guard
 *		Count the values of a column whose storage class is not one of
 *		ok_types (SQL) or ok_mask (thread aggregation).  A key check counts
 *		apart from the guards: a bounded shard returns the group first
 *		(final_order) and the merge reports it, since the key may stand for
 *		a group the bound split (5 and '5'); from a shard read without a
 *		bound the merge converts such keys as reading the rows would.
 */
static void
add_guard(SelectList *sl, const char *col, const char *ok_types, int ok_mask,
		  int32 lo, int32 hi, bool keycheck)
{
	char	   *check;
	List	  **list = keycheck ? &sl->keychecks : &sl->guards;
	ListCell   *lc;

	if (lo <= hi)
		check = psprintf("(typeof(%s) NOT IN (%s, 'null') OR %s < %d OR %s > %d)",
						 col, ok_types, col, lo, col, hi);
	else if (ok_mask & TA_OK_TEXT)
		check = psprintf("(typeof(%s) NOT IN (%s, 'null') OR NOT ssfdw_utf8_ok(%s))",
						 col, ok_types, col);
	else
		check = psprintf("(typeof(%s) NOT IN (%s, 'null'))", col, ok_types);
	foreach(lc, *list)
		if (strcmp((char *) lfirst(lc), check) == 0)
			return;
	*list = lappend(*list, check);
	sl->ta_guards = lappend_int(sl->ta_guards, raw_col(sl, col));
	sl->ta_guards = lappend_int(sl->ta_guards, ok_mask);
	sl->ta_guards = lappend_int(sl->ta_guards, lo);
	sl->ta_guards = lappend_int(sl->ta_guards, hi);
	sl->ta_guards = lappend_int(sl->ta_guards, keycheck);
}

/*
 * shard_agg_guard_column
 *		Guard an aggregate's column by its type: only what the row path
 *		would read (integers in range for smallint and integer, numbers for
 *		double precision, text for text) may reach SQLite's arithmetic.
 */
void
shard_agg_guard_column(SelectList *sl, const char *c, Oid type, bool keycheck)
{
	switch (type)
	{
		case INT2OID:
			add_guard(sl, c, "'integer'", TA_OK_INTEGER, PG_INT16_MIN,
					  PG_INT16_MAX, keycheck);
			break;
		case INT4OID:
			add_guard(sl, c, "'integer'", TA_OK_INTEGER, PG_INT32_MIN,
					  PG_INT32_MAX, keycheck);
			break;
		case INT8OID:
			add_guard(sl, c, "'integer'", TA_OK_INTEGER, 1, 0, keycheck);
			break;
		case FLOAT8OID:
			add_guard(sl, c, "'integer', 'real'", TA_OK_INTEGER | TA_OK_FLOAT,
					  1, 0, keycheck);
			break;
		case TEXTOID:
		case VARCHAROID:
			add_guard(sl, c, "'text'", TA_OK_TEXT, 1, 0, keycheck);
			break;
		default:
			break;
	}
}

/*
 * guard_case_result
 *		Guard a column an aggregate's CASE input returns, if it is one.
 */
static void
guard_case_result(SelectList *sl, PlannerInfo *root, Expr *result,
				  RelOptInfo *baserel)
{
	StringInfoData col;
	Var		   *var;

	if (result == NULL || IsA(result, Const))
		return;
	var = shard_own_column(result, baserel);
	initStringInfo(&col);
	shard_deparse_column_value(&col, root, var);
	shard_agg_guard_column(sl, col.data, var->vartype, false);
}

/*
 * shard_agg_partial_cols
 *		Add the shard columns one aggregate needs, returning their
 *		positions in the order merge.c reads them.  The aggregate reads its
 *		column's value (c, which the guards check), or its CASE input; a
 *		FILTER makes that NULL in the rows its condition does not hold for,
 *		which every aggregate here skips.
 */
List *
shard_agg_partial_cols(SelectList *sl, PlannerInfo *root, Aggref *agg, int op,
			 RelOptInfo *baserel)
{
	StringInfoData cb;
	char	   *c = NULL;
	char	   *v;
	char	   *filter = NULL;
	char	   *b;
	Var		   *arg;
	Oid			type;
	bool		is_text;
	int			first;

	if (op == AGGOP_COUNT_STAR)
		return list_make1_int(shard_agg_select_col(sl, "count(*)", TA_COUNT_STAR, NULL, NULL));
	if (op == AGGOP_COUNT_DISTINCT)
		return NIL;
	if (agg->aggfilter != NULL)
	{
		initStringInfo(&cb);
		shard_deparse_agg_expr(&cb, root, baserel, agg->aggfilter,
							   sl->params, sl->param_kinds);
		filter = cb.data;
	}
	/* count(*) FILTER (WHERE f): count(CASE WHEN f THEN 1 END) */
	if (agg->aggstar)
	{
		v = psprintf("CASE WHEN %s THEN 1 END", filter);
		return list_make1_int(shard_agg_select_col(sl, psprintf("count(%s)", v),
										 TA_COUNT, v, NULL));
	}
	/* times as microseconds or days (ssfdw_usecs, ssfdw_days) */
	arg = shard_agg_arg(agg, baserel);
	type = shard_agg_input_type(agg, baserel);
	initStringInfo(&cb);
	if (arg != NULL)
	{
		shard_deparse_column_value(&cb, root, arg);
		c = cb.data;
	}
	else
	{
		CaseExpr   *ce = (CaseExpr *) shard_agg_input(agg);
		ListCell   *lc;

		/* the columns a CASE returns are guarded as an argument is */
		foreach(lc, ce->args)
			guard_case_result(sl, root, ((CaseWhen *) lfirst(lc))->result,
							  baserel);
		guard_case_result(sl, root, ce->defresult, baserel);
		shard_deparse_agg_expr(&cb, root, baserel, (Expr *) ce,
							   sl->params, sl->param_kinds);
	}
	v = filter ? psprintf("CASE WHEN %s THEN %s END", filter, cb.data) :
		cb.data;
	is_text = (type == TEXTOID || type == VARCHAROID);

	switch (op)
	{
		case AGGOP_COUNT:
			if (c == NULL)
				;				/* a CASE: its columns are guarded */
			else if (!is_text)
				shard_agg_guard_column(sl, c, type, false);
			else
			{
				/* numbers read as text; blobs and invalid text do not */
				add_guard(sl, c, "'text', 'integer', 'real'",
						  TA_OK_TEXT | TA_OK_INTEGER | TA_OK_FLOAT, 1, 0, false);
			}
			return list_make1_int(shard_agg_select_col(sl, psprintf("count(%s)", v),
											 TA_COUNT, v, NULL));
		case AGGOP_SUM_INT:
			if (c)
				shard_agg_guard_column(sl, c, type, false);
			return list_make1_int(shard_agg_select_col(sl, psprintf("sum(%s)", v), TA_SUM, v, NULL));
		case AGGOP_AVG_INT:
			if (c)
				shard_agg_guard_column(sl, c, type, false);
			first = shard_agg_select_col(sl, psprintf("sum(%s)", v), TA_SUM, v, NULL);
			return list_make2_int(first, shard_agg_select_col(sl, psprintf("count(%s)", v),
													TA_COUNT, v, NULL));
		case AGGOP_SUM_INT8:
		case AGGOP_AVG_INT8:
			{
				List	   *cols;

				if (c)
					shard_agg_guard_column(sl, c, type, false);
				first = shard_agg_select_col(sl, psprintf("sum(%s >> 32)", v),
								   TA_SUM_HI, v, NULL);
				cols = list_make2_int(first,
									  shard_agg_select_col(sl, psprintf("sum(%s & 4294967295)", v),
												 TA_SUM_LO, v, NULL));
				if (op == AGGOP_AVG_INT8)
					cols = lappend_int(cols,
									   shard_agg_select_col(sl, psprintf("count(%s)", v),
												  TA_COUNT, v, NULL));
				return cols;
			}
		case AGGOP_SUM_FLOAT:
		case AGGOP_AVG_FLOAT:
			{
				int			second;

				if (c)
					shard_agg_guard_column(sl, c, type, false);
				first = shard_agg_select_col(sl, psprintf("total(%s)", v), TA_TOTAL, v, NULL);
				second = shard_agg_select_col(sl, psprintf("count(%s)", v), TA_COUNT, v, NULL);

				/*
				 * Infinite inputs tell an infinite total from an overflow
				 * (not abs(), which fails on the integer -2^63).
				 */
				return list_make3_int(first, second,
									  shard_agg_select_col(sl, psprintf("sum(%s IN (9e999, -9e999))", v),
												 TA_COUNT_INF, v, NULL));
			}
		case AGGOP_VAR_POP:
		case AGGOP_VAR_SAMP:
		case AGGOP_STDDEV_POP:
		case AGGOP_STDDEV_SAMP:
			{
				List	   *cols;

				/* count, sum of squares, then the sum as sum() computes it */
				if (c)
					shard_agg_guard_column(sl, c, type, false);
				cols = list_make2_int(shard_agg_select_col(sl, psprintf("count(%s)", v),
												 TA_COUNT, v, NULL),
									  shard_agg_select_col(sl, psprintf("ssfdw_sumsq(%s)", v),
												 TA_SUMSQ, v, NULL));
				if (type != INT8OID)
					return lappend_int(cols, shard_agg_select_col(sl, psprintf("sum(%s)", v),
														TA_SUM, v, NULL));
				cols = lappend_int(cols, shard_agg_select_col(sl, psprintf("sum(%s >> 32)", v),
													TA_SUM_HI, v, NULL));
				return lappend_int(cols, shard_agg_select_col(sl, psprintf("sum(%s & 4294967295)", v),
													TA_SUM_LO, v, NULL));
			}
		case AGGOP_SUM_NUMCASE:
			{
				StringInfoData scale;

				/*
				 * The sum of the constants as integers, and the largest
				 * display scale of the rows' results: a numeric sum keeps
				 * it ('0.0' + 1 is '1.0').
				 */
				initStringInfo(&scale);
				shard_deparse_agg_case_scale(&scale, root, baserel,
											 (CaseExpr *) shard_agg_input(agg),
											 sl->params, sl->param_kinds);
				if (filter)
					scale.data = psprintf("CASE WHEN %s THEN %s END", filter,
										  scale.data);
				first = shard_agg_select_col(sl, psprintf("sum(%s)", v), TA_SUM, v, NULL);
				return list_make2_int(first,
									  shard_agg_select_col(sl, psprintf("max(%s)", scale.data),
														   TA_MAX, scale.data, NULL));
			}
		case AGGOP_MIN:
		case AGGOP_MAX:
			if (shard_agg_time_type(type))
			{
				/*
				 * The reading threads read the stored value itself, as
				 * ssfdw_usecs or ssfdw_days would, and compare numbers: no
				 * SQL function call per row.  SQLite's GROUP BY (past the
				 * threads' groups) runs the SQL.
				 */
				StringInfoData raw;

				initStringInfo(&raw);
				shard_deparse_column_ref(&raw, root, arg);
				return list_make1_int(shard_agg_select_col(sl, psprintf("%s(%s)",
															  op == AGGOP_MIN ? "min" : "max", v),
												 op == AGGOP_MIN ? TA_TIME_MIN : TA_TIME_MAX,
												 filter ?
												 psprintf("CASE WHEN %s THEN %s END",
														  filter, raw.data) :
												 raw.data,
												 psprintf("%d", arg->vartype == DATEOID ?
														  TA_TIME_DAYS : arg->vartypmod)));
			}
			if (c)
				shard_agg_guard_column(sl, c, type, false);
			return list_make1_int(shard_agg_select_col(sl, psprintf("%s(%s%s)",
														  op == AGGOP_MIN ? "min" : "max",
														  v, is_text ? " COLLATE BINARY" : ""),
											 op == AGGOP_MIN ? TA_MIN : TA_MAX,
											 v, NULL));
		case AGGOP_BOOL_AND:
		case AGGOP_BOOL_OR:
			b = psprintf("CASE WHEN typeof(%s) IN ('integer', 'real') THEN "
						 "CASE %s WHEN 1 THEN 1 WHEN 0 THEN 0 END "
						 "WHEN lower(trim(%s, ' ' || char(9, 10, 11, 12, 13))) IN ('t', 'tr', 'tru', 'true', 'y', 'ye', 'yes', 'on', '1') THEN 1 "
						 "WHEN lower(trim(%s, ' ' || char(9, 10, 11, 12, 13))) IN ('f', 'fa', 'fal', 'fals', 'false', 'n', 'no', 'of', 'off', '0') THEN 0 END",
						 v, v, v, v);
			first = shard_agg_select_col(sl, psprintf("%s(%s)",
											op == AGGOP_BOOL_AND ? "min" : "max",
											b),
							   op == AGGOP_BOOL_AND ? TA_MIN : TA_MAX, b, NULL);
			return list_make2_int(first,
								  shard_agg_select_col(sl, psprintf("count(%s) - count(%s)", v, b),
											 TA_COUNT_DIFF, v, b));
		default:
			elog(ERROR, "unexpected aggregate kind %d", op);
	}
	return NIL;
}
