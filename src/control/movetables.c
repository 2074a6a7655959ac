/*-------------------------------------------------------------------------
 *
 * movetables.c
 *		  Which tables a tenant move takes, and how the target gets the
 *		  ones it lacks
 *
 * A move reads the tables from the source shard's own schema, not from the
 * foreign tables defined in PostgreSQL: every table with a tenant column
 * (tenantrule.c says which) is the tenant's to move, and each must have a
 * primary key, by which the copy and the replay find rows again.  Before
 * anything changes, the target is checked: a table it has must have every
 * column of the source's, and the tenant's keys must not collide with
 * other tenants' rows there.
 *
 * A table the target lacks is created from the source's schema entries,
 * text that whoever can write the source file chose: each is run only as
 * one statement creating its own table or index (create_from_schema),
 * first on an empty database in memory, then on the target.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <sys/stat.h>

#include "control/move.h"

/*
 * What the text of one schema entry of the source may do when a move runs
 * it (schema_entry_authorizer): create the entry's own object in the main
 * schema, as CREATE TABLE (index NULL) or CREATE INDEX, and nothing else.
 */
typedef struct SchemaEntryCheck
{
	const char *table;			/* the table of the entry */
	const char *index;			/* the entry's index, or NULL: the table's */
	int			creates;		/* creations of the entry's object seen */
	bool		refused;		/* some other action was asked for */
} SchemaEntryCheck;

/*
 * same_name
 *		Do two SQLite names (either possibly NULL) name the same object?
 */
static bool
same_name(const char *a, const char *b)
{
	return a != NULL && b != NULL && sqlite3_stricmp(a, b) == 0;
}

/*
 * schema_entry_authorizer
 *		SQLite's authorizer while the text of a schema entry is compiled:
 *		allows what creating the entry's object takes (the new row of
 *		sqlite_schema, the indexes of the table's own constraints, the
 *		sqlite_sequence table of AUTOINCREMENT, the columns and functions
 *		its constraints and expressions name) in the main schema, and
 *		denies everything else: ATTACH, PRAGMA, other
 *		schemas, temporary objects, views, triggers, virtual tables, a
 *		CREATE TABLE ... AS SELECT, any read or write of another table.
 *		Runs inside SQLite: it only takes notes, never raises an error.
 */
static int
schema_entry_authorizer(void *arg, int action, const char *arg1,
						const char *arg2, const char *dbname,
						const char *inner)
{
	SchemaEntryCheck *check = (SchemaEntryCheck *) arg;
	bool		in_main = dbname != NULL && strcmp(dbname, "main") == 0;
	bool		allow = false;

	switch (action)
	{
		case SQLITE_CREATE_TABLE:
			allow = in_main && check->index == NULL &&
				same_name(arg1, check->table);
			check->creates += allow;
			/* the first AUTOINCREMENT table of a file creates this one */
			allow |= in_main && check->index == NULL &&
				same_name(arg1, "sqlite_sequence");
			break;
		case SQLITE_CREATE_INDEX:
			/* a table's PRIMARY KEY and UNIQUE constraints make indexes */
			allow = in_main && same_name(arg2, check->table) &&
				(check->index == NULL || same_name(arg1, check->index));
			check->creates += (allow && check->index != NULL);
			break;
		case SQLITE_INSERT:
		case SQLITE_UPDATE:
			allow = in_main && (same_name(arg1, "sqlite_master") ||
								same_name(arg1, "sqlite_schema"));
			break;
		case SQLITE_READ:
			allow = in_main && (same_name(arg1, check->table) ||
								same_name(arg1, "sqlite_master") ||
								same_name(arg1, "sqlite_schema"));
			break;
		case SQLITE_REINDEX:
			allow = in_main && same_name(arg1, check->index);
			break;
		case SQLITE_FUNCTION:
			/* named by a constraint or an expression, not called here */
			allow = true;
			break;
		default:
			break;
	}
	if (!allow)
		check->refused = true;
	return allow ? SQLITE_OK : SQLITE_DENY;
}

/*
 * blank_sql
 *		Does text hold nothing SQLite would run: white space, comments and
 *		semicolons only?  (An unclosed comment runs to the end, as SQLite
 *		reads it.)
 */
static bool
blank_sql(const char *p)
{
	while (*p != '\0')
	{
		if (*p == ';' || isspace((unsigned char) *p))
			p++;
		else if (p[0] == '-' && p[1] == '-')
			p += strcspn(p, "\n");
		else if (p[0] == '/' && p[1] == '*')
		{
			const char *end = strstr(p + 2, "*/");

			if (end == NULL)
				return true;
			p = end + 2;
		}
		else
			return false;
	}
	return true;
}

