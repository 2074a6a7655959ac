/*-------------------------------------------------------------------------
 *
 * rollupanswer.c
 *		  Answering an aggregate query over a foreign table from one of its
 *		  rollups, exactly: the matching and the rewritten query
 *
 * With sqlite_shard_fdw.rollup_answer on, a SELECT that aggregates one
 * foreign table of this wrapper is planned, when a rollup of the table
 * holds what it needs, as the same aggregate over the rollup's groups:
 *
 *	 SELECT <keys>, <combined aggregates> FROM (
 *	   WITH live AS MATERIALIZED (SELECT ids FROM rollup_answer_live(...))
 *	   SELECT r.* FROM <rollup table> r
 *	     WHERE <no live ids> OR r.tenant <> ALL (live ids)
 *	   UNION ALL
 *	   SELECT f.* FROM (<the rollup's own query>) f WHERE f.tenant = ANY (live ids)
 *	 ) <rollup> WHERE <conditions> GROUP BY <keys> HAVING ... ORDER BY ...
 *
 * The groups of the tenants whose rows have not changed since they were
 * computed come from the rollup table; those of the others are computed
 * again from their rows, by the rollup's own query through the foreign
 * table (the wrapper routes it to their shards and groups there, as a
 * refresh does); both are groups of the same form, combined by the outer
 * aggregate as a refresh's would be.  Which tenants are which is decided
 * once per execution (exec/rollupscan.c, which states the guarantee).
 *
 * What is derivable, conservatively:
 *
 * - every grouping expression, and every column outside an aggregate, is
 *   an expression of the rollup's grouping keys (a key matches when its
 *   expression is the same, node for node);
 * - every condition of WHERE is one of the rollup query's own (all of
 *   those must be there) or an expression of its keys, without volatile
 *   functions: a condition on keys keeps or drops whole groups;
 * - every aggregate is one the rollup stores (the same call, FILTER
 *   included), or an avg whose sum and count it stores, combined from the
 *   groups' as aggcombine.c says;
 * - one table in FROM, no subquery, window function, set-returning
 *   function, grouping set, WITH, locking clause or set operation.
 *
 * Anything else, a rollup the role may not read, a REPEATABLE READ
 * transaction, or a rollup whose query no longer parses: the query is
 * planned the ordinary way.  Only the top-level SELECT is considered:
 * the queries a refresh runs (INSERT ... SELECT) never are.
 *
 * The setting applies when a query is planned, as the planner's own
 * settings do; a plan made for one role is not reused for another (the
 * rollup table's privileges and row-level security decided it).
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "parser/analyze.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "plan/aggcombine.h"
#include "plan/eageragg.h"
#include "plan/rollupanswer.h"

int			shard_rollup_answer = ROLLUP_ANSWER_OFF;
int			shard_rollup_max_staleness = 300;

static const struct config_enum_entry rollup_answer_options[] = {
	{"off", ROLLUP_ANSWER_OFF, false},
	{"live", ROLLUP_ANSWER_LIVE, false},
	{"stale", ROLLUP_ANSWER_STALE, false},
	{NULL, 0, false}
};

static planner_hook_type prev_planner_hook = NULL;
static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;

/* A rollup of the query's table, from the catalog. */
typedef struct RollupCandidate
{
	Oid			relid;
	char	   *fill_query;
	char	   *tenant_key;
} RollupCandidate;

/* What matching a query against one rollup's query works with. */
typedef struct MatchContext
{
	List	   *keys;			/* the rollup query's grouping columns */
	List	   *aggs;			/* ... and its aggregate columns */
	bool		failed;			/* something is not derivable */
} MatchContext;

/*
 * map_mutator
 *		An expression of the query as one of the rollup's rows: keys
 *		become its columns, aggregates their combinations; any other
 *		reference to the table's columns fails the match.
 */
