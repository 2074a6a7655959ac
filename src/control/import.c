/*-------------------------------------------------------------------------
 *
 * import.c
 *		  IMPORT FOREIGN SCHEMA for sqlite_shard_fdw
 *
 * Every shard of a fleet is expected to carry the same schema, so importing
 * reads the tables and views of one shard (the first by shard_id, or the
 * one named by the "shard" import option) and turns each into a CREATE
 * FOREIGN TABLE command, the way postgres_fdw does.  SQLite has one schema
 * per attached file, "main"; nothing else may be imported.
 *
 * Declared column types are mapped to PostgreSQL types by SQLite's own
 * affinity rules (see datatype3.html, "Determination Of Column Affinity"),
 * after first recognising the common type names whose values SQLite stores
 * as text or numbers but PostgreSQL has a type for (BOOLEAN, DATE,
 * TIMESTAMP, UUID, JSON, ...).  The mapping errs on the side of types every
 * stored value can be read as: a name SQLite gives NUMERIC affinity but
 * that is not a number type (MONEY, STRING, ANY, ...) becomes text, not
 * numeric, because SQLite leaves any value that does not look like a number
 * as text in such a column.
 *
 * On a server of layout 'file_per_tenant' each file is one tenant's and
 * stores no tenant column: every table is imported as a table of tenants
 * (never a reference table), with the tenant column declared first, as
 * text, though no file stores it (a stored column of that name, which the
 * tenant column would hide, is left out with a NOTICE).  The schema is
 * read from a tenant's file (the "tenant" option; for a role whose user
 * mapping has tenants, the first of those), a template database (the
 * "template" option, or the server's tenant_template), or the first file.
 *
 * Shard files are not trusted: table and column names read from them are
 * validated as the database encoding before they reach the generated SQL,
 * every identifier is quoted with quote_identifier() and every option value
 * with quote_literal_cstr(), and the names are bound, never spliced, when
 * they go back to SQLite.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <limits.h>

#include "commands/defrem.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/numeric.h"

#include "sqlite_shard_fdw.h"

/* Import options, parsed from IMPORT FOREIGN SCHEMA ... OPTIONS (...). */
typedef struct ImportOptions
{
	char	   *shard;			/* shard whose schema is read, or NULL */
	char	   *tenant;			/* ... or the shard of this tenant */
	char	   *template;		/* ... or this file (a path relative to the
								 * directory's folder) */
	char	   *tenant_column;	/* SQLite name of the tenant column */
	bool		import_not_null;	/* copy NOT NULL constraints */
	bool		reference_tables;	/* import tables without the tenant
									 * column as reference tables */
	bool		infer_times;	/* TEXT columns of ISO times as times */
	bool		infer_unix_seconds; /* INTEGER columns of Unix seconds */
} ImportOptions;

/* Values read to tell a column of times from one of text or numbers. */
#define INFER_SAMPLE_ROWS 1000

/* Unix seconds taken for times: 2001-09-09 to 2100-01-01. */
#define INFER_UNIX_MIN INT64CONST(1000000000)
#define INFER_UNIX_MAX INT64CONST(4102444800)

/* The default of the "tenant_column" import and table options. */
#define DEFAULT_TENANT_COLUMN "tenant_id"

/* Longest varchar(n) PostgreSQL accepts (MaxAttrSize). */
#define MAX_VARCHAR_LENGTH (10 * 1024 * 1024)

static void parse_import_options(ImportForeignSchemaStmt *stmt,
								 ImportOptions *iopts);
static ShardInfo *choose_shard(ShardServerOptions *opts, ShardDirectory *dir,
							   ImportOptions *iopts, bool *template);
static char *sqlite_name_to_server(const char *name);
static char *pg_relname_for(const char *name);
static char *normalize_decltype(const char *decltype, char **args);
static bool parse_typmods(const char *args, int *nargs, int *a1, int *a2);
static const char *map_sqlite_type(const char *decltype, StringInfo buf);
static char *deparse_table(sqlite3 *db, sqlite3_stmt *colstmt,
						   ShardInfo *shard, const char *servername,
						   const char *tabname, const char *pgname,
						   ImportOptions *iopts, bool file_per_tenant);

/*
 * shardImportForeignSchema
 *		Build CREATE FOREIGN TABLE commands for the tables and views of one
 *		shard's "main" schema.
 *
 * PostgreSQL filters the returned commands against LIMIT TO / EXCEPT again;
 * filtering here as well keeps excluded tables from being read at all, and
 * from raising notices about themselves.
 */
