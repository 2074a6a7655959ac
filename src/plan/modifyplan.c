/*-------------------------------------------------------------------------
 *
 * modifyplan.c
 *		  Planning of writes to a foreign table: which columns an INSERT
 *		  writes, whether an UPDATE or DELETE runs inside the shards (and
 *		  the SQL of the new values they compute) or row by row
 *
 * An UPDATE or DELETE runs inside the shards, one SQLite statement per
 * shard, when the scan below it pushed every condition and every new value
 * is one the shards compute exactly: a value computed once (bound), or an
 * integer expression of the row's columns, which SQLite computes through
 * ssfdw_int_read and ssfdw_int with PostgreSQL's reading, overflow and
 * division rules.  Anything else runs row by row (modify.c): the scan
 * hands each row over with its identity (rowidentity.c) and PostgreSQL
 * computes it; where the plan may read the shards again while rows are
 * changed, a Sort by that identity computes every row first.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/sysattr.h"
#include "access/table.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/inherit.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"

#include "compat.h"

static List *returning_attrs(TupleDesc tupdesc, List *returning,
							 Index resultRelation);

/*
 * shardIsForeignRelUpdatable
 *		Rows can be inserted, updated and deleted: a tenant table's on
 *		their tenant's shard, a reference table's in every shard's copy
 *		(refwrite.c).
 */
int
shardIsForeignRelUpdatable(Relation rel)
{
	return (1 << CMD_INSERT) | (1 << CMD_UPDATE) | (1 << CMD_DELETE);
}

/*
 * shard_report_tenant_change
 *		Refuse an UPDATE of the tenant column: a row lives on its tenant's
 *		shard, so a new tenant would mean another shard.
 */
void
shard_report_tenant_change(Relation rel)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot change the tenant of rows of foreign table \"%s\"",
					RelationGetRelationName(rel)),
			 errdetail("A row lives on the shard of its tenant; the tenant column decides where."),
			 errhint("Insert the rows for the other tenant and delete them for this one, or move the whole tenant to another shard through the directory.")));
}

/*
 * modify_subplan
 *		The foreign scan an UPDATE or DELETE of one foreign table reads its
 *		rows from, when it is the ModifyTable's own subplan.
 */
static ForeignScan *
modify_subplan(ModifyTable *plan, Index resultRelation)
{
	Plan	   *subplan = outerPlan(plan);

	if (subplan != NULL && IsA(subplan, ForeignScan) &&
		((ForeignScan *) subplan)->scan.scanrelid == resultRelation)
		return (ForeignScan *) subplan;
	return NULL;
}

/*
 * contains_multiexpr_param
 *		expression_tree_walker's callback: does the expression read an
 *		output of a multi-column SET's sub-select (SET (a, b) = (SELECT ...))?
 */
static bool
contains_multiexpr_param(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_MULTIEXPR)
		return true;
	return expression_tree_walker(node, contains_multiexpr_param, context);
}

/*
 * set_value_pushable
 *		Can an UPDATE's new value be computed once and stored as it is: no
 *		column of the row, nothing volatile, nothing run per row?  A
 *		multi-column SET's sub-select is run per row (it may read the row's
 *		columns) and its outputs are Params until the end of planning, so a
 *		value reading one is computed row by row; other Params (the
 *		statement's, an uncorrelated sub-select's) have one value.
 */
static bool
set_value_pushable(Expr *expr)
{
	return !contain_var_clause((Node *) expr) &&
		!contain_volatile_functions((Node *) expr) &&
		!contain_subplans((Node *) expr) &&
		!contains_multiexpr_param((Node *) expr, NULL);
}

/* The deparse of a new value that a direct UPDATE computes in the shard. */
typedef struct SetValueContext
{
	Index		rtindex;		/* the target relation's range table index */
	Oid			relid;
	const char *column;			/* PostgreSQL's name of the column set */
	StringInfo	buf;
	List	   *values;			/* values computed once, bound in order */
	int			nparams;		/* ?n of the last value bound */
} SetValueContext;

/*
 * int_bits
 *		The width of an integer type, or 0 for any other type.
 */
static int
int_bits(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
			return 16;
		case INT4OID:
			return 32;
		case INT8OID:
			return 64;
		default:
			return 0;
	}
}

