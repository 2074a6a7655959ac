/*-------------------------------------------------------------------------
 *
 * tenantrule.c
 *		  Which stored rows are a tenant's: the one rule, as SQLite text
 *
 * A stored tenant value belongs to the tenant whose id it reads as, the
 * way the wrapper reads the tenant column's PostgreSQL type (the SQL
 * function ssfdw_tenant, sqlite/tenantkey.c, computes that id):
 *
 *	text-like types: the stored text byte for byte, or an integer's
 *	decimal form; the column's declared collation never matters, so under
 *	COLLATE NOCASE "ACME" is another tenant than "acme", and under RTRIM
 *	"acme " another than "acme".
 *	smallint, integer, bigint: whatever PostgreSQL's integer input reads
 *	('01', ' 1', '+1' and 1.0 are tenant 1), in the type's range.
 *	uuid: any text uuid_in reads, or 16 bytes.
 *
 * Every path that picks a tenant's rows inside a shard builds its SQLite
 * condition here: routed and fan-out reads and writes, a move's copy,
 * replay, verification and cleanup, tenant_remove, shard_orphans and
 * tenant_stats; the triggers a move leaves in the source (capture and
 * fence), which run in the application's connections where the
 * wrapper's functions do not exist, get the same rule spelled in plain
 * SQLite SQL (shard_tenant_trigger_match).  Nothing else spells it.
 *
 * In a fleet of one file per tenant (layout 'file_per_tenant') no file
 * stores a tenant column: the file is the tenant.  The rule is then that
 * every row of a file is its tenant's and no other tenant's: the rule of a
 * file's handle knows the file's tenant (shard_conn_file_tenant), and a
 * condition on its rows is true or false for the whole file, decided here
 * from the ids asked for, whatever column name the caller passes.
 *
 * Which tables of a shard hold tenants' rows, by which column, is decided
 * here too (shard_tenant_spec_table), for moves and for the tenant tools.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/* White space PostgreSQL's integer input skips (isspace in C), in SQL. */
#define SQL_INT_SPACE "' ' || char(9, 10, 11, 12, 13)"

/* Hex digits of a uuid, and its groups of four that a hyphen may follow. */
#define UUID_HEX 32
#define UUID_GROUPS 8

/*
 * shard_tenant_kind
 *		How ssfdw_tenant reads a tenant column of this type: SHARDIO_TENANT_
 *		kinds, integers by their bits.
 */
int
shard_tenant_kind(Oid typid)
{
	switch (getBaseType(typid))
	{
		case INT2OID:
			return 16;
		case INT4OID:
			return 32;
		case INT8OID:
			return 64;
		case UUIDOID:
			return SHARDIO_TENANT_UUID;
		default:
			return SHARDIO_TENANT_TEXT;
	}
}

/*
 * shard_declared_affinity
 *		The affinity SQLite gives a declared column type, by its rules:
 *		'I'nteger, 'T'ext, 'B'lob (no type), 'R'eal or 'N'umeric.
 */
char
shard_declared_affinity(const char *decl)
{
	char	   *up = pstrdup(decl ? decl : "");
	char	   *p;
	char		result;

	for (p = up; *p; p++)
		*p = pg_ascii_toupper((unsigned char) *p);
	if (strstr(up, "INT"))
		result = 'I';
	else if (strstr(up, "CHAR") || strstr(up, "CLOB") || strstr(up, "TEXT"))
		result = 'T';
	else if (up[0] == '\0' || strstr(up, "BLOB"))
		result = 'B';
	else if (strstr(up, "REAL") || strstr(up, "FLOA") || strstr(up, "DOUB"))
		result = 'R';
	else
		result = 'N';
	pfree(up);
	return result;
}

/*
 * shard_tenant_rule_init
 *		The rule of a tenant column of kind that a shard declares with the
 *		type decl (NULL: unknown, so every value is compared through
 *		ssfdw_tenant) and the collation collseq (NULL: unknown).
 */
