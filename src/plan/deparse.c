/*-------------------------------------------------------------------------
 *
 * deparse.c
 *		  Which conditions SQLite may evaluate, and the SQL sent to shards
 *
 * A condition is pushed to the shards only when SQLite gives exactly the
 * answer PostgreSQL would.  That rules out far more than it allows:
 *
 * - Only comparisons of one column with one value, on integers, text and
 *   timestamps.  A value is a constant, a parameter, or an expression of
 *   no column and no volatile function (now() - interval '30 days'), which
 *   the scan computes once, when it reads its first shard, and only where
 *   PostgreSQL surely would (not under AND/OR).  Values are bound, never
 *   spliced, and wrapped in CAST(? AS INTEGER|TEXT) so that SQLite's
 *   affinity rules compare numbers as numbers even where a shard declared
 *   the column loosely (text '042' in an untyped column equals 42, as
 *   PostgreSQL reads it).
 * - Text equality only under a deterministic collation (PostgreSQL then
 *   compares bytes), text ordering only under the C collation (SQLite's
 *   BINARY order is byte order).  The column carries COLLATE BINARY, so a
 *   column declared NOCASE in a shard cannot change the answer; on the
 *   column side, not the value side, because SQLite's OR-to-IN rewrite
 *   ignores a collation on the value.  Text pushdown also needs a UTF-8
 *   database, since SQLite compares UTF-8 bytes, and a column of TEXT
 *   affinity in the shard: shardsql.c checks every shard and evaluates the
 *   conditions in PostgreSQL for a shard that declares the column otherwise.
 * - No arithmetic: SQLite turns integer overflow into floating point and
 *   division by zero into NULL, where PostgreSQL raises an error.  (A
 *   direct UPDATE's new integer values are the exception: modifyplan.c writes
 *   them with the wrapper's functions ssfdw_int_read and ssfdw_int, which
 *   read a column as the wrapper does and raise PostgreSQL's errors.)
 * - timestamp and timestamptz columns are compared as ssfdw_usecs(column,
 *   p): the microseconds the wrapper reads from whichever form is stored
 *   (text, Unix seconds), rounded as timestamp(p) rounds, or PostgreSQL's
 *   error for a value it cannot read; the value is bound as microseconds.
 *   date columns likewise as ssfdw_days(column), in days.  Only against a
 *   value of the same type (or a date, as its midnight): timestamp against
 *   timestamptz depends on the TimeZone.  CAST(ts AS date) of a timestamp
 *   column compares as ssfdw_days(ts, 1).
 * - No real, double precision, numeric or boolean comparisons: REAL
 *   rounding, NaN and infinities stored as text, numeric exactness and
 *   boolean text forms would make SQLite's comparison differ from
 *   PostgreSQL's.
 * - IN lists and = ANY / <> ALL bind the array as JSON and compare with
 *   "IN (SELECT CAST(value AS ...) FROM json_each(?))", which applies the
 *   same affinity as "=" (a plain IN list would not).
 * - LIKE with a constant pattern becomes GLOB, which is case-sensitive and
 *   matches characters as PostgreSQL's LIKE does; ILIKE and regular
 *   expressions stay local.
 * - IS [NOT] NULL on any column, AND, OR, NOT, and IN lists of the above.
 * - A varchar(n) column is compared as ssfdw_varchar(column, n), the value
 *   PostgreSQL's input makes of it (spaces beyond n characters dropped,
 *   other text beyond them an error), since 'a ' and 'a' are one value in
 *   a varchar(1) column.  Equality adds a range on the stored column, so
 *   that SQLite can still search an index.
 *
 * Everything else is evaluated by PostgreSQL on the fetched rows.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/htup_details.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/pg_locale.h"
#include "utils/syscache.h"

typedef enum PushCategory
{
	PUSH_NONE,
	PUSH_INT,
	PUSH_TEXT,
	PUSH_TIME,						/* bound as microseconds or days since
									 * 2000 */
	PUSH_EPOCH_NUMERIC				/* a numeric compared with extract(epoch
									 * FROM a time), never a column's */
} PushCategory;

/* State of one deparse: the relation and the parameters collected. */
typedef struct DeparseContext
{
	PlannerInfo *root;
	RelOptInfo *baserel;
	StringInfo	buf;
	List	  **params;
	List	  **param_kinds;
	StringInfo	range;			/* where a top-level varchar(n) equality
								 * writes its index range, or NULL: in the
								 * condition itself */
} DeparseContext;

/*
 * Whether column references name their table's alias ("r3"."col"), as the
 * SQL of a join pushed to the shards needs (join.c): set only while
 * shard_deparse_qualified_conditions, or a caller through
 * shard_deparse_set_qualified, deparses.
 */
static bool deparse_qualified = false;

static void deparse_expr(Expr *expr, DeparseContext *ctx);
static bool pushable(PlannerInfo *root, RelOptInfo *baserel, Expr *expr,
					 bool computed_ok);

/*
 * type_category
 *		How values of a type compare in SQLite, if they may be pushed.
 */
static PushCategory
type_category(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			return PUSH_INT;
		case TEXTOID:
		case VARCHAROID:
			return GetDatabaseEncoding() == PG_UTF8 ? PUSH_TEXT : PUSH_NONE;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case DATEOID:
			return PUSH_TIME;
		default:
			return PUSH_NONE;
	}
}

/*
 * shard_strip_relabel
 *		Look through binary-compatible coercions such as varchar -> text.
 */
Expr *
shard_strip_relabel(Expr *expr)
{
	while (expr && IsA(expr, RelabelType))
		expr = ((RelabelType *) expr)->arg;
	return expr;
}

/*
 * shard_own_column
 *		The user column of the scanned foreign table that expr is (through
 *		relabeling), or NULL; of a join the shards run, a column of any of
 *		its tables (an aggregation over it, upper.c).
 */
Var *
shard_own_column(Expr *expr, RelOptInfo *baserel)
{
	Var		   *var = (Var *) shard_strip_relabel(expr);

	if (var && IsA(var, Var) && var->varlevelsup == 0 && var->varattno > 0 &&
		(IS_JOIN_REL(baserel) ? bms_is_member(var->varno, baserel->relids) :
		 var->varno == baserel->relid))
		return var;
	return NULL;
}

/*
 * is_own_column
 *		Is expr a user column of the scanned foreign table?
 */
static bool
is_own_column(Expr *expr, RelOptInfo *baserel)
{
	return shard_own_column(expr, baserel) != NULL;
}