/*
 * int_operator
 *		The ssfdw_int operator of an integer operator's function, or '\0'.
 */
static char
int_operator(Oid funcid)
{
	switch (funcid)
	{
		case F_INT2PL:
		case F_INT4PL:
		case F_INT8PL:
		case F_INT24PL:
		case F_INT42PL:
		case F_INT28PL:
		case F_INT82PL:
		case F_INT48PL:
		case F_INT84PL:
			return '+';
		case F_INT2MI:
		case F_INT4MI:
		case F_INT8MI:
		case F_INT24MI:
		case F_INT42MI:
		case F_INT28MI:
		case F_INT82MI:
		case F_INT48MI:
		case F_INT84MI:
			return '-';
		case F_INT2MUL:
		case F_INT4MUL:
		case F_INT8MUL:
		case F_INT24MUL:
		case F_INT42MUL:
		case F_INT28MUL:
		case F_INT82MUL:
		case F_INT48MUL:
		case F_INT84MUL:
			return '*';
		case F_INT2DIV:
		case F_INT4DIV:
		case F_INT8DIV:
		case F_INT24DIV:
		case F_INT42DIV:
		case F_INT28DIV:
		case F_INT82DIV:
		case F_INT48DIV:
		case F_INT84DIV:
			return '/';
		default:
			return '\0';
	}
}

/*
 * is_int_cast
 *		Is the function a cast from one integer type to another?
 */
static bool
is_int_cast(Oid funcid)
{
	switch (funcid)
	{
		case F_INT2_INT4:
		case F_INT2_INT8:
		case F_INT4_INT2:
		case F_INT4_INT8:
		case F_INT8_INT2:
		case F_INT8_INT4:
			return true;
		default:
			return false;
	}
}

/*
 * deparse_set_int
 *		Write an integer expression of the target row's columns as SQL the
 *		shard computes exactly as PostgreSQL would, or return false.
 *
 * SQLite's own arithmetic turns an integer overflow into a real and a
 * division by zero into NULL, and reads a column in whatever form it is
 * stored.  So the SQL is made of the wrapper's functions: ssfdw_int_read
 * reads a column of int2, int4 or int8 as the wrapper reads it (with the
 * read's error for a value it cannot read), ssfdw_int applies +, -, *, / or
 * a cast between integer types, with PostgreSQL's error where the result
 * leaves its type (shardio.c).  Values without a column are computed once
 * and bound.
 */
static bool
deparse_set_int(Expr *expr, SetValueContext *cxt)
{
	int			bits = int_bits(exprType((Node *) expr));
	StringInfo	buf = cxt->buf;

	if (bits == 0)
		return false;
	if (set_value_pushable(expr))
	{
		cxt->values = lappend(cxt->values, expr);
		appendStringInfo(buf, "?%d", ++cxt->nparams);
		return true;
	}
	if (IsA(expr, Var))
	{
		Var		   *var = (Var *) expr;

		if (var->varno != cxt->rtindex || var->varlevelsup != 0 ||
			var->varattno <= 0)
			return false;
		appendStringInfoString(buf, "ssfdw_int_read(");
		shard_quote_identifier(buf, shard_column_name(cxt->relid,
													  var->varattno));
		appendStringInfo(buf, ", %d, ", bits);
		shard_append_sql_literal(buf, get_attname(cxt->relid, var->varattno, false));
		appendStringInfoChar(buf, ')');
		return true;
	}
	if (IsA(expr, OpExpr))
	{
		OpExpr	   *op = (OpExpr *) expr;
		char		c = int_operator(op->opfuncid);

		if (c == '\0' || list_length(op->args) != 2)
			return false;
		appendStringInfo(buf, "ssfdw_int('%c', %d, ", c, bits);
		if (!deparse_set_int(linitial(op->args), cxt))
			return false;
		appendStringInfoString(buf, ", ");
		if (!deparse_set_int(lsecond(op->args), cxt))
			return false;
		appendStringInfoString(buf, ", ");
		shard_append_sql_literal(buf, cxt->column);
		appendStringInfoChar(buf, ')');
		return true;
	}
	if (IsA(expr, FuncExpr) && is_int_cast(((FuncExpr *) expr)->funcid) &&
		list_length(((FuncExpr *) expr)->args) == 1)
	{
		appendStringInfo(buf, "ssfdw_int('c', %d, ", bits);
		if (!deparse_set_int(linitial(((FuncExpr *) expr)->args), cxt))
			return false;
		appendStringInfoString(buf, ", NULL, ");
		shard_append_sql_literal(buf, cxt->column);
		appendStringInfoChar(buf, ')');
		return true;
	}
	return false;
}