List *
shardImportForeignSchema(ImportForeignSchemaStmt *stmt, Oid serverOid)
{
	ImportOptions iopts;
	ShardServerOptions *opts;
	ShardDirectory *dir;
	ShardInfo  *shard;
	bool		template;
	ShardConn  *volatile conn = NULL;
	sqlite3    *volatile template_db = NULL;
	sqlite3_stmt *volatile tabstmt = NULL;
	sqlite3_stmt *volatile colstmt = NULL;
	List	   *commands = NIL;

	parse_import_options(stmt, &iopts);

	opts = shard_server_options(serverOid);

	/*
	 * A shard file has exactly one schema of its own.  SQLite matches schema
	 * names case-insensitively, and so do we.
	 */
	if (pg_strcasecmp(stmt->remote_schema, "main") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_SCHEMA_NOT_FOUND),
				 errmsg("schema \"%s\" is not present on foreign server \"%s\"",
						stmt->remote_schema, opts->servername),
				 errhint("SQLite shards have one schema, \"main\".")));

	dir = shard_directory_get(opts);
	shard = choose_shard(opts, dir, &iopts, &template);

	/* a template is no shard: opened on its own, read-only */
	if (template)
	{
		sqlite3    *db;
		char		errbuf[SHARDIO_ERRLEN];

		if (shardio_file_state(shard->path) != SHARDIO_FILE_OK)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FILE),
					 errmsg("template \"%s\" does not exist or cannot be read",
							shard->shard_id)));
		if (shard_file_kind(shard->path) == SHARD_FILE_NOT_SQLITE ||
			shardio_open(shard->path, 0, opts->busy_timeout_ms, &db,
						 errbuf) != SQLITE_OK)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("template \"%s\" is not a valid SQLite database",
							shard->shard_id)));
		template_db = db;
	}
	else
		conn = shard_conn_get(opts, shard, false);

	PG_TRY();
	{
		sqlite3    *db = template ? template_db : shard_conn_db(conn);
		sqlite3_stmt *s;
		char		errbuf[SHARDIO_ERRLEN];
		int			rc;

		/*
		 * Tables and views, without SQLite's own (sqlite_sequence,
		 * sqlite_stat1, ...): SQLite reserves every name that starts with
		 * "sqlite_" in any case, which is what its LIKE matches; nor the
		 * wrapper's own ("_ssfdw_...", a move's log and fences).
		 */
		rc = shardio_prepare(db,
							 "SELECT name FROM main.sqlite_schema"
							 " WHERE type IN ('table', 'view')"
							 " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
							 " AND name NOT LIKE '\\_ssfdw\\_%' ESCAPE '\\'"
							 " ORDER BY name",
							 0, &s, errbuf);
		if (rc != SQLITE_OK)
			shard_sqlite_error(ERROR, rc, shard->shard_id, errbuf,
							   "could not list the tables of shard \"%s\"",
							   shard->shard_id);
		tabstmt = s;

		/*
		 * table_xinfo rather than table_info: it also lists generated
		 * columns, which can be read like any other.  hidden = 1 marks the
		 * hidden columns of virtual tables, which SELECT * does not return.
		 *
		 * The fourth column says whether the column is an alias for the
		 * rowid, which SQLite never stores as NULL.  SQLite's rule
		 * (lang_createtable.html, "ROWIDs and the INTEGER PRIMARY KEY"): the
		 * single-column PRIMARY KEY of a rowid table, declared with the type
		 * name "INTEGER" in any case ("INT", "BIGINT" or "INTEGER(8)" are
		 * not).  A rowid table is a real table (rootpage <> 0, which
		 * excludes virtual tables) that is not WITHOUT ROWID.  Rather than
		 * parse the CREATE TABLE text for WITHOUT ROWID and for the quirk
		 * that "INTEGER PRIMARY KEY DESC" is no alias, ask SQLite for its
		 * verdict: every primary key that is not the rowid has an index of
		 * origin "pk" (a WITHOUT ROWID table's is the table itself), an
		 * alias has none.  A WITHOUT ROWID table's key columns need nothing
		 * here: SQLite makes them NOT NULL, and table_xinfo says so.
		 */
		rc = shardio_prepare(db,
							 "SELECT name, type, \"notnull\","
							 " pk = 1 AND type = 'INTEGER' COLLATE NOCASE"
							 " AND NOT EXISTS (SELECT 1"
							 "  FROM pragma_table_xinfo(?1, 'main')"
							 "  WHERE pk > 1)"
							 " AND NOT EXISTS (SELECT 1"
							 "  FROM pragma_index_list(?1, 'main')"
							 "  WHERE origin = 'pk')"
							 " AND EXISTS (SELECT 1 FROM main.sqlite_schema"
							 "  WHERE type = 'table' AND name = ?1"
							 "  AND rootpage <> 0)"
							 " FROM pragma_table_xinfo(?1, 'main')"
							 " WHERE hidden <> 1 ORDER BY cid",
							 0, &s, errbuf);
		if (rc != SQLITE_OK)
			shard_sqlite_error(ERROR, rc, shard->shard_id, errbuf,
							   "could not read the columns of shard \"%s\"",
							   shard->shard_id);
		colstmt = s;

		while ((rc = sqlite3_step(tabstmt)) == SQLITE_ROW)
		{
			const char *name = (const char *) sqlite3_column_text(tabstmt, 0);
			char	   *tabname;
			char	   *pgname;
			char	   *cmd;

			if (name == NULL)
				continue;
			/* sqlite3_column_text's buffer lives only until the next step */
			tabname = pstrdup(name);
			pgname = pg_relname_for(tabname);

			if (!IsImportableForeignTable(pgname, stmt))
				continue;

			cmd = deparse_table(db, colstmt, shard, opts->servername,
								tabname, pgname, &iopts,
								opts->file_per_tenant);
			if (cmd != NULL)
				commands = lappend(commands, cmd);
		}
		if (rc != SQLITE_DONE)
			shard_sqlite_error(ERROR, rc, shard->shard_id, sqlite3_errmsg(db),
							   "could not list the tables of shard \"%s\"",
							   shard->shard_id);
	}
	PG_FINALLY();
	{
		sqlite3_finalize(colstmt);
		sqlite3_finalize(tabstmt);
		if (conn != NULL)
			shard_conn_release(conn);
		if (template_db != NULL)
			shardio_close(template_db);
	}
	PG_END_TRY();

	return commands;
}