/*
 * value_category
 *		The category of a value's type: its type_category, or for a numeric
 *		PUSH_EPOCH_NUMERIC, which only the epoch seconds of a time are
 *		compared with.
 */
static PushCategory
value_category(Oid typid)
{
	return typid == NUMERICOID ? PUSH_EPOCH_NUMERIC : type_category(typid);
}

/*
 * is_value
 *		Is expr a constant, a parameter or (with computed_ok) an expression
 *		computed once per scan whose value may be bound for this category?
 */
static bool
is_value(Expr *expr, PushCategory cat, bool computed_ok)
{
	expr = shard_strip_relabel(expr);
	if (expr == NULL)
		return false;
	if (IsA(expr, Const))
	{
		Const	   *c = (Const *) expr;

		return value_category(c->consttype) == cat;
	}
	if (IsA(expr, Param))
	{
		Param	   *p = (Param *) expr;

		/* a subquery's value may fail to compute, like an expression */
		return (p->paramkind == PARAM_EXTERN ||
				(p->paramkind == PARAM_EXEC && computed_ok)) &&
			value_category(p->paramtype) == cat;
	}

	/*
	 * An expression of no column and no volatile function, such as now() -
	 * interval '30 days': the scan computes it once, as an index scan
	 * computes its run-time keys, and binds the value.  Not
	 * where PostgreSQL might never compute it (computed_ok false: under an
	 * AND or OR, which stop at their first deciding argument), since
	 * computing it may fail.
	 */
	return computed_ok &&
		value_category(exprType((Node *) expr)) == cat &&
		!contain_var_clause((Node *) expr) &&
		!contain_volatile_functions((Node *) expr) &&
		!contain_subplans((Node *) expr) &&
		!contain_agg_clause((Node *) expr) &&
		!contain_window_function((Node *) expr);
}

/*
 * comparison_name
 *		The SQL spelling of a built-in comparison operator, or NULL.
 */
static const char *
comparison_name(Oid opno)
{
	static const char *const names[] = {"=", "<>", "<", "<=", ">", ">=", NULL};
	char	   *opname;
	int			i;

	if (opno >= FirstGenbkiObjectId)
		return NULL;
	opname = get_opname(opno);
	if (opname == NULL)
		return NULL;
	for (i = 0; names[i]; i++)
		if (strcmp(opname, names[i]) == 0)
			return names[i];
	return NULL;
}

/*
 * is_like_operator
 *		Is opno the built-in text LIKE (or NOT LIKE) operator?
 */
static bool
is_like_operator(Oid opno, bool *negated)
{
	char	   *opname;

	if (opno >= FirstGenbkiObjectId || get_op_rettype(opno) != BOOLOID)
		return false;
	opname = get_opname(opno);
	if (opname == NULL)
		return false;
	*negated = (strcmp(opname, "!~~") == 0);
	return *negated || strcmp(opname, "~~") == 0;
}

/*
 * text_collation_ok
 *		Does SQLite's BINARY comparison give PostgreSQL's answer under this
 *		collation?  Equality needs a deterministic collation, ordering the C
 *		collation.
 */
static bool
text_collation_ok(Oid collid, bool ordering)
{
	if (!OidIsValid(collid))
		return false;
	if (ordering)
		return lc_collate_is_c(collid);
	return collid == DEFAULT_COLLATION_OID ||
		get_collation_isdeterministic(collid);
}

/*
 * column_side
 *		Is expr what a pushed comparison reads on its column side: a column
 *		of this table, or the date of a timestamp column?
 */
static bool
column_side(Expr *expr, RelOptInfo *baserel)
{
	return is_own_column(expr, baserel) ||
		shard_time_date_of_timestamp(expr, baserel) != NULL ||
		shard_time_epoch_of(expr, baserel) != NULL;
}

/*
 * column_vs_value
 *		Split a two-argument operator into the column and the value side.
 *		Returns false unless exactly one side is a column of this table.
 */
static bool
column_vs_value(List *args, RelOptInfo *baserel, Expr **col, Expr **val,
				bool *swapped)
{
	Expr	   *l,
			   *r;

	if (list_length(args) != 2)
		return false;
	l = linitial(args);
	r = lsecond(args);
	if (column_side(l, baserel) && !column_side(r, baserel))
	{
		*col = l;
		*val = r;
		*swapped = false;
		return true;
	}
	if (column_side(r, baserel) && !column_side(l, baserel))
	{
		*col = r;
		*val = l;
		*swapped = true;
		return true;
	}
	return false;
}

/*
 * column_category
 *		The comparison category of a column, or PUSH_NONE.
 */
static PushCategory
column_category(Expr *col)
{
	/* the epoch seconds of a time: compared as the time (timepush.c) */
	if (shard_time_epoch_of(col, NULL) != NULL)
		return PUSH_TIME;
	return type_category(exprType((Node *) shard_strip_relabel(col)));
}

/*
 * epoch_value_category
 *		The category of the values a column side of category cat is
 *		compared with: integers for CAST(extract(epoch FROM t) AS bigint),
 *		numerics for extract(epoch FROM t) itself, else cat.
 */
static PushCategory
epoch_value_category(Expr *col, PushCategory cat)
{
	if (shard_time_epoch_of(col, NULL) == NULL)
		return cat;
	return exprType((Node *) shard_strip_relabel(col)) == NUMERICOID ?
		PUSH_EPOCH_NUMERIC : PUSH_INT;
}

/*
 * varchar_length
 *		n of a varchar(n) column, or -1 for any other column.
 */
static int
varchar_length(Expr *col)
{
	Node	   *c = (Node *) shard_strip_relabel(col);

	if (exprType(c) == VARCHAROID && exprTypmod(c) >= (int32) VARHDRSZ)
		return exprTypmod(c) - VARHDRSZ;
	return -1;
}

/*
 * like_pattern_ok
 *		A constant LIKE pattern that translates to GLOB.
 */
static bool
like_pattern_ok(Expr *val)
{
	Const	   *c = (Const *) shard_strip_relabel(val);
	text	   *t;

	if (c == NULL || !IsA(c, Const) || c->constisnull ||
		type_category(c->consttype) != PUSH_TEXT)
		return false;
	t = DatumGetTextPP(c->constvalue);
	return shard_like_to_glob(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)) != NULL;
}

/*
 * array_elements_ok
 *		The array side of "col = ANY (...)": a constant array, an ARRAY[]
 *		of bindable values or an array parameter, of integers, text, dates
 *		or times; it is bound as one JSON array.
 */