/*
 * deparse_set_value
 *		Write an UPDATE's new value that reads the target row as SQL the
 *		shard computes exactly, or return false (the UPDATE then runs row
 *		by row).  Only integer expressions qualify: SQLite's upper() and
 *		lower() fold only ASCII, and its concatenation reads a number stored
 *		in a text column otherwise than PostgreSQL does.  Text stored in an
 *		integer column is read as PostgreSQL's input function reads it,
 *		whose blanks are the C library's, which only a UTF-8 database is
 *		sure to share, and whose syntax is decimal only up to PostgreSQL
 *		15 (compat.h).
 */
static bool
deparse_set_value(Expr *expr, SetValueContext *cxt)
{
	if (GetDatabaseEncoding() != PG_UTF8 || !int_input_decimal_only_compat)
		return false;
	return deparse_set_int(expr, cxt);
}

/*
 * shard_tenant_junk_name
 *		The name of the junk column that hands a row-by-row UPDATE or DELETE
 *		the tenant of each row read.  The partitions (or inheritance
 *		children) of one statement share a junk column only where they
 *		share the Var, so the name says which column it reads: partitions
 *		whose tenant column is at different positions each get their own.
 */
char *
shard_tenant_junk_name(AttrNumber tenant_attnum)
{
	return psprintf("ssfdw_tenant_%d", tenant_attnum);
}

/*
 * shardAddForeignUpdateTargets
 *		A row-by-row UPDATE or DELETE finds a row again by its tenant (its
 *		shard) and its rowid, which the scan hands over as the ctid.
 */
void
shardAddForeignUpdateTargets(PlannerInfo *root, Index rtindex,
							 RangeTblEntry *target_rte,
							 Relation target_relation)
{
	ShardTableOptions *topts = shard_table_options(target_relation);
	Form_pg_attribute att;

	add_row_identity_var(root,
						 makeVar(rtindex, SelfItemPointerAttributeNumber,
								 TIDOID, -1, InvalidOid, 0),
						 rtindex, "ctid");
	/* a reference table has no tenant, and no row-by-row change */
	if (topts->reference)
		return;
	att = TupleDescAttr(RelationGetDescr(target_relation),
						topts->tenant_attnum - 1);
	add_row_identity_var(root,
						 makeVar(rtindex, topts->tenant_attnum, att->atttypid,
								 att->atttypmod, att->attcollation, 0),
						 rtindex, shard_tenant_junk_name(topts->tenant_attnum));
}

/*
 * read_rows_first
 *		Have every row an UPDATE or DELETE changes computed before the first
 *		is changed, by a sort of the plan's rows by their identity above
 *		the plan, when the plan may read the shards after that moment: a
 *		join (UPDATE ... FROM, DELETE ... USING, a partitioned or inherited
 *		target, whose scans follow one another) or a sub-select run per
 *		row (a correlated SET or WHERE).  PostgreSQL computes each row from
 *		the database as it was when the statement began; a shard read once
 *		the statement has written it would show what it wrote, so such a
 *		read is refused (scanread.c), and reading first keeps the statement
 *		possible and its answer PostgreSQL's.  The sort keeps the rows
 *		within work_mem, spilling to disk, and puts the rows of one
 *		identity together, so that a row a join read twice is changed once
 *		(write_row).  A plan that is our scan of the table alone, reading
 *		no sub-select, needs none: the scan reads each shard whole before
 *		it returns a row.
 */
