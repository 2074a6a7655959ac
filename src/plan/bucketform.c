/*-------------------------------------------------------------------------
 *
 * bucketform.c
 *		Bucket forms: grouping keys built around time buckets and bins,
 *		grouped in the shards by a stand-in of their column
 *
 * BI tools wrap the time buckets of timepush.c in casts and arithmetic,
 * or build their own: Metabase's CAST(extract(hour FROM x) AS integer) and
 * Sunday weeks date_trunc('week', (x + INTERVAL '1 day')) + INTERVAL
 * '-1 day', its report time zone timezone('Z', timezone('UTC', x)),
 * Grafana's floor(extract(epoch from x)/300)*300, Superset's
 * date_trunc('hour', x) + INTERVAL '5 minute' * floor(extract(minute FROM
 * x) / 5), numeric bins floor((n / 5000.0)) * 5000.0.  Rather than compute each in SQLite, the
 * shards group by a stand-in of the column, a value every row of a group
 * shares and from which the whole key follows, and the merge computes the
 * key expression itself of each group's stand-in (with PostgreSQL's own
 * functions, in the session's TimeZone, NULLs included), adding up the
 * groups that give one key.  A key is such a form when it reads one column
 * of the table, through nodes that compute the same value every time
 * (built-in, not volatile), and the column only through "cores" that are
 * constant on the stand-in's classes:
 *
 * - a timestamp or timestamptz column: date_trunc, extract, date_part or
 *   the date of it (shifted by a constant interval, or converted to a zone
 *   by timezone() as Metabase writes it), constant between two local
 *   boundaries of a minute, an hour or a day; the stand-in is the time
 *   rounded down to a grid on which all those boundaries fall
 *   (ssfdw_tz_grid, timepush.c's bind_tz_grid: a fixed grid of seconds for
 *   timestamp columns, the zone's grid otherwise), and floor(extract(epoch
 *   FROM x) / N), constant on a grid of N seconds, and floor(extract(minute
 *   FROM x) / N), on a grid of N minutes;
 * - a date column: any expression of it; the stand-in is the date;
 * - an integer column: floor((n [- m]) / d) of numeric division by an
 *   integral d; the stand-in is the first value of n's bin.
 *
 * A time converted by timezone() but read outside a core groups by the
 * stored value itself, which is exact too.  Where PostgreSQL's numeric
 * division rounds a quotient up to the next integer (a time more than 2e10
 * seconds from 1970 a microsecond below a boundary, an integer beyond
 * 2e16), the stand-in is the stored value, outside +-9e9 seconds and
 * +-1e15.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <math.h>

#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/formatting.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/selfuncs.h"
#include "utils/timestamp.h"

/* Seconds from 1970-01-01 to 2000-01-01. */
#define UNIX_EPOCH_DIFF_SECS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)

/* What the shards group a bucket form by. */
#define FORM_NONE		0
#define FORM_GRID		1		/* the time on a zone's grid */
#define FORM_DATE		2		/* the date */
#define FORM_BIN		3		/* the first integer of a bin */
#define FORM_RAW		4		/* the stored value */

/* Unix seconds within which floor(epoch / N) is exact. */
#define FORM_EPOCH_SAFE_SECS	INT64CONST(9000000000)
/* Integers within which floor(n / d) of numeric division is exact. */
#define FORM_BIN_SAFE			INT64CONST(1000000000000000)

/* A grouping key being read as a bucket form, and its stand-in. */
typedef struct KeyForm
{
	RelOptInfo *baserel;
	Var		   *var;			/* the column */
	bool		failed;
	int			kind;			/* FORM_ */
	int64		secs;			/* FORM_GRID: the longest step */
	char	   *zone;			/* its zone; NULL: the session's */
	bool		epoch;			/* a grid of epoch seconds */
	int64		bin_width;		/* FORM_BIN */
	int64		bin_offset;
} KeyForm;

