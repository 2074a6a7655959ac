/*-------------------------------------------------------------------------
 *
 * joinscan.c
 *		  The per-shard part of a join the shards run (planned by join.c)
 *
 * The plan carries the join's FROM clause in parts: text, and the places
 * of its tables.  For each shard, a table becomes "table AS rN" when the
 * shard reads all its rows, or "(SELECT * FROM table WHERE ...) AS rN"
 * with its pushed conditions and the statement's tenant filters (routed
 * tenants, a user mapping's, the stale copies of moving tenants), which
 * SQLite flattens into the join.  Filters are built by tenant.c as for a
 * scan of the table alone, so they are exact however the shard declares
 * each tenant column; one value of ids serves every table.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

/* One table of the join, from FdwScanJoinTables. */
typedef struct ShardJoinTable
{
	char	   *table;
	char	   *alias;
	char	   *tenant_column;
	char	   *relname;
	List	   *conds;			/* String: its pushed conditions */
	List	   *needs;			/* what the join assumes of its columns */
	char	  **columns;		/* its SQLite columns */
	int			ncolumns;
} ShardJoinTable;

struct ShardJoinScan
{
	char	   *relations;
	List	   *parts;
	int			ntables;
	ShardJoinTable *tables;
};

/*
 * shard_join_scan_create
 *		Decode a scan's FdwScanPrivateJoin.
 */
ShardJoinScan *
shard_join_scan_create(List *join)
{
	ShardJoinScan *j = palloc0(sizeof(ShardJoinScan));
	List	   *tables = list_nth(join, FdwScanJoinTables);
	ListCell   *lc;
	int			i = 0;

	j->relations = strVal(list_nth(join, FdwScanJoinRelations));
	j->parts = list_nth(join, FdwScanJoinFromParts);
	j->ntables = list_length(tables);
	j->tables = palloc0(sizeof(ShardJoinTable) * (j->ntables + 1));
	foreach(lc, tables)
	{
		List	   *l = lfirst(lc);
		ShardJoinTable *t = &j->tables[i++];
		List	   *cols;
		ListCell   *lc2;

		if (list_length(l) != FdwScanJoinTableCount)
			elog(ERROR, "join table has %d items, expected %d",
				 list_length(l), (int) FdwScanJoinTableCount);
		t->table = strVal(list_nth(l, FdwScanJoinTableName));
		t->alias = strVal(list_nth(l, FdwScanJoinTableAlias));
		t->tenant_column = strVal(list_nth(l, FdwScanJoinTableTenant));
		t->relname = strVal(list_nth(l, FdwScanJoinTableRelname));
		t->conds = list_nth(l, FdwScanJoinTableConds);
		t->needs = list_nth(l, FdwScanJoinTableNeeds);
		cols = list_nth(l, FdwScanJoinTableColumns);
		t->columns = palloc0(sizeof(char *) * (list_length(cols) + 1));
		foreach(lc2, cols)
			t->columns[t->ncolumns++] = strVal(lfirst(lc2));
	}
	return j;
}

/*
 * shard_join_relations
 *		The joined relations, as EXPLAIN shows them.
 */
const char *
shard_join_relations(ShardJoinScan *j)
{
	return j->relations;
}

/*
 * shard_join_reads_table
 *		Does the join read the SQLite table named (ASCII case ignored, as
 *		SQLite ignores it)?  A scan of a table its statement writes must
 *		read it before the statement writes (scan.c).
 */
bool
shard_join_reads_table(ShardJoinScan *j, const char *table)
{
	int			i;

	for (i = 0; i < j->ntables; i++)
		if (pg_strcasecmp(j->tables[i].table, table) == 0)
			return true;
	return false;
}

/*
 * shard_join_check_shard
 *		Raise an error when a shard declares a column of a joined table
 *		otherwise than the join assumes: SQLite would compare it otherwise
 *		than PostgreSQL, and a join cannot be finished in PostgreSQL for one
 *		shard alone.
 */