static bool
array_elements_ok(Expr *arr, PushCategory cat, bool computed_ok)
{
	ListCell   *lc;

	arr = shard_strip_relabel(arr);
	if (type_category(get_element_type(exprType((Node *) arr))) != cat)
		return false;
	if (IsA(arr, Const))
		return !((Const *) arr)->constisnull;
	if (IsA(arr, ArrayExpr))
	{
		if (((ArrayExpr *) arr)->multidims)
			return false;
		foreach(lc, ((ArrayExpr *) arr)->elements)
			if (!is_value((Expr *) lfirst(lc), cat, computed_ok))
				return false;
		return true;
	}
	/* a subquery's array, like its value (is_value), only where computed */
	if (IsA(arr, Param))
		return ((Param *) arr)->paramkind == PARAM_EXTERN ||
			(((Param *) arr)->paramkind == PARAM_EXEC && computed_ok);
	return false;
}

/*
 * has_array_param
 *		Does an expression compare with an array parameter?  A NULL array
 *		makes "x = ANY ($1)" NULL in PostgreSQL but false in SQLite (json_each
 *		of NULL has no rows): the same where a WHERE keeps no row either way,
 *		not under NOT or in "<> ALL", which would turn it into true.
 */
static bool
has_array_param(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, ScalarArrayOpExpr) &&
		IsA(lsecond(((ScalarArrayOpExpr *) node)->args), Param))
		return true;
	return expression_tree_walker(node, has_array_param, context);
}

/*
 * shard_is_pushable_expr
 *		May this condition be evaluated inside the shards?  See the file
 *		header for what SQLite computes exactly as PostgreSQL does.
 */
bool
shard_is_pushable_expr(PlannerInfo *root, RelOptInfo *baserel, Expr *expr)
{
	return pushable(root, baserel, expr, true);
}

/*
 * pushable
 *		shard_is_pushable_expr's work; computed_ok says whether PostgreSQL
 *		surely computes the values of expr whenever it evaluates a row.
 */
static bool
pushable(PlannerInfo *root, RelOptInfo *baserel, Expr *expr, bool computed_ok)
{
	if (expr == NULL)
		return false;

	switch (nodeTag(expr))
	{
		case T_BoolExpr:
			{
				ListCell   *lc;

				if (((BoolExpr *) expr)->boolop == NOT_EXPR &&
					has_array_param((Node *) expr, NULL))
					return false;
				foreach(lc, ((BoolExpr *) expr)->args)
					if (!pushable(root, baserel, lfirst(lc),
								  computed_ok &&
								  ((BoolExpr *) expr)->boolop == NOT_EXPR))
						return false;
				return true;
			}
		case T_NullTest:
			{
				NullTest   *nt = (NullTest *) expr;

				return !nt->argisrow && is_own_column(nt->arg, baserel);
			}
		case T_OpExpr:
			{
				OpExpr	   *op = (OpExpr *) expr;
				Expr	   *col,
						   *val;
				bool		swapped;
				bool		negated;
				const char *name;
				PushCategory cat;

				if (!column_vs_value(op->args, baserel, &col, &val, &swapped))
					return false;
				cat = column_category(col);
				if (cat == PUSH_NONE)
					return false;

				if (is_like_operator(op->opno, &negated))
					return cat == PUSH_TEXT && !swapped &&
						text_collation_ok(op->inputcollid, false) &&
						like_pattern_ok(val);

				name = comparison_name(op->opno);
				if (name == NULL ||
					!is_value(val, epoch_value_category(col, cat), computed_ok))
					return false;
				/*
				 * Times of any two types: a value of another type than the
				 * column's becomes its bounds in the column's type, as
				 * PostgreSQL compares them in the TimeZone (timepush.c).
				 */
				if (cat == PUSH_TIME &&
					!shard_time_comparable(col, exprType((Node *) val)))
					return false;
				if (cat == PUSH_TEXT &&
					!text_collation_ok(op->inputcollid,
									   strcmp(name, "=") != 0 &&
									   strcmp(name, "<>") != 0))
					return false;
				return true;
			}
		case T_ScalarArrayOpExpr:
			{
				ScalarArrayOpExpr *saop = (ScalarArrayOpExpr *) expr;
				const char *name = comparison_name(saop->opno);
				Expr	   *col = linitial(saop->args);
				PushCategory cat;

				if (name == NULL || !is_own_column(col, baserel))
					return false;
				if (!((saop->useOr && strcmp(name, "=") == 0) ||
					  (!saop->useOr && strcmp(name, "<>") == 0)))
					return false;
				cat = column_category(col);
				if (cat == PUSH_NONE)
					return false;
				if (cat == PUSH_TEXT &&
					!text_collation_ok(saop->inputcollid, false))
					return false;
				/* times in a list only against their own type */
				if (cat == PUSH_TIME &&
					get_element_type(exprType(lsecond(saop->args))) !=
					exprType((Node *) shard_strip_relabel(col)))
					return false;
				if (!saop->useOr && has_array_param((Node *) saop, NULL))
					return false;
				return array_elements_ok(lsecond(saop->args), cat, computed_ok);
			}
		default:
			return false;
	}
}

/*
 * shard_like_to_glob
 *		Translate a LIKE pattern (backslash escapes) into an SQLite GLOB
 *		pattern; NULL when the pattern ends in a lone escape, which
 *		PostgreSQL rejects, so that the condition stays local and raises
 *		PostgreSQL's error.
 */
char *
shard_like_to_glob(const char *pattern, int len)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	for (i = 0; i < len; i++)
	{
		char		c = pattern[i];

		if (c == '\\')
		{
			if (++i >= len)
				return NULL;
			c = pattern[i];
		}
		else if (c == '%')
		{
			appendStringInfoChar(&buf, '*');
			continue;
		}
		else if (c == '_')
		{
			appendStringInfoChar(&buf, '?');
			continue;
		}
		if (c == '*' || c == '?' || c == '[')
			appendStringInfo(&buf, "[%c]", c);
		else
			appendStringInfoChar(&buf, c);
	}
	return buf.data;
}

/*
 * case_blind_like
 *		Is clause a case-blind match of a text column with a constant
 *		pattern of ASCII characters: lower(col) LIKE 'pat', as Metabase
 *		writes "contains", or col ILIKE 'pat'?  Sets *col and *glob, the
 *		pattern as an SQLite GLOB pattern in which each letter matches both
 *		its cases.
 */