/* A time the cores read, and what happened to the column on its way. */
typedef struct FormTime
{
	bool		is_tz;			/* a timestamptz (else a timestamp) */
	char	   *zone;			/* a timestamp's zone: "UTC" for the
								 * column's own digits */
	bool		converted;		/* through timezone() */
	bool		calendar;		/* shifted by months or days */
	int64		shift_usecs;	/* shifted by a time */
} FormTime;

static bool form_walk(Node *node, KeyForm *f);

/*
 * form_column
 *		Is expr the table's column, the same one through the whole key?
 */
static bool
form_column(KeyForm *f, Expr *expr)
{
	Var		   *var = shard_own_column(expr, f->baserel);

	if (var == NULL)
		return false;
	if (f->var == NULL)
		f->var = var;
	else if (!equal(f->var, var))
		f->failed = true;
	return true;
}

/*
 * form_const_interval
 *		The value of a constant interval, or NULL.
 */
static Interval *
form_const_interval(Expr *expr)
{
	Const	   *c = (Const *) shard_strip_relabel(expr);

	if (c == NULL || !IsA(c, Const) || c->constisnull ||
		c->consttype != INTERVALOID)
		return NULL;
	return DatumGetIntervalP(c->constvalue);
}

/*
 * form_time
 *		Is expr a time the cores may read: the timestamp or timestamptz
 *		column, shifted by constant intervals, or converted as Metabase
 *		converts it (timezone('Z', tz), timezone('Z', timezone('UTC', ts)))?
 */
static bool
form_time(KeyForm *f, Expr *expr, FormTime *t)
{
	Var		   *var = shard_own_column(expr, f->baserel);

	expr = shard_strip_relabel(expr);
	if (var != NULL)
	{
		if ((var->vartype != TIMESTAMPOID && var->vartype != TIMESTAMPTZOID) ||
			(var->vartypmod >= 0 && var->vartypmod < 6))
			return false;
		(void) form_column(f, expr);
		memset(t, 0, sizeof(FormTime));
		t->is_tz = (var->vartype == TIMESTAMPTZOID);
		t->zone = t->is_tz ? NULL : "UTC";
		return true;
	}
	if (IsA(expr, OpExpr) && list_length(((OpExpr *) expr)->args) == 2)
	{
		OpExpr	   *op = (OpExpr *) expr;
		Interval   *iv = form_const_interval(lsecond(op->args));
		Oid			fn = get_opcode(op->opno);
		bool		minus = (fn == F_TIMESTAMP_MI_INTERVAL ||
							 fn == F_TIMESTAMPTZ_MI_INTERVAL);

		if (iv == NULL ||
			(fn != F_TIMESTAMP_PL_INTERVAL && fn != F_TIMESTAMPTZ_PL_INTERVAL &&
			 !minus) ||
			!form_time(f, linitial(op->args), t))
			return false;
		/* a timestamptz's calendar is the session's, its time UTC's */
		if (t->is_tz && (iv->time != 0 || t->zone != NULL))
			return false;
		if (iv->month != 0 || iv->day != 0)
			t->calendar = true;
		if (pg_add_s64_overflow(t->shift_usecs, minus ? -iv->time : iv->time,
								&t->shift_usecs))
			return false;
		return true;
	}
	if (IsA(expr, FuncExpr) && list_length(((FuncExpr *) expr)->args) == 2)
	{
		FuncExpr   *fe = (FuncExpr *) expr;
		char	   *z = shard_const_text(linitial(fe->args));

		if (z == NULL || z[0] == '\0' ||
			(fe->funcid != F_TIMEZONE_TEXT_TIMESTAMPTZ &&
			 fe->funcid != F_TIMEZONE_TEXT_TIMESTAMP) ||
			!form_time(f, lsecond(fe->args), t) ||
			t->calendar || t->shift_usecs != 0)
			return false;
		if (fe->funcid == F_TIMEZONE_TEXT_TIMESTAMPTZ && t->is_tz)
		{
			/* the local time in zone z */
			t->is_tz = false;
			t->zone = z;
		}
		else if (fe->funcid == F_TIMEZONE_TEXT_TIMESTAMP && !t->is_tz &&
				 pg_strcasecmp(z, "UTC") == 0 &&
				 strcmp(t->zone, "UTC") == 0)
		{
			/* the column's digits as a time in UTC: a timestamptz */
			t->is_tz = true;
			t->zone = NULL;
		}
		else
			return false;
		t->converted = true;
		return true;
	}
	return false;
}