void
shard_tenant_rule_init(ShardTenantRule *rule, int kind, const char *decl,
					   const char *collseq)
{
	rule->kind = kind;
	rule->affinity = decl != NULL ? shard_declared_affinity(decl) : 0;
	rule->binary = collseq != NULL && pg_strcasecmp(collseq, "BINARY") == 0;
	rule->file_tenant = NULL;
}

/*
 * shard_tenant_rule_lookup
 *		The rule of the tenant column column of table, as the shard open on
 *		db (its main schema) declares it.  A view's column has a type but no
 *		collation SQLite reports; a table or column SQLite cannot describe
 *		now (missing, or its schema locked) gets the rule that assumes
 *		nothing of the declaration.
 */
void
shard_tenant_rule_lookup(ShardTenantRule *rule, sqlite3 *db,
						 const char *table, const char *column, int kind)
{
	const char *decl = NULL;
	const char *collseq = NULL;
	sqlite3_stmt *stmt;
	const char *file_tenant = shard_conn_file_tenant(db);

	/* a tenant's own file: every row is the tenant's */
	if (file_tenant != NULL)
	{
		shard_tenant_rule_init(rule, kind, NULL, NULL);
		rule->file_tenant = file_tenant;
		return;
	}
	if (sqlite3_table_column_metadata(db, "main", table, column, &decl,
									  &collseq, NULL, NULL, NULL) == SQLITE_OK)
	{
		shard_tenant_rule_init(rule, kind, decl ? decl : "", collseq);
		return;
	}
	shard_tenant_rule_init(rule, kind, NULL, NULL);
	if (sqlite3_prepare_v2(db, "SELECT type FROM pragma_table_info(?1) "
						   "WHERE name = ?2 COLLATE NOCASE", -1, &stmt,
						   NULL) != SQLITE_OK)
		return;
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 2, column, -1, SQLITE_STATIC);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		shard_tenant_rule_init(rule, kind,
							   (const char *) sqlite3_column_text(stmt, 0),
							   NULL);
	sqlite3_finalize(stmt);
}

/*
 * text_compared
 *		Does the rule compare the column itself with a text id?  Only for a
 *		text-like tenant type in a column of TEXT affinity, where a number
 *		written into it is stored as its text.
 */
static bool
text_compared(const ShardTenantRule *rule)
{
	return rule->kind == SHARDIO_TENANT_TEXT && rule->affinity == 'T';
}

/*
 * append_column
 *		Append qual (a table alias and a dot, or "") and the quoted column.
 */
static void
append_column(StringInfo buf, const char *qual, const char *column)
{
	appendStringInfoString(buf, qual);
	shard_quote_identifier(buf, column);
}

/*
 * shard_tenant_key
 *		Append the tenant id a row's stored value reads as, NULL for a value
 *		of no tenant: what tenant statistics group rows by.  Its collation
 *		is BINARY, whatever the column's.
 */
void
shard_tenant_key(StringInfo buf, const char *qual, const char *column,
				 const ShardTenantRule *rule)
{
	if (rule->file_tenant != NULL)
	{
		appendStringInfoString(buf, "ssfdw_file_tenant(0)");
		return;
	}
	appendStringInfoString(buf, "ssfdw_tenant(");
	append_column(buf, qual, column);
	appendStringInfo(buf, ", %d)", rule->kind);
}

/*
 * shard_tenant_indexed
 *		Can an index on the tenant column serve the rule's condition?  Only
 *		where it compares the column itself (text in a TEXT column, integers
 *		outside one); ssfdw_tenant's value no index holds.
 */
bool
shard_tenant_indexed(const ShardTenantRule *rule)
{
	return text_compared(rule) ||
		(rule->kind != SHARDIO_TENANT_TEXT &&
		 rule->kind != SHARDIO_TENANT_UUID &&
		 rule->affinity != 0 && rule->affinity != 'T');
}