static bool
case_blind_like(Expr *clause, RelOptInfo *baserel, Expr **col, char **glob)
{
	OpExpr	   *op = (OpExpr *) clause;
	Expr	   *left;
	Const	   *pat;
	text	   *t;
	const char *p;
	int			len;
	int			i;
	StringInfoData buf;

	if (!IsA(clause, OpExpr) || list_length(op->args) != 2 ||
		GetDatabaseEncoding() != PG_UTF8)
		return false;
	left = shard_strip_relabel(linitial(op->args));
	pat = (Const *) shard_strip_relabel(lsecond(op->args));
	if (op->opno == OID_TEXT_LIKE_OP && IsA(left, FuncExpr) &&
		((FuncExpr *) left)->funcid == F_LOWER_TEXT &&
		list_length(((FuncExpr *) left)->args) == 1)
		left = shard_strip_relabel(linitial(((FuncExpr *) left)->args));
	else if (op->opno != OID_TEXT_ICLIKE_OP)
		return false;

	/*
	 * A text column, not varchar(n), whose stored value PostgreSQL reads
	 * otherwise (trailing spaces beyond n dropped) than GLOB matches it.
	 */
	if (!is_own_column(left, baserel) ||
		(exprType((Node *) left) != TEXTOID &&
		 !(exprType((Node *) left) == VARCHAROID &&
		   exprTypmod((Node *) left) < 0)) ||
		!IsA(pat, Const) || pat->constisnull || pat->consttype != TEXTOID)
		return false;
	t = DatumGetTextPP(pat->constvalue);
	p = VARDATA_ANY(t);
	len = VARSIZE_ANY_EXHDR(t);
	if (len > 1000)
		return false;			/* far from SQLite's pattern length limit */
	initStringInfo(&buf);
	for (i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) p[i];

		if (c == '\\')
		{
			if (++i >= len)
				return false;	/* PostgreSQL's error, raised locally */
			c = (unsigned char) p[i];
		}
		else if (c == '%' || c == '_')
		{
			appendStringInfoChar(&buf, c == '%' ? '*' : '?');
			continue;
		}
		if (c == 0 || c >= 0x80)
			return false;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
			appendStringInfo(&buf, "[%c%c]", pg_ascii_tolower(c),
							 pg_ascii_toupper(c));
		else if (c == '*' || c == '?' || c == '[')
			appendStringInfo(&buf, "[%c]", c);
		else
			appendStringInfoChar(&buf, c);
	}
	*col = left;
	*glob = buf.data;
	return true;
}

/*
 * shard_prefilter_expr
 *		A condition the shards cannot decide exactly but can narrow to a
 *		superset of the rows it holds for, which PostgreSQL then rechecks;
 *		NULL when there is none.  The one form is a case-blind LIKE
 *		(case_blind_like): SQLite's case folding is ASCII only, where
 *		PostgreSQL's lower() and ILIKE fold every letter under the
 *		collation ('É' to 'é', the Kelvin sign to 'k').  So the shards keep
 *		the rows GLOB matches with each ASCII letter of the pattern in both
 *		cases, and every row whose value is not pure ASCII text.  For an
 *		ASCII value and an ASCII pattern, a match in PostgreSQL is a match
 *		of the GLOB: lower() maps each character to one character, which
 *		equals a pattern letter only if it is that letter in either case.
 */
Expr *
shard_prefilter_expr(PlannerInfo *root, RelOptInfo *baserel, Expr *clause)
{
	Expr	   *col;
	char	   *glob;

	return case_blind_like(clause, baserel, &col, &glob) ? clause : NULL;
}

/*
 * add_param
 *		Collect a value to bind and write its placeholder, cast so SQLite
 *		compares with the category's rules.
 */
static void
add_param(Expr *val, ShardParamKind kind, PushCategory cat,
		  DeparseContext *ctx)
{
	static const char *const casts[] = {NULL, "INTEGER", "TEXT", "INTEGER"};

	*ctx->params = lappend(*ctx->params, val);
	*ctx->param_kinds = lappend_int(*ctx->param_kinds, kind);
	if (kind == SHARD_PARAM_JSON_ARRAY)
		appendStringInfo(ctx->buf, "SELECT CAST(value AS %s) FROM json_each(?%d)",
						 casts[cat], list_length(*ctx->params));
	else
		appendStringInfo(ctx->buf, "CAST(?%d AS %s)", list_length(*ctx->params),
						 casts[cat]);
}

/*
 * shard_deparse_column_ref
 *		Write a column of a scanned foreign table by its SQLite name.
 */
void
shard_deparse_column_ref(StringInfo buf, PlannerInfo *root, Var *var)
{
	RangeTblEntry *rte = planner_rt_fetch(var->varno, root);

	/* a tenant file's tenant column is the file's tenant: no alias */
	if (deparse_qualified &&
		shard_file_tenant_column_kind(rte->relid, var->varattno) < 0)
		appendStringInfo(buf, "r%d.", var->varno);
	shard_append_column_sql(buf, rte->relid, var->varattno);
}

/*
 * shard_deparse_set_qualified
 *		Make column references name their table's alias, as in a pushed
 *		join (or stop); returns the previous setting.  Callers restore it
 *		on the error path too (PG_FINALLY).
 */
bool
shard_deparse_set_qualified(bool qualified)
{
	bool		old = deparse_qualified;

	deparse_qualified = qualified;
	return old;
}

/*
 * shard_deparse_qualified_conditions
 *		shard_deparse_conditions for a condition of a pushed join, whose
 *		columns name their table's alias; without the index ranges of time
 *		columns, which only a table's own query uses.
 */
List *
shard_deparse_qualified_conditions(PlannerInfo *root, RelOptInfo *baserel,
								   List *conds, List **params,
								   List **param_kinds)
{
	List	   *sqls = NIL;
	List	   *result = NIL;
	bool		old = shard_deparse_set_qualified(true);
	ListCell   *lc;

	PG_TRY();
	{
		sqls = shard_deparse_conditions(root, baserel, conds, params,
										param_kinds);
	}
	PG_FINALLY();
	{
		shard_deparse_set_qualified(old);
	}
	PG_END_TRY();
	foreach(lc, sqls)
		if (strVal(lfirst(lc))[0] != SHARD_TIME_RANGE_MARK &&
			strVal(lfirst(lc))[0] != SHARD_TIME_TEXT_RANGE_MARK)
			result = lappend(result, lfirst(lc));
	return result;
}

/* What text_columns_walker collects. */
typedef struct TextColumnsContext
{
	PlannerInfo *root;
	List	   *needs;
	bool		ordered;		/* under an ordering comparison */
} TextColumnsContext;

/*
 * text_columns_walker
 *		Note each text column, as ordered when an ordering comparison (<,
 *		<=, >, >=) reads it.
 */
