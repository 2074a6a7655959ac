/*-------------------------------------------------------------------------
 *
 * rollup.c
 *		  Declaring a rollup: rollup_create, rollup_drop, and what a rollup
 *		  table's row-level security asks of the caller's user mapping
 *
 * A rollup is a PostgreSQL table holding the result of an aggregate query
 * over one foreign table, grouped by the tenant column and any other keys.
 * Because the tenant column is a grouping key, each group is made of one
 * tenant's rows only, so the groups of a tenant whose rows changed can be
 * computed again without touching the others' (rolluprefresh.c).  Only
 * aggregates that combine exactly are stored: count, sum, min and max, and
 * avg as the sum and count it is made of (the column "x" of avg becomes
 * "x_sum" and "x_count"), so that any coarser report over the rollup
 * (per day instead of per tenant and day) is computed exactly from it.
 *
 * The query is checked on its parse tree, not its text: one foreign table
 * of this wrapper, no join, no subquery, no HAVING, no set operation, no
 * mutable function (a group must depend on the rows alone, not on the
 * time or the session's time zone when it is computed).  The query that
 * fills the table is the checked tree, avg split, printed back by
 * PostgreSQL with every name qualified; that text is what a refresh runs,
 * whatever the search_path of the session that runs it.
 *
 * The table gets an index on its keys, and row-level security: a role
 * whose user mapping limits it to some tenants reads only their groups,
 * as it reads only their rows through the foreign table.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_func.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/ruleutils.h"

#include "compat.h"
#include "control/rollup.h"
#include "plan/aggcombine.h"

PG_FUNCTION_INFO_V1(shard_rollup_create);
PG_FUNCTION_INFO_V1(shard_rollup_drop);
PG_FUNCTION_INFO_V1(shard_rollup_tenant_scope);

static void refuse_query(const char *source, const char *msg,
						 const char *detail, const char *hint)
			pg_attribute_noreturn();

/*
 * refuse_query
 *		Refuse a rollup query that cannot be stored as one (0A000), saying
 *		what it has (msg, with the source table's name) and what to do.
 */
static void
refuse_query(const char *source, const char *msg, const char *detail,
			 const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg(msg, source),
			 detail ? errdetail("%s", _(detail)) : 0,
			 hint ? errhint("%s", _(hint)) : 0));
}

/*
 * source_is_ours
 *		Is the foreign table relid one of this wrapper's?
 */
static bool
source_is_ours(Oid relid)
{
	ForeignServer *server = GetForeignServer(GetForeignTable(relid)->serverid);
	ForeignDataWrapper *fdw = GetForeignDataWrapper(server->fdwid);

	return OidIsValid(fdw->fdwhandler) &&
		strcmp(get_func_name(fdw->fdwhandler), "sqlite_shard_fdw_handler") == 0;
}

/*
 * add_column
 *		Append a column to the storage query's target list, refusing a name
 *		another column has.
 */
static List *
add_column(List *tlist, Expr *expr, char *name, Index sortgroupref,
		   const char *source)
{
	ListCell   *lc;
	TargetEntry *tle;

	foreach(lc, tlist)
		if (strcmp(((TargetEntry *) lfirst(lc))->resname, name) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("rollup of foreign table \"%s\" would have two columns named \"%s\"",
							source, name),
					 errhint("Give each column of the query a name of its own with AS; an average \"x\" is stored as \"x_sum\" and \"x_count\".")));
	tle = makeTargetEntry(expr, list_length(tlist) + 1, name, false);
	tle->ressortgroupref = sortgroupref;
	return lappend(tlist, tle);
}

/*
 * check_rollup_query
 *		Check a rollup's query (see the file's comment) and return the
 *		query that fills the rollup table, avg split into sum and count.
 *		*source receives the foreign table, *tenant_key the name of the
 *		column holding its tenant column, *keys every grouping column's.
 */
