/*-------------------------------------------------------------------------
 *
 * option.c
 *		  Options, privileges and settings of sqlite_shard_fdw
 *
 * The validator checks every option against one table, at CREATE and ALTER
 * time, so a mistyped name or a bad value fails when it is written rather
 * than at the first query.  Options that name files follow file_fdw: only
 * superusers and members of pg_read_server_files may point a server at a
 * file, or let its shard paths leave the directory's folder
 * (allow_outside_paths).  Since PostgreSQL hands the validator every option
 * of the server, not only those that change, a role without that privilege
 * cannot alter any option of a server that names a file, and is told so.
 * This file also holds _PG_init and the extension's settings.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <math.h>
#include <unistd.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "compat.h"
#include "plan/eageragg.h"
#include "plan/rollupanswer.h"

PG_MODULE_MAGIC;

static ShardServerOptions *read_server_options(Oid serverid);
static ShardTableOptions *read_table_options(Relation rel);
static ShardServerOptions *copy_server_options(const ShardServerOptions *src,
											   MemoryContext cxt);
static ShardTableOptions *copy_table_options(const ShardTableOptions *src,
											 MemoryContext cxt);

/* Where each option may appear. */
typedef struct ShardOption
{
	const char *name;
	Oid			context;		/* catalog the option belongs to */
} ShardOption;

static const ShardOption shard_options[] = {
	{"directory", ForeignServerRelationId},
	{"shard_path", ForeignServerRelationId},
	{"busy_timeout_ms", ForeignServerRelationId},
	{"max_shard_bytes", ForeignServerRelationId},
	{"on_missing_shard", ForeignServerRelationId},
	{"analyze_values", ForeignServerRelationId},
	{"batch_size", ForeignServerRelationId},
	{"allow_outside_paths", ForeignServerRelationId},
	{"auto_register", ForeignServerRelationId},
	{"truncatable", ForeignServerRelationId},
	{"layout", ForeignServerRelationId},
	{"tenant_path", ForeignServerRelationId},
	{"tenant_template", ForeignServerRelationId},
	{"archive_folder", ForeignServerRelationId},
	{"missing_column", ForeignServerRelationId},
	{"missing_table", ForeignServerRelationId},
	{"table", ForeignTableRelationId},
	{"auto_register", ForeignTableRelationId},
	{"batch_size", ForeignTableRelationId},
	{"tenant_column", ForeignTableRelationId},
	{"distribution", ForeignTableRelationId},
	{"reference_shard", ForeignTableRelationId},
	{"analyze_values", ForeignTableRelationId},
	{"truncatable", ForeignTableRelationId},
	{"missing_column", ForeignTableRelationId},
	{"missing_table", ForeignTableRelationId},
	{"column", AttributeRelationId},
	{"tenants", UserMappingRelationId},
	{NULL, InvalidOid}
};

#define DEFAULT_BUSY_TIMEOUT_MS 5000
#define MAX_BUSY_TIMEOUT_MS 3600000	/* one hour */
#define DEFAULT_BATCH_SIZE 1000
#define DEFAULT_MAX_SHARD_BYTES (INT64CONST(10) * 1000 * 1000 * 1000)

/* GUC: how many shard handles a backend keeps open when idle. */
/* Values of sqlite_shard_fdw.unknown_tenants. */
static const struct config_enum_entry unknown_tenants_options[] = {
	{"off", UNKNOWN_TENANTS_OFF, false},
	{"warning", UNKNOWN_TENANTS_WARNING, false},
	{"error", UNKNOWN_TENANTS_ERROR, false},
	{NULL, 0, false}
};

int			shard_max_open_shards = 1000;

/*
 * GUC: how many shards a fan-out reads at once (1: one after another).  Its
 * boot value, the number of CPUs, is known only when _PG_init runs; until
 * then the variable holds 0, the one value besides the boot value that
 * PostgreSQL accepts in a setting's C variable.
 */
int			shard_fanout_parallelism = 0;
double		shard_quick_shard_ms = 0.25;

void		_PG_init(void);

PG_FUNCTION_INFO_V1(sqlite_shard_fdw_validator);

/*
 * _PG_init
 *		Check the SQLite library, define the extension's settings and
 *		reserve their prefix.
 */