/*
 * parse_import_options
 *		Read the OPTIONS clause of IMPORT FOREIGN SCHEMA.
 *
 * Import options never reach the validator, so unknown names are rejected
 * here, as postgres_fdw does.
 */
static void
parse_import_options(ImportForeignSchemaStmt *stmt, ImportOptions *iopts)
{
	ListCell   *lc;

	iopts->shard = NULL;
	iopts->tenant = NULL;
	iopts->template = NULL;
	iopts->tenant_column = DEFAULT_TENANT_COLUMN;
	iopts->import_not_null = true;
	iopts->reference_tables = true;
	iopts->infer_times = true;
	iopts->infer_unix_seconds = false;

	foreach(lc, stmt->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "shard") == 0)
			iopts->shard = defGetString(def);
		else if (strcmp(def->defname, "tenant") == 0)
			iopts->tenant = defGetString(def);
		else if (strcmp(def->defname, "template") == 0)
			iopts->template = defGetString(def);
		else if (strcmp(def->defname, "tenant_column") == 0)
		{
			iopts->tenant_column = defGetString(def);
			if (iopts->tenant_column[0] == '\0')
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("option \"%s\" must not be empty",
								def->defname)));
		}
		else if (strcmp(def->defname, "import_not_null") == 0)
			iopts->import_not_null = defGetBoolean(def);
		else if (strcmp(def->defname, "reference_tables") == 0)
			iopts->reference_tables = defGetBoolean(def);
		else if (strcmp(def->defname, "infer_times") == 0)
			iopts->infer_times = defGetBoolean(def);
		else if (strcmp(def->defname, "infer_unix_seconds") == 0)
			iopts->infer_unix_seconds = defGetBoolean(def);
		else
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("invalid option \"%s\"", def->defname),
					 errhint("Valid options in this context are: shard, tenant, template, tenant_column, import_not_null, reference_tables, infer_times, infer_unix_seconds.")));
	}
	if ((iopts->shard != NULL) + (iopts->tenant != NULL) +
		(iopts->template != NULL) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options \"shard\", \"tenant\" and \"template\" cannot be used together"),
				 errdetail("Each names the file whose schema is imported.")));
}

/*
 * choose_shard
 *		The file whose schema is imported: the shard named, the shard (or
 *		file) of the tenant named, the template named (*template set: a
 *		file that is no shard, a path relative to the directory's folder,
 *		read with the privileges of pg_read_server_files), or else the
 *		first shard by shard_id, so that repeating an import reads the same
 *		file.  On a fleet of one file per tenant, "else" is the server's
 *		tenant_template, or for a role whose user mapping has tenants the
 *		first of their files (no other tenant's file is listed for it),
 *		or the first file.
 */