static Node *
map_mutator(Node *node, MatchContext *cx)
{
	ListCell   *lc;

	if (node == NULL || cx->failed)
		return node;
	if (IsA(node, Aggref))
	{
		Expr	   *e = shard_combine_aggregate((Aggref *) node, cx->aggs, 1);

		if (e == NULL)
			cx->failed = true;
		return (Node *) e;
	}
	if (!IsA(node, Const) && !IsA(node, Param))
		foreach(lc, cx->keys)
		{
			TargetEntry *k = lfirst(lc);

			if (equal(node, k->expr))
				return (Node *) makeVar(1, k->resno,
										exprType((Node *) k->expr),
										exprTypmod((Node *) k->expr),
										exprCollation((Node *) k->expr), 0);
		}
	if (IsA(node, Var) || IsA(node, SubLink) || IsA(node, GroupingFunc) ||
		IsA(node, WindowFunc) || IsA(node, PlaceHolderVar) ||
		IsA(node, Query))
	{
		cx->failed = true;
		return node;
	}
	return expression_tree_mutator(node, map_mutator, (void *) cx);
}

/*
 * map_expr
 *		map_mutator of an expression.
 */
static Node *
map_expr(Node *node, MatchContext *cx)
{
	return map_mutator(node, cx);
}

/*
 * query_is_candidate
 *		Could the query be answered from a rollup of its one table, as its
 *		form goes?  Returns the table, or InvalidOid.
 */
static Oid
query_is_candidate(Query *parse)
{
	RangeTblEntry *rte;

	if (parse->commandType != CMD_SELECT || parse->utilityStmt != NULL ||
		!parse->hasAggs || parse->hasWindowFuncs || parse->hasTargetSRFs ||
		parse->hasSubLinks || parse->hasDistinctOn || parse->hasRecursive ||
		parse->hasModifyingCTE || parse->hasForUpdate ||
		parse->hasRowSecurity || parse->cteList != NIL ||
		parse->rowMarks != NIL || parse->setOperations != NULL ||
		parse->groupingSets != NIL || parse->groupDistinct ||
		list_length(parse->rtable) != 1 ||
		list_length(parse->jointree->fromlist) != 1 ||
		!IsA(linitial(parse->jointree->fromlist), RangeTblRef) ||
		((RangeTblRef *) linitial(parse->jointree->fromlist))->rtindex != 1)
		return InvalidOid;
	rte = linitial(parse->rtable);
	if (rte->rtekind != RTE_RELATION ||
		rte->relkind != RELKIND_FOREIGN_TABLE ||
		rte->tablesample != NULL || rte->securityQuals != NIL ||
		OidIsValid(rte->checkAsUser))
		return InvalidOid;
	if (contain_volatile_functions((Node *) parse->jointree->quals))
		return InvalidOid;
	return rte->relid;
}

/*
 * catalog_column
 *		The attribute number of column name of the rollup catalog's
 *		descriptor desc.
 */
static AttrNumber
catalog_column(TupleDesc desc, const char *name)
{
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return att->attnum;
	}
	elog(ERROR, "rollup catalog has no column \"%s\"", name);
	return InvalidAttrNumber;	/* keep compiler quiet */
}

/*
 * cmp_candidates
 *		list_sort comparator of RollupCandidates, by the rollup table's OID.
 */
