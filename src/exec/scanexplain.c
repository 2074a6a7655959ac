/*-------------------------------------------------------------------------
 *
 * scanexplain.c
 *		  EXPLAIN of a foreign table scan
 *
 * EXPLAIN shows which shards a scan reads (or that they are chosen at run
 * time), what it pushes down, its order and the bound each shard gets,
 * and the SQLite query a shard runs with the time index it would use;
 * with ANALYZE, the rows each shard returned, the slowest shard, the
 * shards never started and the shards flagged while reading.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "commands/explain.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"

#include "scan.h"

/* Shard names EXPLAIN lists before it only counts the rest. */
#define EXPLAIN_MAX_SHARD_NAMES 3

/*
 * EXPLAIN ANALYZE lists the rows of each shard up to this many shards; a
 * fan-out over more (thousands of tenant files) is summarised instead.
 */
#define EXPLAIN_MAX_SHARD_ROWS 16

/*
 * limit_is_known
 *		Can EXPLAIN without ANALYZE evaluate OFFSET and LIMIT: constants, or
 *		immutable expressions of parameters whose values it has?
 */
static bool
limit_is_known(ForeignScanState *node)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	bool		have_params = (node->ss.ps.state->es_param_list_info != NULL);
	ListCell   *lc;

	foreach(lc, s->limit_exprs)
	{
		Node	   *expr = lfirst(lc);

		if (expr != NULL && !IsA(expr, Const) &&
			(!have_params || contain_mutable_functions(expr)))
			return false;
	}
	return true;
}

/*
 * int64_cmp
 *		qsort comparator of int64 values.
 */