void
_PG_init(void)
{
	/*
	 * The SQLite library is the one the server's dynamic linker found, not
	 * necessarily the one this was compiled against.  The wrapper's SQL
	 * reads sqlite_schema (3.33.0), writes ask for transaction states
	 * (3.34.0), and fan-out threads share handles, which needs a library
	 * built with its mutexes.
	 */
	if (sqlite3_libversion_number() < SHARDIO_MIN_SQLITE_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("sqlite_shard_fdw needs SQLite 3.34.0 or later, but the server loaded SQLite %s",
						sqlite3_libversion()),
				 errhint("Install a newer SQLite library (libsqlite3) on the server.")));
	if (sqlite3_threadsafe() == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the SQLite library the server loaded was built without thread support"),
				 errdetail("sqlite_shard_fdw reads shards on several threads, which needs SQLite built with SQLITE_THREADSAFE=1 or 2."),
				 errhint("Install an SQLite library built with thread support on the server.")));

	/* SQLite's lock waits on the backend end when an interrupt is pending. */
	shardio_set_interrupt_check(shard_interrupts_pending);
	/* ... and show in pg_stat_activity (waits.c). */
	shardio_set_wait_report(shard_report_lock_wait);

	/*
	 * Fan-out threads allocate heavily inside SQLite; its allocation
	 * statistics would make them take one global mutex for every malloc.
	 * This must precede SQLite's initialization in this process.
	 */
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);

	DefineCustomIntVariable("sqlite_shard_fdw.max_open_shards",
							"Maximum number of idle SQLite shard handles kept open per backend.",
							"Handles beyond this are closed, least recently used first; "
							"a query may still read more shards than this.",
							&shard_max_open_shards,
							1000, 1, 100000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	{
		long		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		int			dflt = (ncpu < 1) ? 1 : (ncpu > 64 ? 64 : (int) ncpu);

		DefineCustomIntVariable("sqlite_shard_fdw.fanout_parallelism",
								"Number of shards a fan-out reads at the same time, on worker threads.",
								"The default is the number of CPUs; 1 reads the shards one after another in the backend.",
								&shard_fanout_parallelism,
								dflt, 1, 256,
								PGC_USERSET, 0,
								NULL, NULL, NULL);
	}

	/*
	 * The test hook of scanread.c's reading in the backend: how long a shard
	 * of a sorted, limited fan-out may take before the rest go to the
	 * threads (0: after the first).
	 */
	DefineCustomRealVariable("sqlite_shard_fdw.quick_shard_ms",
							 "Milliseconds a shard of a sorted, limited fan-out read in the backend may take before the worker threads read the rest.",
							 NULL,
							 &shard_quick_shard_ms,
							 0.25, 0.0, 1000.0,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("sqlite_shard_fdw.aggregate_pushdown",
							 "Computes GROUP BY and aggregates inside the shards when the result is exact.",
							 NULL,
							 &shard_aggregate_pushdown,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("sqlite_shard_fdw.join_pushdown",
							 "Runs joins of foreign tables on their tenant column inside the shards when the result is exact.",
							 NULL,
							 &shard_join_pushdown,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("sqlite_shard_fdw.auto_register",
							 "Lets an INSERT or COPY register the tenants the directory does not know where the option \"auto_register\" is set.",
							 "Off refuses such rows in this session, whatever the options say.",
							 &shard_auto_register,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("sqlite_shard_fdw.unknown_tenants",
							 "What a routed read does for a tenant the directory does not know.",
							 "off reads nothing; warning and error look for the tenant's rows in the read table on every shard, and warn or fail when a shard holds some.",
							 &shard_unknown_tenants,
							 UNKNOWN_TENANTS_WARNING,
							 unknown_tenants_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("sqlite_shard_fdw.thread_aggregation",
							 "Groups the shards' rows on the threads that read them, instead of by SQLite's GROUP BY.",
							 "Shards with many groups fall back to SQLite's GROUP BY.",
							 &shard_thread_aggregation,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	shard_move_define_gucs();
	shard_commitlog_define_gucs();
	shard_rollupanswer_init();
	shard_eageragg_init();
	shard_conn_define_gucs();
	shard_progress_init();
	MarkGUCPrefixReserved_compat("sqlite_shard_fdw");
}

/*
 * is_valid_option
 *		Does the option table allow this name in this catalog?
 */
static bool
is_valid_option(const char *name, Oid context)
{
	const ShardOption *opt;

	for (opt = shard_options; opt->name; opt++)
		if (opt->context == context && strcmp(opt->name, name) == 0)
			return true;
	return false;
}

/*
 * report_invalid_option
 *		Reject an option name, suggesting the closest valid one as
 *		postgres_fdw does.
 */
static void
report_invalid_option(const char *name, Oid context)
{
	const ShardOption *opt;
	bool		has_valid = false;
	const char *closest = NULL;
	int			best = 5;		/* suggest nothing further away than 4 edits */

	for (opt = shard_options; opt->name; opt++)
	{
		int			dist;

		if (opt->context != context)
			continue;
		has_valid = true;
		dist = varstr_levenshtein(name, strlen(name), opt->name,
								  strlen(opt->name), 1, 1, 1, false);
		if (dist < best && dist < (int) strlen(opt->name))
		{
			best = dist;
			closest = opt->name;
		}
	}
	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
			 errmsg("invalid option \"%s\"", name),
			 has_valid ?
			 (closest != NULL ?
			  errhint("Perhaps you meant the option \"%s\".", closest) : 0) :
			 errhint("There are no valid options in this context.")));
}

/*
 * parse_size_option
 *		Parse a byte count, with an optional unit (B, kB, MB, GB, TB, in
 *		any case, 1024-based as PostgreSQL's memory settings read them), as
 *		the max_shard_bytes option accepts it.
 */
static int64
parse_size_option(const char *name, const char *value)
{
	char	   *end;
	double		num;
	int64		mult = 1;

	errno = 0;
	num = strtod(value, &end);
	while (*end == ' ')
		end++;
	if (*end != '\0')
	{
		if (pg_strcasecmp(end, "B") == 0)
			mult = 1;
		else if (pg_strcasecmp(end, "kB") == 0)
			mult = 1024;
		else if (pg_strcasecmp(end, "MB") == 0)
			mult = 1024 * 1024;
		else if (pg_strcasecmp(end, "GB") == 0)
			mult = INT64CONST(1024) * 1024 * 1024;
		else if (pg_strcasecmp(end, "TB") == 0)
			mult = INT64CONST(1024) * 1024 * 1024 * 1024;
		else
			mult = -1;
	}
	if (end == value || errno != 0 || mult < 0 || isnan(num) ||
		num * mult < 1 || num * mult >= 9.2e18)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("invalid value for option \"%s\": \"%s\"", name, value),
				 errhint("Give a positive number of bytes, optionally followed by B, kB, MB, GB or TB (1 kB is 1024 bytes).")));
	return (int64) (num * mult);
}

/*
 * parse_int_option
 *		Parse a non-negative integer option value.
 */
static int
parse_int_option(const char *name, const char *value)
{
	int			result;

	if (!parse_int(value, &result, 0, NULL) || result < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("invalid value for option \"%s\": \"%s\"", name, value),
				 errhint("Give a non-negative integer.")));
	return result;
}

/*
 * parse_bool_option
 *		Parse a Boolean option value, spelled as PostgreSQL's Booleans are.
 */
static bool
parse_bool_option(const char *name, const char *value)
{
	bool		result;

	if (!parse_bool(value, &result))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("invalid value for option \"%s\": \"%s\"", name, value),
				 errhint("Give a Boolean value, such as \"true\" or \"false\".")));
	return result;
}