static Query *
check_rollup_query(const char *sql, Oid *source, char **tenant_key,
				   List **keys)
{
	List	   *raw = pg_parse_query(sql);
	RawStmt    *rawstmt;
	Query	   *query;
	RangeTblEntry *rte;
	Relation	rel;
	ShardTableOptions *topts;
	const char *srcname;
	List	   *tlist = NIL;
	ListCell   *lc;
	bool		tenant_grouped = false;

	if (list_length(raw) != 1 ||
		!IsA(((RawStmt *) linitial(raw))->stmt, SelectStmt))
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("rollup query must be one SELECT statement")));
	rawstmt = linitial(raw);
	query = parse_analyze_compat(rawstmt, sql);

	/* one foreign table of this wrapper, read alone */
	if (list_length(query->rtable) != 1 ||
		list_length(query->jointree->fromlist) != 1 ||
		!IsA(linitial(query->jointree->fromlist), RangeTblRef))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("rollup query must read one foreign table"),
				 errdetail("A join, a subquery in FROM or a function in FROM cannot be refreshed per tenant.")));
	rte = linitial(query->rtable);
	if (rte->rtekind != RTE_RELATION ||
		rte->relkind != RELKIND_FOREIGN_TABLE ||
		!source_is_ours(rte->relid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a foreign table of sqlite_shard_fdw",
						rte->rtekind == RTE_RELATION ?
						get_rel_name(rte->relid) : "?"),
				 errdetail("A rollup aggregates one foreign table of a sqlite_shard_fdw server.")));
	*source = rte->relid;
	srcname = get_rel_name(rte->relid);
	rel = table_open(rte->relid, AccessShareLock);
	topts = shard_table_options(rel);
	table_close(rel, AccessShareLock);
	if (topts->reference || topts->tenant_attnum == 0)
		refuse_query(srcname,
					 gettext_noop("cannot make a rollup of foreign table \"%s\": it has no tenant column"),
					 gettext_noop("A rollup keeps each tenant's groups apart; a reference table's rows are no tenant's."),
					 NULL);

	if (query->setOperations || query->cteList || query->hasWindowFuncs ||
		query->hasTargetSRFs || query->hasSubLinks || query->hasRecursive ||
		query->rowMarks || query->hasForUpdate)
		refuse_query(srcname,
					 gettext_noop("rollup query over \"%s\" must be a plain aggregate query"),
					 gettext_noop("Set operations, WITH, window functions, set-returning functions, subqueries and FOR UPDATE cannot be refreshed per tenant."),
					 NULL);
	if (query->groupClause == NIL || query->groupingSets != NIL)
		refuse_query(srcname,
					 gettext_noop("rollup query over \"%s\" must have a GROUP BY clause"),
					 gettext_noop("Group by the tenant column and any other keys, without GROUPING SETS, ROLLUP or CUBE."),
					 NULL);
	if (query->havingQual != NULL)
		refuse_query(srcname,
					 gettext_noop("rollup query over \"%s\" must not have a HAVING clause"),
					 gettext_noop("A rollup keeps every group, so that coarser reports computed from it are exact; filter when reading it."),
					 NULL);
	if (query->distinctClause != NIL || query->sortClause != NIL ||
		query->limitCount != NULL || query->limitOffset != NULL)
		refuse_query(srcname,
					 gettext_noop("rollup query over \"%s\" must not have DISTINCT, ORDER BY, LIMIT or OFFSET"),
					 gettext_noop("A rollup table holds every group, in no order; sort and limit when reading it."),
					 NULL);
	if (contain_mutable_functions(query->jointree->quals))
		refuse_query(srcname,
					 gettext_noop("WHERE clause of a rollup query over \"%s\" must not use mutable functions"),
					 gettext_noop("A refresh computes a tenant's groups again later: a condition on the time of day, or on a setting such as TimeZone, would keep other rows then."),
					 NULL);

	*keys = NIL;
	*tenant_key = NULL;
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		char	   *name = tle->resname;
		List	   *parts;
		bool		is_key = tle->ressortgroupref != 0 &&
			get_sortgroupref_clause_noerr(tle->ressortgroupref,
										  query->groupClause) != NULL;

		if (tle->resjunk)
		{
			if (is_key)
				refuse_query(srcname,
							 gettext_noop("every grouping key of a rollup query over \"%s\" must be in its select list"),
							 gettext_noop("The rollup table stores each group's keys as columns."),
							 NULL);
			continue;
		}
		if (name == NULL || strcmp(name, "?column?") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_COLUMN_DEFINITION),
					 errmsg("column %d of the rollup query over \"%s\" has no name",
							tle->resno, srcname),
					 errhint("Name it with AS.")));
		if (contain_mutable_functions((Node *) tle->expr))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("column \"%s\" of a rollup query over \"%s\" uses a mutable function",
							name, srcname),
					 errdetail("A refresh computes a tenant's groups again later, and must put each row in the group it was in: date_trunc of a timestamptz, for one, depends on the session's TimeZone."),
					 errhint("Use an immutable form, such as date_trunc('day', created_at AT TIME ZONE 'UTC').")));
		if (is_key)
		{
			if (IsA(tle->expr, Var) &&
				((Var *) tle->expr)->varattno == topts->tenant_attnum &&
				((Var *) tle->expr)->varlevelsup == 0)
			{
				if (*tenant_key == NULL)
					*tenant_key = name;
				tenant_grouped = true;
			}
			*keys = lappend(*keys, name);
			tlist = add_column(tlist, tle->expr, name, tle->ressortgroupref,
							   srcname);
			continue;
		}
		if (!IsA(tle->expr, Aggref))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("column \"%s\" of a rollup query over \"%s\" is neither a grouping key nor an aggregate",
							name, srcname),
					 errdetail("A rollup stores count, sum, min, max and avg of each group as they are; compute expressions of them when reading it.")));
		/* stored as the parts the rule of aggcombine.c combines */
		parts = shard_aggregate_parts((Aggref *) tle->expr);
		if (parts == NIL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("aggregate %s of column \"%s\" cannot be stored in a rollup",
							format_procedure(((Aggref *) tle->expr)->aggfnoid),
							name),
					 errdetail("A rollup stores aggregates that combine exactly into coarser groups: count, sum, min, max, and avg (as sum and count), without DISTINCT or ORDER BY.")));
		if (list_length(parts) == 1)
			tlist = add_column(tlist, tle->expr, name, 0, srcname);
		else
		{
			/* avg: its sum and its count */
			tlist = add_column(tlist, linitial(parts),
							   psprintf("%s_sum", name), 0, srcname);
			tlist = add_column(tlist, lsecond(parts),
							   psprintf("%s_count", name), 0, srcname);
		}
	}
	if (!tenant_grouped)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("rollup query over \"%s\" must group by its tenant column \"%s\"",
						srcname,
						get_attname(*source, topts->tenant_attnum, false)),
				 errdetail("Each group must hold one tenant's rows, so that a tenant's groups can be computed again alone."),
				 errhint("Add the tenant column to the select list and to GROUP BY.")));
	query->targetList = tlist;
	return query;
}