static int
int64_cmp(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

/*
 * shard_scan_shard_names
 *		"N of M (a, b, c, and K more)" for EXPLAIN.
 *
 * "and 1 more" would take as much room as the name it stands for, so a
 * list one name longer than EXPLAIN_MAX_SHARD_NAMES is written out whole.
 */
char *
shard_scan_shard_names(ShardScanState *s)
{
	StringInfoData buf;
	ListCell   *lc;
	int			n = 0;

	initStringInfo(&buf);

	/*
	 * One file per tenant: a routed or scoped scan neither lists the files
	 * nor says how many there are (a scoped login learns nothing of other
	 * tenants' files).
	 */
	if (s->opts->file_per_tenant && s->restricted)
		appendStringInfo(&buf, "%d", list_length(s->targets));
	else
		appendStringInfo(&buf, "%d of %d", list_length(s->targets),
						 list_length(shard_directory_shards(s->dir)));
	foreach(lc, s->targets)
	{
		ShardTarget *t = lfirst(lc);

		if (n == EXPLAIN_MAX_SHARD_NAMES &&
			list_length(s->targets) - n >= 2)
		{
			appendStringInfo(&buf, ", and %d more",
							 list_length(s->targets) - n);
			break;
		}
		appendStringInfoString(&buf, n == 0 ? " (" : ", ");
		appendStringInfoString(&buf, t->info.shard_id);
		n++;
	}
	if (n > 0)
		appendStringInfoChar(&buf, ')');
	return buf.data;
}

/*
 * shard_scan_explain_times
 *		EXPLAIN ANALYZE: the rows the backend took from each shard, the
 *		shards never started, and the slowest shard, which sets a fan-out's
 *		latency.
 *
 * A scan that stopped early (a LIMIT above it) lists every shard it
 * opened: those cut short are marked "stopped", and those whose statement
 * never began (opened, or not even that, when the scan ended) are named
 * under "Shards Not Started".  A shard's time is what producing the rows
 * the backend took cost it (the time its reader spent filling those
 * batches, SQLite's work and lock waits included): not its wall time,
 * which counts the waits for the backend to take its rows, time the node
 * itself does not count while the plan above it works, and not the rows a
 * worker read ahead that were never used.  The fan-out is stopped first,
 * so that no worker is left running.
 *
 * Past EXPLAIN_MAX_SHARD_ROWS shards the lists are summarised: how many
 * shards returned how many rows, the fewest, the median and the most a
 * shard returned, and the count of shards stopped or not started with the
 * first of them, so that a fan-out over ten thousand files stays a few
 * lines.
 */
void
shard_scan_explain_times(ShardScanState *s, ExplainState *es)
{
	StringInfoData rows;
	StringInfoData idle;
	ShardTarget *slowest = NULL;
	double		slowest_ms = 0;
	int			nmissing = 0;
	int			nno_table = 0;
	bool		summary = list_length(s->targets) > EXPLAIN_MAX_SHARD_ROWS;
	int64	   *counts = NULL;
	int			nread = 0;
	int			nidle = 0;
	int			nstopped = 0;
	int64		total = 0;
	ListCell   *lc;

	if (s->fanout)
		shard_scan_stop_reading(s, true);
	initStringInfo(&rows);
	initStringInfo(&idle);
	foreach(lc, s->targets)
	{
		ShardTarget *t = lfirst(lc);
		double		ms = t->elapsed_ms;

		if (t->no_table)
			nno_table++;
		else if (t->missing_cols != NIL && t->read)
			nmissing++;
		if (t->no_table)
			continue;
		if (!t->read || (s->modify_sql == NULL && !t->reader_began))
		{
			if (!summary || nidle < EXPLAIN_MAX_SHARD_NAMES)
				appendStringInfo(&idle, "%s%s", idle.len > 0 ? ", " : "",
								 t->info.shard_id);
			nidle++;
			continue;
		}
		if (summary)
		{
			if (counts == NULL)
				counts = palloc(sizeof(int64) * list_length(s->targets));
			counts[nread++] = t->rows;
			total += t->rows;
			if (!t->done && s->modify_sql == NULL)
				nstopped++;
		}
		else
			appendStringInfo(&rows, "%s%s=" INT64_FORMAT "%s",
							 rows.len > 0 ? ", " : "", t->info.shard_id,
							 t->rows,
							 t->done || s->modify_sql != NULL ? "" : " (stopped)");
		if (slowest == NULL || ms > slowest_ms)
		{
			slowest = t;
			slowest_ms = ms;
		}
	}
	if (summary && nread > 0)
	{
		qsort(counts, nread, sizeof(int64), int64_cmp);
		appendStringInfo(&rows, "%d %s, " INT64_FORMAT " rows (min " INT64_FORMAT
						 ", median " INT64_FORMAT ", max " INT64_FORMAT ")",
						 nread, s->opts->file_per_tenant ? "files" : "shards",
						 total, counts[0], counts[nread / 2],
						 counts[nread - 1]);
		if (nstopped > 0)
			appendStringInfo(&rows, ", %d stopped", nstopped);
	}
	if (summary && nidle > EXPLAIN_MAX_SHARD_NAMES)
		appendStringInfo(&idle, ", and %d more", nidle - EXPLAIN_MAX_SHARD_NAMES);
	if (rows.len > 0)
		ExplainPropertyText("Shard Rows", rows.data, es);
	if (idle.len > 0)
		ExplainPropertyText("Shards Not Started", idle.data, es);
	if (es->timing && slowest != NULL)
	{
		char	   *text = psprintf("%s (%.3f ms)", slowest->info.shard_id,
									slowest_ms);

		ExplainPropertyText("Slowest Shard", text, es);
	}
	/* shards read around their schema (missing_column, missing_table) */
	if (nmissing > 0)
		ExplainPropertyInteger(s->opts->file_per_tenant ?
							   "Files Missing Columns" :
							   "Shards Missing Columns", NULL, nmissing, es);
	if (nno_table > 0)
		ExplainPropertyInteger(s->opts->file_per_tenant ?
							   "Files Without Table" :
							   "Shards Without Table", NULL, nno_table, es);
}

/*
 * explain_flagged_shards
 *		EXPLAIN ANALYZE: name, under label, the shards read that returned
 *		all their groups or rows, not declaring their columns as the bound
 *		needs (noindex false), or that read their tenants' rows without the
 *		tenant's index (noindex true, large_tenant_without_stats).
 */
static void
explain_flagged_shards(ShardScanState *s, ExplainState *es, const char *label,
					   bool noindex)
{
	StringInfoData names;
	bool		summary = list_length(s->targets) > EXPLAIN_MAX_SHARD_ROWS;
	int			n = 0;
	ListCell   *lc;

	initStringInfo(&names);
	foreach(lc, s->targets)
	{
		ShardTarget *t = lfirst(lc);

		if (!t->read || !(noindex ? t->tenant_noindex : t->unbounded))
			continue;
		if (!summary || n < EXPLAIN_MAX_SHARD_NAMES)
			appendStringInfo(&names, "%s%s", names.len > 0 ? ", " : "",
							 t->info.shard_id);
		n++;
	}
	if (summary && n > EXPLAIN_MAX_SHARD_NAMES)
		appendStringInfo(&names, ", and %d more", n - EXPLAIN_MAX_SHARD_NAMES);
	if (names.len > 0)
		ExplainPropertyText(label, names.data, es);
}

/*
 * run_time_value_walker
 *		Does an expression read a value computed while the query runs: a
 *		subquery's (an executor parameter, a SubPlan)?
 */
static bool
run_time_value_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind != PARAM_EXTERN)
		return true;
	if (IsA(node, SubPlan) || IsA(node, AlternativeSubPlan))
		return true;
	return expression_tree_walker(node, run_time_value_walker, context);
}