/*
 * create_from_schema
 *		Run on db the text of one schema entry of the source: the CREATE
 *		TABLE of table t (index NULL), or the CREATE INDEX of its index
 *		named index.  fmt names the failure of a statement that is what it
 *		should be, with the table, the tenant and shard_id.
 *
 * The text comes from the source file, and whoever can write the file can
 * put any text there (PRAGMA writable_schema): SQLite itself, opening the
 * file, compiles only the first statement of each entry and checks
 * nothing after it, so a file with "CREATE TABLE t(..); ATTACH ..." opens
 * and passes integrity_check.  So the text is compiled as one statement,
 * under an authorizer that allows creating the entry's own object in the
 * main schema and nothing else, and any text after that statement is
 * refused: such an entry was not written by SQLite's own DDL, so the file
 * is treated as damaged (XX001), never run.
 */
static void
create_from_schema(MoveShards *ms, sqlite3 *db, const char *shard_id,
				   MoveTable *t, const char *index, const char *sql,
				   const char *fmt)
{
	SchemaEntryCheck check;
	sqlite3_stmt *stmt = NULL;
	const char *tail = NULL;
	char		errbuf[SHARDIO_ERRLEN];
	bool		one;
	bool		refuse;
	int			rc;

	memset(&check, 0, sizeof(check));
	check.table = t->name;
	check.index = index;
	sqlite3_set_authorizer(db, schema_entry_authorizer, &check);
	rc = sqlite3_prepare_v2(db, sql, -1, &stmt, &tail);
	one = (rc != SQLITE_OK || tail == NULL || blank_sql(tail));
	refuse = (rc == SQLITE_OK &&
			  (stmt == NULL || check.refused || check.creates != 1 || !one));
	if (rc == SQLITE_OK && !refuse)
		rc = sqlite3_step(stmt);
	refuse |= check.refused;
	if (!refuse && rc != SQLITE_DONE)
	{
		rc = sqlite3_extended_errcode(db);
		strlcpy(errbuf, sqlite3_errmsg(db), sizeof(errbuf));
	}
	sqlite3_finalize(stmt);
	/* the authorizer reads check, on this stack: unset before any error */
	sqlite3_set_authorizer(db, NULL, NULL);
	if (!refuse)
	{
		if (rc == SQLITE_DONE)
			return;
		shard_check_lock_wait(rc, false, shard_id);
		ereport(ERROR,
				(errcode(shard_sqlite_sqlstate(rc)),
				 errmsg(fmt, t->name, ms->tenant, shard_id),
				 errdetail_internal("%s", errbuf)));
	}

	if (index == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("cannot move tenant \"%s\": the schema entry of table \"%s\" on shard \"%s\" is not a CREATE TABLE statement of that table",
						ms->tenant, t->name, ms->source->shard_id),
				 !one ?
				 errdetail("Its text in \"sqlite_schema\" holds more than one statement.") :
				 errdetail("Its text in \"sqlite_schema\" does something other than create that table in the main schema."),
				 errhint("The file's schema was changed without SQLite's DDL: check the file.  To move the tenant anyway, create the table on shard \"%s\" first.",
						 ms->target->shard_id)));
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("cannot move tenant \"%s\": the schema entry of index \"%s\" of table \"%s\" on shard \"%s\" is not a CREATE INDEX statement of that index",
					ms->tenant, index, t->name, ms->source->shard_id),
			 !one ?
			 errdetail("Its text in \"sqlite_schema\" holds more than one statement.") :
			 errdetail("Its text in \"sqlite_schema\" does something other than create that index in the main schema."),
			 errhint("The file's schema was changed without SQLite's DDL: check the file.  To move the tenant anyway, create the table on shard \"%s\" first.",
					 ms->target->shard_id)));
}

/*
 * check_schema_entries
 *		Before anything changes, run the source's schema entries of a table
 *		the target lacks (its CREATE TABLE, then its indexes') on an empty
 *		database in memory, as move_create_missing_tables will run them on
 *		the target: an entry that is not one statement creating its own
 *		object refuses the move now, before the tenant is MIGRATING, and
 *		the check touches no file.
 */