/*
 * check_nonempty
 *		Reject an empty value for an option that names something.
 */
static void
check_nonempty(const char *name, const char *value)
{
	if (value[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("option \"%s\" must not be empty", name)));
}

/*
 * check_shard_path_pattern
 *		A shard_path pattern must contain exactly one %s (the shard id) and
 *		no other conversion, since it is expanded with snprintf-like rules.
 */
static void
check_shard_path_pattern(const char *value)
{
	const char *p;
	int			nsubst = 0;

	for (p = value; *p; p++)
	{
		if (*p != '%')
			continue;
		if (p[1] == 's')
			nsubst++;
		else if (p[1] != '%')
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("invalid value for option \"shard_path\": \"%s\"", value),
					 errdetail("Only %%s (the shard id) and %%%% may follow a percent sign.")));
		p++;
	}
	if (nsubst != 1)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("invalid value for option \"shard_path\": \"%s\"", value),
				 errdetail("The pattern must contain %%s exactly once.")));
}

/*
 * shard_require_file_privilege
 *		Only superusers and members of pg_read_server_files (or, for writes,
 *		pg_write_server_files) may make the server touch files of their
 *		choosing, as with file_fdw.  A function that both writes and reads
 *		files calls this twice.  message and detail are the caller's whole
 *		sentences, marked for translation ("permission denied to add a
 *		shard"); the detail's one %s is the role needed.
 */
void
shard_require_file_privilege(bool write, const char *message,
							 const char *detail)
{
	Oid			role = write ? ROLE_PG_WRITE_SERVER_FILES : ROLE_PG_READ_SERVER_FILES;

	if (!has_privs_of_role(GetUserId(), role))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s", _(message)),
				 errdetail(detail,
						   write ? "pg_write_server_files" : "pg_read_server_files")));
}

/*
 * require_file_option_privilege
 *		Refuse a server whose option "name" names files (or where they may
 *		be) to a role without the privileges of pg_read_server_files.  The
 *		validator sees the server's whole option list, so the role may be
 *		changing another option: the message says that the server's options
 *		as a whole were refused, and why.
 */
static void
require_file_option_privilege(const char *name)
{
	if (!has_privs_of_role(GetUserId(), ROLE_PG_READ_SERVER_FILES))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to create or alter a server with option \"%s\"",
						name),
				 errdetail("Option \"%s\" decides which files the server reads: only roles with privileges of the \"pg_read_server_files\" role may create a sqlite_shard_fdw server with it or change any option of such a server.",
						   name)));
}

/*
 * parse_tenant_list
 *		Split a "tenants" option into tenant ids: comma-separated, blanks
 *		around an id ignored, an id in double quotes may contain commas and
 *		doubled quotes.  Returns a List of C strings.
 */
static List *
parse_tenant_list(const char *value)
{
	List	   *result = NIL;
	const char *p = value;

	for (;;)
	{
		StringInfoData id;

		initStringInfo(&id);
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '"')
		{
			p++;
			for (;;)
			{
				if (*p == '\0')
					ereport(ERROR,
							(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
							 errmsg("invalid value for option \"tenants\": \"%s\"", value),
							 errdetail("A quoted tenant id is not closed.")));
				if (*p == '"' && p[1] == '"')
				{
					appendStringInfoChar(&id, '"');
					p += 2;
				}
				else if (*p == '"')
				{
					p++;
					break;
				}
				else
					appendStringInfoChar(&id, *p++);
			}
			while (*p == ' ' || *p == '\t')
				p++;
		}
		else
		{
			while (*p && *p != ',')
				appendStringInfoChar(&id, *p++);
			while (id.len > 0 && (id.data[id.len - 1] == ' ' ||
								  id.data[id.len - 1] == '\t'))
				id.data[--id.len] = '\0';
		}
		if (id.len == 0)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("invalid value for option \"tenants\": \"%s\"", value),
					 errdetail("Tenant ids must not be empty.")));
		result = lappend(result, id.data);
		if (*p == '\0')
			break;
		if (*p != ',')
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("invalid value for option \"tenants\": \"%s\"", value),
					 errdetail("Separate tenant ids with commas.")));
		p++;
	}
	return result;
}