static int
cmp_candidates(const ListCell *a, const ListCell *b)
{
	Oid			x = ((RollupCandidate *) lfirst(a))->relid;
	Oid			y = ((RollupCandidate *) lfirst(b))->relid;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * rollups_of
 *		The rollups of foreign table source, from the catalog, in the order
 *		of their tables' OIDs.  The catalog (a few rows) is scanned
 *		directly, with the statement's snapshot or a new one, as the query
 *		it used to be: each query planned in a new session would otherwise
 *		parse and plan that query first.  Nothing the caller could not
 *		read reaches it: a rollup is used only when the caller may read
 *		its table (answer_from).
 */
static List *
rollups_of(Oid source)
{
	Oid			nsp = get_namespace_oid("ssfdw_rollup", true);
	Oid			relid = OidIsValid(nsp) ?
		get_relname_relid("rollups", nsp) : InvalidOid;
	Relation	rel;
	TupleDesc	desc;
	TableScanDesc scan;
	HeapTuple	tup;
	AttrNumber	a_rollup,
				a_source,
				a_fill,
				a_key;
	bool		pushed = false;
	List	   *result = NIL;

	if (!OidIsValid(relid))
		return NIL;
	rel = table_open(relid, AccessShareLock);
	desc = RelationGetDescr(rel);
	a_rollup = catalog_column(desc, "rollup");
	a_source = catalog_column(desc, "source");
	a_fill = catalog_column(desc, "fill_query");
	a_key = catalog_column(desc, "tenant_key");
	if (!ActiveSnapshotSet())
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		pushed = true;
	}
	scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		bool		isnull;
		Datum		v = heap_getattr(tup, a_source, desc, &isnull);
		RollupCandidate *c;

		if (isnull || DatumGetObjectId(v) != source)
			continue;
		c = palloc(sizeof(RollupCandidate));
		c->relid = DatumGetObjectId(heap_getattr(tup, a_rollup, desc, &isnull));
		c->fill_query = TextDatumGetCString(heap_getattr(tup, a_fill, desc,
														 &isnull));
		c->tenant_key = pstrdup(NameStr(*DatumGetName(heap_getattr(tup, a_key,
																	desc,
																	&isnull))));
		result = lappend(result, c);
	}
	table_endscan(scan);
	if (pushed)
		PopActiveSnapshot();
	table_close(rel, AccessShareLock);
	list_sort(result, cmp_candidates);
	return result;
}

/*
 * analyze_sql
 *		sql (one SELECT) parsed, analyzed and rewritten (views expanded,
 *		row-level security applied), or NULL when any of it fails: a
 *		rollup whose query no longer parses must leave queries planned the
 *		ordinary way, not fail them.
 */
static Query *
analyze_sql(const char *sql)
{
	MemoryContext caller = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	Query	   *volatile result = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(caller);
	PG_TRY();
	{
		List	   *raw = pg_parse_query(sql);
		Query	   *query = parse_analyze_compat(linitial(raw), sql);
		List	   *rewritten = QueryRewrite(query);

		if (list_length(rewritten) == 1)
			result = linitial(rewritten);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(caller);
		edata = CopyErrorData();
		FlushErrorState();
		elog(DEBUG1, "rollup query: %s", edata->message);
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller);
		CurrentResourceOwner = owner;
		result = NULL;
	}
	PG_END_TRY();
	return result;
}

/*
 * grouping_keys
 *		Split the rollup query's columns into keys and aggregates.
 */
static void
grouping_keys(Query *fill, MatchContext *cx)
{
	ListCell   *lc;

	foreach(lc, fill->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->resjunk)
			continue;
		if (tle->ressortgroupref != 0 &&
			get_sortgroupref_clause_noerr(tle->ressortgroupref,
										  fill->groupClause) != NULL)
			cx->keys = lappend(cx->keys, tle);
		else if (IsA(tle->expr, Aggref))
			cx->aggs = lappend(cx->aggs, tle);
	}
}

/*
 * extension_schema
 *		The schema of this extension.
 */
