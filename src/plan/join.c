/*-------------------------------------------------------------------------
 *
 * join.c
 *		  Joins of foreign tables that run inside each shard
 *
 * A join of tables of one server whose rows meet only when their tenant
 * columns are equal is co-located: every joined row lies in one shard, so
 * each shard can run the join over its own rows and the results only
 * concatenate.  This file decides which joins are such (the
 * GetForeignJoinPaths callback, in the manner of postgres_fdw's
 * foreign_join_ok) and builds the SQL; joinscan.c finishes it per shard.
 *
 * What makes a join co-located: each join of two inputs (a table, or a
 * join already co-located) has, in its ON clause, an equality between the
 * tenant column of a table on one side and that of a table on the other;
 * an inner join may also have it from an equivalence class (a tenant
 * given as a constant for both, where the planner keeps no join clause).
 * Then, in every row of the join, the tables that are not NULL-extended
 * have one tenant, so it does not matter whether a tenant filter applies
 * before or after the join.
 *
 * The filters that keep a statement to its tenants (the routed tenants, a
 * user mapping's "tenants", the stale copy of a moving tenant) are the
 * filters of each table: each table is read, inside the shard's query, as
 * "(SELECT * FROM t WHERE its conditions and filters) AS rN", which SQLite
 * flattens into the join.  That is what the join of the tables, each
 * filtered, means; it keeps the NULL-extended rows of an outer join right
 * (a filter of the nullable side must not drop the preserved side's row),
 * and a scoped login sees no other tenant's row through any table.  A
 * routed join reads the shards of the tenant a table that every row of
 * the join holds (not on the nullable side of an outer join) is pinned to.
 *
 * What SQLite may evaluate follows deparse.c: each table's own conditions
 * as for a scan of it, join conditions that are equalities of two columns
 * of integers, or of text under a deterministic collation (as
 * "rA.x COLLATE BINARY = rB.y"), and conditions of one table that
 * deparse.c pushes.  Since SQLite compares two columns by what they store,
 * the shards must declare such columns with INTEGER or TEXT affinity, as
 * the first shard is checked to at planning and every shard when read
 * (joinscan.c); a shard that does not is an error, as for an aggregation,
 * not a silently different answer.  An inner join may leave conditions to
 * PostgreSQL, which filters the joined rows; an outer join may not.
 * Right joins are written as left joins; full joins need SQLite 3.39.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"

#include "compat.h"

/* sqlite_shard_fdw.join_pushdown */
bool		shard_join_pushdown = true;

/* Rows a shard looks at to find one row's matches through an index. */
#define JOIN_LOOKUP_ROWS 8.0

/* The tenant kind of an input of reference tables only. */
#define JOIN_REFERENCE_ONLY (-1)

/* The first SQLite with FULL JOIN. */
#define SQLITE_FULL_JOIN_VERSION 3039000

/* Planner state of a join (joinrel->fdw_private). */
typedef struct ShardJoinRelInfo
{
	bool		ok;				/* the shards may run it */
	JoinType	jointype;		/* JOIN_INNER, JOIN_LEFT or JOIN_FULL */
	RelOptInfo *outerrel;		/* of a left join, the preserved side */
	RelOptInfo *innerrel;
	List	   *joinclauses;	/* RestrictInfos of its ON clause */
	List	   *where_conds;	/* RestrictInfos on its rows (WHERE) */
	List	   *local_conds;	/* RestrictInfos PostgreSQL evaluates */
	Relids		nonnullable;	/* tables not NULL-extended in any row */
	int			tenant_kind;	/* of every table's tenant column, or
								 * JOIN_REFERENCE_ONLY */
	double		scanned;		/* rows the shards look at */
	double		cost_scale;		/* shard_join_cost_scale */
} ShardJoinRelInfo;

/*
 * is_base
 *		Is rel a scan of a foreign table of this wrapper?
 */
static bool
is_base(RelOptInfo *rel)
{
	return rel->reloptkind == RELOPT_BASEREL && rel->fdw_private != NULL;
}

/*
 * join_info
 *		The state of a join this file looked at, or NULL.
 */
static ShardJoinRelInfo *
join_info(RelOptInfo *rel)
{
	if (IS_JOIN_REL(rel) && rel->fdw_private != NULL)
		return (ShardJoinRelInfo *) rel->fdw_private;
	return NULL;
}

/*
 * key_need
 *		What a shard must declare of a column that a join condition compares
 *		with another column, or 0 when such a comparison is not pushed:
 *		integers (INTEGER affinity, so that text that reads as an integer
 *		is stored as one) and unbounded text (TEXT affinity) in a UTF-8
 *		database, as deparse.c pushes them.
 */
static char
key_need(Var *var)
{
	switch (var->vartype)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			return SHARD_NEEDS_INTEGER;
		case TEXTOID:
		case VARCHAROID:
			if (var->vartypmod >= 0 || GetDatabaseEncoding() != PG_UTF8)
				return 0;
			return SHARD_NEEDS_TEXT;
		default:
			return 0;
	}
}