/*
 * append_indexed_column
 *		Append the column as a condition of the rule compares it: with
 *		SHARD_TENANT_NO_INDEX in flags, behind a unary "+", which keeps its
 *		value and collation but makes it an expression no index serves, so
 *		that SQLite finds the rows through another condition's index.  The
 *		"+" also takes the column's affinity away, which changes nothing
 *		here: the values compared with it are already of the storage class
 *		that affinity would give them.
 */
static void
append_indexed_column(StringInfo buf, const char *qual, const char *column,
					  int flags)
{
	if (flags & SHARD_TENANT_NO_INDEX)
		appendStringInfoChar(buf, '+');
	append_column(buf, qual, column);
}

/*
 * append_match
 *		shard_tenant_match, with flags (SHARD_TENANT_NO_INDEX).
 */
static void
append_match(StringInfo buf, const char *qual, const char *column,
			 const ShardTenantRule *rule, const char *param, int flags)
{
	if (rule->file_tenant != NULL)
		appendStringInfo(buf, "ssfdw_file_tenant(0) = CAST(%s AS TEXT)",
						 param);
	else if (text_compared(rule))
	{
		/* the collation's comparison is there only for its index */
		if (!rule->binary && !(flags & SHARD_TENANT_NO_INDEX))
		{
			appendStringInfoChar(buf, '(');
			append_column(buf, qual, column);
			appendStringInfo(buf, " = %s AND ", param);
		}
		append_indexed_column(buf, qual, column, flags);
		appendStringInfo(buf, " COLLATE BINARY = %s", param);
		if (!rule->binary && !(flags & SHARD_TENANT_NO_INDEX))
			appendStringInfoChar(buf, ')');
	}
	else if (shard_tenant_indexed(rule))
	{
		/* "+ 0": a number of no affinity, so no text reads as it */
		appendStringInfoChar(buf, '(');
		append_indexed_column(buf, qual, column, flags);
		appendStringInfo(buf, " = CAST(%s AS INTEGER) + 0 OR ", param);
		append_indexed_column(buf, qual, column, flags);
		appendStringInfoString(buf, " >= '' AND ");
		shard_tenant_key(buf, qual, column, rule);
		appendStringInfo(buf, " = %s)", param);
	}
	else
	{
		shard_tenant_key(buf, qual, column, rule);
		appendStringInfo(buf, " = %s", param);
	}
}

/*
 * shard_tenant_match
 *		Append "the row's tenant is the id in param" (an SQLite parameter:
 *		"?3", ":tenant"), a condition SQLite can answer from an index on the
 *		column where the declaration allows:
 *
 *	text in a TEXT column: the column itself, compared byte for byte; with
 *	a declared collation other than BINARY, also compared by it first (an
 *	index of the column then finds every candidate: equal bytes are equal
 *	under any collation).
 *	integers outside a TEXT column: the numbers equal to the id (SQLite
 *	stores text that reads as a number as that number, so in an INTEGER
 *	column these are all the tenant's rows but rare text ones), or a text
 *	or blob (ordered after every number) that reads as the id.
 *	everything else: ssfdw_tenant.
 */
void
shard_tenant_match(StringInfo buf, const char *qual, const char *column,
				   const ShardTenantRule *rule, const char *param)
{
	append_match(buf, qual, column, rule, param, 0);
}

/*
 * shard_tenant_condition
 *		Append the SQLite condition "the row's tenant is [not] one of ids",
 *		with the ids bound as parameter ?paramno, whose value is returned.
 *
 * One id is compared by shard_tenant_match (an index finds it); more are
 * one JSON array read by json_each.  A row of no tenant (a NULL, or a
 * value ssfdw_tenant reads as no tenant's) is in no list, and not
 * excluded by a negated one.
 *
 * flags: SHARD_TENANT_NO_INDEX asks for the same condition in a form that
 * no index on the tenant column serves (the column behind a unary "+"), for
 * a read that another index finds fewer rows by (a short time range of a
 * large tenant: timeindex.c).  It keeps exactly the same rows.
 */