static ShardInfo *
choose_shard(ShardServerOptions *opts, ShardDirectory *dir,
			 ImportOptions *iopts, bool *template)
{
	ShardInfo  *shard;
	List	   *shards;
	List	   *allowed = NIL;
	const char *path = iopts->template;

	*template = false;
	if (iopts->shard != NULL)
	{
		shard = shard_directory_shard(dir, iopts->shard);
		if (shard == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("shard \"%s\" does not exist on foreign server \"%s\"",
							iopts->shard, opts->servername),
					 errhint("The \"shard\" option must name a shard listed by shard_list().")));
		return shard;
	}

	if (opts->file_per_tenant || iopts->tenant != NULL)
		allowed = shard_tenant_ids_text(shard_user_tenants(opts->serverid,
														   GetUserId()));
	if (iopts->tenant != NULL)
	{
		ShardLocation *loc;
		bool		may = (allowed == NIL);
		ListCell   *lc;

		foreach(lc, allowed)
			may |= (strcmp(lfirst(lc), iopts->tenant) == 0);
		if (!may)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to read tenant \"%s\" on foreign server \"%s\"",
							iopts->tenant, opts->servername),
					 errdetail("The user mapping of role \"%s\" lists the tenants it may read.",
							   GetUserNameFromId(GetUserId(), false))));
		loc = shard_directory_locate(dir, iopts->tenant);
		if (loc == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 opts->file_per_tenant ?
					 errmsg("tenant \"%s\" has no file on foreign server \"%s\"",
							iopts->tenant, opts->servername) :
					 errmsg("tenant \"%s\" does not exist on foreign server \"%s\"",
							iopts->tenant, opts->servername),
					 errhint("The \"tenant\" option must name a tenant listed by tenant_list().")));
		return shard_directory_shard(dir, loc->owner);
	}

	if (path == NULL && opts->file_per_tenant && allowed == NIL)
		path = opts->tenant_template;
	if (path != NULL)
	{
		shard_require_file_privilege(false, gettext_noop("permission denied to import from a template"),
									 gettext_noop("Only roles with privileges of the \"%s\" role may import the schema of a file named by a path."));
		shard = palloc0(sizeof(ShardInfo));
		shard->shard_id = pstrdup(path);
		shard->path = shard_resolve_checked_path(opts, path, path);
		*template = true;
		return shard;
	}

	/* a scoped role: the first of its tenants that has a file */
	if (opts->file_per_tenant && allowed != NIL)
	{
		ListCell   *lc;

		foreach(lc, allowed)
		{
			ShardLocation *loc = shard_directory_locate(dir, lfirst(lc));

			if (loc != NULL)
				return shard_directory_shard(dir, loc->owner);
		}
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("none of the tenants of role \"%s\" has a file on foreign server \"%s\"",
						GetUserNameFromId(GetUserId(), false),
						opts->servername),
				 errhint("Import with OPTIONS (template '...') naming a template database.")));
	}

	shards = shard_directory_shards(dir);
	if (shards == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("foreign server \"%s\" has no shards",
						opts->servername),
				 opts->file_per_tenant ?
				 errhint("Import with OPTIONS (template '...') naming a template database, or create a tenant with tenant_create() first.") :
				 errhint("Add a shard with shard_add() before importing.")));
	return (ShardInfo *) linitial(shards);
}

/*
 * sqlite_name_to_server
 *		Copy a name read from a shard (always UTF-8 in SQLite), converted to
 *		the database encoding.
 *
 * This also validates it: a crafted shard file may hold invalid UTF-8,
 * which must not reach the parser as part of a generated command.
 */
static char *
sqlite_name_to_server(const char *name)
{
	char	   *conv = pg_any_to_server(name, strlen(name), PG_UTF8);

	/* Always a copy: SQLite's buffer goes away at the next step. */
	return (conv == name) ? pstrdup(name) : conv;
}

/*
 * pg_relname_for
 *		The PostgreSQL name a SQLite table or column is imported as: the
 *		same name in the database encoding, cut to NAMEDATALEN - 1 bytes as
 *		the parser would cut it.  Comparing this (not the SQLite name) with
 *		LIMIT TO / EXCEPT matches what PostgreSQL checks afterwards.
 */
static char *
pg_relname_for(const char *name)
{
	char	   *conv = sqlite_name_to_server(name);
	int			len = strlen(conv);

	if (len >= NAMEDATALEN)
		len = pg_mbcliplen(conv, len, NAMEDATALEN - 1);
	return pnstrdup(conv, len);
}

/*
 * normalize_decltype
 *		Upper-case a declared type, collapse runs of white space and split
 *		off the parenthesised modifiers: "varchar ( 20 )" -> "VARCHAR" with
 *		*args = "20".  *args is NULL when there are none.
 */