/*
 * column_equality
 *		Is clause "a = b" of two columns of two tables among relids that the
 *		shards may compare (key_need)?  Sets *l and *r to them.
 */
static bool
column_equality(Expr *clause, Relids relids, Var **l, Var **r)
{
	OpExpr	   *op = (OpExpr *) clause;
	Var		   *a,
			   *b;
	char	   *opname;

	if (!IsA(op, OpExpr) || list_length(op->args) != 2 ||
		op->opno >= FirstGenbkiObjectId)
		return false;
	opname = get_opname(op->opno);
	if (opname == NULL || strcmp(opname, "=") != 0 ||
		get_mergejoin_opfamilies(op->opno) == NIL)
		return false;
	a = (Var *) shard_strip_relabel(linitial(op->args));
	b = (Var *) shard_strip_relabel(lsecond(op->args));
	if (!IsA(a, Var) || !IsA(b, Var) || a->varlevelsup != 0 ||
		b->varlevelsup != 0 || a->varattno <= 0 || b->varattno <= 0 ||
		a->varno == b->varno ||
		!bms_is_member(a->varno, relids) || !bms_is_member(b->varno, relids))
		return false;
	if (key_need(a) == 0 || key_need(a) != key_need(b))
		return false;
	if (key_need(a) == SHARD_NEEDS_TEXT &&
		(!OidIsValid(op->inputcollid) ||
		 !get_collation_isdeterministic(op->inputcollid)))
		return false;
	*l = a;
	*r = b;
	return true;
}

/*
 * single_table
 *		The table of the join that a clause reads, when it reads one.
 */
static RelOptInfo *
single_table(PlannerInfo *root, Expr *clause, Relids relids)
{
	Relids		varnos = pull_varnos(root, (Node *) clause);
	int			relid;

	if (!bms_get_singleton_member(varnos, &relid) ||
		!bms_is_member(relid, relids))
		return NULL;
	return find_base_rel(root, relid);
}

/*
 * clause_ok
 *		May the shards evaluate this join condition?
 */
static bool
clause_ok(PlannerInfo *root, Expr *clause, Relids relids)
{
	Var		   *l,
			   *r;
	RelOptInfo *rel;

	if (column_equality(clause, relids, &l, &r))
		return true;
	rel = single_table(root, clause, relids);
	return rel != NULL && is_base(rel) &&
		shard_is_pushable_expr(root, rel, clause);
}

/*
 * is_tenant_var
 *		Is var the tenant column of its table?  Never of a reference table,
 *		which has none (its tenant attnum is InvalidAttrNumber, which a
 *		whole-row Var's varattno would otherwise match).
 */
static bool
is_tenant_var(PlannerInfo *root, Var *var)
{
	AttrNumber	attnum = shard_rel_tenant_attnum(find_base_rel(root,
															   var->varno));

	return attnum != InvalidAttrNumber && var->varattno == attnum;
}

/*
 * tenant_var
 *		The tenant column of a table, as the planner's equivalence classes
 *		hold it; NULL for a reference table, which has none.
 */
static Var *
tenant_var(PlannerInfo *root, RelOptInfo *rel)
{
	AttrNumber	attnum = shard_rel_tenant_attnum(rel);
	Oid			typid;
	int32		typmod;
	Oid			collid;

	if (attnum == InvalidAttrNumber)
		return NULL;
	get_atttypetypmodcoll(planner_rt_fetch(rel->relid, root)->relid, attnum,
				  &typid, &typmod, &collid);
	return makeVar(rel->relid, attnum, typid, typmod, collid, 0);
}

/*
 * tenants_equal
 *		Does a join of outer and inner meet only rows of one tenant: an
 *		equality of their tables' tenant columns among clauses or (an inner
 *		join, use_classes) one that the equivalence classes imply?
 */
static bool
tenants_equal(PlannerInfo *root, RelOptInfo *outerrel, RelOptInfo *innerrel,
			  List *clauses, bool use_classes)
{
	ListCell   *lc;
	int			o,
				i;

	foreach(lc, clauses)
	{
		Expr	   *clause = lfirst_node(RestrictInfo, lc)->clause;
		Var		   *l,
				   *r;

		if (!column_equality(clause, bms_union(outerrel->relids,
											   innerrel->relids), &l, &r) ||
			!is_tenant_var(root, l) || !is_tenant_var(root, r))
			continue;
		if ((bms_is_member(l->varno, outerrel->relids) &&
			 bms_is_member(r->varno, innerrel->relids)) ||
			(bms_is_member(r->varno, outerrel->relids) &&
			 bms_is_member(l->varno, innerrel->relids)))
			return true;
	}
	if (!use_classes)
		return false;
	o = -1;
	while ((o = bms_next_member(outerrel->relids, o)) >= 0)
	{
		Var		   *ovar = tenant_var(root, find_base_rel(root, o));

		if (ovar == NULL)
			continue;
		i = -1;
		while ((i = bms_next_member(innerrel->relids, i)) >= 0)
		{
			Var		   *ivar = tenant_var(root, find_base_rel(root, i));

			if (ivar != NULL &&
				exprs_known_equal_compat(root, (Node *) ovar, (Node *) ivar))
				return true;
		}
	}
	return false;
}