ShardValue
shard_tenant_condition(StringInfo buf, const char *column,
					   const ShardTenantRule *rule, List *ids, bool negate,
					   int paramno, int flags)
{
	StringInfoData key;
	ShardValue	bind;
	char		param[16];

	Assert(ids != NIL);
	snprintf(param, sizeof(param), "?%d", paramno);
	memset(&bind, 0, sizeof(bind));
	bind.type = SQLITE_TEXT;
	if (rule->file_tenant != NULL)
	{
		bool		listed = false;
		ListCell   *lc;

		/*
		 * The whole file is the tenant's: decided here, with the parameter
		 * still bound (and never NULL) so that the statement's parameters
		 * stay numbered as the caller planned them.
		 */
		foreach(lc, ids)
			if (strcmp((const char *) lfirst(lc), rule->file_tenant) == 0)
				listed = true;
		appendStringInfo(buf, "%s IS %sNULL", param,
						 listed != negate ? "NOT " : "");
		bind.u.p = (char *) rule->file_tenant;
		bind.len = strlen(bind.u.p);
		return bind;
	}
	if (list_length(ids) == 1 && !negate)
	{
		append_match(buf, "", column, rule, param, flags);
		bind.u.p = linitial(ids);
	}
	else
	{
		StringInfoData json;
		ListCell   *lc;

		initStringInfo(&key);
		if (text_compared(rule))
		{
			append_indexed_column(&key, "", column, flags);
			appendStringInfoString(&key, " COLLATE BINARY");
		}
		else
			shard_tenant_key(&key, "", column, rule);

		initStringInfo(&json);
		appendStringInfoChar(&json, '[');
		foreach(lc, ids)
		{
			if (json.len > 1)
				appendStringInfoChar(&json, ',');
			escape_json(&json, (const char *) lfirst(lc));
		}
		appendStringInfoChar(&json, ']');
		bind.u.p = json.data;
		if (negate)
			appendStringInfo(buf,
							 "coalesce(%s NOT IN (SELECT value FROM json_each(%s)), 1)",
							 key.data, param);
		else
			appendStringInfo(buf, "%s IN (SELECT value FROM json_each(%s))",
							 key.data, param);
		pfree(key.data);
	}
	bind.len = strlen(bind.u.p);
	return bind;
}

/*
 * canonical_integer
 *		Is id the decimal form of a value of an integer column of bits (no
 *		sign but a minus, no leading zero), the only text a tenant of that
 *		column has as its id, which may be written into SQL as it is?
 */
static bool
canonical_integer(const char *id, int bits)
{
	const char *p = id;
	char	   *end;
	long long	v;

	if (*p == '-')
		p++;
	if (*p < '1' || *p > '9')
		return strcmp(id, "0") == 0;
	errno = 0;
	v = strtoll(id, &end, 10);
	if (errno != 0 || *end != '\0' || strspn(p, "0123456789") != strlen(p))
		return false;
	return bits == 64 ||
		(v >= -(1LL << (bits - 1)) && v <= (1LL << (bits - 1)) - 1);
}

/*
 * canonical_uuid_hex
 *		The 32 hex digits of id, when it is a uuid tenant's id (lower-case,
 *		hyphenated as uuid_out writes it), into hex; false otherwise.
 */