/*
 * params_known
 *		Can the values the scan binds be computed for a plain EXPLAIN
 *		without running anything that could fail or differ at run time:
 *		constants, and parameters of EXPLAIN EXECUTE?
 */
static bool
params_known(ForeignScanState *node)
{
	ForeignScan *fscan = (ForeignScan *) node->ss.ps.plan;
	bool		have_params = (node->ss.ps.state->es_param_list_info != NULL);
	ListCell   *lc;

	foreach(lc, fscan->fdw_exprs)
	{
		Node	   *expr = lfirst(lc);

		if (expr != NULL && !IsA(expr, Const) &&
			(!have_params || contain_mutable_functions(expr) ||
			 run_time_value_walker(expr, NULL)))
			return false;
	}
	return true;
}

/*
 * explain_time_index
 *		EXPLAIN VERBOSE: the first shard of a routed scan that reads a time
 *		index instead of the tenant's (shard_scan_choose_time_index), with
 *		its WHERE clause in time_where, and in *shards the names of every
 *		such shard; NULL when none does.  A plain
 *		EXPLAIN decides for each shard as its scan would, reading each
 *		briefly (as planning's estimates do), when the values to bind are
 *		known; with ANALYZE the shards read decided.
 */
static ShardTarget *
explain_time_index(ForeignScanState *node, ExplainState *es, char **shards)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;
	ShardTarget *first = NULL;
	StringInfoData names;
	ListCell   *lc;

	if (!s->resolved || !s->restricted || s->join != NULL ||
		s->topts->reference)
		return NULL;
	/*
	 * A shard is opened only where there is a time range, or the first
	 * rows by a time key, to weigh.
	 */
	if (!es->analyze && s->modify_sql == NULL &&
		(s->row_order ? (s->window != NIL && s->shard_bound > 0) :
		 (!s->tenant_only &&
		  shard_time_range_seconds(s->where_sqls, NULL, 0) != NIL)))
	{
		if (!s->params_ready)
		{
			if (!params_known(node))
				return NULL;
			shard_scan_eval_params(s, node->ss.ps.ps_ExprContext);
			s->params_ready = true;
		}
		foreach(lc, s->targets)
		{
			ShardTarget *t = lfirst(lc);
			MemoryContext oldcxt;

			if (t->sql != NULL || t->tenants == NIL)
				continue;
			t->conn = shard_conn_get_brief(s->opts, &t->info, true);
			if (t->conn == NULL)
				continue;
			oldcxt = MemoryContextSwitchTo(s->resolve_cxt);
			shard_tenant_rule_lookup(&t->tenant_rule, shard_conn_db(t->conn),
									 s->topts->table, s->topts->tenant_column,
									 s->tenant_kind);
			t->tenant_is_text = t->tenant_rule.kind == SHARDIO_TENANT_TEXT &&
				t->tenant_rule.affinity == 'T';
			t->time_index = shard_scan_choose_time_index(s, t);
			if (t->time_index != NULL)
			{
				StringInfoData where;
				List	   *extra;

				initStringInfo(&where);
				shard_scan_build_where_sql(&where, s, t, &extra);
				t->time_where = where.data;
			}
			MemoryContextSwitchTo(oldcxt);
			shard_conn_release(t->conn);
			t->conn = NULL;
		}
	}

	initStringInfo(&names);
	foreach(lc, s->targets)
	{
		ShardTarget *t = lfirst(lc);

		if (t->time_index == NULL)
			continue;
		if (first == NULL)
			first = t;
		appendStringInfo(&names, "%s%s", names.len > 0 ? ", " : "",
						 t->info.shard_id);
	}
	*shards = names.data;
	return first;
}

/*
 * shardExplainForeignScan
 *		Show which shards the scan reads and, with VERBOSE, the SQLite
 *		query.  A plain EXPLAIN routes without opening a shard.
 */