/*
 * sqlite_shard_fdw_validator
 *		Check the options of a server, foreign table, column or user
 *		mapping of this wrapper.
 */
Datum
sqlite_shard_fdw_validator(PG_FUNCTION_ARGS)
{
	List	   *options = untransformRelOptions(PG_GETARG_DATUM(0));
	Oid			catalog = PG_GETARG_OID(1);
	bool		has_directory = false;
	bool		has_shard_path = false;
	bool		has_tenant_path = false;
	bool		file_per_tenant = false;
	bool		has_tenant_column = false;
	bool		has_reference_shard = false;
	bool		reference = false;
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);
		char	   *value = defGetString(def);

		if (!is_valid_option(def->defname, catalog))
			report_invalid_option(def->defname, catalog);

		if (strcmp(def->defname, "directory") == 0)
		{
			check_nonempty(def->defname, value);
			if (!is_absolute_path(value))
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("option \"directory\" must be an absolute path")));
			require_file_option_privilege(def->defname);
			has_directory = true;
		}
		else if (strcmp(def->defname, "shard_path") == 0)
		{
			check_nonempty(def->defname, value);
			check_shard_path_pattern(value);
			require_file_option_privilege(def->defname);
			has_shard_path = true;
		}
		else if (strcmp(def->defname, "tenant_path") == 0)
		{
			shard_tenant_path_check(value);
			require_file_option_privilege(def->defname);
			has_tenant_path = true;
		}
		else if (strcmp(def->defname, "tenant_template") == 0 ||
				 strcmp(def->defname, "archive_folder") == 0)
		{
			check_nonempty(def->defname, value);
			require_file_option_privilege(def->defname);
		}
		else if (strcmp(def->defname, "layout") == 0)
		{
			if (strcmp(value, "shared") != 0 &&
				strcmp(value, "file_per_tenant") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("invalid value for option \"layout\": \"%s\"", value),
						 errhint("Valid values are \"shared\" and \"file_per_tenant\".")));
			file_per_tenant = (strcmp(value, "file_per_tenant") == 0);
		}
		else if (strcmp(def->defname, "allow_outside_paths") == 0)
		{
			(void) parse_bool_option(def->defname, value);
			require_file_option_privilege(def->defname);
		}
		else if (strcmp(def->defname, "auto_register") == 0)
		{
			(void) parse_bool_option(def->defname, value);
			if (!has_privs_of_role(GetUserId(), ROLE_PG_WRITE_SERVER_FILES))
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("permission denied to set or keep option \"auto_register\""),
						 errdetail("With option \"auto_register\" every role that inserts rows writes the directory file: only roles with privileges of the \"pg_write_server_files\" role may set it, or change any option where it is set.")));
		}
		else if (strcmp(def->defname, "busy_timeout_ms") == 0)
		{
			if (parse_int_option(def->defname, value) > MAX_BUSY_TIMEOUT_MS)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("invalid value for option \"busy_timeout_ms\": \"%s\"",
								value),
						 errdetail("The busy timeout is at most %d milliseconds (one hour).",
								   MAX_BUSY_TIMEOUT_MS)));
		}
		else if (strcmp(def->defname, "max_shard_bytes") == 0)
			(void) parse_size_option(def->defname, value);
		else if (strcmp(def->defname, "on_missing_shard") == 0)
		{
			if (strcmp(value, "error") != 0 && strcmp(value, "skip") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("invalid value for option \"on_missing_shard\": \"%s\"", value),
						 errhint("Valid values are \"error\" and \"skip\".")));
		}
		else if (strcmp(def->defname, "missing_column") == 0)
		{
			if (strcmp(value, "error") != 0 && strcmp(value, "null") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("invalid value for option \"missing_column\": \"%s\"", value),
						 errhint("Valid values are \"error\" and \"null\".")));
		}
		else if (strcmp(def->defname, "missing_table") == 0)
		{
			if (strcmp(value, "error") != 0 && strcmp(value, "empty") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("invalid value for option \"missing_table\": \"%s\"", value),
						 errhint("Valid values are \"error\" and \"empty\".")));
		}
		else if (strcmp(def->defname, "tenants") == 0)
			(void) parse_tenant_list(value);
		else if (strcmp(def->defname, "analyze_values") == 0 ||
				 strcmp(def->defname, "truncatable") == 0)
			(void) parse_bool_option(def->defname, value);
		else if (strcmp(def->defname, "distribution") == 0)
		{
			if (strcmp(value, "tenant") != 0 && strcmp(value, "reference") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("invalid value for option \"distribution\": \"%s\"", value),
						 errhint("Valid values are \"tenant\" and \"reference\".")));
			reference = (strcmp(value, "reference") == 0);
		}
		else if (strcmp(def->defname, "batch_size") == 0)
		{
			if (parse_int_option(def->defname, value) < 1)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("invalid value for option \"batch_size\": \"%s\"", value),
						 errhint("Give a positive integer.")));
		}
		else
			check_nonempty(def->defname, value);
		if (strcmp(def->defname, "tenant_column") == 0)
			has_tenant_column = true;
		else if (strcmp(def->defname, "reference_shard") == 0)
			has_reference_shard = true;
	}

	if (catalog == ForeignServerRelationId && !has_directory)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("option \"directory\" is required for a sqlite_shard_fdw server")));
	if (has_tenant_path && !file_per_tenant)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("option \"tenant_path\" needs option \"layout\" set to \"file_per_tenant\""),
				 errdetail("Only a fleet of one file per tenant names its files by tenant.")));
	if (has_tenant_path && has_shard_path)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("options \"tenant_path\" and \"shard_path\" cannot both be set"),
				 errdetail("With \"tenant_path\" the files are named by tenant, and the directory is not read for them.")));
	if (reference && has_tenant_column)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("a foreign table with distribution \"reference\" has no option \"tenant_column\""),
				 errdetail("A reference table belongs to no tenant: every shard holds the same rows.")));
	if (has_reference_shard && !reference)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("option \"reference_shard\" needs option \"distribution\" set to \"reference\""),
				 errdetail("Only a reference table is read from one chosen shard.")));

	PG_RETURN_VOID();
}