static bool
text_columns_walker(Node *node, TextColumnsContext *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, OpExpr))
	{
		char	   *name = get_opname(((OpExpr *) node)->opno);
		bool		saved = cxt->ordered;
		bool		result;

		if (name && (strcmp(name, "<") == 0 || strcmp(name, "<=") == 0 ||
					 strcmp(name, ">") == 0 || strcmp(name, ">=") == 0))
			cxt->ordered = true;
		result = expression_tree_walker(node, text_columns_walker, cxt);
		cxt->ordered = saved;
		return result;
	}
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;
		RangeTblEntry *rte;
		char	   *name;
		ListCell   *lc;

		if (var->varattno <= 0 ||
			(var->vartype != TEXTOID && var->vartype != VARCHAROID))
			return false;
		rte = planner_rt_fetch(var->varno, cxt->root);
		/* a tenant file's tenant is no column of it: nothing to declare */
		if (shard_file_tenant_column_kind(rte->relid, var->varattno) >= 0)
			return false;
		name = psprintf("%c%s",
						cxt->ordered ? SHARD_NEEDS_TEXT_ORDER : SHARD_NEEDS_TEXT,
						shard_column_name(rte->relid, var->varattno));
		foreach(lc, cxt->needs)
			if (strcmp(strVal(lfirst(lc)), name) == 0)
				return false;
		cxt->needs = lappend(cxt->needs, makeString(name));
		return false;
	}
	return expression_tree_walker(node, text_columns_walker, cxt);
}

/*
 * shard_text_columns
 *		Add to needs (a List of String) an entry for each text column that
 *		expressions use: a shard must declare them with TEXT affinity for
 *		SQLite to compare them as PostgreSQL does (SHARD_NEEDS_TEXT), in a
 *		UTF-8 database where it orders them (SHARD_NEEDS_TEXT_ORDER).
 */
List *
shard_text_columns(PlannerInfo *root, List *exprs, List *needs)
{
	TextColumnsContext cxt;

	cxt.root = root;
	cxt.needs = needs;
	cxt.ordered = false;
	(void) text_columns_walker((Node *) exprs, &cxt);
	return cxt.needs;
}

/*
 * deparse_column
 *		Write a column reference by its SQLite name.
 */
static void
deparse_column(Expr *expr, DeparseContext *ctx)
{
	Var		   *ts = shard_time_date_of_timestamp(expr, ctx->baserel);
	Var		   *ep = shard_time_epoch_of(expr, ctx->baserel);

	/* the epoch seconds of a time: the time, with the integer's bounds */
	if (ep)
	{
		shard_time_deparse_column_value(ctx->buf, ctx->root, ep);
		return;
	}
	/* the date of the time the wrapper reads: ssfdw_days */
	if (ts)
	{
		appendStringInfoString(ctx->buf, "ssfdw_days(");
		shard_deparse_column_ref(ctx->buf, ctx->root, ts);
		appendStringInfoString(ctx->buf, ", 1)");
		return;
	}
	shard_deparse_column_value(ctx->buf, ctx->root,
							   (Var *) shard_strip_relabel(expr));
}

/*
 * shard_sql_may_fail
 *		Does pushed SQL read a column through one of the functions that
 *		raise PostgreSQL's error for a value it cannot read (as
 *		shard_deparse_column_value writes them)?
 */
bool
shard_sql_may_fail(const char *sql)
{
	return strstr(sql, "ssfdw_varchar(") != NULL ||
		strstr(sql, "ssfdw_usecs(") != NULL ||
		strstr(sql, "ssfdw_days(") != NULL;
}

/*
 * shard_deparse_column_value
 *		Write a column as PostgreSQL reads its values, for SQLite to compare
 *		or group them: a varchar(n) column through ssfdw_varchar, which
 *		drops spaces beyond n characters as varchar's input does; a date or
 *		time column as a number (timepush.c).
 */
void
shard_deparse_column_value(StringInfo buf, PlannerInfo *root, Var *var)
{
	int			n = varchar_length((Expr *) var);

	if (shard_time_deparse_column_value(buf, root, var))
		return;
	if (n < 0)
	{
		shard_deparse_column_ref(buf, root, var);
		return;
	}
	appendStringInfoString(buf, "ssfdw_varchar(");
	shard_deparse_column_ref(buf, root, var);
	appendStringInfo(buf, ", %d)", n);
}

/*
 * deparse_varchar_range
 *		Write into out the range of stored values that a varchar(n) column
 *		equal to val can hold: val itself, and val followed by spaces (which
 *		sort below '!').
 */
static void
deparse_varchar_range(StringInfo out, Expr *col, Expr *val,
					  DeparseContext *ctx)
{
	StringInfo	save = ctx->buf;
	Var		   *var = (Var *) shard_strip_relabel(col);

	ctx->buf = out;
	shard_deparse_column_ref(out, ctx->root, var);
	appendStringInfoString(out, " COLLATE BINARY >= ");
	add_param(val, SHARD_PARAM_SCALAR, PUSH_TEXT, ctx);
	appendStringInfoString(out, " AND ");
	shard_deparse_column_ref(out, ctx->root, var);
	appendStringInfoString(out, " COLLATE BINARY < ");
	add_param(val, SHARD_PARAM_SCALAR, PUSH_TEXT, ctx);
	appendStringInfoString(out, " || '!'");
	ctx->buf = save;
}

/*
 * deparse_expr
 *		Write a condition that shard_is_pushable_expr accepted.
 */
