/*-------------------------------------------------------------------------
 *
 * tenantfile.c
 *		  One SQLite file per tenant: the tenant_path pattern and discovery
 *
 * A server with layout 'file_per_tenant' keeps each tenant in a file of
 * its own.  Its files are named either by the directory (shard_map maps
 * every tenant to a shard of its own) or by the server option tenant_path,
 * a pattern that names a tenant's file from its id with no per-tenant row
 * anywhere:
 *
 *	%s		the tenant id (exactly once)
 *	%1..%8	the first 1 to 8 hexadecimal digits (lower case) of the MD5
 *			hash of the tenant id's UTF-8 bytes, for hashed subfolders
 *			that keep each folder small: 'tenants/%2/%s.db' puts tenant
 *			"acme" (MD5 53bce4f1...) in tenants/53/acme.db
 *	%%		a percent sign
 *
 * Each path component holds at most one of %s and %N, so that a file name
 * decodes to one tenant id.  The hash is MD5 because every language an
 * application may be written in has it; it is part of the file layout and
 * never changes.
 *
 * A tenant id that names a file must stay one name: not empty, not "." or
 * "..", and without "/" (the rule shard ids obey in shard_path).
 *
 * A fan-out over a tenant_path fleet lists the files the pattern matches,
 * walking only the folders it names.  Names that do not have the
 * pattern's fixed parts are other files (a "-wal" file, a README) and are
 * passed over; a name that has them but does not decode to a tenant id (not
 * UTF-8, or in a hashed folder other than its tenant's) is skipped with a
 * WARNING naming it, so that it is noticed rather than read as some other
 * tenant.
 *
 * Listing costs a stat of every file, which at a hundred thousand files is
 * a good part of a fan-out, so a backend keeps its last listing of each
 * pattern and reuses it as long as every folder the walk visited is the
 * same folder (device and inode) with the same modification time: a file
 * created, removed or renamed in a folder changes the folder's time, and
 * a folder created or removed changes its parent's.  The clock that stamps
 * those times is coarse (a few milliseconds on Linux), so a folder changed
 * in the second before the listing began is not trusted, and the next
 * statement lists again.  The WARNINGs of a listing are given when it is
 * made, not again when it is reused.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

#include "common/md5.h"
#include "common/string.h"
#include "compat.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/memutils.h"

/* The longest hash prefix a pattern may use. */
#define MAX_HASH_DIGITS 8

/* One component of a tenant_path pattern, split at its placeholder. */
typedef struct PatternPart
{
	char	   *prefix;			/* the text before the placeholder, or the
								 * whole component */
	char	   *suffix;			/* the text after it */
	char		kind;			/* 's' the tenant, 'h' hash digits, 0 none */
	int			digits;			/* of 'h' */
} PatternPart;

/*
 * report_bad_pattern
 *		Raise that a tenant_path pattern is malformed.
 */
static void
report_bad_pattern(const char *pattern, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
			 errmsg("invalid value for option \"tenant_path\": \"%s\"", pattern),
			 errdetail_internal("%s", detail)));
}

/*
 * split_pattern
 *		The components of a tenant_path pattern, each split at its
 *		placeholder; malformed patterns are reported.
 */
static List *
split_pattern(const char *pattern)
{
	List	   *parts = NIL;
	const char *p = pattern;
	int			ntenant = 0;

	if (pattern[0] == '\0' || pattern[strlen(pattern) - 1] == '/')
		report_bad_pattern(pattern,
						   _("The pattern must name a file, not a folder."));
	while (*p)
	{
		PatternPart *part = palloc0(sizeof(PatternPart));
		StringInfoData text;

		initStringInfo(&text);
		if (*p == '/')
		{
			/* an empty component: the root, or a doubled slash */
			p++;
			part->prefix = pstrdup("");
			part->suffix = pstrdup("");
			if (parts != NIL)
				continue;
			parts = lappend(parts, part);
			continue;
		}
		for (; *p && *p != '/'; p++)
		{
			if (*p != '%')
			{
				appendStringInfoChar(&text, *p);
				continue;
			}
			p++;
			if (*p == '%')
				appendStringInfoChar(&text, '%');
			else if (*p == 's' || (*p >= '1' && *p <= '0' + MAX_HASH_DIGITS))
			{
				if (part->kind != 0)
					report_bad_pattern(pattern,
									   _("A folder or file name of the pattern may hold only one of %s and %1 to %8."));
				part->kind = (*p == 's') ? 's' : 'h';
				part->digits = (*p == 's') ? 0 : *p - '0';
				if (*p == 's')
					ntenant++;
				part->prefix = pstrdup(text.data);
				resetStringInfo(&text);
			}
			else
				report_bad_pattern(pattern,
								   _("Only %s (the tenant id), %1 to %8 (digits of its hash) and %% may follow a percent sign."));
		}
		if (part->kind == 0)
			part->prefix = pstrdup(text.data);
		else
			part->suffix = pstrdup(text.data);
		if (part->kind == 0 && (strcmp(text.data, ".") == 0 ||
								strcmp(text.data, "..") == 0))
			report_bad_pattern(pattern,
							   _("The pattern must not contain \".\" or \"..\" folders."));
		parts = lappend(parts, part);
		pfree(text.data);
		if (*p == '/')
			p++;
	}
	if (ntenant != 1)
		report_bad_pattern(pattern,
						   _("The pattern must contain %s exactly once."));
	return parts;
}