/*
 * Options as read from the catalogs, kept per backend: a routed lookup
 * would otherwise read and parse them again at every execution (several
 * catalog lookups and the parsing of every option, about a tenth of its
 * time).  Any change to a server or a foreign table (its options, its
 * columns' options or names, which invalidate its relcache entry) empties
 * the cache, as postgres_fdw's connection cache follows its servers.
 */
typedef struct OptionsCacheEntry
{
	Oid			oid;			/* hash key: a server or a foreign table */
	void	   *opts;			/* ShardServerOptions or ShardTableOptions */
	int			ncols;			/* a table's columns ... */
	char	  **colnames;		/* ... and their SQLite names, each NULL
								 * until asked (shard_column_name) */
} OptionsCacheEntry;

static MemoryContext OptionsCacheContext = NULL;
static HTAB *ServerOptionsCache = NULL;
static HTAB *TableOptionsCache = NULL;

/*
 * options_cache_reset
 *		Forget every option kept: a server or a foreign table changed.
 */
static void
options_cache_reset(void)
{
	if (OptionsCacheContext != NULL)
		MemoryContextReset(OptionsCacheContext);
	ServerOptionsCache = NULL;
	TableOptionsCache = NULL;
}

/*
 * options_syscache_callback
 *		A server or a foreign table's catalog row changed.
 */
static void
options_syscache_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	options_cache_reset();
}

/*
 * options_relcache_callback
 *		A relation's relcache entry was invalidated (relid, or every one):
 *		forget what was kept of it.
 */
static void
options_relcache_callback(Datum arg, Oid relid)
{
	if (TableOptionsCache == NULL)
		return;
	if (!OidIsValid(relid))
		options_cache_reset();
	else
		(void) hash_search(TableOptionsCache, &relid, HASH_REMOVE, NULL);
}

/*
 * options_cache
 *		The cache of server (or foreign table) options, made on first use.
 */