static void
check_schema_entries(MoveShards *ms, MoveTable *t)
{
	sqlite3    *db;
	char		errbuf[SHARDIO_ERRLEN];

	if (shardio_open(":memory:", SHARDIO_OPEN_READWRITE | SHARDIO_OPEN_CREATE,
					 0, &db, errbuf) != SQLITE_OK)
		elog(ERROR, "could not open an SQLite database in memory: %s", errbuf);
	PG_TRY();
	{
		ListCell   *lc,
				   *lc2;

		create_from_schema(ms, db, ms->source->shard_id, t, NULL,
						   t->create_sql,
						   gettext_noop("could not check the schema of table \"%s\" of tenant \"%s\" on shard \"%s\""));
		forboth(lc, t->index_names, lc2, t->index_sqls)
			create_from_schema(ms, db, ms->source->shard_id, t, lfirst(lc),
							   lfirst(lc2),
							   gettext_noop("could not check the schema of table \"%s\" of tenant \"%s\" on shard \"%s\""));
	}
	PG_FINALLY();
	{
		shardio_close(db);
	}
	PG_END_TRY();
}

/*
 * check_target_table
 *		A table the target has must have every column of the source's; a
 *		table it lacks is created from the source's DDL (remembered here,
 *		created by move_create_missing_tables).
 */
static void
check_target_table(MoveShards *ms, MoveTable *t, const char *create_sql,
				   bool for_copy)
{
	sqlite3_stmt *stmt;
	List	   *have = NIL;
	ListCell   *lc;
	int			rc;

	stmt = move_prepare_bound(ms, ms->dst,
							  "SELECT name FROM pragma_table_info(:tbl, 'main')",
							  t, 0, 0,
							  gettext_noop("could not read the schema of table \"%s\" of tenant \"%s\" on shard \"%s\""));
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		have = lappend(have, pstrdup((const char *) sqlite3_column_text(stmt, 0)));
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		move_error(ms, ms->dst, ms->target->shard_id, t->name,
				   gettext_noop("could not read the schema of table \"%s\" of tenant \"%s\" on shard \"%s\""));

	if (have == NIL)
	{
		t->create_sql = pstrdup(create_sql);
		stmt = move_prepare_bound(ms, ms->src,
								  "SELECT name, sql FROM sqlite_schema "
								  "WHERE type = 'index' "
								  "AND tbl_name = :tbl AND sql IS NOT NULL",
								  t, 0, 0,
								  gettext_noop("could not read the schema of table \"%s\" of tenant \"%s\" on shard \"%s\""));
		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		{
			t->index_names = lappend(t->index_names,
									 pstrdup((const char *) sqlite3_column_text(stmt, 0)));
			t->index_sqls = lappend(t->index_sqls,
									pstrdup((const char *) sqlite3_column_text(stmt, 1)));
		}
		sqlite3_finalize(stmt);
		if (rc != SQLITE_DONE)
			move_error(ms, ms->src, ms->source->shard_id, t->name,
					   gettext_noop("could not read the schema of table \"%s\" of tenant \"%s\" on shard \"%s\""));
		if (for_copy)
			check_schema_entries(ms, t);
		return;
	}
	foreach(lc, t->cols)
	{
		ListCell   *lc2;
		bool		found = false;

		foreach(lc2, have)
			if (pg_strcasecmp(lfirst(lc), lfirst(lc2)) == 0)
				found = true;
		if (!found && for_copy)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_COLUMN_NAME_NOT_FOUND),
					 errmsg("cannot move tenant \"%s\": table \"%s\" of shard \"%s\" has no column \"%s\"",
							ms->tenant, t->name, ms->target->shard_id,
							(char *) lfirst(lc)),
					 errdetail("The table has that column on shard \"%s\", where the tenant is now.",
							   ms->source->shard_id),
					 errhint("Add the column to the table on shard \"%s\", or drop the table there to let the move create it.",
							 ms->target->shard_id)));
	}
}

/*
 * move_table_rule
 *		The rule by which the move's statements pick the tenant's rows of a
 *		table, on either shard: as the source declares the tenant column,
 *		and where the target declares it otherwise, the rule that assumes
 *		nothing of either declaration.
 */
static void
move_table_rule(MoveShards *ms, MoveTable *t, int kind)
{
	ShardTenantRule dst;

	shard_tenant_rule_lookup(&t->rule, ms->src, t->name, t->tenant_col, kind);
	if (t->create_sql != NULL)
		return;					/* created on the target from the source's */
	shard_tenant_rule_lookup(&dst, ms->dst, t->name, t->tenant_col, kind);
	if (dst.affinity != t->rule.affinity)
		t->rule.affinity = 0;
	t->rule.binary &= dst.binary;
}