/*
 * shard_tenant_path_check
 *		Validate a tenant_path pattern (the option validator).
 */
void
shard_tenant_path_check(const char *pattern)
{
	(void) split_pattern(pattern);
}

/*
 * shard_tenant_id_path_ok
 *		Can tenant name a file?  Not empty, not "." or "..", no "/".
 */
bool
shard_tenant_id_path_ok(const char *tenant)
{
	return tenant[0] != '\0' && strchr(tenant, '/') == NULL &&
		strcmp(tenant, ".") != 0 && strcmp(tenant, "..") != 0;
}

/*
 * shard_tenant_id_path_check
 *		Refuse a tenant id that cannot name a file through tenant_path.
 */
void
shard_tenant_id_path_check(const char *tenant)
{
	if (!shard_tenant_id_path_ok(tenant))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("tenant id \"%s\" cannot be used in option \"tenant_path\"",
						tenant),
				 errdetail("Tenant ids that name files through a pattern must not be empty, \".\" or \"..\", nor contain \"/\".")));
}

/*
 * tenant_hash
 *		The MD5 of a tenant id, as 32 lower-case hexadecimal digits.
 */
static void
tenant_hash(const char *tenant, char *hex)
{
	const char *errstr = NULL;

	if (!pg_md5_hash_compat(tenant, strlen(tenant), hex, &errstr))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not compute the hash of tenant \"%s\": %s",
						tenant, errstr ? errstr : "out of memory")));
}

/*
 * shard_tenant_path_expand
 *		The path tenant_path gives a tenant's file, as the pattern writes it
 *		(relative paths are the directory's to resolve).  The id must have
 *		passed shard_tenant_id_path_check.
 */
char *
shard_tenant_path_expand(const char *pattern, const char *tenant)
{
	StringInfoData buf;
	char		hex[33];
	const char *p;

	tenant_hash(tenant, hex);
	initStringInfo(&buf);
	for (p = pattern; *p; p++)
	{
		if (p[0] != '%')
		{
			appendStringInfoChar(&buf, *p);
			continue;
		}
		p++;
		if (*p == 's')
			appendStringInfoString(&buf, tenant);
		else if (*p >= '1' && *p <= '0' + MAX_HASH_DIGITS)
			appendBinaryStringInfo(&buf, hex, *p - '0');
		else
			appendStringInfoChar(&buf, '%');
	}
	return buf.data;
}

/* A folder a listing visited, as it was then. */
typedef struct ListedFolder
{
	char	   *path;
	bool		exists;
	dev_t		dev;
	ino_t		ino;
	struct timespec mtime;
} ListedFolder;

/* The last listing of a pattern below a base folder. */
typedef struct TenantListing
{
	char	   *pattern;
	char	   *base;
	MemoryContext cxt;			/* holds all of it */
	List	   *tenants;		/* ordered by id */
	List	   *folders;		/* ListedFolder */
	bool		reusable;		/* no folder changed just before it */
	uint64		generation;		/* of the backend's listings */
} TenantListing;

/* The listings of this backend, in ListingContext. */
static List *listings = NIL;
static uint64 listing_generation = 0;
static MemoryContext ListingContext = NULL;

/* What a walk of the pattern's folders carries along. */
typedef struct WalkState
{
	const char *pattern;
	List	   *parts;
	List	   *tenants;		/* found, in the caller's context */
	char	   *hashes[16];		/* digits read in folder names, by part */
	List	   *folders;		/* ListedFolder visited */
	struct timespec began;		/* when the listing began */
	bool		racy;			/* a folder changed in the second before */
} WalkState;

/*
 * note_folder
 *		Remember a folder the walk visits, as it is now, for the listing's
 *		reuse (see the file header).
 */
static void
note_folder(WalkState *w, const char *folder)
{
	ListedFolder *f = palloc0(sizeof(ListedFolder));
	struct stat st;

	f->path = pstrdup(folder[0] ? folder : "/");
	if (stat(f->path, &st) == 0)
	{
		f->exists = true;
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		f->mtime = st.st_mtim;
		if (st.st_mtim.tv_sec >= w->began.tv_sec - 1)
			w->racy = true;
	}
	w->folders = lappend(w->folders, f);
}