static void
deparse_expr(Expr *expr, DeparseContext *ctx)
{
	StringInfo	range = ctx->range;

	ctx->range = NULL;			/* for this node only, not its arguments */
	switch (nodeTag(expr))
	{
		case T_BoolExpr:
			{
				BoolExpr   *b = (BoolExpr *) expr;
				ListCell   *lc;
				bool		first = true;

				if (b->boolop == NOT_EXPR)
				{
					appendStringInfoString(ctx->buf, "(NOT ");
					deparse_expr(linitial(b->args), ctx);
					appendStringInfoChar(ctx->buf, ')');
					break;
				}
				appendStringInfoChar(ctx->buf, '(');
				foreach(lc, b->args)
				{
					if (!first)
						appendStringInfoString(ctx->buf,
											   b->boolop == AND_EXPR ? " AND " : " OR ");
					first = false;
					deparse_expr(lfirst(lc), ctx);
				}
				appendStringInfoChar(ctx->buf, ')');
				break;
			}
		case T_NullTest:
			{
				NullTest   *nt = (NullTest *) expr;

				/* the stored NULLs are PostgreSQL's: test the column as is */
				appendStringInfoChar(ctx->buf, '(');
				shard_deparse_column_ref(ctx->buf, ctx->root,
										 shard_own_column(nt->arg, ctx->baserel));
				appendStringInfoString(ctx->buf, nt->nulltesttype == IS_NULL ?
									   " IS NULL)" : " IS NOT NULL)");
				break;
			}
		case T_OpExpr:
			{
				OpExpr	   *op = (OpExpr *) expr;
				Expr	   *col,
						   *val;
				bool		swapped;
				bool		negated;
				PushCategory cat;
				const char *name;

				char	   *glob;

				/* a narrowing, rechecked by PostgreSQL (shard_prefilter_expr) */
				if (case_blind_like(expr, ctx->baserel, &col, &glob))
				{
					appendStringInfoChar(ctx->buf, '(');
					deparse_column(col, ctx);
					appendStringInfoString(ctx->buf, " GLOB ");
					add_param((Expr *) makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID,
												 -1, CStringGetTextDatum(glob),
												 false, false),
							  SHARD_PARAM_SCALAR, PUSH_TEXT, ctx);
					appendStringInfoString(ctx->buf, " OR typeof(");
					deparse_column(col, ctx);
					appendStringInfoString(ctx->buf, ") <> 'text' OR length(CAST(");
					deparse_column(col, ctx);
					appendStringInfoString(ctx->buf, " AS BLOB)) <> length(");
					deparse_column(col, ctx);
					appendStringInfoString(ctx->buf, "))");
					break;
				}
				column_vs_value(op->args, ctx->baserel, &col, &val, &swapped);
				cat = column_category(col);
				appendStringInfoChar(ctx->buf, '(');
				if (is_like_operator(op->opno, &negated))
				{
					Const	   *c = (Const *) shard_strip_relabel(val);
					text	   *t = DatumGetTextPP(c->constvalue);
					char	   *glob = shard_like_to_glob(VARDATA_ANY(t),
														  VARSIZE_ANY_EXHDR(t));

					if (negated)
						appendStringInfoString(ctx->buf, "NOT ");
					deparse_column(col, ctx);
					appendStringInfoString(ctx->buf, " GLOB ");

					/*
					 * Bound as CAST(? AS TEXT): SQLite 3.40's LIKE optimization
					 * builds its index range in UTF-8 and loses rows of an
					 * indexed column in a UTF-16 database when the pattern
					 * is a bare parameter or literal.
					 */
					add_param((Expr *) makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID,
												 -1, CStringGetTextDatum(glob),
												 false, false),
							  SHARD_PARAM_SCALAR, cat, ctx);
					appendStringInfoChar(ctx->buf, ')');
					break;
				}

				/* Write column first; flip the operator if it came second. */
				name = comparison_name(op->opno);
				if (swapped)
				{
					if (strcmp(name, "<") == 0)
						name = ">";
					else if (strcmp(name, "<=") == 0)
						name = ">=";
					else if (strcmp(name, ">") == 0)
						name = "<";
					else if (strcmp(name, ">=") == 0)
						name = "<=";
				}
				if (cat == PUSH_TIME)
				{
					StringInfo	save = ctx->buf;
					StringInfoData colexpr;
					Var		   *ts = shard_time_date_of_timestamp(col,
																  ctx->baserel);
					Var		   *ep = shard_time_epoch_of(col, ctx->baserel);

					/* the column as the wrapper reads it, then the value */
					initStringInfo(&colexpr);
					ctx->buf = &colexpr;
					deparse_column(col, ctx);
					ctx->buf = save;
					shard_time_deparse_comparison(ctx->buf, range, ctx->root,
												  colexpr.data,
												  ts ? ts : ep ? ep :
												  shard_own_column(col, ctx->baserel),
												  ep ? ep->vartype :
												  exprType((Node *) shard_strip_relabel(col)),
												  name, val, ctx->params,
												  ctx->param_kinds);
					appendStringInfoChar(ctx->buf, ')');
					break;
				}
				deparse_column(col, ctx);
				if (cat == PUSH_TEXT)
					appendStringInfoString(ctx->buf, " COLLATE BINARY");
				appendStringInfo(ctx->buf, " %s ", name);
				add_param(val, SHARD_PARAM_SCALAR, cat, ctx);

				/*
				 * A varchar(n) value equal to x is stored as x, perhaps with
				 * spaces after it: a range on the stored column says so, and
				 * lets SQLite search an index on it.  At the top level it
				 * is a condition of its own, which cannot fail, so that it
				 * stays where SQLite looks for index terms.
				 */
				if (strcmp(name, "=") == 0 && varchar_length(col) >= 0)
				{
					if (range == NULL)
					{
						appendStringInfoString(ctx->buf, " AND ");
						deparse_varchar_range(ctx->buf, col, val, ctx);
					}
					else
					{
						appendStringInfoChar(range, '(');
						deparse_varchar_range(range, col, val, ctx);
						appendStringInfoChar(range, ')');
					}
				}
				appendStringInfoChar(ctx->buf, ')');
				break;
			}
		case T_ScalarArrayOpExpr:
			{
				ScalarArrayOpExpr *saop = (ScalarArrayOpExpr *) expr;
				Expr	   *col = linitial(saop->args);
				PushCategory cat = column_category(col);

				appendStringInfoString(ctx->buf, saop->useOr ? "(" : "(NOT ");
				deparse_column(col, ctx);
				if (cat == PUSH_TEXT)
					appendStringInfoString(ctx->buf, " COLLATE BINARY");
				appendStringInfoString(ctx->buf, " IN (");
				add_param(lsecond(saop->args), SHARD_PARAM_JSON_ARRAY, cat, ctx);
				appendStringInfoString(ctx->buf, "))");
				/* a top-level list of times: its index range */
				if (cat == PUSH_TIME && saop->useOr && range != NULL)
					shard_time_deparse_in_range(range, ctx->root,
												shard_own_column(col, ctx->baserel),
												exprType((Node *) shard_strip_relabel(col)),
												lsecond(saop->args),
												ctx->params, ctx->param_kinds);
				break;
			}
		default:
			elog(ERROR, "unexpected node type %d in a pushed-down condition",
				 (int) nodeTag(expr));
	}
}

/*
 * shard_deparse_conditions
 *		Deparse pushable conditions (RestrictInfos or bare expressions), one
 *		String each, collecting the values to bind in *params with their
 *		kinds; shard_join_conditions makes them one WHERE clause.
 */
