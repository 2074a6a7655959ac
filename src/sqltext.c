/*-------------------------------------------------------------------------
 *
 * sqltext.c
 *		  Helpers that write SQLite SQL text
 *
 * The SQL this wrapper writes for the shards names their tables and
 * columns through shard_quote_identifier, so that no name from a catalog
 * or a shard file can change a statement, and shard_unquote_identifier
 * reads such a name back out of SQL already written; text that cannot be
 * bound is written as a literal by shard_append_sql_literal.  Both planes use
 * them: the planner's deparser, the scans and writes, the admin functions
 * and the moves.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

/*
 * shard_quote_identifier
 *		Append an SQLite identifier in double quotes, doubling any quote in
 *		it, so that no name from a catalog can change the statement.
 */
void
shard_quote_identifier(StringInfo buf, const char *ident)
{
	const char *p;

	appendStringInfoChar(buf, '"');
	for (p = ident; *p; p++)
	{
		if (*p == '"')
			appendStringInfoChar(buf, '"');
		appendStringInfoChar(buf, *p);
	}
	appendStringInfoChar(buf, '"');
}

/*
 * shard_unquote_identifier
 *		The name an identifier that shard_quote_identifier wrote at the
 *		start of sql stands for, and in *end where it ends; NULL when sql
 *		starts with no quoted identifier.
 */
char *
shard_unquote_identifier(const char *sql, const char **end)
{
	StringInfoData name;
	const char *p;

	if (sql[0] != '"')
		return NULL;
	initStringInfo(&name);
	for (p = sql + 1; *p && !(*p == '"' && p[1] != '"'); p++)
	{
		if (*p == '"')
			p++;
		appendStringInfoChar(&name, *p);
	}
	if (*p != '"')
		return NULL;
	*end = p + 1;
	return name.data;
}

/*
 * shard_append_sql_literal
 *		Append text as an SQLite string literal, single quotes doubled:
 *		for what cannot take bound values (trigger DDL, a name in an error
 *		message SQLite raises).
 */
void
shard_append_sql_literal(StringInfo buf, const char *text)
{
	const char *p;

	appendStringInfoChar(buf, '\'');
	for (p = text; *p; p++)
	{
		if (*p == '\'')
			appendStringInfoChar(buf, '\'');
		appendStringInfoChar(buf, *p);
	}
	appendStringInfoChar(buf, '\'');
}