/*
 * folders_unchanged
 *		Is every folder a listing visited still as it was?
 */
static bool
folders_unchanged(List *folders)
{
	ListCell   *lc;

	foreach(lc, folders)
	{
		ListedFolder *f = lfirst(lc);
		struct stat st;
		bool		exists = (stat(f->path, &st) == 0);

		CHECK_FOR_INTERRUPTS();
		if (exists != f->exists)
			return false;
		if (exists && (st.st_dev != f->dev || st.st_ino != f->ino ||
					   st.st_mtim.tv_sec != f->mtime.tv_sec ||
					   st.st_mtim.tv_nsec != f->mtime.tv_nsec))
			return false;
	}
	return true;
}

/*
 * is_hex_digits
 *		Is s exactly n lower-case hexadecimal digits?
 */
static bool
is_hex_digits(const char *s, int n)
{
	int			i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[n] == '\0';
}

/*
 * found_file
 *		A file the pattern matches, whose name held tenant: keep it if it
 *		decodes to that tenant (valid UTF-8, in its hashed folders), else
 *		warn and pass it over.
 */
static void
found_file(WalkState *w, const char *path, const char *tenant)
{
	char		hex[33];
	ListCell   *lc;

	if (!pg_verify_mbstr(PG_UTF8, tenant, strlen(tenant), true))
	{
		StringInfoData shown;
		const char *p;

		/* the path as ASCII, other bytes as \xNN: it is not UTF-8 */
		initStringInfo(&shown);
		for (p = path; *p; p++)
		{
			if ((unsigned char) *p >= 0x80 || (unsigned char) *p < 0x20)
				appendStringInfo(&shown, "\\x%02x", (unsigned char) *p);
			else
				appendStringInfoChar(&shown, *p);
		}
		ereport(WARNING,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 errmsg("skipped file \"%s\": its name does not decode to a tenant id",
						shown.data),
				 errdetail("The part of the name option \"tenant_path\" takes as the tenant id is not valid UTF-8.")));
		return;
	}
	tenant_hash(tenant, hex);
	foreach(lc, w->parts)
	{
		PatternPart *part = lfirst(lc);
		int			i = foreach_current_index(lc);

		if (part->kind == 'h' &&
			strncmp(w->hashes[i], hex, part->digits) != 0)
		{
			ereport(WARNING,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("skipped file \"%s\": its name does not decode to a tenant id",
							path),
					 errdetail("Tenant \"%s\" belongs in hashed folder \"%.*s\", not \"%s\" (option \"tenant_path\" is \"%s\").",
							   tenant, part->digits, hex, w->hashes[i],
							   w->pattern)));
			return;
		}
	}
	w->tenants = lappend(w->tenants, pstrdup(tenant));
}

/*
 * tenant_cmp
 *		Order tenant ids by their bytes.
 */
static int
tenant_cmp(const ListCell *a, const ListCell *b)
{
	return strcmp(lfirst(a), lfirst(b));
}

/*
 * walk
 *		List what the pattern's parts from index i on match below folder,
 *		tenant being the id read so far (or NULL).
 */