/*
 * form_need
 *		Add a core's grid: a step of secs seconds in zone (NULL: the
 *		session's TimeZone).  Grids of one zone make one, of their greatest
 *		common divisor; of two zones none.
 */
static void
form_need(KeyForm *f, int64 secs, char *zone, bool epoch)
{
	if (f->kind == FORM_RAW)
		return;
	if (f->kind == FORM_NONE)
	{
		f->kind = FORM_GRID;
		f->secs = secs;
		f->zone = zone;
	}
	else if (f->kind != FORM_GRID ||
			 (f->zone == NULL) != (zone == NULL) ||
			 (zone != NULL && strcmp(f->zone, zone) != 0))
	{
		f->failed = true;
		return;
	}
	else
		f->secs = shard_time_gcd(f->secs, secs);
	f->epoch |= epoch;
}

/*
 * form_unit_secs
 *		The seconds between two local boundaries of a unit of date_trunc
 *		(trunc) or a field of extract, at most a day, or 0 when it changes
 *		within a minute.
 */
static int64
form_unit_secs(const char *unit, bool trunc)
{
	static const char *const days[] = {
		"day", "week", "month", "quarter", "year", "decade", "century",
		"millennium", "dow", "isodow", "doy", "isoyear"
	};
	char	   *u = asc_tolower(unit, strlen(unit));
	int			i;

	if (strcmp(u, "minute") == 0)
		return SECS_PER_MINUTE;
	if (strcmp(u, "hour") == 0)
		return SECS_PER_HOUR;
	for (i = 0; i < lengthof(days); i++)
		if (strcmp(u, days[i]) == 0 && (!trunc || i < 8))
			return SECS_PER_DAY;
	return 0;
}

/*
 * form_integral
 *		The value of a numeric constant that is an integer of at most
 *		FORM_BIN_SAFE, or false.
 */
static bool
form_integral(Expr *expr, int64 *value)
{
	Const	   *c = (Const *) shard_strip_relabel(expr);
	Datum		n;
	Datum		limit;

	if (c == NULL || !IsA(c, Const) || c->constisnull ||
		c->consttype != NUMERICOID ||
		numeric_is_nan(DatumGetNumeric(c->constvalue)) ||
		numeric_is_inf(DatumGetNumeric(c->constvalue)))
		return false;
	n = c->constvalue;
	limit = DirectFunctionCall1(int8_numeric, Int64GetDatum(FORM_BIN_SAFE));
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp,
										  DirectFunctionCall1(numeric_abs, n),
										  limit)) > 0 ||
		!DatumGetBool(DirectFunctionCall2(numeric_eq, n,
										  DirectFunctionCall2(numeric_trunc, n,
															  Int32GetDatum(0)))))
		return false;
	*value = DatumGetInt64(DirectFunctionCall1(numeric_int8, n));
	return true;
}

/*
 * form_floor_core
 *		floor(extract(epoch FROM t) / N) of a time, or floor((n [- m]) / d)
 *		of an integer column, numeric division by an integral constant:
 *		constant on a grid of N seconds, or on bins of d from m.
 */