static char *
normalize_decltype(const char *decltype, char **args)
{
	StringInfoData base;
	const char *p;
	const char *paren;
	bool		space = false;

	*args = NULL;
	paren = strchr(decltype, '(');

	initStringInfo(&base);
	for (p = decltype; *p != '\0' && p != paren; p++)
	{
		if (isspace((unsigned char) *p))
		{
			space = true;
			continue;
		}
		if (space && base.len > 0)
			appendStringInfoChar(&base, ' ');
		space = false;
		appendStringInfoChar(&base, pg_ascii_toupper((unsigned char) *p));
	}

	if (paren != NULL)
	{
		const char *close = strchr(paren, ')');

		if (close != NULL)
			*args = pnstrdup(paren + 1, close - paren - 1);
		else
			*args = pstrdup(paren + 1);
	}
	return base.data;
}

/*
 * parse_typmods
 *		Parse "n" or "p, s" (SQLite allows signed numbers there).  Returns
 *		false when args is anything else.
 */
static bool
parse_typmods(const char *args, int *nargs, int *a1, int *a2)
{
	const char *p = args;
	int		   *out[2];
	int			n = 0;

	out[0] = a1;
	out[1] = a2;
	*nargs = 0;
	if (args == NULL)
		return false;

	for (;;)
	{
		char	   *end;
		long		v;

		while (isspace((unsigned char) *p))
			p++;
		if (n == 2 || !(isdigit((unsigned char) *p) || *p == '+' || *p == '-'))
			return false;
		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || errno != 0 || v < INT_MIN || v > INT_MAX)
			return false;
		*out[n++] = (int) v;
		p = end;
		while (isspace((unsigned char) *p))
			p++;
		if (*p == '\0')
			break;
		if (*p != ',')
			return false;
		p++;
	}
	*nargs = n;
	return true;
}

/*
 * map_sqlite_type
 *		The PostgreSQL type for a SQLite declared type, written into buf.
 *
 * First the names PostgreSQL users write for types SQLite has no storage
 * class of its own for; then SQLite's affinity rules, in SQLite's order
 * (so "FLOATING POINT" is an integer, as SQLite stores it).  Choices:
 *
 * - Every INTEGER-affinity name is bigint: SQLite integers are 64 bits
 *   whatever the declared width, and a narrower type would fail on values
 *   SQLite accepted.
 * - VARCHAR(n) and CHAR(n) become varchar(n): SQLite does not pad, and
 *   bpchar would compare ignoring trailing blanks where SQLite does not,
 *   so a pushed-down comparison could disagree with a local one.
 *   Without a length they are text.
 * - An empty declared type (untyped columns, and view columns computed by
 *   an expression) is text, not bytea: SQLite stores such values as
 *   given, and nearly all of them are numbers or text, which any value
 *   can be read as; blobs are rare there.
 * - NUMERIC / DECIMAL keep their precision and scale when PostgreSQL can
 *   take them; other NUMERIC-affinity names are text.
 */