/*
 * move_discover_tables
 *		Find the source's tables that have a tenant column (from the source
 *		shard's schema, not from the foreign tables defined in PostgreSQL),
 *		with their columns, primary keys and the tenant's row counts, and
 *		refuse a table the move cannot take: no primary key, or a column
 *		the target's table lacks (only when for_copy: an abort or a cleanup
 *		deletes whatever is there).  spec, of the server's foreign tables,
 *		says which tables hold tenants' rows (tenantrule.c).
 */
void
move_discover_tables(MoveShards *ms, ShardTenantSpec *spec, bool for_copy)
{
	sqlite3_stmt *stmt;
	List	   *names = NIL;
	List	   *sqls = NIL;
	ListCell   *lc,
			   *lc2;
	int			rc;

	if (sqlite3_prepare_v2(ms->src,
						   "SELECT m.name, m.sql FROM sqlite_schema AS m WHERE "
						   SHARD_APP_TABLES " ORDER BY m.name", -1, &stmt,
						   NULL) != SQLITE_OK)
		move_error(ms, ms->src, ms->source->shard_id, NULL,
				   gettext_noop("could not read the schema for tenant \"%s\" on shard \"%s\""));
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		const char *sql = (const char *) sqlite3_column_text(stmt, 1);

		names = lappend(names, pstrdup((const char *) sqlite3_column_text(stmt, 0)));
		sqls = lappend(sqls, pstrdup(sql ? sql : ""));
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		move_error(ms, ms->src, ms->source->shard_id, NULL,
				   gettext_noop("could not read the schema for tenant \"%s\" on shard \"%s\""));

	ms->tables = NIL;
	ms->nkeys = 1;
	forboth(lc, names, lc2, sqls)
	{
		MoveTable  *t = palloc0(sizeof(MoveTable));
		const char *column;
		int			kind;
		int			maxpk = 0;
		char	  **pk;
		int			i;

		t->name = lfirst(lc);
		stmt = move_prepare_bound(ms, ms->src,
								  "SELECT name, coalesce(type, ''), pk "
								  "FROM pragma_table_info(:tbl, 'main') ORDER BY cid",
								  t, 0, 0,
								  gettext_noop("could not read the schema of table \"%s\" of tenant \"%s\" on shard \"%s\""));
		pk = palloc0(sizeof(char *) * 64);
		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		{
			char	   *col = pstrdup((const char *) sqlite3_column_text(stmt, 0));
			int			pkpos = sqlite3_column_int(stmt, 2);

			t->cols = lappend(t->cols, col);
			if (pkpos > 0 && pkpos < 64)
			{
				pk[pkpos] = col;
				maxpk = Max(maxpk, pkpos);
			}
		}
		sqlite3_finalize(stmt);
		if (rc != SQLITE_DONE)
			move_error(ms, ms->src, ms->source->shard_id, t->name,
					   gettext_noop("could not read the schema of table \"%s\" of tenant \"%s\" on shard \"%s\""));
		column = shard_tenant_spec_table(spec, t->name, t->cols, &kind);
		if (column == NULL)
			continue;			/* shared by every tenant: not moved */
		t->tenant_col = (char *) column;

		for (i = 1; i <= maxpk; i++)
			if (pk[i] != NULL)
				t->pk = lappend(t->pk, pk[i]);
		if (t->pk == NIL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot move tenant \"%s\": table \"%s\" of shard \"%s\" has no primary key",
							ms->tenant, t->name, ms->source->shard_id),
					 errdetail("A move finds the rows it copied and the rows written meanwhile again by their primary key."),
					 errhint("Give the table a primary key on every shard.")));
		ms->nkeys = Max(ms->nkeys, list_length(t->pk));

		check_target_table(ms, t, lfirst(lc2), for_copy);
		move_table_rule(ms, t, kind);
		{
			StringInfoData q;

			initStringInfo(&q);
			appendStringInfoString(&q, "SELECT count(*) FROM main.");
			shard_quote_identifier(&q, t->name);
			t->total_rows = move_query_int(ms, ms->src, q.data, t,
										   gettext_noop("could not count the rows of table \"%s\" of tenant \"%s\" on shard \"%s\""));
			resetStringInfo(&q);
			appendStringInfoString(&q, "SELECT count(*) FROM");
			move_append_tenant_rows(&q, t, "main");
			t->rows = move_query_int(ms, ms->src, q.data, t,
									 gettext_noop("could not count the rows of table \"%s\" of tenant \"%s\" on shard \"%s\""));
		}
		ms->tables = lappend(ms->tables, t);
	}
}

/*
 * move_check_collisions
 *		Refuse a move whose rows would take primary keys that rows of other
 *		tenants already have on the target: the copy would fail half-way.
 */