static bool
form_floor_core(KeyForm *f, FuncExpr *fe)
{
	OpExpr	   *div = (OpExpr *) shard_strip_relabel(linitial(fe->args));
	Expr	   *num;
	FuncExpr   *ex;
	int64		d;
	int64		m = 0;
	FormTime	t;

	if (div == NULL || !IsA(div, OpExpr) || list_length(div->args) != 2 ||
		get_opcode(div->opno) != F_NUMERIC_DIV ||
		!form_integral(lsecond(div->args), &d) || d <= 0)
		return false;
	num = shard_strip_relabel(linitial(div->args));

	/* Grafana's $__timeGroup: epoch seconds, in UTC or in a zone's digits */
	ex = (FuncExpr *) num;
	if (IsA(ex, FuncExpr) && list_length(ex->args) == 2 &&
		(ex->funcid == F_EXTRACT_TEXT_TIMESTAMP ||
		 ex->funcid == F_EXTRACT_TEXT_TIMESTAMPTZ) &&
		shard_const_text(linitial(ex->args)) != NULL &&
		pg_strcasecmp(shard_const_text(linitial(ex->args)), "epoch") == 0)
	{
		if (!form_time(f, lsecond(ex->args), &t) || t.calendar ||
			t.shift_usecs != 0)
			return false;
		form_need(f, d, t.is_tz ? "UTC" : t.zone, true);
		return true;
	}

	/*
	 * Superset's grains: floor(extract(minute FROM t) / N) with N dividing
	 * an hour (floor of hours likewise, dividing a day), constant between
	 * two local multiples of N minutes (hours); the quotient of an integer
	 * field by at most 60 is never rounded across an integer.
	 */
	if (IsA(ex, FuncExpr) && list_length(ex->args) == 2 &&
		(ex->funcid == F_EXTRACT_TEXT_TIMESTAMP ||
		 ex->funcid == F_EXTRACT_TEXT_TIMESTAMPTZ) &&
		shard_const_text(linitial(ex->args)) != NULL)
	{
		char	   *field = shard_const_text(linitial(ex->args));
		int64		unit = (pg_strcasecmp(field, "minute") == 0) ? SECS_PER_MINUTE :
			(pg_strcasecmp(field, "hour") == 0) ? SECS_PER_HOUR : 0;
		int64		whole = (unit == SECS_PER_MINUTE) ? 60 : 24;

		if (unit == 0 || whole % d != 0 ||
			!form_time(f, lsecond(ex->args), &t) ||
			t.shift_usecs % (d * unit * USECS_PER_SEC) != 0)
			return false;
		form_need(f, d * unit, t.is_tz ? NULL : t.zone, false);
		return true;
	}

	/* a numeric bin of an integer column, perhaps from m */
	if (IsA(num, OpExpr) && list_length(((OpExpr *) num)->args) == 2 &&
		get_opcode(((OpExpr *) num)->opno) == F_NUMERIC_SUB &&
		form_integral(lsecond(((OpExpr *) num)->args), &m))
		num = shard_strip_relabel(linitial(((OpExpr *) num)->args));
	if (IsA(num, FuncExpr) && list_length(((FuncExpr *) num)->args) == 1 &&
		(((FuncExpr *) num)->funcid == F_NUMERIC_INT2 ||
		 ((FuncExpr *) num)->funcid == F_NUMERIC_INT4 ||
		 ((FuncExpr *) num)->funcid == F_NUMERIC_INT8) &&
		form_column(f, linitial(((FuncExpr *) num)->args)))
	{
		if (f->kind != FORM_NONE &&
			(f->kind != FORM_BIN || f->bin_width != d || f->bin_offset != m))
			f->failed = true;
		f->kind = FORM_BIN;
		f->bin_width = d;
		f->bin_offset = m;
		return true;
	}
	return false;
}

/*
 * form_core
 *		Is node a core of a time (date_trunc, extract, date_part, the date,
 *		floor of epoch seconds or of an integer's bin)?  Adds what it needs.
 */