static void
read_rows_first(PlannerInfo *root, ModifyTable *plan, Index resultRelation)
{
	Plan	   *subplan = outerPlan(plan);
	Sort	   *sort;
	Path		sort_path;
	ListCell   *lc;
	AttrNumber	ctid_col = InvalidAttrNumber;

	if (subplan == NULL)
		return;
	if (modify_subplan(plan, resultRelation) != NULL &&
		!contain_subplans((Node *) subplan->targetlist) &&
		!contain_subplans((Node *) subplan->qual))
		return;
	foreach(lc, subplan->targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (tle->resjunk && tle->resname != NULL &&
			strcmp(tle->resname, "ctid") == 0 &&
			exprType((Node *) tle->expr) == TIDOID)
			ctid_col = tle->resno;
	}
	if (ctid_col == InvalidAttrNumber)
		return;
	/* sorted by identity already: by an earlier result relation's call */
	if (IsA(subplan, Sort) && ((Sort *) subplan)->numCols >= 1 &&
		((Sort *) subplan)->sortColIdx[0] == ctid_col &&
		((Sort *) subplan)->sortOperators[0] == TIDLessOperator)
		return;

	sort = makeNode(Sort);
	sort->plan.targetlist = subplan->targetlist;
	sort->plan.lefttree = subplan;
	sort->numCols = 1;
	sort->sortColIdx = palloc(sizeof(AttrNumber));
	sort->sortColIdx[0] = ctid_col;
	sort->sortOperators = palloc(sizeof(Oid));
	sort->sortOperators[0] = TIDLessOperator;
	sort->collations = palloc(sizeof(Oid));
	sort->collations[0] = InvalidOid;
	sort->nullsFirst = palloc(sizeof(bool));
	sort->nullsFirst[0] = false;
	cost_sort(&sort_path, root, NIL, subplan->total_cost, subplan->plan_rows,
			  subplan->plan_width, 0.0, work_mem, -1.0);
	sort->plan.startup_cost = sort_path.startup_cost;
	sort->plan.total_cost = sort_path.total_cost;
	sort->plan.plan_rows = subplan->plan_rows;
	sort->plan.plan_width = subplan->plan_width;
	sort->plan.parallel_aware = false;
	sort->plan.parallel_safe = subplan->parallel_safe;
	outerPlan(plan) = (Plan *) sort;
}

/*
 * plan_row_modify
 *		An UPDATE or DELETE that cannot run inside the shards: the scan
 *		reads the rows (each shard to the end before any is changed, so no
 *		read of a shard is under way while it is written), PostgreSQL
 *		checks them, and each is changed by its rowid.
 */
static List *
plan_row_modify(PlannerInfo *root, ModifyTable *plan, Index resultRelation,
				int subplan_index)
{
	RangeTblEntry *rte = planner_rt_fetch(resultRelation, root);
	Relation	rel = table_open(rte->relid, NoLock);
	ShardTableOptions *topts = shard_table_options(rel);
	List	   *target_attrs = NIL;
	List	   *ret_attrs = NIL;
	ForeignScan *fscan;

	if (plan->operation == CMD_UPDATE)
	{
		Bitmapset  *cols = get_rel_all_updated_cols(root,
													find_base_rel(root, resultRelation));
		int			col = -1;

		/*
		 * A BEFORE ROW trigger may change any column of the new row: all of
		 * them are written then, as postgres_fdw sends them.
		 */
		if (rel->trigdesc && rel->trigdesc->trig_update_before_row)
		{
			TupleDesc	tupdesc = RelationGetDescr(rel);
			int			i;

			for (i = 0; i < tupdesc->natts; i++)
			{
				Form_pg_attribute att = TupleDescAttr(tupdesc, i);

				if (!att->attisdropped && att->attnum != topts->tenant_attnum)
					cols = bms_add_member(cols, att->attnum -
										  FirstLowInvalidHeapAttributeNumber);
			}
		}
		while ((col = bms_next_member(cols, col)) >= 0)
		{
			AttrNumber	attnum = col + FirstLowInvalidHeapAttributeNumber;

			if (attnum <= InvalidAttrNumber)
				elog(ERROR, "system-column update is not supported");
			if (attnum == topts->tenant_attnum)
				shard_report_tenant_change(rel);
			target_attrs = lappend_int(target_attrs, attnum);
		}
	}

	/* as for INSERT: the whole row where check options or triggers read it */
	if (plan->withCheckOptionLists != NIL ||
		(rel->trigdesc &&
		 (plan->operation == CMD_UPDATE ? rel->trigdesc->trig_update_after_row :
		  rel->trigdesc->trig_delete_after_row)))
		ret_attrs = returning_attrs(RelationGetDescr(rel),
									list_make1(makeWholeRowVar(rte,
															   resultRelation,
															   0, false)),
									resultRelation);
	else if (plan->returningLists != NIL)
		ret_attrs = returning_attrs(RelationGetDescr(rel),
									list_nth(plan->returningLists,
											 subplan_index),
									resultRelation);
	table_close(rel, NoLock);

	/* the scan below reads each shard whole before it returns a row */
	read_rows_first(root, plan, resultRelation);
	fscan = modify_subplan(plan, resultRelation);
	if (fscan != NULL)
	{
		ShardScanPrivate priv;

		shard_scan_private_read(fscan->fdw_private, &priv);
		priv.materialize = true;
		fscan->fdw_private = shard_scan_private_list(&priv);
	}

	return list_make4(target_attrs, ret_attrs, makeInteger(false),
					  makeInteger(plan->operation));
}

