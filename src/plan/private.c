/*-------------------------------------------------------------------------
 *
 * private.c
 *		  The plan-time description of a foreign scan, in and out of a List
 *
 * A ForeignScan carries what planning decided in fdw_private, which must be
 * a List that copyObject can copy.  Planning fills a ShardScanPrivate and
 * shard_scan_private_list encodes it; the executor decodes it with
 * shard_scan_private_read, which checks the length, so that the two sides
 * cannot disagree on a position.  Expressions the executor evaluates (the
 * values to bind, OFFSET and LIMIT, the tenant value) live in fdw_exprs,
 * where the planner's final pass can process them; fdw_private holds only
 * strings, integers and OIDs.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

/*
 * shard_scan_private_init
 *		A description with nothing pushed but rows: what a plain scan
 *		starts from.
 */
void
shard_scan_private_init(ShardScanPrivate *p)
{
	memset(p, 0, sizeof(*p));
	p->select_sql = "";
	p->prune_kind = PRUNE_NONE;
	p->mode = SCAN_ROWS;
	p->group_sql = "";
	p->guard_col = -1;
	p->raw_sql = "";
	p->modify_sql = "";
	p->tenant_rows = -1;
}

/*
 * shard_scan_private_list
 *		Encode a scan's description as fdw_private (FdwScanPrivateIndex).
 */
List *
shard_scan_private_list(const ShardScanPrivate *p)
{
	List	   *l = NIL;

	l = lappend(l, makeString(pstrdup(p->select_sql)));
	l = lappend(l, p->where_sqls);
	l = lappend(l, p->retrieved_attrs);
	l = lappend(l, p->param_kinds);
	l = lappend(l, makeInteger(p->prune_kind));
	l = lappend(l, makeInteger(p->mode));
	l = lappend(l, makeString(pstrdup(p->group_sql)));
	l = lappend(l, p->agg_ops);
	l = lappend(l, p->agg_cols);
	l = lappend(l, p->agg_types);
	l = lappend(l, p->key_eqops);
	l = lappend(l, p->key_colls);
	l = lappend(l, p->distinct);
	l = lappend(l, makeInteger(p->guard_col));
	l = lappend(l, p->needs);
	l = lappend(l, p->safe_where_sqls);
	l = lappend(l, makeString(pstrdup(p->raw_sql)));
	l = lappend(l, p->thread_agg);
	l = lappend(l, p->thread_guards);
	l = lappend(l, p->order);
	l = lappend(l, p->key_truncs);
	l = lappend(l, makeInteger(p->nlimit_exprs));
	l = lappend(l, makeString(pstrdup(p->modify_sql)));
	l = lappend(l, p->modify_returning);
	l = lappend(l, p->modify_set_attnums);
	l = lappend(l, p->modify_bigint_bounds);
	l = lappend(l, makeInteger(p->modify_set_processed));
	l = lappend(l, makeInteger(p->materialize));
	l = lappend(l, makeInteger(p->tenant_only));
	l = lappend(l, p->join);
	l = lappend(l, makeFloat(psprintf("%.17g", p->tenant_rows)));
	l = lappend(l, p->tenant_sqls);
	Assert(list_length(l) == FdwScanPrivateCount);
	return l;
}

/*
 * shard_scan_private_read
 *		Decode fdw_private into *p; a list of another length is a plan this
 *		build did not make.
 */
void
shard_scan_private_read(List *l, ShardScanPrivate *p)
{
	if (list_length(l) != FdwScanPrivateCount)
		elog(ERROR, "foreign scan has %d private items, expected %d",
			 list_length(l), (int) FdwScanPrivateCount);
	p->select_sql = strVal(list_nth(l, FdwScanPrivateSelectSql));
	p->where_sqls = list_nth(l, FdwScanPrivateWhereSql);
	p->retrieved_attrs = list_nth(l, FdwScanPrivateRetrievedAttrs);
	p->param_kinds = list_nth(l, FdwScanPrivateParamKinds);
	p->prune_kind = intVal(list_nth(l, FdwScanPrivatePruneKind));
	p->mode = intVal(list_nth(l, FdwScanPrivateMode));
	p->group_sql = strVal(list_nth(l, FdwScanPrivateGroupSql));
	p->agg_ops = list_nth(l, FdwScanPrivateAggOps);
	p->agg_cols = list_nth(l, FdwScanPrivateAggCols);
	p->agg_types = list_nth(l, FdwScanPrivateAggTypes);
	p->key_eqops = list_nth(l, FdwScanPrivateKeyEqops);
	p->key_colls = list_nth(l, FdwScanPrivateKeyColls);
	p->distinct = list_nth(l, FdwScanPrivateDistinct);
	p->guard_col = intVal(list_nth(l, FdwScanPrivateGuardCol));
	p->needs = list_nth(l, FdwScanPrivateNeeds);
	p->safe_where_sqls = list_nth(l, FdwScanPrivateSafeWhereSql);
	p->raw_sql = strVal(list_nth(l, FdwScanPrivateRawSql));
	p->thread_agg = list_nth(l, FdwScanPrivateThreadAgg);
	p->thread_guards = list_nth(l, FdwScanPrivateThreadGuards);
	p->order = list_nth(l, FdwScanPrivateOrder);
	p->key_truncs = list_nth(l, FdwScanPrivateKeyTrunc);
	p->nlimit_exprs = intVal(list_nth(l, FdwScanPrivateLimitExprs));
	p->modify_sql = strVal(list_nth(l, FdwScanPrivateModifySql));
	p->modify_returning = list_nth(l, FdwScanPrivateModifyReturning);
	p->modify_set_attnums = list_nth(l, FdwScanPrivateModifySetAttnums);
	p->modify_bigint_bounds = list_nth(l, FdwScanPrivateModifyBigintBounds);
	p->modify_set_processed = intVal(list_nth(l,
											  FdwScanPrivateModifySetProcessed));
	p->materialize = intVal(list_nth(l, FdwScanPrivateMaterialize));
	p->tenant_only = intVal(list_nth(l, FdwScanPrivateTenantOnly));
	p->join = list_nth(l, FdwScanPrivateJoin);
	p->tenant_rows = floatVal(list_nth(l, FdwScanPrivateTenantRows));
	p->tenant_sqls = list_nth(l, FdwScanPrivateTenantSqls);
	if (p->order != NIL && list_length(p->order) != FdwScanOrderCount)
		elog(ERROR, "foreign scan has %d order items, expected %d",
			 list_length(p->order), (int) FdwScanOrderCount);
	if (p->join != NIL && list_length(p->join) != FdwScanJoinCount)
		elog(ERROR, "foreign scan has %d join items, expected %d",
			 list_length(p->join), (int) FdwScanJoinCount);
}