static bool
form_core(KeyForm *f, Node *node)
{
	FuncExpr   *fe = (FuncExpr *) node;
	FormTime	t;
	char	   *unit;
	char	   *zone;
	int64		secs;
	int			nargs;

	if (!IsA(node, FuncExpr))
		return false;
	nargs = list_length(fe->args);
	if (fe->funcid == F_FLOOR_NUMERIC && nargs == 1)
		return form_floor_core(f, fe);
	if ((fe->funcid == F_DATE_TIMESTAMP || fe->funcid == F_DATE_TIMESTAMPTZ) &&
		nargs == 1)
	{
		unit = "day";
		secs = SECS_PER_DAY;
	}
	else if (((fe->funcid == F_DATE_TRUNC_TEXT_TIMESTAMP ||
			   fe->funcid == F_DATE_TRUNC_TEXT_TIMESTAMPTZ) && nargs == 2) ||
			 (fe->funcid == F_DATE_TRUNC_TEXT_TIMESTAMPTZ_TEXT && nargs == 3) ||
			 ((fe->funcid == F_EXTRACT_TEXT_TIMESTAMP ||
			   fe->funcid == F_EXTRACT_TEXT_TIMESTAMPTZ ||
			   fe->funcid == F_DATE_PART_TEXT_TIMESTAMP ||
			   fe->funcid == F_DATE_PART_TEXT_TIMESTAMPTZ) && nargs == 2))
	{
		unit = shard_const_text(linitial(fe->args));
		if (unit == NULL)
			return false;
		secs = form_unit_secs(unit,
							  fe->funcid == F_DATE_TRUNC_TEXT_TIMESTAMP ||
							  fe->funcid == F_DATE_TRUNC_TEXT_TIMESTAMPTZ ||
							  fe->funcid == F_DATE_TRUNC_TEXT_TIMESTAMPTZ_TEXT);
		if (secs == 0)
			return false;
	}
	else
		return false;
	if (!form_time(f, nargs == 1 ? linitial(fe->args) : lsecond(fe->args), &t))
		return false;

	/* the zone the core reads its time in */
	zone = t.is_tz ? NULL : t.zone;
	if (fe->funcid == F_DATE_TRUNC_TEXT_TIMESTAMPTZ_TEXT)
	{
		zone = shard_const_text(lthird(fe->args));
		if (zone == NULL || zone[0] == '\0' || t.calendar)
			return false;
	}

	/*
	 * A shift keeps a class of the grid in one class: one by whole units of
	 * a timestamp's digits, or by months and days of the calendar the core
	 * reads (whose grid has its boundaries and transitions on it).
	 */
	if (t.shift_usecs % (secs * USECS_PER_SEC) != 0)
		return false;
	form_need(f, secs, zone, false);
	return true;
}

/*
 * form_walk
 *		Check a key expression node by node: cores, constants, and built-in
 *		functions and operators that are not volatile, over them.
 */
static bool
form_walk(Node *node, KeyForm *f)
{
	FormTime	t;

	if (node == NULL || f->failed)
		return f->failed;
	if (form_core(f, node))
		return f->failed;
	if (IsA(node, Var))
	{
		/* a date column is its own stand-in: any expression of it */
		if (form_column(f, (Expr *) node) && f->var->vartype == DATEOID &&
			(f->kind == FORM_NONE || f->kind == FORM_DATE))
			f->kind = FORM_DATE;
		else
			f->failed = true;
		return f->failed;
	}
	/* a converted time read as it is: grouped by the stored value */
	if (form_time(f, (Expr *) node, &t))
	{
		if (t.converted && (f->kind == FORM_NONE || f->kind == FORM_GRID ||
							f->kind == FORM_RAW))
			f->kind = FORM_RAW;
		else
			f->failed = true;
		return f->failed;
	}
	switch (nodeTag(node))
	{
		case T_Const:
		case T_RelabelType:
		case T_CaseWhen:
		case T_BoolExpr:
		case T_NullTest:
			break;
		case T_FuncExpr:
			if (((FuncExpr *) node)->funcid >= FirstGenbkiObjectId ||
				((FuncExpr *) node)->funcretset ||
				func_volatile(((FuncExpr *) node)->funcid) == PROVOLATILE_VOLATILE)
				f->failed = true;
			break;
		case T_OpExpr:
			if (get_opcode(((OpExpr *) node)->opno) >= FirstGenbkiObjectId ||
				((OpExpr *) node)->opretset ||
				op_volatile(((OpExpr *) node)->opno) == PROVOLATILE_VOLATILE)
				f->failed = true;
			break;
		case T_CaseExpr:
			/* not CASE x WHEN: the stand-in is the merge's case value */
			if (((CaseExpr *) node)->arg != NULL)
				f->failed = true;
			break;
		default:
			f->failed = true;
			break;
	}
	if (f->failed)
		return true;
	return expression_tree_walker(node, form_walk, (void *) f);
}