/*
 * query_text
 *		The text of query with every name qualified: printed with only
 *		pg_catalog in the search_path.
 */
static char *
query_text(Query *query)
{
	int			nest = NewGUCNestLevel();
	char	   *text;

	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	text = pg_get_querydef_compat(query);
	AtEOXact_GUC(true, nest);
	return text;
}

/*
 * rollup_spi_run
 *		Run one SQL command through SPI (connected), with nargs
 *		parameters, failing on any error status; returns the rows it
 *		processed.
 */
uint64
rollup_spi_run(const char *sql, int nargs, Oid *types, Datum *values)
{
	int			rc = SPI_execute_with_args(sql, nargs, types, values, NULL,
										   false, 0);

	if (rc < 0)
		elog(ERROR, "SPI_execute_with_args failed: %s",
			 SPI_result_code_string(rc));
	return SPI_processed;
}

/*
 * extension_schema
 *		The quoted schema of the extension: the one of its function fcinfo
 *		calls.
 */
static const char *
extension_schema(FunctionCallInfo fcinfo)
{
	return quote_identifier(get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid)));
}

/*
 * shard_rollup_create
 *		rollup_create(name, query): create the rollup table name (which may
 *		be schema-qualified) from query, install the change capture in
 *		every shard, and fill the table.  Returns the table.
 */