static bool
canonical_uuid_hex(const char *id, char *hex)
{
	int			n = 0;
	int			i;

	for (i = 0; id[i] != '\0'; i++)
	{
		bool		hyphen = (i == 8 || i == 13 || i == 18 || i == 23);

		if (hyphen ? id[i] != '-' :
			!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
		if (!hyphen)
			hex[n++] = id[i];
	}
	hex[n] = '\0';
	return i == 36;
}

/*
 * append_integer_text_match
 *		Append "the text value v reads as the integer id" as PostgreSQL's
 *		integer input reads it: white space around, a sign, leading zeros.
 *		id is the canonical decimal form of a value of the column's type.
 */
static void
append_integer_text_match(StringInfo buf, const char *v, const char *id)
{
	char	   *t = psprintf("trim(%s, " SQL_INT_SPACE ")", v);
	char	   *unsigned_part = psprintf("CASE WHEN substr(%s, 1, 1) IN ('+', '-') "
										 "THEN substr(%s, 2) ELSE %s END",
										 t, t, t);

	if (strcmp(id, "0") == 0)
		appendStringInfo(buf, "(%s) <> '' AND ltrim(%s, '0') = ''",
						 unsigned_part, unsigned_part);
	else if (id[0] == '-')
	{
		appendStringInfo(buf, "substr(%s, 1, 1) = '-' AND ltrim(substr(%s, 2), '0') = ",
						 t, t);
		shard_append_sql_literal(buf, id + 1);
	}
	else
	{
		appendStringInfo(buf, "substr(%s, 1, 1) <> '-' AND ltrim(%s, '0') = ",
						 t, unsigned_part);
		shard_append_sql_literal(buf, id);
	}
}

/*
 * append_uuid_text_forms
 *		Append the list of the lower-case texts of the uuid whose 32 hex
 *		digits are hex that uuid_in reads, braces aside: a hyphen after any
 *		of the first seven groups of four, or none.
 */
static void
append_uuid_text_forms(StringInfo buf, const char *hex)
{
	int			mask;

	appendStringInfoChar(buf, '(');
	for (mask = 0; mask < (1 << (UUID_GROUPS - 1)); mask++)
	{
		int			g;

		appendStringInfoString(buf, mask > 0 ? ", '" : "'");
		for (g = 0; g < UUID_GROUPS; g++)
		{
			appendBinaryStringInfo(buf, hex + g * 4, 4);
			if (g < UUID_GROUPS - 1 && (mask & (1 << g)))
				appendStringInfoChar(buf, '-');
		}
		appendStringInfoChar(buf, '\'');
	}
	appendStringInfoChar(buf, ')');
}

/*
 * shard_tenant_trigger_match
 *		Append "the row (NEW or OLD) is tenant id's" for a trigger, as plain
 *		SQLite SQL: triggers fire in every connection that writes the shard,
 *		the application's included, where ssfdw_tenant does not exist.  The
 *		same rule as ssfdw_tenant's (tenantkey.c), spelled for one id: a
 *		trigger's NEW and OLD carry no affinity, so each storage class is
 *		tested for itself.
 */
void
shard_tenant_trigger_match(StringInfo buf, const char *row,
						   const char *column, const ShardTenantRule *rule,
						   const char *id)
{
	char	   *qual = psprintf("%s.", row);
	StringInfoData v;

	initStringInfo(&v);
	append_column(&v, qual, column);

	if (rule->kind == SHARDIO_TENANT_TEXT)
	{
		appendStringInfo(buf, "(typeof(%s) IN ('text', 'integer') AND CAST(%s AS TEXT) COLLATE BINARY = ",
						 v.data, v.data);
		shard_append_sql_literal(buf, id);
		appendStringInfoChar(buf, ')');
	}
	else if (rule->kind == SHARDIO_TENANT_UUID)
	{
		char		hex[UUID_HEX + 1];
		char	   *unbraced;

		if (!canonical_uuid_hex(id, hex))
		{
			appendStringInfoString(buf, "0");	/* no stored value reads as it */
			return;
		}
		unbraced = psprintf("lower(CASE WHEN %s GLOB '{*}' THEN substr(%s, 2, length(%s) - 2) ELSE %s END)",
							v.data, v.data, v.data, v.data);
		/* the cheap test first: only the tenant's own rows reach the list */
		appendStringInfo(buf, "(%s = X'%s' OR typeof(%s) = 'text' AND replace(%s, '-', '') = '%s' AND %s IN ",
						 v.data, hex, v.data, unbraced, hex, unbraced);
		append_uuid_text_forms(buf, hex);
		appendStringInfoChar(buf, ')');
	}
	else if (!canonical_integer(id, rule->kind))
		appendStringInfoString(buf, "0");	/* no stored value reads as it */
	else
	{
		/* the most negative bigint has no literal of its own */
		if (strcmp(id, "-9223372036854775808") == 0)
			appendStringInfo(buf, "(%s = (-9223372036854775807 - 1)", v.data);
		else
			appendStringInfo(buf, "(%s = %s", v.data, id);
		appendStringInfo(buf, " OR typeof(%s) = 'text' AND ", v.data);
		append_integer_text_match(buf, v.data, id);
		appendStringInfoChar(buf, ')');
	}
	pfree(v.data);
}

/*
 * append_as_read
 *		Append a stored text value (expr) as PostgreSQL reads it into a
 *		tenant column of basetype and typmod: a char(n) value without its
 *		trailing spaces, a varchar(n) value without the spaces beyond n
 *		characters (as ssfdw_varchar, but text too long is left as it is
 *		rather than an error: it never equals a value read, and a condition
 *		must not fail on a row it does not keep).
 */
static void
append_as_read(StringInfo buf, const char *expr, Oid basetype, int32 typmod)
{
	if (basetype == BPCHAROID)
		appendStringInfo(buf, "rtrim(%s, ' ')", expr);
	else if (basetype == VARCHAROID && typmod >= (int32) VARHDRSZ)
	{
		int			n = typmod - VARHDRSZ;

		appendStringInfo(buf,
						 "CASE WHEN rtrim(substr(%s, %d), ' ') = '' THEN substr(%s, 1, %d) ELSE %s END",
						 expr, n + 1, expr, n, expr);
	}
	else
		appendStringInfoString(buf, expr);
}

/*
 * shard_tenant_row_condition
 *		Append the condition of a row-by-row UPDATE or DELETE that the row
 *		its rowid or key names still holds the tenant value the scan read,
 *		given as its id in parameter ?paramno (NULL for a NULL), for a
 *		tenant column of type typid and typmod.
 *
 * The scan chose the rows (a routed one by shard_tenant_condition, byte
 * for byte); this only checks that the row found again is the one read,
 * so it compares the stored value as the scan read it.  A value that is
 * no tenant's id (a real in a text column) is compared as the text the
 * scan read it as.  A char(n) value read back has lost the trailing spaces
 * it was stored with (PostgreSQL pads it, and its id drops the pad), and a
 * varchar(n) value the spaces beyond n characters (as varchar's input
 * drops them): so a row stored as 'a  ' that a scan over every shard read
 * is changed where it is, as a statement run inside the shards changes it.
 */
void
shard_tenant_row_condition(StringInfo buf, const char *column, Oid typid,
						   int32 typmod, int paramno)
{
	StringInfoData key;
	StringInfoData text;
	ShardTenantRule rule;
	int32		basetypmod = -1;
	Oid			basetype = getBaseTypeAndTypmod(typid, &basetypmod);

	if (basetype != typid)
		typmod = basetypmod;
	initStringInfo(&key);
	shard_tenant_rule_init(&rule, shard_tenant_kind(typid), NULL, NULL);
	shard_tenant_key(&key, "", column, &rule);
	initStringInfo(&text);
	appendStringInfoString(&text, "CAST(");
	shard_quote_identifier(&text, column);
	appendStringInfoString(&text, " AS TEXT)");

	appendStringInfoChar(buf, '(');
	append_as_read(buf, key.data, basetype, typmod);
	appendStringInfo(buf, " IS ?%d OR %s IS NULL AND ", paramno, key.data);
	append_as_read(buf, text.data, basetype, typmod);
	appendStringInfo(buf, " IS ?%d)", paramno);
	pfree(key.data);
	pfree(text.data);
}

/*
 * shard_tenant_file_row_condition
 *		shard_tenant_row_condition for a tenant's own file, which stores no
 *		tenant column: the file's tenant is the id the scan read, in
 *		parameter ?paramno.
 */
void
shard_tenant_file_row_condition(StringInfo buf, int paramno)
{
	appendStringInfo(buf, "ssfdw_file_tenant(0) IS ?%d", paramno);
}

/*
 * shard_tenant_spec
 *		What a server's foreign tables say of the tenant tables of its
 *		shards: each table a foreign table reads, by the tenant column it
 *		names and its type's kind (a reference table by none), and for
 *		every other table the names a tenant column may have ("tenant_id"
 *		and each foreign table's "tenant_column") with the kind the foreign
 *		tables' tenant columns share (text when they differ).
 */
ShardTenantSpec *
shard_tenant_spec(Oid serverid)
{
	ShardTenantSpec *spec = palloc0(sizeof(ShardTenantSpec));
	Relation	rel = table_open(ForeignTableRelationId, AccessShareLock);
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, NULL, 0,
										  NULL);
	HeapTuple	tup;
	bool		first = true;

	spec->columns = list_make1(pstrdup("tenant_id"));
	spec->kind = SHARDIO_TENANT_TEXT;
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_foreign_table ft = (Form_pg_foreign_table) GETSTRUCT(tup);
		ShardSpecTable *st;
		char	   *name;
		ListCell   *lc;
		bool		known = false;
		Relation	ftrel;
		int			i;

		if (ft->ftserver != serverid)
			continue;
		name = get_rel_name(ft->ftrelid);
		if (name == NULL)
			continue;
		st = palloc0(sizeof(ShardSpecTable));
		st->table = name;
		st->column = "tenant_id";
		st->kind = SHARDIO_TENANT_TEXT;
		foreach(lc, GetForeignTable(ft->ftrelid)->options)
		{
			DefElem    *def = lfirst(lc);

			if (strcmp(def->defname, "table") == 0)
				st->table = defGetString(def);
			else if (strcmp(def->defname, "tenant_column") == 0)
				st->column = defGetString(def);
			else if (strcmp(def->defname, "distribution") == 0 &&
					 strcmp(defGetString(def), "reference") == 0)
				st->reference = true;
		}
		spec->named = lappend(spec->named, st);
		if (st->reference)
			continue;

		/* the kind of the foreign table's column for the tenant column */
		ftrel = relation_open(ft->ftrelid, AccessShareLock);
		for (i = 0; i < RelationGetDescr(ftrel)->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(RelationGetDescr(ftrel), i);

			if (!att->attisdropped &&
				pg_strcasecmp(shard_column_name(ft->ftrelid, att->attnum),
							  st->column) == 0)
			{
				st->kind = shard_tenant_kind(att->atttypid);
				break;
			}
		}
		relation_close(ftrel, AccessShareLock);
		if (first)
			spec->kind = st->kind;
		else if (spec->kind != st->kind)
			spec->kind = SHARDIO_TENANT_TEXT;
		first = false;

		foreach(lc, spec->columns)
			known |= (pg_strcasecmp(lfirst(lc), st->column) == 0);
		if (!known)
			spec->columns = lappend(spec->columns, st->column);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return spec;
}

/*
 * shard_tenant_spec_table
 *		Is a table of a shard, whose columns are named in columns, a tenant
 *		table?  Its tenant column as the shard spells it, with the kind in
 *		*kind, or NULL when it holds no tenant's rows: a reference table, a
 *		table that lacks the column its foreign table names, or a table no
 *		foreign table reads without any of the tenant column names.
 *		SQLite's names ignore ASCII case.
 */
const char *
shard_tenant_spec_table(ShardTenantSpec *spec, const char *table,
						List *columns, int *kind)
{
	ListCell   *lc;
	ListCell   *ln;

	foreach(lc, spec->named)
	{
		ShardSpecTable *st = lfirst(lc);

		if (pg_strcasecmp(st->table, table) != 0)
			continue;
		if (st->reference)
			return NULL;
		*kind = st->kind;
		foreach(ln, columns)
			if (pg_strcasecmp(lfirst(ln), st->column) == 0)
				return lfirst(ln);
		return NULL;
	}
	*kind = spec->kind;
	foreach(lc, spec->columns)
		foreach(ln, columns)
			if (pg_strcasecmp(lfirst(ln), lfirst(lc)) == 0)
				return lfirst(ln);
	return NULL;
}