List *
shard_deparse_conditions(PlannerInfo *root, RelOptInfo *baserel, List *conds,
						 List **params, List **param_kinds)
{
	DeparseContext ctx;
	ListCell   *lc;
	List	   *sqls = NIL;

	ctx.root = root;
	ctx.baserel = baserel;
	ctx.params = params;
	ctx.param_kinds = param_kinds;

	foreach(lc, conds)
	{
		Expr	   *expr = (Expr *) lfirst(lc);
		StringInfoData one;
		StringInfoData range;

		if (IsA(expr, RestrictInfo))
			expr = ((RestrictInfo *) expr)->clause;
		initStringInfo(&one);
		initStringInfo(&range);
		ctx.buf = &one;
		ctx.range = &range;
		deparse_expr(expr, &ctx);
		sqls = lappend(sqls, makeString(one.data));
		if (range.len > 0)
			sqls = lappend(sqls, makeString(range.data));
	}
	return sqls;
}

/*
 * shard_is_pushable_filter
 *		May the shards evaluate a condition inside an aggregate, its FILTER
 *		(WHERE ...) or a CASE WHEN of its input?  As in WHERE, a condition
 *		counts a row only when true, so what SQLite computes exactly for
 *		WHERE it computes exactly there; but without values computed when
 *		the scan starts, which PostgreSQL computes only for rows it reads.
 */
bool
shard_is_pushable_filter(PlannerInfo *root, RelOptInfo *baserel, Expr *expr)
{
	return pushable(root, baserel, expr, false);
}

/*
 * numeric_case_const
 *		A numeric constant of an aggregate's CASE input that the shards can
 *		add as an integer: integral, between -2^31 and 2^31 (so that sums
 *		of a shard's rows fit SQLite's 64 bits).  Sets *value and *dscale,
 *		the display scale a numeric sum keeps the largest of ('0.0' has 1).
 */
static bool
numeric_case_const(Const *c, int64 *value, int *dscale)
{
	Datum		trunc;

	if (c->consttype != NUMERICOID || c->constisnull ||
		numeric_is_nan(DatumGetNumeric(c->constvalue)) ||
		numeric_is_inf(DatumGetNumeric(c->constvalue)))
		return false;
	trunc = DirectFunctionCall2(numeric_trunc, c->constvalue, Int32GetDatum(0));
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, trunc,
										  c->constvalue)) != 0 ||
		DatumGetInt32(DirectFunctionCall2(numeric_cmp,
										  DirectFunctionCall1(numeric_abs, trunc),
										  NumericGetDatum(int64_to_numeric(PG_INT32_MAX)))) > 0)
		return false;
	*value = DatumGetInt64(DirectFunctionCall1(numeric_int8, trunc));
	*dscale = DatumGetInt32(DirectFunctionCall1(numeric_scale, c->constvalue));
	return true;
}

/*
 * agg_case_result_ok
 *		May a result of an aggregate's CASE input be computed in SQLite: an
 *		integer constant or NULL, or a column of the CASE's own integer
 *		type (guarded by the aggregate as its column would be); of a
 *		numeric CASE, an integral constant (numeric_case_const) or NULL?
 */
static bool
agg_case_result_ok(Expr *expr, Oid type, RelOptInfo *baserel)
{
	Var		   *var;
	int64		value;
	int			dscale;

	if (expr == NULL)
		return true;			/* no ELSE: NULL */
	if (IsA(expr, Const) && type == NUMERICOID)
		return ((Const *) expr)->constisnull ||
			numeric_case_const((Const *) expr, &value, &dscale);
	if (IsA(expr, Const))
		return ((Const *) expr)->consttype == type;
	var = shard_own_column(expr, baserel);
	return type != NUMERICOID && var != NULL && var->vartype == type &&
		exprType((Node *) expr) == type;
}

/*
 * shard_agg_case_ok
 *		Is expr a CASE the shards compute exactly as an aggregate's input:
 *		searched (CASE WHEN cond THEN ...), of smallint, integer or bigint,
 *		each condition pushable (shard_is_pushable_filter), each result
 *		and the ELSE an integer constant, NULL or a column of that type?
 *		Or numeric, of integral constants: Metabase's share is
 *		sum(CASE WHEN cond THEN 1 ELSE 0.0 END) / count(*).
 *		The form of sum(CASE WHEN status = 'paid' THEN 1 ELSE 0 END) that
 *		BI tools write for shares.
 */
bool
shard_agg_case_ok(PlannerInfo *root, RelOptInfo *baserel, Expr *expr)
{
	CaseExpr   *ce;
	ListCell   *lc;

	if (expr == NULL || !IsA(expr, CaseExpr))
		return false;
	ce = (CaseExpr *) expr;
	if (ce->arg != NULL ||
		(ce->casetype != INT2OID && ce->casetype != INT4OID &&
		 ce->casetype != INT8OID && ce->casetype != NUMERICOID))
		return false;
	foreach(lc, ce->args)
	{
		CaseWhen   *w = lfirst(lc);

		if (!shard_is_pushable_filter(root, baserel, w->expr) ||
			!agg_case_result_ok(w->result, ce->casetype, baserel))
			return false;
	}
	return agg_case_result_ok(ce->defresult, ce->casetype, baserel);
}

/*
 * deparse_agg_case_result
 *		Write a result of an aggregate's CASE input.  Integer constants of
 *		the query are written as numbers: nothing of the data is.
 */
static void
deparse_agg_case_result(StringInfo buf, PlannerInfo *root, Expr *expr,
						RelOptInfo *baserel)
{
	Const	   *c;

	if (expr == NULL || (IsA(expr, Const) && ((Const *) expr)->constisnull))
	{
		appendStringInfoString(buf, "NULL");
		return;
	}
	if (!IsA(expr, Const))
	{
		shard_deparse_column_value(buf, root, shard_own_column(expr, baserel));
		return;
	}
	c = (Const *) expr;
	if (c->consttype == NUMERICOID)
	{
		int64		value;
		int			dscale;

		if (!numeric_case_const(c, &value, &dscale))
			elog(ERROR, "unexpected constant in an aggregate's CASE");
		appendStringInfo(buf, INT64_FORMAT, value);
	}
	else if (c->consttype == INT2OID)
		appendStringInfo(buf, "%d", (int) DatumGetInt16(c->constvalue));
	else if (c->consttype == INT4OID)
		appendStringInfo(buf, "%d", DatumGetInt32(c->constvalue));
	else
		appendStringInfo(buf, INT64_FORMAT, DatumGetInt64(c->constvalue));
}