static HTAB *
options_cache(bool table)
{
	HASHCTL		ctl;

	if (OptionsCacheContext == NULL)
	{
		OptionsCacheContext = AllocSetContextCreate(CacheMemoryContext,
													"sqlite_shard_fdw options",
													ALLOCSET_SMALL_SIZES);
		CacheRegisterSyscacheCallback(FOREIGNSERVEROID,
									  options_syscache_callback, (Datum) 0);
		CacheRegisterSyscacheCallback(FOREIGNTABLEREL,
									  options_syscache_callback, (Datum) 0);
		CacheRegisterRelcacheCallback(options_relcache_callback, (Datum) 0);
	}
	if ((table ? TableOptionsCache : ServerOptionsCache) == NULL)
	{
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(OptionsCacheEntry);
		ctl.hcxt = OptionsCacheContext;
		if (table)
			TableOptionsCache = hash_create("sqlite_shard_fdw table options",
											64, &ctl,
											HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		else
			ServerOptionsCache = hash_create("sqlite_shard_fdw server options",
											 16, &ctl,
											 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	return table ? TableOptionsCache : ServerOptionsCache;
}

/*
 * copy_string
 *		A copy of s in cxt, or NULL.
 */
static char *
copy_string(const char *s, MemoryContext cxt)
{
	return s ? MemoryContextStrdup(cxt, s) : NULL;
}

/*
 * shard_server_options
 *		A server's options, with defaults filled in: a copy of those kept
 *		(see OptionsCacheEntry), read from the catalog when none are.
 */
ShardServerOptions *
shard_server_options(Oid serverid)
{
	HTAB	   *cache = options_cache(false);
	OptionsCacheEntry *entry;
	ShardServerOptions *opts;
	ShardServerOptions *kept;

	entry = hash_search(cache, &serverid, HASH_FIND, NULL);
	if (entry == NULL)
	{
		opts = read_server_options(serverid);
		kept = copy_server_options(opts, OptionsCacheContext);
		/* reading may have emptied the cache (an invalidation) */
		cache = options_cache(false);
		entry = hash_search(cache, &serverid, HASH_ENTER, NULL);
		entry->opts = kept;
		return opts;
	}
	/* a copy of its own: an invalidation may empty the cache while in use */
	return copy_server_options(entry->opts, CurrentMemoryContext);
}

/*
 * copy_server_options
 *		A copy of a server's options, strings included, in cxt.
 */
static ShardServerOptions *
copy_server_options(const ShardServerOptions *src, MemoryContext cxt)
{
	ShardServerOptions *dst = MemoryContextAlloc(cxt,
												 sizeof(ShardServerOptions));

	*dst = *src;
	dst->servername = copy_string(src->servername, cxt);
	dst->directory = copy_string(src->directory, cxt);
	dst->shard_path = copy_string(src->shard_path, cxt);
	dst->tenant_path = copy_string(src->tenant_path, cxt);
	dst->tenant_template = copy_string(src->tenant_template, cxt);
	dst->archive_folder = copy_string(src->archive_folder, cxt);
	return dst;
}

/*
 * read_server_options
 *		Read a server's options from the catalog, with defaults filled in.
 */
static ShardServerOptions *
read_server_options(Oid serverid)
{
	ForeignServer *server = GetForeignServer(serverid);
	ShardServerOptions *opts = palloc0(sizeof(ShardServerOptions));
	ListCell   *lc;

	opts->serverid = serverid;
	opts->servername = server->servername;
	opts->busy_timeout_ms = DEFAULT_BUSY_TIMEOUT_MS;
	opts->max_shard_bytes = DEFAULT_MAX_SHARD_BYTES;

	foreach(lc, server->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);
		char	   *value = defGetString(def);

		if (strcmp(def->defname, "directory") == 0)
			opts->directory = value;
		else if (strcmp(def->defname, "shard_path") == 0)
			opts->shard_path = value;
		else if (strcmp(def->defname, "busy_timeout_ms") == 0)
		{
			/* a value stored before the validator capped it gets the cap */
			opts->busy_timeout_ms = parse_int_option(def->defname, value);
			if (opts->busy_timeout_ms > MAX_BUSY_TIMEOUT_MS)
				opts->busy_timeout_ms = MAX_BUSY_TIMEOUT_MS;
		}
		else if (strcmp(def->defname, "max_shard_bytes") == 0)
			opts->max_shard_bytes = parse_size_option(def->defname, value);
		else if (strcmp(def->defname, "on_missing_shard") == 0)
			opts->skip_missing = (strcmp(value, "skip") == 0);
		else if (strcmp(def->defname, "allow_outside_paths") == 0)
			opts->allow_outside_paths = parse_bool_option(def->defname, value);
		else if (strcmp(def->defname, "layout") == 0)
			opts->file_per_tenant = (strcmp(value, "file_per_tenant") == 0);
		else if (strcmp(def->defname, "tenant_path") == 0)
			opts->tenant_path = value;
		else if (strcmp(def->defname, "tenant_template") == 0)
			opts->tenant_template = value;
		else if (strcmp(def->defname, "archive_folder") == 0)
			opts->archive_folder = value;
	}
	if (opts->directory == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("server \"%s\" has no \"directory\" option",
						server->servername)));
	return opts;
}

/*
 * shard_table_options
 *		A foreign table's options: the SQLite table and the tenant column,
 *		and which foreign table column maps to the tenant column.  A copy of
 *		those kept (see OptionsCacheEntry), read when none are.
 */
ShardTableOptions *
shard_table_options(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	HTAB	   *cache = options_cache(true);
	OptionsCacheEntry *entry;
	ShardTableOptions *opts;
	ShardTableOptions *kept;

	entry = hash_search(cache, &relid, HASH_FIND, NULL);
	if (entry == NULL)
	{
		opts = read_table_options(rel);
		kept = copy_table_options(opts, OptionsCacheContext);
		/* reading may have emptied the cache (an invalidation) */
		cache = options_cache(true);
		entry = hash_search(cache, &relid, HASH_ENTER, NULL);
		entry->opts = kept;
		entry->ncols = RelationGetDescr(rel)->natts;
		entry->colnames = MemoryContextAllocZero(OptionsCacheContext,
												 sizeof(char *) * (entry->ncols + 1));
		return opts;
	}
	/* a copy of its own: an invalidation may empty the cache while in use */
	return copy_table_options(entry->opts, CurrentMemoryContext);
}

/*
 * copy_table_options
 *		A copy of a foreign table's options, strings included, in cxt.
 */
static ShardTableOptions *
copy_table_options(const ShardTableOptions *src, MemoryContext cxt)
{
	ShardTableOptions *dst = MemoryContextAlloc(cxt,
												sizeof(ShardTableOptions));

	*dst = *src;
	dst->table = copy_string(src->table, cxt);
	dst->tenant_column = copy_string(src->tenant_column, cxt);
	dst->reference_shard = copy_string(src->reference_shard, cxt);
	return dst;
}

/*
 * read_table_options
 *		Read a foreign table's options from the catalogs (see
 *		shard_table_options).
 */
static ShardTableOptions *
read_table_options(Relation rel)
{
	ForeignTable *table = GetForeignTable(RelationGetRelid(rel));
	ShardTableOptions *opts = palloc0(sizeof(ShardTableOptions));
	TupleDesc	tupdesc = RelationGetDescr(rel);
	ListCell   *lc;
	int			i;

	opts->table = RelationGetRelationName(rel);
	opts->tenant_column = "tenant_id";
	opts->serverid = table->serverid;
	opts->batch_size = DEFAULT_BATCH_SIZE;
	/*
	 * the server's batch_size, auto_register, missing_column and
	 * missing_table, which the table's override
	 */
	foreach(lc, list_concat_copy(GetForeignServer(table->serverid)->options,
								 table->options))
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "missing_column") == 0)
			opts->missing_column_null = (strcmp(defGetString(def), "null") == 0);
		else if (strcmp(def->defname, "missing_table") == 0)
			opts->missing_table_empty = (strcmp(defGetString(def), "empty") == 0);
	}
	foreach(lc, GetForeignServer(table->serverid)->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "batch_size") == 0)
			opts->batch_size = parse_int_option(def->defname,
												defGetString(def));
		else if (strcmp(def->defname, "auto_register") == 0)
			opts->auto_register = parse_bool_option(def->defname,
													defGetString(def));
	}
	foreach(lc, table->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "table") == 0)
			opts->table = defGetString(def);
		else if (strcmp(def->defname, "tenant_column") == 0)
			opts->tenant_column = defGetString(def);
		else if (strcmp(def->defname, "distribution") == 0)
			opts->reference = (strcmp(defGetString(def), "reference") == 0);
		else if (strcmp(def->defname, "reference_shard") == 0)
			opts->reference_shard = defGetString(def);
		else if (strcmp(def->defname, "batch_size") == 0)
			opts->batch_size = parse_int_option(def->defname,
												defGetString(def));
		else if (strcmp(def->defname, "auto_register") == 0)
			opts->auto_register = parse_bool_option(def->defname,
													defGetString(def));
	}

	/* A reference table has no tenant column. */
	if (opts->reference)
	{
		opts->tenant_column = NULL;
		return opts;
	}

	/*
	 * SQLite compares column names without regard to ASCII case, so two
	 * columns naming the tenant column in different cases would be one, and
	 * the second could change a row's tenant.
	 */
	for (i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (att->attisdropped)
			continue;
		if (pg_strcasecmp(shard_column_name(RelationGetRelid(rel), att->attnum),
						  opts->tenant_column) != 0)
			continue;
		if (opts->tenant_attnum != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("foreign table \"%s\" has two columns for tenant column \"%s\"",
							RelationGetRelationName(rel), opts->tenant_column),
					 errdetail("Columns \"%s\" and \"%s\" both name it; SQLite does not tell names apart by case.",
							   NameStr(TupleDescAttr(tupdesc, opts->tenant_attnum - 1)->attname),
							   NameStr(att->attname))));
		opts->tenant_attnum = att->attnum;
	}
	if (opts->tenant_attnum == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_COLUMN_NAME_NOT_FOUND),
				 errmsg("foreign table \"%s\" has no tenant column \"%s\"",
						RelationGetRelationName(rel), opts->tenant_column),
				 errhint("Add the column, or set the table option \"tenant_column\" to the SQLite column that holds the tenant id.")));
	return opts;
}