/*
 * partition_key_attrs
 *		The columns of a partition that its partition constraint (and its
 *		ancestors') reads, or NULL for a table that is no partition.
 */
static Bitmapset *
partition_key_attrs(Relation rel)
{
	Bitmapset  *attrs = NULL;

	if (rel->rd_rel->relispartition)
		pull_varattnos((Node *) RelationGetPartitionQual(rel), 1, &attrs);
	return attrs;
}

/*
 * shardPlanDirectModify
 *		Run an UPDATE or DELETE as one SQLite statement per shard, when the
 *		scan below it pushed every condition and each new value is computed
 *		once (a constant, a parameter, a stable expression such as now()).
 *		The shards are the scan's: the routed tenants, or every shard; the
 *		scan's run-time tenant filters (the user mapping's tenants, a moving
 *		tenant's stale copy) restrict the statement as they restrict reads.
 */
bool
shardPlanDirectModify(PlannerInfo *root, ModifyTable *plan,
					  Index resultRelation, int subplan_index)
{
	CmdType		operation = plan->operation;
	ForeignScan *fscan;
	RangeTblEntry *rte;
	Relation	rel;
	ShardTableOptions *topts;
	ShardScanPrivate priv;
	StringInfoData sql;
	List	   *exprs;
	Expr	   *prune = NULL;
	int			nparams;

	if (operation != CMD_UPDATE && operation != CMD_DELETE)
		return false;
	fscan = modify_subplan(plan, resultRelation);
	if (fscan == NULL || fscan->scan.plan.qual != NIL ||
		plan->withCheckOptionLists != NIL)
		return false;
	shard_scan_private_read(fscan->fdw_private, &priv);
	if (priv.mode != SCAN_ROWS || priv.order != NIL)
		return false;

	rte = planner_rt_fetch(resultRelation, root);
	rel = table_open(rte->relid, NoLock);
	topts = shard_table_options(rel);

	/*
	 * Row triggers need the rows, one by one; so do stored generated
	 * columns, which PostgreSQL computes from each new row.
	 */
	if ((operation == CMD_UPDATE && rel->rd_att->constr &&
		 rel->rd_att->constr->has_generated_stored) ||
		(rel->trigdesc &&
		 (operation == CMD_UPDATE ?
		  (rel->trigdesc->trig_update_before_row ||
		   rel->trigdesc->trig_update_after_row) :
		  (rel->trigdesc->trig_delete_before_row ||
		   rel->trigdesc->trig_delete_after_row))))
	{
		table_close(rel, NoLock);
		return false;
	}

	/* the values to bind, then the tenant value when the scan prunes */
	exprs = list_copy(fscan->fdw_exprs);
	if (priv.prune_kind != PRUNE_NONE)
	{
		prune = llast(exprs);
		exprs = list_truncate(exprs, list_length(exprs) - 1);
	}
	nparams = list_length(exprs);

	initStringInfo(&sql);
	if (operation == CMD_UPDATE)
	{
		List	   *processed_tlist;
		List	   *target_attrs;
		List	   *set_sqls;
		ListCell   *lc,
				   *lc2,
				   *lc3;

		Bitmapset  *key_attrs = partition_key_attrs(rel);

		get_translated_update_targetlist(root, resultRelation,
										 &processed_tlist, &target_attrs);

		/*
		 * New values that read the row are computed in the shard, and the
		 * values they use are bound first; the values computed once, which
		 * the executor fits to each shard's columns, are bound last.
		 */
		set_sqls = NIL;
		forboth(lc, processed_tlist, lc2, target_attrs)
		{
			TargetEntry *tle = lfirst_node(TargetEntry, lc);
			AttrNumber	attnum = lfirst_int(lc2);
			char	   *value_sql = NULL;

			if (attnum == topts->tenant_attnum)
				shard_report_tenant_change(rel);
			/* a partition's new row is checked against its bounds */
			if (bms_is_member(attnum - FirstLowInvalidHeapAttributeNumber,
							  key_attrs))
			{
				table_close(rel, NoLock);
				return false;
			}
			if (!set_value_pushable(tle->expr))
			{
				SetValueContext cxt;
				StringInfoData value;

				initStringInfo(&value);
				cxt.rtindex = resultRelation;
				cxt.relid = rte->relid;
				cxt.column = get_attname(rte->relid, attnum, false);
				cxt.buf = &value;
				cxt.values = NIL;
				cxt.nparams = nparams;
				if (!deparse_set_value(tle->expr, &cxt))
				{
					table_close(rel, NoLock);
					return false;
				}
				/*
				 * A bigint is bounded by a parameter the executor sets per
				 * shard: to 53 bits where the shard declares the column
				 * REAL, whose doubles hold no more exactly (store.c refuses
				 * to store more there, and so does this).
				 */
				if (exprType((Node *) tle->expr) == INT8OID)
				{
					char	   *inner = value.data;

					initStringInfo(&value);
					cxt.values = lappend(cxt.values,
										 makeConst(INT4OID, -1, InvalidOid,
												   sizeof(int32),
												   Int32GetDatum(64),
												   false, true));
					appendStringInfo(&value, "ssfdw_int('c', ?%d, %s, NULL, ",
									 ++cxt.nparams, inner);
					shard_append_sql_literal(&value, cxt.column);
					appendStringInfoChar(&value, ')');
					priv.modify_bigint_bounds =
						lappend_int(lappend_int(priv.modify_bigint_bounds,
												attnum),
									cxt.nparams);
				}
				value_sql = value.data;
				exprs = list_concat(exprs, cxt.values);
				foreach(lc3, cxt.values)
					priv.param_kinds = lappend_int(list_copy(priv.param_kinds),
												   SHARD_PARAM_SCALAR);
				nparams = cxt.nparams;
			}
			set_sqls = lappend(set_sqls, value_sql);
		}

		appendStringInfoString(&sql, "UPDATE ");
		shard_quote_identifier(&sql, topts->table);
		appendStringInfoString(&sql, " SET ");
		forthree(lc, processed_tlist, lc2, target_attrs, lc3, set_sqls)
		{
			TargetEntry *tle = lfirst_node(TargetEntry, lc);
			AttrNumber	attnum = lfirst_int(lc2);

			if (foreach_current_index(lc) > 0)
				appendStringInfoString(&sql, ", ");
			shard_quote_identifier(&sql,
								   shard_column_name(rte->relid, attnum));
			if (lfirst(lc3) != NULL)
			{
				appendStringInfo(&sql, " = %s", (char *) lfirst(lc3));
				continue;
			}
			exprs = lappend(exprs, tle->expr);
			priv.modify_set_attnums = lappend_int(priv.modify_set_attnums,
												  attnum);
			priv.param_kinds = lappend_int(list_copy(priv.param_kinds),
										   SHARD_PARAM_STORE);
			appendStringInfo(&sql, " = ?%d", ++nparams);
		}
	}
	else
	{
		appendStringInfoString(&sql, "DELETE FROM ");
		shard_quote_identifier(&sql, topts->table);
	}

	/*
	 * RETURNING reads what SQLite changed, with SQLite's own RETURNING,
	 * which the executor appends after the conditions.
	 */
	if (plan->returningLists != NIL)
	{
		priv.modify_returning =
			returning_attrs(RelationGetDescr(rel),
							list_nth(plan->returningLists, subplan_index),
							resultRelation);
		/* a RETURNING of no column still needs a row per change */
		if (priv.modify_returning == NIL)
			priv.modify_returning =
				list_make1_int(topts->reference ?
							   shard_reference_returning_attnum(rel) :
							   topts->tenant_attnum);
	}
	table_close(rel, NoLock);

	if (prune != NULL)
		exprs = lappend(exprs, prune);
	priv.modify_sql = sql.data;
	/* the statement's row count is the top-level ModifyTable's alone */
	priv.modify_set_processed = plan->canSetTag;
	fscan->fdw_private = shard_scan_private_list(&priv);
	fscan->fdw_exprs = exprs;
	fscan->operation = operation;
	fscan->resultRelation = resultRelation;
	return true;
}