/*
 * input_ok
 *		May a join's input be part of a join the shards run: a table of the
 *		server whose conditions the shards evaluate all, or a join they run
 *		whose conditions they evaluate all, read as the query's target or
 *		with row locks never (their rows need an identity the join has not).
 *		Sets *scanned, *scale (shard_cost_scale) and the tenant kind.
 */
static bool
input_ok(PlannerInfo *root, RelOptInfo *rel, double *scanned, double *scale,
		 int *kind)
{
	ListCell   *lc;
	int			relid = -1;

	if (is_base(rel))
	{
		ShardTableOptions *topts = shard_rel_options(rel);
		Oid			typid;
		int32		typmod;
		Oid			collid;

		if (!shard_rel_all_pushed(rel) || !bms_is_empty(rel->lateral_relids))
			return false;
		*scanned = shard_rel_scanned(rel);
		*scale = shard_rel_cost_scale(rel);
		if (topts->reference)
			*kind = JOIN_REFERENCE_ONLY;
		else
		{
			get_atttypetypmodcoll(planner_rt_fetch(rel->relid, root)->relid,
								  topts->tenant_attnum, &typid, &typmod,
								  &collid);
			*kind = shard_tenant_kind(typid);
		}
	}
	else
	{
		ShardJoinRelInfo *info = join_info(rel);

		if (info == NULL || !info->ok || info->local_conds != NIL)
			return false;
		*kind = info->tenant_kind;
		*scanned = info->scanned;
		*scale = info->cost_scale;
	}
	if (*kind == SHARDIO_TENANT_UUID)
		return false;
	while ((relid = bms_next_member(rel->relids, relid)) >= 0)
	{
		if (relid == root->parse->resultRelation)
			return false;
		foreach(lc, root->rowMarks)
			if (((PlanRowMark *) lfirst(lc))->rti == relid)
				return false;
	}
	return true;
}

/*
 * placeholders_ok
 *		Are no placeholders computed inside the join?  Their values (a
 *		column of the nullable side of an outer join, or an expression
 *		that goes NULL with it) are not among the columns the shards return.
 */
static bool
placeholders_ok(PlannerInfo *root, RelOptInfo *joinrel)
{
	ListCell   *lc;

	foreach(lc, root->placeholder_list)
	{
		PlaceHolderInfo *phinfo = lfirst(lc);

		if (bms_is_subset(phinfo->ph_eval_at, joinrel->relids) &&
			bms_nonempty_difference(joinrel->relids, phinfo->ph_eval_at))
			return false;
	}
	return true;
}

/*
 * table_needs
 *		What the join assumes of the columns of one of its tables: those of
 *		its own pushed conditions, of conditions of the join on it alone,
 *		and of the columns the join compares with others' (key_need).
 */
static List *
table_needs(PlannerInfo *root, RelOptInfo *rel, List *join_conds,
			Relids relids, List *extra, List *extra_relids)
{
	List	   *needs;
	ListCell   *lc,
			   *lc2;

	needs = shard_text_columns(root,
							   extract_actual_clauses(shard_rel_remote_conds(rel),
													  false),
							   NIL);
	foreach(lc, join_conds)
	{
		Expr	   *clause = lfirst_node(RestrictInfo, lc)->clause;
		Var		   *l,
				   *r;
		int			side;

		if (column_equality(clause, relids, &l, &r))
		{
			for (side = 0; side < 2; side++)
			{
				Var		   *v = side == 0 ? l : r;
				char	   *need;
				ListCell   *lc2;
				bool		found = false;

				if (v->varno != rel->relid)
					continue;
				need = psprintf("%c%s", key_need(v),
								shard_column_name(planner_rt_fetch(v->varno, root)->relid,
												  v->varattno));
				foreach(lc2, needs)
					if (strcmp(strVal(lfirst(lc2)), need) == 0)
						found = true;
				if (!found)
					needs = lappend(needs, makeString(need));
			}
		}
		else if (single_table(root, clause, relids) == rel)
			needs = shard_text_columns(root, list_make1(clause), needs);
	}
	forboth(lc, extra, lc2, extra_relids)
		if (lfirst_int(lc2) == (int) rel->relid)
			needs = lappend(needs, lfirst(lc));
	return needs;
}

/*
 * all_join_conds
 *		Every condition the shards evaluate at the joins of rel.
 */
static List *
all_join_conds(RelOptInfo *rel)
{
	ShardJoinRelInfo *info = join_info(rel);

	if (info == NULL)
		return NIL;
	return list_concat(list_concat(list_concat_copy(info->joinclauses,
													info->where_conds),
									all_join_conds(info->outerrel)),
					   all_join_conds(info->innerrel));
}