Datum
shard_rollup_create(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *sql = text_to_cstring(PG_GETARG_TEXT_PP(1));
	RangeVar   *rv = makeRangeVarFromNameList(stringToQualifiedNameList(name));
	Oid			source;
	char	   *tenant_key;
	List	   *keys;
	Query	   *query;
	char	   *fill;
	char	   *relname;
	StringInfoData buf;
	ListCell   *lc;
	Oid			relid;
	Oid			serverid;
	Rollup	   *r;
	Datum	   *keydatums;
	int			i;
	int64		tenants,
				groups;
	TimestampTz as_of;

	shard_require_file_privilege(true, gettext_noop("permission denied to create a rollup"),
								 gettext_noop("A rollup installs its change capture in every shard: only roles with privileges of the \"%s\" role may create one."));
	query = check_rollup_query(sql, &source, &tenant_key, &keys);
	serverid = GetForeignTable(source)->serverid;
	if (shard_user_tenants(serverid, GetUserId()) != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to create a rollup of foreign table \"%s\"",
						get_rel_name(source)),
				 errdetail("Your user mapping of server \"%s\" limits you to some tenants, and a rollup holds every tenant's groups.",
						   GetForeignServer(serverid)->servername)));
	fill = query_text(query);

	if (rv->schemaname == NULL)
		rv->schemaname = get_namespace_name(RangeVarGetCreationNamespace(rv));
	relname = quote_qualified_identifier(rv->schemaname, rv->relname);

	SPI_connect();
	initStringInfo(&buf);
	appendStringInfo(&buf, "CREATE TABLE %s AS %s WITH NO DATA", relname, fill);
	rollup_spi_run(buf.data, 0, NULL, NULL);
	relid = RangeVarGetRelid(rv, NoLock, false);

	resetStringInfo(&buf);
	appendStringInfo(&buf, "CREATE INDEX ON %s (", relname);
	foreach(lc, keys)
		appendStringInfo(&buf, "%s%s", lc == list_head(keys) ? "" : ", ",
						 quote_identifier(lfirst(lc)));
	appendStringInfoChar(&buf, ')');
	rollup_spi_run(buf.data, 0, NULL, NULL);

	/* a scoped role reads the groups of its own tenants only */
	resetStringInfo(&buf);
	appendStringInfo(&buf, "ALTER TABLE %s ENABLE ROW LEVEL SECURITY", relname);
	rollup_spi_run(buf.data, 0, NULL, NULL);
	resetStringInfo(&buf);
	appendStringInfo(&buf,
					 "CREATE POLICY tenant_scope ON %s USING "
					 "((SELECT %s.rollup_tenant_scope(%u)) IS NULL OR "
					 "%s::pg_catalog.text = ANY ((SELECT %s.rollup_tenant_scope(%u))::pg_catalog.text[]))",
					 relname, extension_schema(fcinfo), serverid,
					 quote_identifier(tenant_key), extension_schema(fcinfo),
					 serverid);
	rollup_spi_run(buf.data, 0, NULL, NULL);

	keydatums = palloc(sizeof(Datum) * list_length(keys));
	i = 0;
	foreach(lc, keys)
		keydatums[i++] = CStringGetDatum(lfirst(lc));
	{
		Oid			types[7] = {OIDOID, OIDOID, OIDOID, TEXTOID, TEXTOID,
		NAMEOID, NAMEARRAYOID};
		Datum		values[7];

		values[0] = ObjectIdGetDatum(relid);
		values[1] = ObjectIdGetDatum(source);
		values[2] = ObjectIdGetDatum(serverid);
		values[3] = CStringGetTextDatum(sql);
		values[4] = CStringGetTextDatum(fill);
		values[5] = DirectFunctionCall1(namein, CStringGetDatum(tenant_key));
		for (i = 0; i < list_length(keys); i++)
			keydatums[i] = DirectFunctionCall1(namein, keydatums[i]);
		values[6] = PointerGetDatum(construct_array(keydatums,
													list_length(keys),
													NAMEOID, NAMEDATALEN,
													false, TYPALIGN_CHAR));
		rollup_spi_run("INSERT INTO ssfdw_rollup.rollups "
					   "(rollup, source, server, query, fill_query, tenant_key, keys) "
					   "VALUES ($1, $2, $3, $4, $5, $6, $7)", 7, types, values);
	}

	r = rollup_load(relid);
	rollup_refresh_full(r, &tenants, &groups, &as_of);
	SPI_finish();
	PG_RETURN_OID(relid);
}

/*
 * shard_rollup_drop
 *		rollup_drop(rollup): drop the rollup table (its owner may) and
 *		forget the rollup.  The change capture stays in the shards: other
 *		rollups of the same table may use it.
 */