static const char *
map_sqlite_type(const char *decltype, StringInfo buf)
{
	char	   *args;
	char	   *base = normalize_decltype(decltype, &args);
	int			nargs;
	int			a1,
				a2;

	resetStringInfo(buf);

	/* Names with a PostgreSQL type of their own. */
	if (strcmp(base, "BOOL") == 0 || strcmp(base, "BOOLEAN") == 0)
		appendStringInfoString(buf, "boolean");
	else if (strcmp(base, "DATE") == 0)
		appendStringInfoString(buf, "date");
	else if (strcmp(base, "DATETIME") == 0 ||
			 strcmp(base, "TIMESTAMP") == 0 ||
			 strcmp(base, "TIMESTAMP WITHOUT TIME ZONE") == 0)
		appendStringInfoString(buf, "timestamp without time zone");
	else if (strcmp(base, "TIMESTAMPTZ") == 0 ||
			 strcmp(base, "TIMESTAMP WITH TIME ZONE") == 0)
		appendStringInfoString(buf, "timestamp with time zone");
	else if (strcmp(base, "TIME") == 0 ||
			 strcmp(base, "TIME WITHOUT TIME ZONE") == 0)
		appendStringInfoString(buf, "time without time zone");
	else if (strcmp(base, "UUID") == 0)
		appendStringInfoString(buf, "uuid");
	else if (strcmp(base, "JSONB") == 0)
		appendStringInfoString(buf, "jsonb");
	else if (strcmp(base, "JSON") == 0)
		appendStringInfoString(buf, "json");
	else if (strcmp(base, "BYTEA") == 0)
		appendStringInfoString(buf, "bytea");

	/* SQLite's affinity rules, in SQLite's order. */
	else if (strstr(base, "INT") != NULL)
		appendStringInfoString(buf, "bigint");
	else if (strstr(base, "CHAR") != NULL || strstr(base, "CLOB") != NULL ||
			 strstr(base, "TEXT") != NULL)
	{
		if (strstr(base, "CHAR") != NULL &&
			parse_typmods(args, &nargs, &a1, &a2) && nargs == 1 &&
			a1 >= 1 && a1 <= MAX_VARCHAR_LENGTH)
			appendStringInfo(buf, "character varying(%d)", a1);
		else
			appendStringInfoString(buf, "text");
	}
	else if (strstr(base, "BLOB") != NULL)
		appendStringInfoString(buf, "bytea");
	else if (base[0] == '\0')
		appendStringInfoString(buf, "text");
	else if (strstr(base, "REAL") != NULL || strstr(base, "FLOA") != NULL ||
			 strstr(base, "DOUB") != NULL)
		appendStringInfoString(buf, "double precision");
	else if (strcmp(base, "NUMERIC") == 0 || strcmp(base, "DECIMAL") == 0 ||
			 strcmp(base, "DEC") == 0 || strcmp(base, "NUMBER") == 0)
	{
		/*
		 * Only modifiers every supported PostgreSQL version accepts;
		 * anything else reads as unconstrained numeric rather than fail.
		 */
		if (parse_typmods(args, &nargs, &a1, &a2) &&
			a1 >= 1 && a1 <= NUMERIC_MAX_PRECISION &&
			(nargs == 1 || (a2 >= 0 && a2 <= a1)))
		{
			if (nargs == 1)
				appendStringInfo(buf, "numeric(%d)", a1);
			else
				appendStringInfo(buf, "numeric(%d,%d)", a1, a2);
		}
		else
			appendStringInfoString(buf, "numeric");
	}
	else
		appendStringInfoString(buf, "text");

	return buf->data;
}

/*
 * infer_time_type
 *		The time type of a column that SQLite declares as text (or without
 *		a type) or, with infer_unix_seconds, as an integer, when the first
 *		INFER_SAMPLE_ROWS of its non-NULL values on the shard are all times
 *		in the forms the wrapper reads (shardio_parse_datetime, the one
 *		reader): "date" when none has a time of day, "timestamp with time
 *		zone" when every one has 'Z' or an offset, "timestamp without time
 *		zone" when none has; for integers, all Unix seconds between 2001
 *		and 2100, "timestamp with time zone".  NULL when the values say
 *		anything else (a text, a number, a blob, offsets on some values
 *		only, no value at all): the column keeps its type.
 */