void
shardExplainForeignScan(ForeignScanState *node, ExplainState *es)
{
	ShardScanState *s = (ShardScanState *) node->fdw_state;

	/*
	 * The shards of a tenant value known before the query runs: a constant
	 * or a stable expression, which the planner's estimates compute too.
	 * A subquery's or a parameter's value is not computed for EXPLAIN.
	 */
	if (!s->resolved && !s->prune_needs_run)
		shard_scan_resolve(node);

	if (s->join)
		ExplainPropertyText("Relations", shard_join_relations(s->join), es);
	if (s->topts->reference)
		ExplainPropertyText("Distribution", "reference, one shard's copy",
							es);
	if (s->resolved)
		ExplainPropertyText("Shards", shard_scan_shard_names(s), es);
	else
		ExplainPropertyText("Shards", "chosen at run time", es);
	ExplainPropertyText("Pushdown",
						s->row_order ?
						(s->limit_exprs == NIL ? "rows, sorted" :
						 s->ties != NIL ? "rows, sorted by a prefix and limited with ties" :
						 s->nsort > 0 ? "rows, sorted and limited" :
						 "rows, limited") :
						s->order != NIL ? "whole groups per shard, sorted and limited" :
						s->mode == SCAN_AGG_FULL ? "whole groups per shard" :
						s->mode == SCAN_AGG_PARTIAL ? "partial aggregates, merged" :
						"rows", es);
	if (s->agg_spec)
		ExplainPropertyText("Grouped By", "reading threads", es);
	if (s->order != NIL)
	{
		const char *text = strVal(list_nth(s->order, FdwScanOrderText));
		const char *per = s->row_order ? "Rows Per Shard" : "Groups Per Shard";

		/* Without ANALYZE, parameters and functions are not evaluated. */
		if (es->analyze || limit_is_known(node))
			shard_scan_eval_limit(node);
		if (text[0] != '\0')
			ExplainPropertyText(s->row_order ? "Shard Order" : "Merge Order",
								text, es);
		if (s->window != NIL)
			ExplainPropertyText("Time Key",
								psprintf("%s: canonical text in SQLite's order, other stored forms near the limit rechecked",
										 strVal(linitial(s->window))), es);
		if (s->shard_bound >= 0)
			ExplainPropertyInteger(per, NULL, s->shard_bound, es);
		else if (!s->limit_ready)
			ExplainPropertyText(per, "chosen at run time", es);
		if (es->analyze && s->shard_bound >= 0)
			explain_flagged_shards(s, es, "Unbounded Shards", false);
		if (s->row_order && s->resolved && s->limit_ready &&
			(es->analyze ? s->stream : shard_scan_stream_ok(s)))
			ExplainPropertyText("Shard Merge",
								psprintf("rows merged in order as they come, at first %d of each shard",
										 shard_scan_merge_batch_rows(s)),
								es);
		if (es->analyze && s->quick_reads > 0)
			ExplainPropertyInteger("Shards Read In Backend", NULL,
								   s->quick_reads, es);
	}

	/* a merged scan's shards return ties as the merge reads on */
	if (s->row_order && s->resolved && s->limit_ready && !es->analyze)
		s->stream = shard_scan_stream_ok(s);
	if (es->verbose && s->ties != NIL && s->shard_bound >= 0 && !s->stream)
	{
		/* with ties: a shard's query, without a time key's other forms */
		StringInfoData sql;
		StringInfoData where;

		initStringInfo(&sql);
		initStringInfo(&where);
		shard_join_conditions(&where, s->where_sqls);
		shard_scan_append_ties_sql(&sql, s, s->select_sql, where.data);
		ExplainPropertyText("SQLite query", sql.data, es);
	}
	else if (es->verbose)
	{
		StringInfoData sql;
		ShardTarget *chosen;
		char	   *shards;

		initStringInfo(&sql);
		appendStringInfoString(&sql, s->agg_spec ? s->raw_sql : s->select_sql);
		if (s->join)
		{
			List	   *extra = NIL;

			shard_join_append_from(&sql, s->join, NULL, s->tenant_kind, NIL,
								   NIL, s->nparams, &extra);
		}
		/*
		 * A shard that reads a time index: its conditions as that shard runs
		 * them, its tenant filter among them.
		 */
		chosen = explain_time_index(node, es, &shards);
		if (chosen != NULL)
			appendStringInfo(&sql, " WHERE %s", chosen->time_where);
		else if (s->where_sqls != NIL)
		{
			appendStringInfoString(&sql, " WHERE ");
			shard_join_conditions(&sql, s->where_sqls);
		}
		if (s->agg_spec == NULL)
			shard_scan_append_group_sql(&sql, s, NULL);
		ExplainPropertyText("SQLite query", sql.data, es);
		if (chosen != NULL)
			ExplainPropertyText("Time Index",
								psprintf("%s (%s)", chosen->time_index, shards),
								es);
	}

	if (es->analyze && s->merge)
		shard_merge_explain(s->merge, es);
	if (es->analyze && s->resolved)
		shard_scan_explain_times(s, es);
	if (es->analyze && s->resolved)
		explain_flagged_shards(s, es, "Tenant Index Skipped", true);
}