static Oid
extension_schema(void)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			result = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("sqlite_shard_fdw"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		result = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

/*
 * inner_sql
 *		The rollup's rows: the groups of the tenants not read live from
 *		the table, the others' computed by its own query.
 */
static char *
inner_sql(RollupCandidate *c, Oid tenant_type, RollupAnswerMode mode)
{
	StringInfoData buf;
	Oid			extschema = extension_schema();
	const char *key = quote_identifier(c->tenant_key);
	const char *table = quote_qualified_identifier(get_namespace_name(get_rel_namespace(c->relid)),
												   get_rel_name(c->relid));

	initStringInfo(&buf);
	appendStringInfo(&buf,
					 "WITH live AS MATERIALIZED (SELECT l.ids::pg_catalog.text[]::%s[] AS ids "
					 "FROM %s.rollup_answer_live(%u::pg_catalog.oid::pg_catalog.regclass, ",
					 format_type_be_qualified(tenant_type),
					 quote_identifier(get_namespace_name(extschema)), c->relid);
	if (mode == ROLLUP_ANSWER_STALE)
		appendStringInfo(&buf, "'%d seconds'::pg_catalog.interval",
						 shard_rollup_max_staleness);
	else
		appendStringInfoString(&buf, "NULL::pg_catalog.interval");
	/*
	 * The casts make each an array, not a subquery, compared with.  With
	 * no tenant read live, the condition on the rollup table's rows is
	 * true at its first term, a parameter, and no row is compared with
	 * the empty list.
	 */
	appendStringInfo(&buf,
					 ") AS l(ids)) "
					 "SELECT r.* FROM %s r WHERE (SELECT pg_catalog.cardinality(live.ids) = 0 FROM live) "
					 "OR r.%s <> ALL ((SELECT live.ids FROM live)::%s[]) "
					 "UNION ALL "
					 "SELECT f.* FROM (%s) f WHERE f.%s = ANY ((SELECT live.ids FROM live)::%s[])",
					 table, key, format_type_be_qualified(tenant_type),
					 c->fill_query, key, format_type_be_qualified(tenant_type));
	return buf.data;
}

/*
 * answer_from
 *		The query rewritten to be answered from rollup c, or NULL when it
 *		cannot be.
 */
static Query *
answer_from(Query *parse, Oid source, RollupCandidate *c,
			RollupAnswerMode mode)
{
	MatchContext cx = {NIL, NIL, false};
	Query	   *fill;
	Query	   *inner;
	Query	   *q;
	RangeTblEntry *rte;
	List	   *conds;
	List	   *rest = NIL;
	List	   *colnames = NIL;
	ListCell   *lc;
	Oid			tenant_type = InvalidOid;

	if (pg_class_aclcheck(c->relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK ||
		pg_class_aclcheck(source, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		return NULL;
	fill = analyze_sql(c->fill_query);
	if (fill == NULL || list_length(fill->rtable) != 1 ||
		((RangeTblEntry *) linitial(fill->rtable))->relid != source)
	{
		elog(DEBUG1, "rollup \"%s\": its query does not parse",
			 get_rel_name(c->relid));
		return NULL;
	}
	grouping_keys(fill, &cx);
	foreach(lc, cx.keys)
		if (strcmp(((TargetEntry *) lfirst(lc))->resname, c->tenant_key) == 0)
			tenant_type = exprType((Node *) ((TargetEntry *) lfirst(lc))->expr);
	if (!OidIsValid(tenant_type))
		return NULL;

	/* the rollup query's conditions must all be the query's own */
	conds = make_ands_implicit((Expr *) copyObject(parse->jointree->quals));
	foreach(lc, make_ands_implicit((Expr *) fill->jointree->quals))
	{
		ListCell   *lq;
		bool		found = false;

		foreach(lq, conds)
			if (equal(lfirst(lq), lfirst(lc)))
			{
				conds = foreach_delete_current(conds, lq);
				found = true;
				break;
			}
		if (!found)
		{
			elog(DEBUG1, "rollup \"%s\": a condition of its query is not the query's",
				 get_rel_name(c->relid));
			return NULL;
		}
	}

	q = copyObject(parse);
	foreach(lc, conds)
		rest = lappend(rest, map_expr(lfirst(lc), &cx));
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		tle->expr = (Expr *) map_expr((Node *) tle->expr, &cx);
	}
	q->havingQual = map_expr(q->havingQual, &cx);
	if (cx.failed)
	{
		elog(DEBUG1, "rollup \"%s\": the query is not derivable from it",
			 get_rel_name(c->relid));
		return NULL;
	}

	inner = analyze_sql(inner_sql(c, tenant_type, mode));
	if (inner == NULL)
	{
		elog(DEBUG1, "rollup \"%s\": its reading query does not parse",
			 get_rel_name(c->relid));
		return NULL;
	}
	foreach(lc, inner->targetList)
		colnames = lappend(colnames,
						   makeString(pstrdup(((TargetEntry *) lfirst(lc))->resname)));

	rte = linitial(q->rtable);
	shard_rte_read_groups(rte, inner, get_rel_name(c->relid), colnames);
	q->jointree->quals = rest == NIL ? NULL :
		(Node *) make_ands_explicit(rest);
	return q;
}

/*
 * rollup_answer_query
 *		The query rewritten to be answered from a rollup of its table, or
 *		NULL.
 */
static Query *
rollup_answer_query(Query *parse)
{
	Oid			source = query_is_candidate(parse);
	ListCell   *lc;

	if (!OidIsValid(source) || IsolationUsesXactSnapshot())
		return NULL;
	foreach(lc, rollups_of(source))
	{
		Query	   *q = answer_from(parse, source, lfirst(lc),
									(RollupAnswerMode) shard_rollup_answer);

		if (q != NULL)
			return q;
	}
	return NULL;
}

/*
 * next_planner
 *		The planner this extension's hook hands queries on to.
 */
static PlannedStmt *
next_planner(Query *parse, const char *query_string, int cursorOptions,
			 ParamListInfo boundParams)
{
	if (prev_planner_hook)
		return prev_planner_hook(parse, query_string, cursorOptions,
								 boundParams);
	return standard_planner(parse, query_string, cursorOptions, boundParams);
}

/*
 * rollup_planner
 *		The planner hook: a query answered from a rollup is planned as its
 *		rewritten form; any other as it is, or grouped early where that is
 *		cheaper (eageragg.c).
 */
static PlannedStmt *
rollup_planner(Query *parse, const char *query_string, int cursorOptions,
			   ParamListInfo boundParams)
{
	Query	   *q = NULL;
	PlannedStmt *result;

	if (shard_rollup_answer != ROLLUP_ANSWER_OFF && parse->hasAggs)
		q = rollup_answer_query(parse);
	if (q == NULL)
		return shard_eager_aggregate_plan(parse, query_string, cursorOptions,
										  boundParams, next_planner);
	result = next_planner(q, query_string, cursorOptions, boundParams);
	/* the role's privileges on the rollup decided it */
	result->dependsOnRole = true;
	return result;
}

/*
 * rollup_set_rel_pathlist
 *		The path hook: a call of rollup_answer_live in FROM becomes the
 *		Rollup Live Tenants scan.
 */
static void
rollup_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
						RangeTblEntry *rte)
{
	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);
	if (rte->rtekind == RTE_FUNCTION)
		rollup_live_add_path(root, rel, rte);
}

/*
 * shard_rollupanswer_init
 *		Define the settings and install the hooks (at load).
 */
void
shard_rollupanswer_init(void)
{
	DefineCustomEnumVariable("sqlite_shard_fdw.rollup_answer",
							 "Answers aggregate queries over a foreign table from its rollups where that is exact.",
							 "off plans them the ordinary way; live reads the groups of tenants whose rows changed since their refresh from the shards; stale answers from the rollup alone while no change has waited longer than sqlite_shard_fdw.rollup_max_staleness.",
							 &shard_rollup_answer,
							 ROLLUP_ANSWER_OFF,
							 rollup_answer_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("sqlite_shard_fdw.rollup_max_staleness",
							"How long a change may have waited for a refresh for rollup_answer = stale to answer from the rollup alone.",
							"Beyond it, the tenants that changed are read live.",
							&shard_rollup_max_staleness,
							300, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_S,
							NULL, NULL, NULL);
	prev_planner_hook = planner_hook;
	planner_hook = rollup_planner;
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = rollup_set_rel_pathlist;
	rollup_live_init();
}