/*
 * key_form
 *		Is a grouping key that is neither a column nor one of the buckets
 *		above a bucket form?  Fills f.
 */
static bool
key_form(PlannerInfo *root, Expr *expr, RelOptInfo *baserel, KeyForm *f)
{
	memset(f, 0, sizeof(KeyForm));
	f->baserel = baserel;
	if (expr == NULL || shard_own_column(expr, baserel) != NULL ||
		(IsA(expr, FuncExpr) &&
		 shard_time_deparse_bucket(NULL, root, (FuncExpr *) expr, baserel, 0)))
		return false;
	(void) form_walk((Node *) expr, f);
	if (f->failed || f->var == NULL || f->kind == FORM_NONE)
		return false;
	/* a time's grid: a step a parameter's "%d" holds (bind_zone_grid) */
	if (f->kind == FORM_GRID && (f->secs < 1 || f->secs > PG_INT32_MAX / 2))
		return false;
	return true;
}

/*
 * shard_time_key_form
 *		Is a grouping key a bucket form (see above)?  Sets *grid to the
 *		longest step of its time grid and *zone to the grid's zone (NULL:
 *		the session's TimeZone), or *grid to 0 for a key without a grid.
 */
bool
shard_time_key_form(PlannerInfo *root, Expr *expr, RelOptInfo *baserel,
					int *grid, char **zone)
{
	KeyForm		f;

	if (!key_form(root, expr, baserel, &f))
		return false;
	if (grid)
		*grid = (f.kind == FORM_GRID) ? (int) f.secs : 0;
	if (zone)
		*zone = (f.kind == FORM_GRID) ? f.zone : NULL;
	return true;
}

/*
 * shard_time_deparse_key_form
 *		Write the stand-in a bucket form's shards group by: the time on its
 *		grid (whose three parameters start at tz_param), the date, the
 *		first integer of the bin, or the stored value (byte-wise, with
 *		for_group_by).
 */
void
shard_time_deparse_key_form(StringInfo buf, PlannerInfo *root, Expr *expr,
							RelOptInfo *baserel, bool for_group_by,
							int tz_param)
{
	KeyForm		f;
	StringInfoData col;

	if (!key_form(root, expr, baserel, &f))
		elog(ERROR, "grouping key is not a bucket form");
	initStringInfo(&col);
	shard_deparse_column_ref(&col, root, f.var);
	switch (f.kind)
	{
		case FORM_GRID:
			if (tz_param <= 0)
				elog(ERROR, "time zone grid of a grouping key has no parameters");
			if (f.epoch)
				appendStringInfo(buf,
								 "CASE WHEN ssfdw_usecs(%s, -1) BETWEEN " INT64_FORMAT
								 " AND " INT64_FORMAT " THEN ", col.data,
								 (-FORM_EPOCH_SAFE_SECS - UNIX_EPOCH_DIFF_SECS) * USECS_PER_SEC,
								 (FORM_EPOCH_SAFE_SECS - UNIX_EPOCH_DIFF_SECS) * USECS_PER_SEC);
			appendStringInfo(buf, "ssfdw_tz_grid(%s, ?%d, ?%d, ?%d)", col.data,
							 tz_param, tz_param + 1, tz_param + 2);
			if (f.epoch)
				appendStringInfo(buf, " ELSE %s%s END", col.data,
								 for_group_by ? " COLLATE BINARY" : "");
			break;
		case FORM_DATE:
			appendStringInfo(buf, "(ssfdw_days(%s, 0) * %d + " INT64_FORMAT ")",
							 col.data, SECS_PER_DAY, UNIX_EPOCH_DIFF_SECS);
			break;
		case FORM_BIN:
			{
				char	   *v = psprintf("(%s - " INT64_FORMAT ")", col.data,
										 f.bin_offset);
				int64		lo = -FORM_BIN_SAFE;

				/*
				 * A bin's first integer is at most width - 1 below the value:
				 * near the least value of the column's type it could be out
				 * of the type's range, so there the stored value stands in.
				 */
				if (f.var->vartype == INT2OID)
					lo = Max(lo, (int64) PG_INT16_MIN + f.bin_width - 1);
				else if (f.var->vartype == INT4OID)
					lo = Max(lo, (int64) PG_INT32_MIN + f.bin_width - 1);

				appendStringInfo(buf,
								 "CASE WHEN typeof(%s) = 'integer' AND %s BETWEEN "
								 INT64_FORMAT " AND " INT64_FORMAT
								 " THEN %s - ((%s %% " INT64_FORMAT ") + "
								 INT64_FORMAT ") %% " INT64_FORMAT " ELSE %s%s END",
								 col.data, col.data, lo, FORM_BIN_SAFE,
								 col.data, v, f.bin_width, f.bin_width,
								 f.bin_width, col.data,
								 for_group_by ? " COLLATE BINARY" : "");
			}
			break;
		case FORM_RAW:
			appendStringInfo(buf, "%s%s", col.data,
							 for_group_by ? " COLLATE BINARY" : "");
			break;
	}
}