void
shard_join_check_shard(ShardJoinScan *j, ShardConn *conn,
					   const char *shard_id)
{
	int			i;

	for (i = 0; i < j->ntables; i++)
	{
		ShardJoinTable *t = &j->tables[i];
		char	   *bad = shard_conn_affinity_mismatch(conn, t->table,
													   t->needs);

		if (bad == NULL)
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
				 errmsg("cannot join table \"%s\" inside shard \"%s\"",
						t->table, shard_id),
				 bad[0] == 'U' ?
				 errdetail("The shard's database is UTF-16, where SQLite orders text in column \"%s\" otherwise than PostgreSQL does.",
						   bad + 1) :
				 errdetail("The shard declares column \"%s\" with another type than the first shard, so SQLite would not compare it as PostgreSQL does.",
						   bad + 1),
				 errhint("Declare the column alike in every shard, or set \"sqlite_shard_fdw.join_pushdown\" to off.")));
	}
}

/*
 * shard_join_check_tables
 *		Raise a clear error when a shard lacks a joined table or one of its
 *		columns; returns when all are there.
 */
void
shard_join_check_tables(ShardJoinScan *j, ShardConn *conn)
{
	int			i;

	for (i = 0; i < j->ntables; i++)
		shard_conn_check_table(conn, j->tables[i].relname, j->tables[i].table,
							   j->tables[i].columns, j->tables[i].ncolumns);
}

/*
 * tenant_filter
 *		Add a table's tenant filter ("is [not] one of ids") to its
 *		conditions; the ids are bound once, as ?*paramno, for every table.
 */
static List *
tenant_filter(List *conds, ShardJoinTable *t, ShardConn *conn,
			  int tenant_kind, List *ids, bool negate, int *paramno,
			  int nparams, List **extra)
{
	StringInfoData sql;
	ShardValue	bind;
	ShardTenantRule rule;
	bool		first = (*paramno == 0);

	if (first)
		*paramno = nparams + list_length(*extra) + 1;
	initStringInfo(&sql);
	shard_tenant_rule_lookup(&rule, shard_conn_db(conn), t->table,
							 t->tenant_column, tenant_kind);
	bind = shard_tenant_condition(&sql, t->tenant_column, &rule, ids, negate,
								  *paramno, 0);
	if (first)
	{
		ShardValue *v = palloc(sizeof(ShardValue));

		*v = bind;
		*extra = lappend(*extra, v);
	}
	return lappend(conds, makeString(sql.data));
}

/*
 * shard_join_append_from
 *		Append the join's FROM clause for one shard (conn; NULL: as planned,
 *		for EXPLAIN), each table with its conditions and the statement's
 *		tenant filters: tenants (routed or a user mapping's, or NIL: every
 *		tenant), and excluded, the stale copies.  *extra receives the values
 *		to bind after the nparams planned ones.
 */
void
shard_join_append_from(StringInfo sql, ShardJoinScan *j, ShardConn *conn,
					   int tenant_kind, List *tenants, List *excluded,
					   int nparams, List **extra)
{
	int			tenants_param = 0;
	int			excluded_param = 0;
	ListCell   *lc;

	foreach(lc, j->parts)
	{
		ShardJoinTable *t;
		List	   *conds;

		if (IsA(lfirst(lc), String))
		{
			appendStringInfoString(sql, strVal(lfirst(lc)));
			continue;
		}
		t = &j->tables[intVal(lfirst(lc))];
		conds = list_copy(t->conds);
		/* a reference table's copy serves every tenant of the shard */
		if (conn != NULL && t->tenant_column[0] != '\0')
		{
			if (tenants != NIL)
				conds = tenant_filter(conds, t, conn, tenant_kind, tenants,
									  false, &tenants_param, nparams, extra);
			if (excluded != NIL)
				conds = tenant_filter(conds, t, conn, tenant_kind, excluded,
									  true, &excluded_param, nparams, extra);
		}
		if (conn != NULL)
			conds = shard_time_ranges_for_shard(conds, conn, t->table);
		if (conds == NIL)
		{
			shard_quote_identifier(sql, t->table);
			appendStringInfo(sql, " AS %s", t->alias);
			continue;
		}
		appendStringInfoString(sql, "(SELECT * FROM ");
		shard_quote_identifier(sql, t->table);
		appendStringInfoString(sql, " WHERE ");
		shard_join_conditions(sql, conds);
		appendStringInfo(sql, ") AS %s", t->alias);
	}
}