/*
 * returning_attrs
 *		The columns a RETURNING list reads of the result relation, in
 *		attribute order (all of them for a whole-row reference).
 */
static List *
returning_attrs(TupleDesc tupdesc, List *returning, Index resultRelation)
{
	Bitmapset  *attrs = NULL;
	List	   *result = NIL;
	bool		whole;
	int			i;

	pull_varattnos((Node *) returning, resultRelation, &attrs);
	whole = bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, attrs);
	for (i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (att->attisdropped)
			continue;
		if (whole ||
			bms_is_member(att->attnum - FirstLowInvalidHeapAttributeNumber,
						  attrs))
			result = lappend_int(result, att->attnum);
	}
	return result;
}

/*
 * shardPlanForeignModify
 *		Decide the columns an INSERT writes and returns.
 *
 * A column is written when the statement sets it or PostgreSQL has a
 * default for it; any other column is left to the shard, so that its
 * default (or SQLite's rowid) applies, as it would for the application's
 * own INSERT.
 */
List *
shardPlanForeignModify(PlannerInfo *root, ModifyTable *plan,
					   Index resultRelation, int subplan_index)
{
	RangeTblEntry *rte = planner_rt_fetch(resultRelation, root);
	Relation	rel;
	TupleDesc	tupdesc;
	Bitmapset  *inserted = inserted_cols_compat(root, rte);
	List	   *target_attrs = NIL;
	List	   *ret_attrs = NIL;
	bool		on_conflict_nothing = false;
	int			i;

	if (plan->operation != CMD_INSERT)
	{
		if (shard_table_is_reference(rte->relid))
		{
			rel = table_open(rte->relid, NoLock);
			shard_reference_refuse_row_modify(rel, plan->operation);
		}
		return plan_row_modify(root, plan, resultRelation, subplan_index);
	}

	rel = table_open(rte->relid, NoLock);
	tupdesc = RelationGetDescr(rel);

	if (plan->onConflictAction == ONCONFLICT_NOTHING)
		on_conflict_nothing = true;
	else if (plan->onConflictAction != ONCONFLICT_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ON CONFLICT DO UPDATE is not supported on foreign table \"%s\"",
						RelationGetRelationName(rel)),
				 errhint("Use ON CONFLICT DO NOTHING, without a conflict target.")));

	/*
	 * The columns the statement sets, and those PostgreSQL computes: a
	 * default, a stored generated column (computed into the row before it
	 * reaches us).
	 */
	for (i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (att->attisdropped)
			continue;
		if (att->atthasdef || att->attgenerated ||
			bms_is_member(att->attnum - FirstLowInvalidHeapAttributeNumber,
						  inserted))
			target_attrs = lappend_int(target_attrs, att->attnum);
	}

	/*
	 * The row must come back whole where a WITH CHECK OPTION or an AFTER
	 * ROW trigger reads it, else as far as RETURNING reads it.
	 */
	if (plan->withCheckOptionLists != NIL ||
		(rel->trigdesc && rel->trigdesc->trig_insert_after_row))
		ret_attrs = returning_attrs(tupdesc,
									list_make1(makeWholeRowVar(rte,
															   resultRelation,
															   0, false)),
									resultRelation);
	else if (plan->returningLists != NIL)
		ret_attrs = returning_attrs(tupdesc,
									list_nth(plan->returningLists,
											 subplan_index),
									resultRelation);
	table_close(rel, NoLock);

	return list_make4(target_attrs, ret_attrs,
					  makeInteger(on_conflict_nothing),
					  makeInteger(CMD_INSERT));
}