/*
 * form_placeholder
 *		Replace the column by the merge's case value.
 */
static Node *
form_placeholder(Node *node, void *context)
{
	Var		   *var = (Var *) context;

	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && equal(node, var))
	{
		CaseTestExpr *ct = makeNode(CaseTestExpr);

		ct->typeId = var->vartype;
		ct->typeMod = var->vartypmod;
		ct->collation = var->varcollid;
		return (Node *) ct;
	}
	return expression_tree_mutator(node, form_placeholder, context);
}

/*
 * shard_time_key_form_merge
 *		What the merge needs of a bucket form (merge.c): (0, "", the type it
 *		reads the stand-in as, "", the key with the column replaced by a
 *		CaseTestExpr that stands for the stand-in).
 */
List *
shard_time_key_form_merge(PlannerInfo *root, Expr *expr, RelOptInfo *baserel)
{
	KeyForm		f;
	Oid			read_as;

	if (!key_form(root, expr, baserel, &f))
		elog(ERROR, "grouping key is not a bucket form");
	read_as = f.var->vartype;
	return list_make5(makeInteger(InvalidOid), makeString(""),
					  makeInteger(read_as), makeString(""),
					  form_placeholder((Node *) expr, f.var));
}

/* A bucket form's expression, ready to run (merge.c). */
typedef struct KeyFormState
{
	ExprState  *state;
	ExprContext *econtext;
} KeyFormState;

/*
 * shard_time_key_form_start
 *		Prepare the merge to compute a bucket form's key of stand-ins.
 */
void *
shard_time_key_form_start(Expr *expr)
{
	KeyFormState *ks = palloc(sizeof(KeyFormState));

	ks->state = ExecInitExpr(expr, NULL);
	ks->econtext = CreateStandaloneExprContext();
	return ks;
}

/*
 * shard_time_key_form_value
 *		The key of a group whose stand-in is value (*isnull: NULL); the
 *		result's nullness in *isnull.
 */
Datum
shard_time_key_form_value(void *form, Datum value, bool *isnull)
{
	KeyFormState *ks = (KeyFormState *) form;

	ks->econtext->caseValue_datum = value;
	ks->econtext->caseValue_isNull = *isnull;
	return ExecEvalExpr(ks->state, ks->econtext, isnull);
}

/*
 * shard_time_key_form_groups
 *		The groups of a bucket form: at most one per step of its grid (or
 *		per bin) over the column's span, and no more than of its column; -1
 *		for any other key.
 */
double
shard_time_key_form_groups(PlannerInfo *root, Expr *expr, RelOptInfo *baserel,
						   double input_rows)
{
	KeyForm		f;
	double		groups;
	double		span;

	if (!key_form(root, expr, baserel, &f))
		return -1;
	groups = estimate_num_groups(root, list_make1(f.var), input_rows,
								 NULL, NULL);
	if (f.kind == FORM_GRID && shard_time_column_span(root, f.var, &span))
		groups = Min(groups, floor(span / f.secs) + 2);
	else if (f.kind == FORM_BIN && shard_time_column_span(root, f.var, &span))
		groups = Min(groups, floor(span / f.bin_width) + 2);
	return groups;
}