static const char *
infer_time_type(sqlite3 *db, ShardInfo *shard, const char *tabname,
				const char *colname, bool integers)
{
	StringInfoData sql;
	sqlite3_stmt *stmt;
	char		errbuf[SHARDIO_ERRLEN];
	int			rc;
	int			nvalues = 0;
	int			ndates = 0;
	int			noffsets = 0;
	bool		times = true;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	shard_quote_identifier(&sql, colname);
	appendStringInfoString(&sql, " FROM main.");
	shard_quote_identifier(&sql, tabname);
	appendStringInfoString(&sql, " WHERE ");
	shard_quote_identifier(&sql, colname);
	appendStringInfo(&sql, " IS NOT NULL LIMIT %d", INFER_SAMPLE_ROWS);
	rc = shardio_prepare(db, sql.data, 0, &stmt, errbuf);
	if (rc != SQLITE_OK)
		shard_sqlite_error(ERROR, rc, shard->shard_id, errbuf,
						   "could not read column \"%s\" of table \"%s\" on shard \"%s\"",
						   colname, tabname, shard->shard_id);
	while (times && (rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		nvalues++;
		if (integers)
		{
			sqlite3_int64 v = sqlite3_column_int64(stmt, 0);

			times = sqlite3_column_type(stmt, 0) == SQLITE_INTEGER &&
				v >= INFER_UNIX_MIN && v <= INFER_UNIX_MAX;
		}
		else
		{
			ShardDatetime dt;

			times = sqlite3_column_type(stmt, 0) == SQLITE_TEXT &&
				shardio_parse_datetime((const char *) sqlite3_column_text(stmt, 0),
									   sqlite3_column_bytes(stmt, 0),
									   &dt) == SHARDIO_DT_OK;
			ndates += times && !dt.has_time;
			noffsets += times && dt.has_offset;
		}
	}
	if (times && rc != SQLITE_DONE)
	{
		char	   *msg = pstrdup(sqlite3_errmsg(db));

		sqlite3_finalize(stmt);
		shard_sqlite_error(ERROR, rc, shard->shard_id, msg,
						   "could not read column \"%s\" of table \"%s\" on shard \"%s\"",
						   colname, tabname, shard->shard_id);
	}
	sqlite3_finalize(stmt);
	pfree(sql.data);

	if (!times || nvalues == 0)
		return NULL;
	if (integers)
		return "timestamp with time zone";
	if (ndates == nvalues)
		return "date";
	if (noffsets == nvalues)
		return "timestamp with time zone";
	if (noffsets == 0)
		return "timestamp without time zone";
	return NULL;
}

/*
 * deparse_table
 *		The CREATE FOREIGN TABLE command for one SQLite table or view, or
 *		NULL when it is skipped: its columns cannot be read (a warning says
 *		why), or it has no tenant column and the import takes no reference
 *		tables (a notice says so).
 *
 * A table without the tenant column (a lookup table copied into every
 * shard, such as plans or currencies) becomes a reference table, read from
 * one shard's copy; a NOTICE names it, since the import cannot tell such a
 * table from one whose tenant column has another name, and says what to do
 * then.  The "tenant_column" option of a tenant table is always written
 * out, naming the column matched: left out, the option's default could
 * pick a different column than the one the import was told to use.
 */
static char *
deparse_table(sqlite3 *db, sqlite3_stmt *colstmt, ShardInfo *shard,
			  const char *servername, const char *tabname,
			  const char *pgname, ImportOptions *iopts, bool file_per_tenant)
{
	StringInfoData cmd;
	StringInfoData typebuf;
	char	   *tenant_column = NULL;
	char	   *tenant_like = NULL;	/* a column "tenant_id", in any case */
	int			ncols = 0;
	int			rc;

	initStringInfo(&cmd);
	initStringInfo(&typebuf);

	sqlite3_reset(colstmt);
	rc = sqlite3_bind_text(colstmt, 1, tabname, -1, SQLITE_TRANSIENT);
	if (rc != SQLITE_OK)
		shard_sqlite_error(ERROR, rc, shard->shard_id, sqlite3_errmsg(db),
						   "could not read the columns of table \"%s\" on shard \"%s\"",
						   tabname, shard->shard_id);

	appendStringInfo(&cmd, "CREATE FOREIGN TABLE %s (\n",
					 quote_identifier(pgname));

	/* the file's tenant, which no file stores, comes first */
	if (file_per_tenant)
		appendStringInfo(&cmd, "  %s text NOT NULL",
						 quote_identifier(iopts->tenant_column));

	while ((rc = sqlite3_step(colstmt)) == SQLITE_ROW)
	{
		const char *colname = (const char *) sqlite3_column_text(colstmt, 0);
		const char *decltype = (const char *) sqlite3_column_text(colstmt, 1);
		bool		notnull = sqlite3_column_int(colstmt, 2) != 0 ||
			sqlite3_column_int(colstmt, 3) != 0;
		char	   *pgcol;
		char	   *fullcol;
		const char *pgtype;
		const char *inferred;

		if (colname == NULL)
			continue;
		fullcol = sqlite_name_to_server(colname);
		pgcol = pg_relname_for(colname);

		/* the tenant column is the file's tenant: a stored one is hidden */
		if (file_per_tenant &&
			sqlite3_stricmp(colname, iopts->tenant_column) == 0)
		{
			ereport(NOTICE,
					(errmsg("leaving out column \"%s\" of table \"%s\" of shard \"%s\"",
							pgcol, pgname, shard->shard_id),
					 errdetail("On a server that keeps one file per tenant, the tenant column \"%s\" is the tenant of the file each row comes from, not a stored column.",
							   iopts->tenant_column),
					 errhint("Import with the import option \"tenant_column\" naming another column to read the stored one.")));
			continue;
		}

		if (ncols++ > 0 || file_per_tenant)
			appendStringInfoString(&cmd, ",\n");
		pgtype = map_sqlite_type(decltype ? decltype : "", &typebuf);

		/* times stored as text or Unix seconds, told by their values */
		inferred = NULL;
		if (iopts->infer_times && strcmp(pgtype, "text") == 0)
			inferred = infer_time_type(db, shard, tabname, colname, false);
		else if (iopts->infer_unix_seconds && strcmp(pgtype, "bigint") == 0)
			inferred = infer_time_type(db, shard, tabname, colname, true);
		if (inferred != NULL)
		{
			ereport(NOTICE,
					(errmsg("importing column \"%s\" of table \"%s\" as %s",
							pgcol, pgname, inferred),
					 errdetail("Shard \"%s\" declares it %s, and its values there are %s.",
							   shard->shard_id,
							   decltype && decltype[0] ? decltype : "without a type",
							   strcmp(pgtype, "bigint") == 0 ?
							   "Unix seconds" :
							   strcmp(inferred, "date") == 0 ? "ISO dates" :
							   "ISO times"),
					 errhint("Import with OPTIONS (%s 'false') to keep its type.",
							 strcmp(pgtype, "bigint") == 0 ?
							 "infer_unix_seconds" : "infer_times")));
			pgtype = inferred;
		}
		appendStringInfo(&cmd, "  %s %s", quote_identifier(pgcol), pgtype);

		/* A name PostgreSQL had to cut keeps its full SQLite spelling. */
		if (strcmp(pgcol, fullcol) != 0)
			appendStringInfo(&cmd, " OPTIONS (column %s)",
							 quote_literal_cstr(fullcol));

		if (notnull && iopts->import_not_null)
			appendStringInfoString(&cmd, " NOT NULL");

		/*
		 * SQLite matches column names case-insensitively (ASCII only), so
		 * "Tenant_ID" is the tenant column too; the option records the
		 * spelling the table uses.
		 */
		if (tenant_column == NULL &&
			sqlite3_stricmp(colname, iopts->tenant_column) == 0)
			tenant_column = fullcol;
		if (sqlite3_stricmp(colname, "tenant_id") == 0)
			tenant_like = fullcol;
	}

	if (rc != SQLITE_DONE)
	{
		/*
		 * A view over a missing table, or a virtual table whose module this
		 * SQLite lacks: importing the rest is more useful than failing.
		 */
		ereport(WARNING,
				(errcode(ERRCODE_FDW_ERROR),
				 errmsg("skipping table \"%s\" of shard \"%s\": could not read its columns",
						pgname, shard->shard_id),
				 errdetail_internal("%s", sqlite3_errmsg(db))));
		sqlite3_reset(colstmt);
		return NULL;
	}
	sqlite3_reset(colstmt);

	if (ncols == 0)
		return NULL;			/* nothing SELECT * could return */
	if (file_per_tenant)
		tenant_column = sqlite_name_to_server(iopts->tenant_column);

	/*
	 * A table with the usual tenant column but not the one the import
	 * names is a tenant table read the wrong way, not one that belongs to
	 * no tenant: as a reference table every tenant would read all of it.
	 */
	if (tenant_column == NULL && tenant_like != NULL && iopts->reference_tables)
	{
		ereport(NOTICE,
				(errmsg("skipping table \"%s\" of shard \"%s\": it has no tenant column \"%s\" but a column \"%s\"",
						pgname, shard->shard_id, iopts->tenant_column,
						tenant_like),
				 errdetail("A table with a column named like a tenant column is not imported as a reference table, which every tenant reads whole."),
				 errhint("Import it with the import option \"tenant_column\" naming its tenant column, or declare it with OPTIONS (distribution 'reference') if it belongs to no tenant.")));
		pfree(typebuf.data);
		pfree(cmd.data);
		return NULL;
	}
	if (tenant_column == NULL && !iopts->reference_tables)
	{
		ereport(NOTICE,
				(errmsg("skipping table \"%s\" of shard \"%s\": it has no tenant column \"%s\"",
						pgname, shard->shard_id, iopts->tenant_column),
				 errdetail("The import option \"reference_tables\" is off, so tables without the tenant column are not imported."),
				 errhint("If another column holds the tenant id, import the table with LIMIT TO (%s) and the import option \"tenant_column\" naming that column.",
						 quote_identifier(pgname))));
		pfree(typebuf.data);
		pfree(cmd.data);
		return NULL;
	}
	if (tenant_column == NULL)
		ereport(NOTICE,
				(errmsg("importing table \"%s\" of shard \"%s\" as a reference table: it has no tenant column \"%s\"",
						pgname, shard->shard_id, iopts->tenant_column),
				 errdetail("A reference table belongs to no tenant; it is read from one shard's copy, and every shard is expected to hold the same rows."),
				 errhint("If another column holds the tenant id, import the table with LIMIT TO (%s) and the import option \"tenant_column\" naming that column.",
						 quote_identifier(pgname))));

	appendStringInfo(&cmd, "\n) SERVER %s\nOPTIONS (table %s",
					 quote_identifier(servername),
					 quote_literal_cstr(sqlite_name_to_server(tabname)));
	if (tenant_column == NULL)
		appendStringInfoString(&cmd, ", distribution 'reference');");
	else
		appendStringInfo(&cmd, ", tenant_column %s);",
						 quote_literal_cstr(tenant_column));

	pfree(typebuf.data);
	return cmd.data;
}