/*
 * schema_ok
 *		Does the fleet's first shard declare every table's columns as the
 *		join assumes?  Each shard is checked again when it is read.
 */
static bool
schema_ok(PlannerInfo *root, RelOptInfo *joinrel, List *extra,
		  List *extra_relids)
{
	List	   *conds = all_join_conds(joinrel);
	int			relid = -1;

	while ((relid = bms_next_member(joinrel->relids, relid)) >= 0)
	{
		RelOptInfo *rel = find_base_rel(root, relid);
		ShardTableOptions *topts = shard_rel_options(rel);

		if (!shard_schema_meets(shard_server_options(topts->serverid),
								topts->table,
								table_needs(root, rel, conds, joinrel->relids,
											extra, extra_relids)))
			return false;
	}
	return true;
}

/*
 * reference_shard_of
 *		The "reference_shard" of the first reference table among relids, or
 *		NULL (the first shard).
 */
static const char *
reference_shard_of(PlannerInfo *root, Relids relids)
{
	int			relid = -1;

	while ((relid = bms_next_member(relids, relid)) >= 0)
	{
		ShardTableOptions *topts = shard_rel_options(find_base_rel(root, relid));

		if (topts->reference)
			return topts->reference_shard;
	}
	return NULL;
}

/*
 * reference_ok
 *		May an input of reference tables only (kind JOIN_REFERENCE_ONLY)
 *		join the other input inside the shards?
 *
 * Every shard holds a copy of a reference table, so joined with tenant
 * tables it needs no tenant equality: each shard joins its tenants' rows
 * with its copy.  Its rows must not be preserved, though (the outer side
 * of a left join, either side of a full one): each shard would return the
 * unmatched ones, once per shard.  Two inputs of reference tables only
 * join on the shard both are read from, which must then be the same.
 */
static bool
reference_ok(PlannerInfo *root, RelOptInfo *outerrel, RelOptInfo *innerrel,
			 int okind, int ikind, JoinType jointype)
{
	const char *oshard;
	const char *ishard;

	if (okind != JOIN_REFERENCE_ONLY && ikind != JOIN_REFERENCE_ONLY)
		return true;
	if (okind == JOIN_REFERENCE_ONLY && ikind == JOIN_REFERENCE_ONLY)
	{
		oshard = reference_shard_of(root, outerrel->relids);
		ishard = reference_shard_of(root, innerrel->relids);
		return (oshard == NULL && ishard == NULL) ||
			(oshard != NULL && ishard != NULL && strcmp(oshard, ishard) == 0);
	}
	if (jointype == JOIN_FULL)
		return false;
	return jointype == JOIN_INNER || ikind == JOIN_REFERENCE_ONLY;
}

/*
 * join_ok
 *		Can the shards run this join of outerrel and innerrel?  Fills info
 *		as it goes.
 */