static void
walk(WalkState *w, const char *folder, int i, const char *tenant)
{
	PatternPart *part = list_nth(w->parts, i);
	bool		last = (i == list_length(w->parts) - 1);
	DIR		   *d;
	struct dirent *de;
	List	   *names = NIL;
	ListCell   *lc;

	CHECK_FOR_INTERRUPTS();
	note_folder(w, folder);
	if (part->kind == 0)
	{
		char	   *path = psprintf("%s/%s", folder, part->prefix);
		struct stat st;

		if (stat(path, &st) != 0)
			return;
		if (last && S_ISREG(st.st_mode))
			found_file(w, path, tenant);
		else if (!last && S_ISDIR(st.st_mode))
			walk(w, path, i + 1, tenant);
		return;
	}

	/* the names first, in order, so that every walk goes the same way */
	d = AllocateDir(folder);
	if (d == NULL)
		return;					/* no such folder: no tenants there */
	while ((de = ReadDir(d, folder)) != NULL)
	{
		names = lappend(names, pstrdup(de->d_name));
		if ((list_length(names) & 255) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	FreeDir(d);
	list_sort(names, tenant_cmp);

	foreach(lc, names)
	{
		const char *name = lfirst(lc);
		size_t		len = strlen(name);
		size_t		plen = strlen(part->prefix);
		size_t		slen = strlen(part->suffix);
		char	   *middle;
		char	   *path;
		struct stat st;

		if ((foreach_current_index(lc) & 255) == 0)
			CHECK_FOR_INTERRUPTS();
		if (len <= plen + slen ||
			strncmp(name, part->prefix, plen) != 0 ||
			strcmp(name + len - slen, part->suffix) != 0)
			continue;
		middle = pnstrdup(name + plen, len - plen - slen);
		if (strcmp(middle, ".") == 0 || strcmp(middle, "..") == 0 ||
			(part->kind == 'h' && !is_hex_digits(middle, part->digits)))
			continue;
		/* SQLite's own files beside a database named by a bare %s */
		if (part->kind == 's' && last && slen == 0 &&
			(pg_str_endswith(middle, "-wal") ||
			 pg_str_endswith(middle, "-shm") ||
			 pg_str_endswith(middle, "-journal")))
			continue;
		path = psprintf("%s/%s", folder, name);
		if (stat(path, &st) != 0)
			continue;
		if (part->kind == 'h' && i < lengthof(w->hashes))
			w->hashes[i] = middle;
		if (last && S_ISREG(st.st_mode))
			found_file(w, path, part->kind == 's' ? middle : tenant);
		else if (!last && S_ISDIR(st.st_mode))
			walk(w, path, i + 1, part->kind == 's' ? middle : tenant);
	}
	list_free_deep(names);
}

/*
 * shard_tenant_path_discover
 *		The tenants whose files the tenant_path pattern matches, ordered by
 *		id; a relative pattern is read below base (the directory's folder).
 *		The last listing is reused while its folders are unchanged (see
 *		the file header).  The list and its ids are the caller's, in its
 *		memory context.  *generation names the listing: a caller that
 *		passes the one it holds gets NIL when that listing still stands,
 *		and keeps what it made of it.
 */
List *
shard_tenant_path_discover(const char *pattern, const char *base,
						   uint64 *generation)
{
	WalkState	w;
	TenantListing *listing = NULL;
	MemoryContext oldcxt;
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, listings)
	{
		TenantListing *l = lfirst(lc);

		if (strcmp(l->pattern, pattern) == 0 && strcmp(l->base, base) == 0)
		{
			listing = l;
			break;
		}
	}
	if (listing != NULL && listing->reusable &&
		folders_unchanged(listing->folders))
	{
		if (*generation == listing->generation)
			return NIL;
		*generation = listing->generation;
		foreach(lc, listing->tenants)
			result = lappend(result, pstrdup(lfirst(lc)));
		return result;
	}

	if (ListingContext == NULL)
		ListingContext = AllocSetContextCreate(TopMemoryContext,
											   "sqlite_shard_fdw tenant listings",
											   ALLOCSET_SMALL_SIZES);
	if (listing != NULL)
	{
		listings = list_delete_ptr(listings, listing);
		MemoryContextDelete(listing->cxt);
	}

	memset(&w, 0, sizeof(w));
	clock_gettime(CLOCK_REALTIME, &w.began);
	w.pattern = pattern;
	w.parts = split_pattern(pattern);
	if (list_length(w.parts) > lengthof(w.hashes))
		report_bad_pattern(pattern,
						   _("The pattern may have at most 16 folders and file names."));
	if (is_absolute_path(pattern))
		walk(&w, "", 1, NULL);
	else
		walk(&w, base, 0, NULL);
	list_sort(w.tenants, tenant_cmp);

	/* kept for the next statement, in a context of its own */
	listing = MemoryContextAllocZero(ListingContext, sizeof(TenantListing));
	listing->cxt = AllocSetContextCreate(ListingContext,
										 "sqlite_shard_fdw tenant listing",
										 ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(listing->cxt);
	listing->pattern = pstrdup(pattern);
	listing->base = pstrdup(base);
	listing->reusable = !w.racy;
	listing->generation = ++listing_generation;
	*generation = listing->generation;
	foreach(lc, w.tenants)
		listing->tenants = lappend(listing->tenants, pstrdup(lfirst(lc)));
	foreach(lc, w.folders)
	{
		ListedFolder *f = lfirst(lc);
		ListedFolder *copy = palloc(sizeof(ListedFolder));

		*copy = *f;
		copy->path = pstrdup(f->path);
		listing->folders = lappend(listing->folders, copy);
	}
	MemoryContextSwitchTo(ListingContext);
	listings = lappend(listings, listing);
	MemoryContextSwitchTo(oldcxt);
	return w.tenants;
}

/*
 * shard_append_column_sql
 *		Append a column of a foreign table as its shards' SQL reads it: its
 *		quoted SQLite name, or, for the tenant column of a table whose
 *		files are each one tenant's, ssfdw_file_tenant(kind), the file's
 *		tenant (sqlite/filetenant.c).
 */
void
shard_append_column_sql(StringInfo buf, Oid relid, AttrNumber attnum)
{
	int			kind = shard_file_tenant_column_kind(relid, attnum);

	if (kind >= 0)
		appendStringInfo(buf, "ssfdw_file_tenant(%d)", kind);
	else
		shard_quote_identifier(buf, shard_column_name(relid, attnum));
}