/*
 * shard_file_tenant_column_kind
 *		For the tenant column of a foreign table on a server of layout
 *		'file_per_tenant', which no file stores (the file is the tenant):
 *		the kind of its type (shard_tenant_kind), by which the column is
 *		read as ssfdw_file_tenant(kind).  -1 for any other column.
 */
int
shard_file_tenant_column_kind(Oid relid, AttrNumber attnum)
{
	ForeignTable *table = GetForeignTable(relid);
	const char *tenant_column = "tenant_id";
	bool		file_per_tenant = false;
	ListCell   *lc;

	if (attnum <= 0)
		return -1;
	foreach(lc, GetForeignServer(table->serverid)->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "layout") == 0)
			file_per_tenant = strcmp(defGetString(def), "file_per_tenant") == 0;
	}
	if (!file_per_tenant)
		return -1;
	foreach(lc, table->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "tenant_column") == 0)
			tenant_column = defGetString(def);
		else if (strcmp(def->defname, "distribution") == 0 &&
				 strcmp(defGetString(def), "reference") == 0)
			return -1;
	}
	if (pg_strcasecmp(shard_column_name(relid, attnum), tenant_column) != 0)
		return -1;
	return shard_tenant_kind(get_atttype(relid, attnum));
}

/*
 * shard_table_is_reference
 *		Does a foreign table have distribution 'reference'?  Reads that one
 *		option, for callers that need no other (every write statement asks).
 */
bool
shard_table_is_reference(Oid relid)
{
	ListCell   *lc;

	foreach(lc, GetForeignTable(relid)->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "distribution") == 0)
			return strcmp(defGetString(def), "reference") == 0;
	}
	return false;
}