void
move_check_collisions(MoveShards *ms)
{
	ListCell   *lc;

	foreach(lc, ms->tables)
	{
		MoveTable  *t = lfirst(lc);
		StringInfoData q;
		int64		n;

		int64		target_rows;
		bool		from_target;

		if (t->create_sql != NULL || t->rows == 0)
			continue;
		initStringInfo(&q);
		appendStringInfoString(&q, "SELECT count(*) FROM main.");
		shard_quote_identifier(&q, t->name);
		target_rows = move_query_int(ms, ms->dst, q.data, t,
									 gettext_noop("could not count the rows of table \"%s\" of tenant \"%s\" on shard \"%s\""));

		/* probe the larger side's key index with the smaller side's rows */
		from_target = target_rows < t->rows;
		resetStringInfo(&q);
		appendStringInfo(&q, "SELECT count(*) FROM %s.", from_target ? "main" : "src");
		shard_quote_identifier(&q, t->name);
		appendStringInfoString(&q, " AS s WHERE ");
		if (from_target)
			appendStringInfoString(&q, "(");
		move_append_tenant(&q, t, "s.");
		appendStringInfo(&q, "%s AND EXISTS (SELECT 1 FROM %s.",
						 from_target ? ") IS NOT 1" : "",
						 from_target ? "src" : "main");
		shard_quote_identifier(&q, t->name);
		appendStringInfoString(&q, " AS d WHERE ");
		move_append_key(&q, t, "d.");
		appendStringInfoString(&q, " = ");
		move_append_key(&q, t, "s.");
		appendStringInfoString(&q, " AND ");
		if (!from_target)
			appendStringInfoString(&q, "(");
		move_append_tenant(&q, t, "d.");
		appendStringInfo(&q, "%s)", from_target ? "" : ") IS NOT 1");
		n = move_query_int(ms, ms->dst, q.data, t,
						   gettext_noop("could not check the primary keys of table \"%s\" of tenant \"%s\" on shard \"%s\""));
		if (n > 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("cannot move tenant \"%s\": rows of table \"%s\" have primary keys that other tenants' rows already have on shard \"%s\"",
							ms->tenant, t->name, ms->target->shard_id),
					 errdetail("%lld of the tenant's rows on shard \"%s\" would collide.",
							   (long long) n, ms->source->shard_id),
					 errhint("Include the tenant column in the primary key, or use keys unique across the fleet.")));
	}
}

/*
 * move_tenant_bytes
 *		An estimate of what the tenant takes on the source: the file's size
 *		times the tenant's share of the rows of the tables that have a
 *		tenant column.  Enough to keep a move from pushing the target past
 *		max_shard_bytes.
 */
int64
move_tenant_bytes(MoveShards *ms)
{
	struct stat st;
	double		rows = 0,
				total = 0;
	ListCell   *lc;

	if (stat(ms->source->path, &st) != 0)
		return 0;
	foreach(lc, ms->tables)
	{
		MoveTable  *t = lfirst(lc);

		rows += t->rows;
		total += t->total_rows;
	}
	if (total <= 0)
		return 0;
	return (int64) ((double) st.st_size * rows / total);
}

/*
 * move_create_missing_tables
 *		Create on the target the tables it lacks, with the source's DDL and
 *		indexes, in one transaction.
 */
void
move_create_missing_tables(MoveShards *ms)
{
	ListCell   *lc;
	bool		any = false;

	foreach(lc, ms->tables)
		any |= (((MoveTable *) lfirst(lc))->create_sql != NULL);
	if (!any)
		return;
	move_begin(ms, ms->dst, true);
	foreach(lc, ms->tables)
	{
		MoveTable  *t = lfirst(lc);
		ListCell   *lc2,
				   *lc3;

		if (t->create_sql == NULL)
			continue;
		/* "CREATE TABLE x" of the source: it lands in main, the target */
		create_from_schema(ms, ms->dst, ms->target->shard_id, t, NULL,
						   t->create_sql,
						   gettext_noop("could not create table \"%s\" of tenant \"%s\" on shard \"%s\""));
		forboth(lc2, t->index_names, lc3, t->index_sqls)
			create_from_schema(ms, ms->dst, ms->target->shard_id, t,
							   lfirst(lc2), lfirst(lc3),
							   gettext_noop("could not create the indexes of table \"%s\" of tenant \"%s\" on shard \"%s\""));
		ereport(NOTICE,
				(errmsg("tenant \"%s\": created table \"%s\" on shard \"%s\" from the schema of shard \"%s\"",
						ms->tenant, t->name, ms->target->shard_id,
						ms->source->shard_id)));
	}
	move_commit(ms, ms->dst);
}