static bool
join_ok(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
		RelOptInfo *innerrel, JoinType jointype, JoinPathExtraData *extra,
		ShardJoinRelInfo *info)
{
	ShardJoinRelInfo *oinfo;
	ShardJoinRelInfo *iinfo;
	double		oscanned,
				iscanned;
	double		oscale,
				iscale;
	int			okind,
				ikind;
	ListCell   *lc;

	switch (jointype)
	{
		case JOIN_INNER:
		case JOIN_LEFT:
			break;
		case JOIN_RIGHT:
			{
				/* written as a left join */
				RelOptInfo *swap = outerrel;

				outerrel = innerrel;
				innerrel = swap;
				jointype = JOIN_LEFT;
				break;
			}
		case JOIN_FULL:
			if (sqlite3_libversion_number() < SQLITE_FULL_JOIN_VERSION)
				return false;
			break;
		default:
			return false;
	}
	if (!bms_is_empty(joinrel->lateral_relids))
		return false;
	if (!input_ok(root, outerrel, &oscanned, &oscale, &okind) ||
		!input_ok(root, innerrel, &iscanned, &iscale, &ikind) ||
		(okind != ikind && okind != JOIN_REFERENCE_ONLY &&
		 ikind != JOIN_REFERENCE_ONLY))
		return false;
	if (!placeholders_ok(root, joinrel))
		return false;
	if (!reference_ok(root, outerrel, innerrel, okind, ikind, jointype))
		return false;

	info->jointype = jointype;
	info->outerrel = outerrel;
	info->innerrel = innerrel;
	info->tenant_kind = okind == JOIN_REFERENCE_ONLY ? ikind : okind;

	/*
	 * The shards read one input and look up its matches in the other, by
	 * the index of the join's columns that a tenant's table has (or one
	 * SQLite builds for the statement), in whichever order is cheaper: the
	 * rows the shards look at are those of one input and a few per row of
	 * it in the other, at most all of the other's.
	 */
	info->scanned = Min(oscanned + Min(iscanned, outerrel->rows * JOIN_LOOKUP_ROWS),
						iscanned + Min(oscanned, innerrel->rows * JOIN_LOOKUP_ROWS));
	/*
	 * A row of the join stands for as many as a row of either input, but
	 * the join's rows for no more than the larger input's, as in a join of
	 * each row with a few of the other input.
	 */
	info->cost_scale = Max(oscale, iscale);
	if (joinrel->rows * info->cost_scale >
		Max(outerrel->rows * oscale, innerrel->rows * iscale))
		info->cost_scale = Max(Max(outerrel->rows * oscale,
								   innerrel->rows * iscale) / joinrel->rows,
							   1);

	/* The join's conditions: in ON, on its rows, or left to PostgreSQL. */
	foreach(lc, extra->restrictlist)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		bool		on = (jointype == JOIN_INNER ||
						  !RINFO_IS_PUSHED_DOWN(ri, joinrel->relids));

		if (ri->pseudoconstant)
			continue;
		if (!clause_ok(root, ri->clause, joinrel->relids))
		{
			if (jointype != JOIN_INNER)
				return false;
			info->local_conds = lappend(info->local_conds, ri);
		}
		else if (on)
			info->joinclauses = lappend(info->joinclauses, ri);
		else
			info->where_conds = lappend(info->where_conds, ri);
	}
	if (okind != JOIN_REFERENCE_ONLY && ikind != JOIN_REFERENCE_ONLY &&
		!tenants_equal(root, outerrel, innerrel, info->joinclauses,
					   jointype == JOIN_INNER))
		return false;

	/*
	 * The inputs' own conditions on their rows: after an inner join, or the
	 * preserved side's after a left join; the nullable side's join its ON
	 * clause (they drop its rows, not the preserved side's).  A full join
	 * has no place for them.
	 */
	oinfo = join_info(outerrel);
	iinfo = join_info(innerrel);
	if (jointype == JOIN_FULL &&
		((oinfo && oinfo->where_conds) || (iinfo && iinfo->where_conds)))
		return false;
	if (oinfo)
		info->where_conds = list_concat_copy(oinfo->where_conds,
											 info->where_conds);
	if (iinfo && jointype == JOIN_INNER)
		info->where_conds = list_concat(info->where_conds,
										list_copy(iinfo->where_conds));
	else if (iinfo)
		info->joinclauses = list_concat(info->joinclauses,
										list_copy(iinfo->where_conds));

	/* The tables every row holds, whose tenant may route the join. */
	if (jointype != JOIN_FULL)
		info->nonnullable = bms_copy(oinfo ? oinfo->nonnullable :
									 outerrel->relids);
	if (jointype == JOIN_INNER)
		info->nonnullable = bms_union(info->nonnullable,
									  iinfo ? iinfo->nonnullable :
									  innerrel->relids);
	return schema_ok(root, joinrel, NIL, NIL);
}

/*
 * shardGetForeignJoinPaths
 *		Offer a path that runs a co-located join inside the shards.  The
 *		first pair of inputs the planner offers decides, as in postgres_fdw.
 *
 * Its cost is a scan's: a start-up per shard, the rows the shards look at,
 * and the rows that come back, which makes it cheaper than fetching both
 * tables' rows whenever the join returns fewer rows than they hold.
 */
void
shardGetForeignJoinPaths(PlannerInfo *root, RelOptInfo *joinrel,
						 RelOptInfo *outerrel, RelOptInfo *innerrel,
						 JoinType jointype, JoinPathExtraData *extra)
{
	ShardJoinRelInfo *info;
	ShardQueryCost q = {0};
	Cost		startup;
	Cost		total;
	QualCost	local;

	if (joinrel->fdw_private != NULL)
		return;
	info = palloc0(sizeof(ShardJoinRelInfo));
	joinrel->fdw_private = info;
	if (!shard_join_pushdown ||
		!join_ok(root, joinrel, outerrel, innerrel, jointype, extra, info))
		return;
	info->ok = true;

	cost_qual_eval(&local, info->local_conds, root);
	q.nshards = shard_cost_shards(root, joinrel);
	q.scanned = info->scanned;
	q.returned = joinrel->rows * info->cost_scale;
	q.local_startup = local.startup;
	q.local_per_row = local.per_tuple;
	shard_cost_query(&q, &startup, &total);
	add_path(joinrel, (Path *)
			 create_foreign_join_path_compat(root, joinrel, NULL,
											 joinrel->rows, startup, total,
											 NIL, NULL, NULL, NIL));
}

/* What building a join's SQL collects. */
typedef struct JoinDeparse
{
	PlannerInfo *root;
	RelOptInfo *joinrel;
	List	   *parts;			/* FdwScanJoinFromParts */
	StringInfoData text;		/* the text not yet in parts */
	List	   *tables;			/* FdwScanJoinTables */
	List	   *params;
	List	   *param_kinds;
	StringInfoData relations;	/* for EXPLAIN */
	List	   *extra_needs;	/* of an aggregation over the join */
	List	   *extra_relids;	/* the table of each */
} JoinDeparse;

/*
 * flush_text
 *		Move the text collected so far into the parts.
 */