/*
 * shard_column_name
 *		The SQLite name of a foreign table column: its "column" option, or
 *		its own name.
 */
char *
shard_column_name(Oid relid, AttrNumber attnum)
{
	OptionsCacheEntry *entry = NULL;
	char	   *name = NULL;
	List	   *options;
	ListCell   *lc;

	/* kept with the table's options, once they are (see OptionsCacheEntry) */
	if (TableOptionsCache != NULL)
		entry = hash_search(TableOptionsCache, &relid, HASH_FIND, NULL);
	if (entry != NULL && attnum > 0 && attnum <= entry->ncols &&
		entry->colnames[attnum - 1] != NULL)
		return pstrdup(entry->colnames[attnum - 1]);

	options = GetForeignColumnOptions(relid, attnum);
	foreach(lc, options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "column") == 0)
			name = defGetString(def);
	}
	if (name == NULL)
		name = get_attname(relid, attnum, false);

	/* the lookups may have processed an invalidation: look again */
	entry = NULL;
	if (TableOptionsCache != NULL)
		entry = hash_search(TableOptionsCache, &relid, HASH_FIND, NULL);
	if (entry != NULL && attnum > 0 && attnum <= entry->ncols)
		entry->colnames[attnum - 1] = copy_string(name, OptionsCacheContext);
	return name;
}

/*
 * user_mapping_options
 *		The options of the user mapping for (userid, serverid), falling back
 *		to the PUBLIC mapping; NIL when there is none.  Unlike
 *		GetUserMapping, a missing mapping is not an error: mappings are
 *		optional for this wrapper.
 */
static List *
user_mapping_options(Oid serverid, Oid userid)
{
	HeapTuple	tp;
	Datum		datum;
	bool		isnull;
	List	   *result = NIL;

	tp = SearchSysCache2(USERMAPPINGUSERSERVER, ObjectIdGetDatum(userid),
						 ObjectIdGetDatum(serverid));
	if (!HeapTupleIsValid(tp))
		tp = SearchSysCache2(USERMAPPINGUSERSERVER,
							 ObjectIdGetDatum(InvalidOid),
							 ObjectIdGetDatum(serverid));
	if (!HeapTupleIsValid(tp))
		return NIL;
	datum = SysCacheGetAttr(USERMAPPINGUSERSERVER, tp,
							Anum_pg_user_mapping_umoptions, &isnull);
	if (!isnull)
		result = untransformRelOptions(datum);
	ReleaseSysCache(tp);
	return result;
}

/*
 * shard_user_tenants
 *		The tenants a role may see through this server (its user mapping's
 *		"tenants" option), or NIL when it may see all of them.
 */
List *
shard_user_tenants(Oid serverid, Oid userid)
{
	ListCell   *lc;

	foreach(lc, user_mapping_options(serverid, userid))
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "tenants") == 0)
			return parse_tenant_list(defGetString(def));
	}
	return NIL;
}

/*
 * options_value
 *		The value of the option called name in a list of DefElems, or NULL.
 */
static char *
options_value(List *options, const char *name)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, name) == 0)
			return defGetString(def);
	}
	return NULL;
}

/*
 * shard_table_truncatable
 *		May TRUNCATE empty this foreign table?  Its "truncatable" option
 *		decides, else its server's; by default it may, as with
 *		postgres_fdw.
 */
bool
shard_table_truncatable(Oid relid)
{
	ForeignTable *table = GetForeignTable(relid);
	char	   *value;

	value = options_value(table->options, "truncatable");
	if (value == NULL)
		value = options_value(GetForeignServer(table->serverid)->options,
							  "truncatable");
	return value == NULL || parse_bool_option("truncatable", value);
}

/*
 * server_has_tenant_mappings
 *		Does any user mapping of the server (PUBLIC's included) limit its
 *		role to some tenants?
 */
static bool
server_has_tenant_mappings(Oid serverid)
{
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	bool		found = false;

	/* No index leads with the server; the catalog is small. */
	rel = table_open(UserMappingRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_user_mapping_umserver, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(serverid));
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 1, &key);
	while (!found && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Datum		datum;
		bool		isnull;

		datum = heap_getattr(tup, Anum_pg_user_mapping_umoptions,
							 RelationGetDescr(rel), &isnull);
		if (!isnull &&
			options_value(untransformRelOptions(datum), "tenants") != NULL)
			found = true;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * shard_analyze_values
 *		Does ANALYZE of this foreign table record value statistics (most
 *		common values, histograms, distinct counts), or only its row count?
 *
 * The table's "analyze_values" option decides, else the server's.  Without
 * either, not when a user mapping of the server limits a role to some
 * tenants: the planner hands a column's statistics to the functions of any
 * operator a role that may read the table defines, so the values of every
 * tenant would reach that role.
 */
bool
shard_analyze_values(Oid relid)
{
	ForeignTable *table = GetForeignTable(relid);
	ForeignServer *server = GetForeignServer(table->serverid);
	char	   *value;

	value = options_value(table->options, "analyze_values");
	if (value == NULL)
		value = options_value(server->options, "analyze_values");
	if (value != NULL)
		return parse_bool_option("analyze_values", value);
	return !server_has_tenant_mappings(table->serverid);
}