Datum
shard_rollup_drop(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Rollup	   *r = rollup_load(relid);
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};

	SPI_connect();
	rollup_spi_run(psprintf("DROP TABLE %s", r->relname), 0, NULL, NULL);
	rollup_spi_run("DELETE FROM ssfdw_rollup.shards WHERE rollup = $1", 1, types,
				   values);
	rollup_spi_run("DELETE FROM ssfdw_rollup.tenants WHERE rollup = $1", 1, types,
				   values);
	rollup_spi_run("DELETE FROM ssfdw_rollup.rollups WHERE rollup = $1", 1, types,
				   values);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * shard_rollup_tenant_scope
 *		rollup_tenant_scope(server): the tenants the current role's user
 *		mapping of server limits it to, in the rollup's canonical text, or
 *		NULL when it is not limited.  Every rollup table's policy asks it,
 *		so a scoped role reads only its tenants' groups.  A server that is
 *		gone limits every role to no tenant: a server made again under the
 *		same name has other mappings, which this table's policy does not
 *		know.
 */
Datum
shard_rollup_tenant_scope(PG_FUNCTION_ARGS)
{
	Oid			serverid = PG_GETARG_OID(0);
	List	   *ids;
	Datum	   *datums;
	ListCell   *lc;
	int			i = 0;

	if (GetForeignServerExtended(serverid, FSV_MISSING_OK) == NULL)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(TEXTOID));
	ids = shard_user_tenants(serverid, GetUserId());
	if (ids == NIL)
		PG_RETURN_NULL();
	datums = palloc(sizeof(Datum) * list_length(ids));
	foreach(lc, ids)
		datums[i++] = CStringGetTextDatum(lfirst(lc));
	PG_RETURN_ARRAYTYPE_P(construct_array(datums, i, TEXTOID, -1, false,
										  TYPALIGN_INT));
}

/*
 * rollup_load
 *		The rollup whose table is relid, from the catalog, with what its source foreign table says of its shards.
 */
Rollup *
rollup_load(Oid relid)
{
	Rollup	   *r = palloc0(sizeof(Rollup));
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	MemoryContext caller = CurrentMemoryContext;
	Relation	rel;
	ShardTableOptions *topts;
	bool		isnull;

	if (get_rel_name(relid) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	SPI_connect();
	if (SPI_execute_with_args("SELECT source, fill_query, tenant_key::text "
							  "FROM ssfdw_rollup.rollups WHERE rollup = $1",
							  1, types, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the rollup catalog");
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a rollup", get_rel_name(relid)),
				 errhint("Create one with rollup_create().")));
	r->relid = relid;
	r->source = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 1,
											   &isnull));
	r->fill_query = MemoryContextStrdup(caller,
										SPI_getvalue(SPI_tuptable->vals[0],
													 SPI_tuptable->tupdesc, 2));
	r->tenant_key = MemoryContextStrdup(caller,
										SPI_getvalue(SPI_tuptable->vals[0],
													 SPI_tuptable->tupdesc, 3));
	SPI_finish();

	r->relname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
											get_rel_name(relid));
	rel = table_open(r->source, AccessShareLock);
	topts = shard_table_options(rel);
	r->tenant_type = TupleDescAttr(RelationGetDescr(rel),
								   topts->tenant_attnum - 1)->atttypid;
	table_close(rel, AccessShareLock);
	r->kind = shard_tenant_kind(r->tenant_type);
	r->opts = shard_server_options(topts->serverid);
	r->table = topts->table;
	r->tenant_column = topts->tenant_column;
	return r;
}

/*
 * rollup_require_unscoped
 *		Refuse a refresh to a role whose user mapping limits it to some
 *		tenants: through the foreign table it would read only theirs, and
 *		the rollup would lose every other tenant's groups.
 */
void
rollup_require_unscoped(Rollup *r)
{
	if (shard_user_tenants(r->opts->serverid, GetUserId()) != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to refresh rollup \"%s\"",
						get_rel_name(r->relid)),
				 errdetail("Your user mapping of server \"%s\" limits you to some tenants, and a rollup holds every tenant's groups.",
						   r->opts->servername)));
}