static void
flush_text(JoinDeparse *d)
{
	if (d->text.len > 0)
		d->parts = lappend(d->parts, makeString(pstrdup(d->text.data)));
	resetStringInfo(&d->text);
}

/*
 * deparse_table
 *		A table of the join: its position in the parts, and its entry in
 *		the list of tables, with its pushed conditions written as for a
 *		scan of it alone (they go into its own query).
 */
static void
deparse_table(JoinDeparse *d, RelOptInfo *rel)
{
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, d->root);
	ShardTableOptions *topts = shard_rel_options(rel);
	List	   *conds = NIL;
	List	   *columns = NIL;
	Relation	r;
	TupleDesc	tupdesc;
	ListCell   *lc;
	int			i;

	/* inside the table's own query: its columns by their names alone */
	bool		old = shard_deparse_set_qualified(false);

	foreach(lc, shard_rel_remote_conds(rel))
		conds = list_concat(conds,
							shard_deparse_conditions(d->root, rel,
													 list_make1(lfirst(lc)),
													 &d->params,
													 &d->param_kinds));
	shard_deparse_set_qualified(old);
	r = table_open(rte->relid, NoLock);
	tupdesc = RelationGetDescr(r);
	for (i = 1; i <= tupdesc->natts; i++)
		if (!TupleDescAttr(tupdesc, i - 1)->attisdropped)
			columns = lappend(columns,
							  makeString(shard_column_name(rte->relid, i)));
	table_close(r, NoLock);

	flush_text(d);
	d->parts = lappend(d->parts, makeInteger(list_length(d->tables)));
	d->tables = lappend(d->tables,
						list_make5(makeString(topts->table),
								   makeString(psprintf("r%d", rel->relid)),
								   makeString(topts->reference ? "" :
											  topts->tenant_column),
								   makeString(get_rel_name(rte->relid)),
								   conds));
	llast(d->tables) = lappend(lappend(llast(d->tables),
									   table_needs(d->root, rel,
												   all_join_conds(d->joinrel),
												   d->joinrel->relids,
												   d->extra_needs,
												   d->extra_relids)),
							   columns);
	appendStringInfo(&d->relations, "%s %s", get_rel_name(rte->relid),
					 rte->eref->aliasname);
}

/*
 * deparse_join_conds
 *		Write conditions of the join, joined by AND: equalities of two
 *		columns, and conditions of one table (deparse.c), which name their
 *		tables' aliases.
 */
static void
deparse_join_conds(JoinDeparse *d, StringInfo buf, List *conds)
{
	ListCell   *lc;
	List	   *sqls = NIL;

	foreach(lc, conds)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		Var		   *l,
				   *r;

		if (column_equality(ri->clause, d->joinrel->relids, &l, &r))
		{
			StringInfoData one;
			bool		old = shard_deparse_set_qualified(true);

			initStringInfo(&one);
			appendStringInfoChar(&one, '(');
			shard_deparse_column_ref(&one, d->root, l);
			if (key_need(l) == SHARD_NEEDS_TEXT)
				appendStringInfoString(&one, " COLLATE BINARY");
			appendStringInfoString(&one, " = ");
			shard_deparse_column_ref(&one, d->root, r);
			appendStringInfoChar(&one, ')');
			shard_deparse_set_qualified(old);
			sqls = lappend(sqls, makeString(one.data));
		}
		else
			sqls = list_concat(sqls,
							   shard_deparse_qualified_conditions(d->root,
																  single_table(d->root, ri->clause,
																			   d->joinrel->relids),
																  list_make1(ri),
																  &d->params,
																  &d->param_kinds));
	}
	shard_join_conditions(buf, sqls);
}

/*
 * deparse_from
 *		Write the FROM clause of rel: a table, or "outer JOIN inner ON
 *		(...)", an inner side that is a join itself in parentheses.
 */
static void
deparse_from(JoinDeparse *d, RelOptInfo *rel, bool parens)
{
	ShardJoinRelInfo *info = join_info(rel);

	if (info == NULL)
	{
		deparse_table(d, rel);
		return;
	}
	if (parens)
	{
		appendStringInfoChar(&d->text, '(');
		appendStringInfoChar(&d->relations, '(');
	}
	deparse_from(d, info->outerrel, false);
	appendStringInfo(&d->text, " %s JOIN ",
					 info->jointype == JOIN_INNER ? "INNER" :
					 info->jointype == JOIN_LEFT ? "LEFT" : "FULL");
	appendStringInfo(&d->relations, " %s JOIN ",
					 info->jointype == JOIN_INNER ? "INNER" :
					 info->jointype == JOIN_LEFT ? "LEFT" : "FULL");
	deparse_from(d, info->innerrel, true);
	appendStringInfoString(&d->text, " ON ");
	if (info->joinclauses == NIL)
		appendStringInfoString(&d->text, "1");
	else
		deparse_join_conds(d, &d->text, info->joinclauses);
	if (parens)
	{
		appendStringInfoChar(&d->text, ')');
		appendStringInfoChar(&d->relations, ')');
	}
}