/*
 * shard_deparse_agg_expr
 *		Write an aggregate's FILTER condition, or its CASE input
 *		(shard_agg_case_ok), collecting the values to bind in *params.
 */
void
shard_deparse_agg_expr(StringInfo buf, PlannerInfo *root, RelOptInfo *baserel,
					   Expr *expr, List **params, List **param_kinds)
{
	DeparseContext ctx;
	CaseExpr   *ce;
	ListCell   *lc;

	ctx.root = root;
	ctx.baserel = baserel;
	ctx.params = params;
	ctx.param_kinds = param_kinds;
	ctx.buf = buf;
	ctx.range = NULL;
	if (!IsA(expr, CaseExpr))
	{
		deparse_expr(expr, &ctx);
		return;
	}
	ce = (CaseExpr *) expr;
	appendStringInfoString(buf, "CASE");
	foreach(lc, ce->args)
	{
		CaseWhen   *w = lfirst(lc);

		appendStringInfoString(buf, " WHEN ");
		deparse_expr(w->expr, &ctx);
		appendStringInfoString(buf, " THEN ");
		deparse_agg_case_result(buf, root, w->result, baserel);
	}
	appendStringInfoString(buf, " ELSE ");
	deparse_agg_case_result(buf, root, ce->defresult, baserel);
	appendStringInfoString(buf, " END");
}

/*
 * shard_deparse_agg_case_scale
 *		Write a numeric CASE input's display scale per row (numeric_case_
 *		const): CASE WHEN cond THEN <scale of that result> ... END, NULL
 *		where the result is NULL.  The largest over a group's rows is its
 *		sum's scale, and NULL where the sum is.
 */
void
shard_deparse_agg_case_scale(StringInfo buf, PlannerInfo *root,
							 RelOptInfo *baserel, CaseExpr *ce,
							 List **params, List **param_kinds)
{
	DeparseContext ctx;
	ListCell   *lc;
	int64		value;
	int			dscale;

	ctx.root = root;
	ctx.baserel = baserel;
	ctx.params = params;
	ctx.param_kinds = param_kinds;
	ctx.buf = buf;
	ctx.range = NULL;
	appendStringInfoString(buf, "CASE");
	foreach(lc, ce->args)
	{
		CaseWhen   *w = lfirst(lc);

		appendStringInfoString(buf, " WHEN ");
		deparse_expr(w->expr, &ctx);
		if (IsA(w->result, Const) &&
			numeric_case_const((Const *) w->result, &value, &dscale))
			appendStringInfo(buf, " THEN %d", dscale);
		else
			appendStringInfoString(buf, " THEN NULL");
	}
	if (ce->defresult && IsA(ce->defresult, Const) &&
		numeric_case_const((Const *) ce->defresult, &value, &dscale))
		appendStringInfo(buf, " ELSE %d END", dscale);
	else
		appendStringInfoString(buf, " ELSE NULL END");
}

/*
 * append_and
 *		Append String nodes joined by AND.
 */
static void
append_and(StringInfo buf, List *sqls)
{
	ListCell   *lc;

	foreach(lc, sqls)
		appendStringInfo(buf, "%s%s", foreach_current_index(lc) > 0 ? " AND " : "",
						 strVal(lfirst(lc)));
}

/*
 * shard_join_conditions
 *		Join deparsed conditions (String nodes) by AND: those that may raise
 *		PostgreSQL's error for a value it cannot read (shard_sql_may_fail)
 *		last, and evaluated only on rows the others keep ("safe AND CASE
 *		WHEN safe THEN failing END"), since SQLite evaluates an AND in any
 *		order but a CASE in order.  A row the other conditions drop, which
 *		PostgreSQL would not read either, raises nothing.  The exact checks
 *		of a lower and an upper bound of one time column read its time once
 *		(shard_time_merge_checks).
 */
void
shard_join_conditions(StringInfo buf, List *sqls)
{
	List	   *safe = NIL;
	List	   *failing = NIL;
	List	   *ranges = NIL;
	ListCell   *lc;

	foreach(lc, shard_time_merge_checks(sqls))
	{
		if (strVal(lfirst(lc))[0] == SHARD_TIME_RANGE_MARK ||
			strVal(lfirst(lc))[0] == SHARD_TIME_TEXT_RANGE_MARK)
			ranges = lappend(ranges, lfirst(lc));
		else if (shard_sql_may_fail(strVal(lfirst(lc))))
			failing = lappend(failing, lfirst(lc));
		else
			safe = lappend(safe, lfirst(lc));
	}
	/*
	 * One index range per time column first, where SQLite looks for index
	 * terms; they only narrow what the exact checks read.
	 */
	ranges = shard_time_range_append(NIL, ranges);
	append_and(buf, ranges);
	if (ranges != NIL && (safe != NIL || failing != NIL))
		appendStringInfoString(buf, " AND ");
	append_and(buf, safe);
	if (failing == NIL)
		return;
	if (safe == NIL)
	{
		append_and(buf, failing);
		return;
	}
	appendStringInfoString(buf, " AND CASE WHEN ");
	append_and(buf, safe);
	appendStringInfoString(buf, " THEN ");
	append_and(buf, failing);
	appendStringInfoString(buf, " END");
}

/*
 * shard_deparse_select
 *		Write "SELECT cols FROM table" for the columns a scan needs, and
 *		list their attribute numbers in *retrieved_attrs.  Columns are
 *		fetched only when PostgreSQL uses them.
 */
void
shard_deparse_select(StringInfo buf, PlannerInfo *root, RelOptInfo *baserel,
					 Relation rel, const char *table, Bitmapset *attrs_used,
					 List **retrieved_attrs)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	bool		whole_row;
	bool		first = true;
	int			i;

	*retrieved_attrs = NIL;
	whole_row = bms_is_member(0 - FirstLowInvalidHeapAttributeNumber,
							  attrs_used);
	appendStringInfoString(buf, "SELECT ");
	for (i = 1; i <= tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i - 1);

		if (att->attisdropped)
			continue;
		if (!whole_row &&
			!bms_is_member(i - FirstLowInvalidHeapAttributeNumber, attrs_used))
			continue;
		if (!first)
			appendStringInfoString(buf, ", ");
		first = false;
		shard_append_column_sql(buf, RelationGetRelid(rel), i);
		*retrieved_attrs = lappend_int(*retrieved_attrs, i);
	}
	if (first)
		appendStringInfoString(buf, "NULL");
	appendStringInfoString(buf, " FROM ");
	shard_quote_identifier(buf, table);
}