/*
 * join_scan_tlist
 *		The columns the join returns: those above it uses and those of the
 *		conditions PostgreSQL evaluates on its rows.
 */
static List *
join_scan_tlist(RelOptInfo *joinrel, List *local_conds)
{
	List	   *tlist;

	tlist = add_to_flat_tlist(NIL,
							  pull_var_clause((Node *) joinrel->reltarget->exprs,
											  PVC_RECURSE_PLACEHOLDERS));
	return add_to_flat_tlist(tlist,
							 pull_var_clause((Node *) extract_actual_clauses(local_conds, false),
											 PVC_RECURSE_PLACEHOLDERS));
}

/*
 * route_value
 *		The tenant value a table that every row of the join holds is pinned
 *		to, which chooses the shards; NULL when the join reads every shard.
 */
static Expr *
route_value(PlannerInfo *root, ShardJoinRelInfo *info, ShardPruneKind *kind)
{
	int			relid = -1;

	while ((relid = bms_next_member(info->nonnullable, relid)) >= 0)
	{
		RelOptInfo *rel = find_base_rel(root, relid);
		Expr	   *value = shard_find_tenant_condition(rel,
														shard_rel_tenant_attnum(rel),
														kind);

		if (value != NULL)
			return value;
	}
	*kind = PRUNE_NONE;
	return NULL;
}

/*
 * shard_join_one_tenant
 *		Is a join the shards run routed to one tenant, so that all its rows
 *		come from one shard?
 */
bool
shard_join_one_tenant(PlannerInfo *root, RelOptInfo *joinrel)
{
	ShardJoinRelInfo *info = join_info(joinrel);
	ShardPruneKind kind;

	return info != NULL && route_value(root, info, &kind) != NULL &&
		kind == PRUNE_EQ;
}

/*
 * shard_join_one_shard
 *		Does a join the shards run read one shard: routed to one tenant, or
 *		of reference tables only, which are read from one shard's copies?
 */
bool
shard_join_one_shard(PlannerInfo *root, RelOptInfo *joinrel)
{
	ShardJoinRelInfo *info = join_info(joinrel);

	return info != NULL &&
		(info->tenant_kind == JOIN_REFERENCE_ONLY ||
		 shard_join_one_tenant(root, joinrel));
}

/*
 * shard_join_scanned
 *		The rows the shards look at to run a join.
 */
double
shard_join_scanned(RelOptInfo *joinrel)
{
	ShardJoinRelInfo *info = join_info(joinrel);

	return info != NULL ? info->scanned : 0;
}

/*
 * shard_join_cost_scale
 *		How many rows a row of a join the shards run stands for in costs
 *		(shard_rel_cost_scale).
 */
double
shard_join_cost_scale(RelOptInfo *joinrel)
{
	ShardJoinRelInfo *info = join_info(joinrel);

	return info != NULL ? info->cost_scale : 1;
}

/*
 * shard_join_rel_pushed
 *		Do the shards run this join, every condition on its rows included,
 *		so that they may also aggregate its rows (upper.c)?
 */
bool
shard_join_rel_pushed(RelOptInfo *rel)
{
	ShardJoinRelInfo *info = join_info(rel);

	return info != NULL && info->ok && info->local_conds == NIL;
}

/*
 * shard_join_tenant_key
 *		Is var the tenant column of a table that every row of the join
 *		holds?  Grouped by it, every group lives in one shard (a nullable
 *		table's tenant is NULL in rows of every shard).
 */
bool
shard_join_tenant_key(PlannerInfo *root, RelOptInfo *joinrel, Var *var)
{
	ShardJoinRelInfo *info = join_info(joinrel);

	return info != NULL && bms_is_member(var->varno, info->nonnullable) &&
		is_tenant_var(root, var);
}

/*
 * shard_join_schema_meets
 *		Does the fleet's first shard declare the columns of every table of
 *		the join as the join and needs (an aggregation over it, each need
 *		of the table relids names) assume?
 */
bool
shard_join_schema_meets(PlannerInfo *root, RelOptInfo *joinrel, List *needs,
						List *relids)
{
	return schema_ok(root, joinrel, needs, relids);
}

/*
 * shard_join_private
 *		The FdwScanPrivateJoin of a join the shards run, under a SELECT
 *		(of its columns, or of an aggregation's: needs and relids are what
 *		that assumes of each table's columns) ending in "FROM ".  Adds the
 *		values its conditions bind to *params, the conditions on its rows
 *		to *where_sqls, and sets *route and *kind to what routes it.
 */
List *
shard_join_private(PlannerInfo *root, RelOptInfo *joinrel, List *needs,
				   List *relids, List **params, List **param_kinds,
				   List **where_sqls, Expr **route, ShardPruneKind *kind)
{
	ShardJoinRelInfo *info = join_info(joinrel);
	JoinDeparse d;

	memset(&d, 0, sizeof(d));
	d.root = root;
	d.joinrel = joinrel;
	d.params = *params;
	d.param_kinds = *param_kinds;
	d.extra_needs = needs;
	d.extra_relids = relids;
	initStringInfo(&d.text);
	initStringInfo(&d.relations);

	/* FROM, then WHERE, sharing one numbering of the values to bind */
	deparse_from(&d, joinrel, false);
	flush_text(&d);
	*where_sqls = NIL;
	if (info->where_conds != NIL)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		deparse_join_conds(&d, &buf, info->where_conds);
		*where_sqls = list_make1(makeString(buf.data));
	}
	*params = d.params;
	*param_kinds = d.param_kinds;
	*route = route_value(root, info, kind);
	return list_make5(makeString(d.relations.data), d.parts, d.tables,
					  NIL, NIL);
}

/*
 * shard_join_plan
 *		The ForeignScan of a join the shards run: its rows are the columns
 *		of fdw_scan_tlist, the SQL's FROM clause is finished per shard.
 *		With final, a final path of order.c: the shards also sort and limit
 *		the rows (the query's ORDER BY and LIMIT), as for a table.
 */
ForeignScan *
shard_join_plan(PlannerInfo *root, RelOptInfo *joinrel,
				ForeignPath *best_path, List *tlist, Plan *outer_plan,
				bool final)
{
	ShardJoinRelInfo *info = join_info(joinrel);
	List	   *scan_tlist;
	List	   *out_tables = NIL;
	List	   *out_columns = NIL;
	List	   *retrieved = NIL;
	List	   *params = NIL;
	List	   *param_kinds = NIL;
	List	   *where;
	List	   *join;
	StringInfoData select;
	ShardScanPrivate priv;
	ShardPruneKind kind;
	Expr	   *route;
	ListCell   *lc;
	bool		old;
	List	   *needs = NIL;
	List	   *relids = NIL;
	Var		   *time_key;

	/*
	 * SELECT the columns by their tables' aliases: those above the join
	 * needs, and a final path's sort keys, which may be columns no one
	 * else needs (a member of the key's equivalence class, as o.plan_id
	 * for ORDER BY p.plan_id of a join ON p.plan_id = o.plan_id)
	 */
	scan_tlist = join_scan_tlist(joinrel, info->local_conds);
	if (final)
		scan_tlist = add_to_flat_tlist(scan_tlist,
									   shard_order_key_vars(root, joinrel));
	time_key = final ? shard_order_time_key_var(root, joinrel) : NULL;
	initStringInfo(&select);
	appendStringInfoString(&select, "SELECT ");
	old = shard_deparse_set_qualified(true);
	foreach(lc, scan_tlist)
	{
		Var		   *var = (Var *) lfirst_node(TargetEntry, lc)->expr;
		RangeTblEntry *rte;

		if (!IsA(var, Var) || var->varattno <= 0)
			elog(ERROR, "unexpected column in a join pushed to the shards");
		rte = planner_rt_fetch(var->varno, root);
		if (foreach_current_index(lc) > 0)
			appendStringInfoString(&select, ", ");
		shard_deparse_column_ref(&select, root, var);
		/* the time key's window finds it by this name (shardsql.c) */
		if (time_key != NULL && equal(var, time_key))
			appendStringInfoString(&select, " AS " SHARD_TIME_KEY_ALIAS);
		retrieved = lappend_int(retrieved, foreach_current_index(lc) + 1);
		out_tables = lappend(out_tables,
							 makeString(shard_rel_options(find_base_rel(root, var->varno))->table));
		out_columns = lappend(out_columns,
							  makeString(shard_column_name(rte->relid,
														   var->varattno)));
	}
	shard_deparse_set_qualified(old);
	if (scan_tlist == NIL)
		appendStringInfoString(&select, "NULL");
	appendStringInfoString(&select, " FROM ");

	if (final)
		shard_order_join_needs(root, joinrel, &needs, &relids);
	join = shard_join_private(root, joinrel, needs, relids, &params,
							  &param_kinds, &where, &route, &kind);
	list_nth_cell(join, FdwScanJoinOutTables)->ptr_value = out_tables;
	list_nth_cell(join, FdwScanJoinOutColumns)->ptr_value = out_columns;

	shard_scan_private_init(&priv);
	/* OFFSET and LIMIT go between the values to bind and the tenant */
	if (final)
	{
		priv.order = shard_order_private(root, joinrel,
										 root->parse->sortClause ?
										 root->sort_pathkeys : NIL,
										 scan_tlist);
		priv.nlimit_exprs = 2;
		params = lappend(params, root->parse->limitOffset);
		params = lappend(params, root->parse->limitCount);
	}
	if (route != NULL)
		params = lappend(params, route);

	priv.select_sql = select.data;
	priv.where_sqls = where;
	priv.retrieved_attrs = retrieved;
	priv.param_kinds = param_kinds;
	priv.prune_kind = kind;
	priv.join = join;
	return make_foreignscan(tlist,
							extract_actual_clauses(info->local_conds, false),
							0, params, shard_scan_private_list(&priv),
							scan_tlist, NIL, outer_plan);
}
