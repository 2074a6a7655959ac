/*-------------------------------------------------------------------------
 *
 * threadagg.c
 *		  Aggregating a shard's rows in C, on the thread that reads them
 *
 * SQLite computes GROUP BY by sorting, which for the few groups of a
 * typical report costs several times the scan itself.  Instead the shard
 * returns the raw values (the keys and the aggregates' inputs, WHERE
 * applied) and this file groups them in a hash table as they are stepped,
 * producing exactly the rows the partial-aggregate SQL would have: the same
 * columns, the same storage classes, SQLite's own NULL rules, so merge.c
 * cannot tell them apart.  Groups are told apart by bytes; a finer split
 * than SQLite's is harmless, since the merge regroups with PostgreSQL's
 * equality anyway.  (A scan that keeps only each shard's first groups
 * cannot afford a split: upper.c allows it only on keys whose declared
 * affinity leaves one storage class, and no float keys.)
 *
 * Past max_groups groups the work is abandoned (SQLITE_FULL) and the caller
 * runs the GROUP BY in SQLite instead, so memory stays bounded.
 *
 * This file must not include postgres.h: it runs on fan-out workers.
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardtime.h"
#include "threadagg.h"

/* The longest decimal text of a sum of squares (192 bits), with its NUL. */
#define SUMSQ_TEXT_LEN 64

/* The running state of one column of one group. */
typedef struct TaAcc
{
	long long	i;				/* count, integer sum, or high halves */
	double		d;				/* total */
	int			has;			/* a non-NULL input was seen */
	int			overflow;		/* the integer sum overflowed */
	unsigned long long sq[3];	/* sum of squares, 64-bit limbs, low first */
	ShardValue	v;				/* min or max so far (text copied) */
} TaAcc;

typedef struct TaGroup
{
	uint32_t	hash;
	ShardValue *keys;			/* nkeys values, text and blobs copied */
	TaAcc	   *accs;			/* ncols */
	int			key_bad;		/* guards on key columns the keys fail */
	int			keycheck_bad;	/* keycheck guards the keys fail */
	struct TaGroup *next_in_order;
} TaGroup;

struct ThreadAgg
{
	const ThreadAggSpec *spec;
	int			nkeys;
	int		   *key_raw;		/* raw column of each key */
	int		   *key_of_col;		/* per column: its key's index, or -1 */
	char	   *key_guard;		/* per guard: it checks a key column, whose
								 * value is the same in every row of a
								 * group, so it runs once per group */
	TaGroup   **slots;
	long		nslots;
	long		ngroups;
	TaGroup    *first;			/* emission order */
	TaGroup    *last;
	TaGroup    *emit_next;
	TaGroup    *recent;			/* the group of the previous row */
	long long	bound;			/* return only the first bound groups in the
								 * spec's order (and those that must raise an
								 * error); -1: every group */
	TaGroup   **kept;			/* a bounded aggregation's groups, in order */
	long		nkept;
	long		kept_next;
	int			emit_started;
	ShardValue *rawrow;			/* scratch: the current raw row */
	int			nraw;
	ShardDateCache dates;		/* the time extremes' last date read */
	char		sqtext[SUMSQ_TEXT_LEN];	/* a sum of squares as text, until
										 * the batch copies it */
	int			rc;				/* how consuming rows failed, or SQLITE_OK */
	char	   *errbuf;			/* ... and why (threadagg_consume's) */
};

/*
 * The aggregation the rows stepped on this thread go to (ssfdw_rows):
 * SQLite calls an aggregate's step function on the thread that steps the
 * statement, within threadagg_consume.
 */
static __thread ThreadAgg *consuming = NULL;

/*
 * value_hash
 *		A hash of a value's storage class and bytes, eight bytes at a time
 *		(a multiply per word, where FNV-1a takes one per byte): every row of
 *		a grouped scan hashes its keys.
 */
static uint32_t
value_hash(uint32_t h, const ShardValue *v)
{
	const unsigned char *p;
	size_t		len;
	size_t		i;
	uint64_t	x = ((uint64_t) h << 8) ^ (uint64_t) v->type;

	switch (v->type)
	{
		case SQLITE_INTEGER:
			p = (const unsigned char *) &v->u.i;
			len = sizeof(v->u.i);
			break;
		case SQLITE_FLOAT:
			p = (const unsigned char *) &v->u.d;
			len = sizeof(v->u.d);
			break;
		case SQLITE_TEXT:
		case SQLITE_BLOB:
			p = (const unsigned char *) v->u.p;
			len = (size_t) v->len;
			break;
		default:
			return (uint32_t) ((x * 0x9E3779B97F4A7C15ull) >> 32);
	}
	x ^= (uint64_t) len << 40;
	for (i = 0; i + 8 <= len; i += 8)
	{
		uint64_t	w;

		memcpy(&w, p + i, 8);
		x = (x ^ w) * 0x9E3779B97F4A7C15ull;
		x ^= x >> 29;
	}
	if (i < len)
	{
		uint64_t	w = 0;
		size_t		j;

		for (j = 0; i + j < len; j++)
			w |= (uint64_t) p[i + j] << (8 * j);
		x = (x ^ w) * 0x9E3779B97F4A7C15ull;
		x ^= x >> 29;
	}
	return (uint32_t) (x ^ (x >> 32));
}

/*
 * hash_mix
 *		Spread a hash's bits over its low ones, which choose the slot, so
 *		that keys that differ in few bits (times on a grid of seconds) do
 *		not crowd a few slots.
 */
static uint32_t
hash_mix(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/*
 * value_same
 *		Byte equality of two values, storage class included.
 */
static int
value_same(const ShardValue *a, const ShardValue *b)
{
	if (a->type != b->type)
		return 0;
	switch (a->type)
	{
		case SQLITE_INTEGER:
			return a->u.i == b->u.i;
		case SQLITE_FLOAT:
			return memcmp(&a->u.d, &b->u.d, sizeof(double)) == 0;
		case SQLITE_TEXT:
		case SQLITE_BLOB:
			return a->len == b->len && memcmp(a->u.p, b->u.p, a->len) == 0;
		default:
			return 1;
	}
}

/*
 * value_copy
 *		Copy a value, its bytes into malloc'd memory; 0 when memory runs out.
 */
static int
value_copy(ShardValue *dst, const ShardValue *src)
{
	*dst = *src;
	if (src->type == SQLITE_TEXT || src->type == SQLITE_BLOB)
	{
		char	   *p = malloc((size_t) src->len + 1);

		if (p == NULL)
			return 0;
		memcpy(p, src->u.p, src->len);
		p[src->len] = '\0';
		dst->u.p = p;
	}
	return 1;
}

/*
 * value_free
 *		Free what value_copy allocated.
 */
static void
value_free(ShardValue *v)
{
	if (v->type == SQLITE_TEXT || v->type == SQLITE_BLOB)
		free((void *) v->u.p);
	v->type = SQLITE_NULL;
}

/*
 * sumsq_add
 *		Add the square of an integer to a sum of squares held in three
 *		64-bit limbs: a square of a 64-bit integer takes 126 bits, so 2^66
 *		of them fit, more rows than a shard holds.
 */
static void
sumsq_add(unsigned long long sq[3], long long x)
{
	unsigned long long ax = x < 0 ? 0 - (unsigned long long) x :
		(unsigned long long) x;
	unsigned __int128 p = (unsigned __int128) ax * ax;
	unsigned __int128 lo = (unsigned __int128) sq[0] + (unsigned long long) p;
	unsigned __int128 mid = (unsigned __int128) sq[1] +
		(unsigned long long) (p >> 64) + (unsigned long long) (lo >> 64);

	sq[0] = (unsigned long long) lo;
	sq[1] = (unsigned long long) mid;
	sq[2] += (unsigned long long) (mid >> 64);
}

/*
 * sumsq_text
 *		A sum of squares as decimal text, for PostgreSQL's numeric input:
 *		the limbs divided by 10^19 until nothing is left.
 */
static void
sumsq_text(const unsigned long long sq[3], char *buf)
{
	const unsigned long long ten19 = 10000000000000000000ULL;
	unsigned long long n[3];
	unsigned long long parts[4];
	int			nparts = 0;
	int			len = 0;
	int			i;

	memcpy(n, sq, sizeof(n));
	do
	{
		unsigned __int128 rem = 0;

		for (i = 2; i >= 0; i--)
		{
			unsigned __int128 cur = (rem << 64) | n[i];

			n[i] = (unsigned long long) (cur / ten19);
			rem = cur % ten19;
		}
		parts[nparts++] = (unsigned long long) rem;
	} while (n[0] != 0 || n[1] != 0 || n[2] != 0);
	len = snprintf(buf, SUMSQ_TEXT_LEN, "%llu", parts[nparts - 1]);
	for (i = nparts - 2; i >= 0; i--)
		len += snprintf(buf + len, SUMSQ_TEXT_LEN - len, "%019llu", parts[i]);
}

/*
 * value_cmp
 *		SQLite's order of two non-NULL values under BINARY collation:
 *		numbers (integers and reals compared by value) before text before
 *		blobs.
 */
static int
value_cmp(const ShardValue *a, const ShardValue *b)
{
	int			ca = (a->type == SQLITE_INTEGER || a->type == SQLITE_FLOAT) ? 0 :
		(a->type == SQLITE_TEXT ? 1 : 2);
	int			cb = (b->type == SQLITE_INTEGER || b->type == SQLITE_FLOAT) ? 0 :
		(b->type == SQLITE_TEXT ? 1 : 2);
	int			r;

	if (ca != cb)
		return ca < cb ? -1 : 1;
	if (ca == 0)
	{
		if (a->type == SQLITE_INTEGER && b->type == SQLITE_INTEGER)
			return a->u.i < b->u.i ? -1 : (a->u.i > b->u.i ? 1 : 0);
		else
		{
			double		x = a->type == SQLITE_INTEGER ? (double) a->u.i : a->u.d;
			double		y = b->type == SQLITE_INTEGER ? (double) b->u.i : b->u.d;

			return x < y ? -1 : (x > y ? 1 : 0);
		}
	}
	r = memcmp(a->u.p, b->u.p, a->len < b->len ? a->len : b->len);
	if (r != 0)
		return r;
	return a->len < b->len ? -1 : (a->len > b->len ? 1 : 0);
}

/*
 * guard_passes
 *		Is a value of a storage class (and range) the guard allows?
 */
static int
guard_passes(const ThreadAggGuard *gd, const ShardValue *gv)
{
	int			t = gv->type;

	if (gd->ok & TA_OK_TRUE)
		return t == SQLITE_INTEGER && gv->u.i == 1;
	if (t == SQLITE_NULL ||
		(t == SQLITE_FLOAT && (gd->ok & TA_OK_FLOAT)) ||
		(t == SQLITE_TEXT && (gd->ok & TA_OK_TEXT) &&
		 shardio_utf8_ok((const unsigned char *) gv->u.p, gv->len)))
		return 1;
	return t == SQLITE_INTEGER && (gd->ok & TA_OK_INTEGER) &&
		(gd->lo > gd->hi || (gv->u.i >= gd->lo && gv->u.i <= gd->hi));
}

/*
 * threadagg_create
 *		An empty aggregation; NULL when memory runs out.  A spec without
 *		keys has its one group from the start, as an aggregate without
 *		GROUP BY returns one row over no rows.
 */
ThreadAgg *
threadagg_create(const ThreadAggSpec *spec, long long bound)
{
	ThreadAgg  *ta = calloc(1, sizeof(ThreadAgg));
	int			c;

	if (ta == NULL)
		return NULL;
	ta->spec = spec;
	ta->bound = bound;
	ta->key_raw = malloc(sizeof(int) * (spec->ncols + 1));
	ta->key_of_col = malloc(sizeof(int) * (spec->ncols + 1));
	ta->nslots = 64;
	ta->slots = calloc(ta->nslots, sizeof(TaGroup *));
	if (ta->key_raw == NULL || ta->key_of_col == NULL || ta->slots == NULL)
	{
		threadagg_free(ta);
		return NULL;
	}
	for (c = 0; c < spec->ncols; c++)
	{
		ta->key_of_col[c] = -1;
		if (spec->cols[c].op == TA_KEY)
		{
			ta->key_of_col[c] = ta->nkeys;
			ta->key_raw[ta->nkeys++] = spec->cols[c].raw;
		}
		if (spec->cols[c].raw + 1 > ta->nraw)
			ta->nraw = spec->cols[c].raw + 1;
		if (spec->cols[c].op == TA_COUNT_DIFF &&
			spec->cols[c].arg + 1 > ta->nraw)
			ta->nraw = spec->cols[c].arg + 1;
	}
	for (c = 0; c < spec->nguards; c++)
		if (spec->guards[c].raw + 1 > ta->nraw)
			ta->nraw = spec->guards[c].raw + 1;
	ta->rawrow = calloc(ta->nraw + 1, sizeof(ShardValue));
	ta->key_guard = calloc(spec->nguards + 1, 1);
	if (ta->rawrow == NULL || ta->key_guard == NULL)
	{
		threadagg_free(ta);
		return NULL;
	}
	for (c = 0; c < spec->nguards; c++)
	{
		int			k;

		for (k = 0; k < ta->nkeys; k++)
			if (spec->guards[c].raw == ta->key_raw[k])
				ta->key_guard[c] = 1;
	}
	return ta;
}

/*
 * new_group
 *		Add a group for the current row's keys.
 */
static TaGroup *
new_group(ThreadAgg *ta, uint32_t hash)
{
	TaGroup    *g = calloc(1, sizeof(TaGroup));
	int			k;

	if (g == NULL)
		return NULL;
	g->hash = hash;
	g->keys = calloc(ta->nkeys + 1, sizeof(ShardValue));
	g->accs = calloc(ta->spec->ncols + 1, sizeof(TaAcc));
	if (g->keys == NULL || g->accs == NULL)
	{
		free(g->keys);
		free(g->accs);
		free(g);
		return NULL;
	}
	for (k = 0; k < ta->nkeys; k++)
		if (!value_copy(&g->keys[k], &ta->rawrow[ta->key_raw[k]]))
			return NULL;
	for (k = 0; k < ta->spec->nguards; k++)
		if (ta->key_guard[k] &&
			!guard_passes(&ta->spec->guards[k],
						  &ta->rawrow[ta->spec->guards[k].raw]))
		{
			if (ta->spec->guards[k].keycheck)
				g->keycheck_bad++;
			else
				g->key_bad++;
		}
	if (ta->last)
		ta->last->next_in_order = g;
	else
		ta->first = g;
	ta->last = g;
	ta->ngroups++;
	return g;
}

/*
 * grow
 *		Double the hash table.
 */
static int
grow(ThreadAgg *ta)
{
	long		n = ta->nslots * 2;
	TaGroup   **slots = calloc(n, sizeof(TaGroup *));
	TaGroup    *g;

	if (slots == NULL)
		return 0;
	for (g = ta->first; g; g = g->next_in_order)
	{
		long		i = g->hash & (n - 1);

		while (slots[i])
			i = (i + 1) & (n - 1);
		slots[i] = g;
	}
	free(ta->slots);
	ta->slots = slots;
	ta->nslots = n;
	return 1;
}

/*
 * find_group
 *		The group of the current raw row, created if new; NULL when memory
 *		runs out or there are too many groups (*full set).
 */
static TaGroup *
find_group(ThreadAgg *ta, int *full)
{
	uint32_t	h = 2166136261u;
	long		i;
	int			k;

	*full = 0;
	if (ta->nkeys == 0)
		return ta->first ? ta->first : new_group(ta, 0);

	/*
	 * Rows of one group often come together (a table clustered by tenant,
	 * an index scan): try the previous row's group before hashing.
	 */
	if (ta->recent)
	{
		for (k = 0; k < ta->nkeys; k++)
			if (!value_same(&ta->recent->keys[k], &ta->rawrow[ta->key_raw[k]]))
				break;
		if (k == ta->nkeys)
			return ta->recent;
	}
	for (k = 0; k < ta->nkeys; k++)
		h = value_hash(h, &ta->rawrow[ta->key_raw[k]]);
	h = hash_mix(h);
	for (i = h & (ta->nslots - 1); ta->slots[i]; i = (i + 1) & (ta->nslots - 1))
	{
		TaGroup    *g = ta->slots[i];

		if (g->hash == h)
		{
			for (k = 0; k < ta->nkeys; k++)
				if (!value_same(&g->keys[k], &ta->rawrow[ta->key_raw[k]]))
					break;
			if (k == ta->nkeys)
				return ta->recent = g;
		}
	}
	if (ta->ngroups >= ta->spec->max_groups)
	{
		*full = 1;
		return NULL;
	}
	if ((ta->ngroups + 1) * 10 > ta->nslots * 7)
	{
		if (!grow(ta))
			return NULL;
		for (i = h & (ta->nslots - 1); ta->slots[i];
			 i = (i + 1) & (ta->nslots - 1))
			;
	}
	ta->slots[i] = new_group(ta, h);
	return ta->recent = ta->slots[i];
}

/*
 * add_row
 *		Fold the current raw row into its group's state.  Non-integers
 *		reaching an integer sum are left to the guard, which reports them.
 *		Returns SQLITE_OK, SQLITE_NOMEM, or the wrapper's error for a time
 *		it cannot read (shardtime_value_time), its message in errbuf, as
 *		ssfdw_usecs would have failed the statement on that row.
 */
static int
add_row(ThreadAgg *ta, TaGroup *g, char *errbuf)
{
	const ThreadAggSpec *spec = ta->spec;
	int			c;
	int			time_raw = -1;	/* the last time read in this row ... */
	int			time_arg = 0;	/* ... how ... */
	long long	time_val = 0;	/* ... and its value */

	for (c = 0; c < spec->ncols; c++)
	{
		const ThreadAggColumn *col = &spec->cols[c];
		TaAcc	   *acc = &g->accs[c];
		const ShardValue *v = col->raw >= 0 ? &ta->rawrow[col->raw] : NULL;
		long long	x;

		switch (col->op)
		{
			case TA_COUNT_STAR:
				acc->i++;
				break;
			case TA_COUNT:
				if (v->type != SQLITE_NULL)
					acc->i++;
				break;
			case TA_COUNT_DIFF:
				if (v->type != SQLITE_NULL)
					acc->i++;
				if (ta->rawrow[col->arg].type != SQLITE_NULL)
					acc->i--;
				break;
			case TA_SUM:
			case TA_SUM_HI:
			case TA_SUM_LO:
				if (v->type == SQLITE_NULL)
					break;
				x = v->type == SQLITE_INTEGER ? v->u.i :
					v->type == SQLITE_FLOAT ? (long long) v->u.d : 0;
				if (col->op == TA_SUM_HI)
					x >>= 32;
				else if (col->op == TA_SUM_LO)
					x &= 4294967295LL;
				if (__builtin_add_overflow(acc->i, x, &acc->i))
					acc->overflow = 1;
				acc->has = 1;
				break;
			case TA_SUMSQ:
				if (v->type == SQLITE_NULL)
					break;
				sumsq_add(acc->sq, v->type == SQLITE_INTEGER ? v->u.i :
						  v->type == SQLITE_FLOAT ? (long long) v->u.d : 0);
				acc->has = 1;
				break;
			case TA_COUNT_INF:
				if (v->type == SQLITE_FLOAT && isinf(v->u.d))
					acc->i++;
				if (v->type != SQLITE_NULL)
					acc->has = 1;
				break;
			case TA_TOTAL:
				if (v->type == SQLITE_INTEGER)
					acc->d += (double) v->u.i;
				else if (v->type == SQLITE_FLOAT)
					acc->d += v->u.d;
				break;
			case TA_MIN:
			case TA_MAX:
				if (v->type == SQLITE_NULL)
					break;
				if (!acc->has ||
					(col->op == TA_MIN ? value_cmp(v, &acc->v) < 0 :
					 value_cmp(v, &acc->v) > 0))
				{
					value_free(&acc->v);
					if (!value_copy(&acc->v, v))
						return SQLITE_NOMEM;
					acc->has = 1;
				}
				break;
			case TA_TIME_MIN:
			case TA_TIME_MAX:
				if (v->type == SQLITE_NULL)
					break;
				/* min and max of one column read its value once */
				if (time_raw != col->raw || time_arg != col->arg)
				{
					int			rc = shardtime_value_time(v, col->arg == TA_TIME_DAYS,
														  &time_val, errbuf,
														  &ta->dates);

					if (rc != SQLITE_OK)
						return rc;
					if (col->arg != TA_TIME_DAYS)
						time_val = shardtime_round_usecs(time_val, col->arg);
					time_raw = col->raw;
					time_arg = col->arg;
				}
				if (!acc->has ||
					(col->op == TA_TIME_MIN ? time_val < acc->i : time_val > acc->i))
					acc->i = time_val;
				acc->has = 1;
				break;
			case TA_GUARD:
				{
					int			gi;

					for (gi = 0; gi < spec->nguards; gi++)
						if (!ta->key_guard[gi] && !spec->guards[gi].keycheck &&
							!guard_passes(&spec->guards[gi],
										  &ta->rawrow[spec->guards[gi].raw]))
							acc->i++;
					acc->i += g->key_bad;
					acc->has = 1;
					break;
				}
			case TA_KEYCHECK:
				acc->i += g->keycheck_bad;
				acc->has = 1;
				break;
			default:
				break;
		}
	}
	return SQLITE_OK;
}

/*
 * rows_step
 *		Step function of the aggregate ssfdw_rows(raw columns ...), which
 *		thread aggregation's input query calls on every row: fold the row
 *		into its group of the aggregation being consumed on this thread.
 *		SQLite hands the values over without returning each row through
 *		sqlite3_step and the row API (a call and the handle's mutex per
 *		value).  A failure (too many groups, a time the wrapper cannot
 *		read, memory) is kept in the aggregation and stops the statement.
 */
static void
rows_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	ThreadAgg  *ta = consuming;
	TaGroup    *g;
	int			full = 0;
	int			c;

	if (ta == NULL || argc != ta->nraw)
	{
		sqlite3_result_error(ctx, "ssfdw_rows() belongs to the wrapper's thread aggregation", -1);
		return;
	}
	for (c = 0; c < argc; c++)
		if (!shardio_value(argv[c], &ta->rawrow[c]))
		{
			ta->rc = SQLITE_NOMEM;
			break;
		}
	g = (ta->rc == SQLITE_OK) ? find_group(ta, &full) : NULL;
	if (g == NULL && ta->rc == SQLITE_OK)
		ta->rc = full ? SQLITE_FULL : SQLITE_NOMEM;
	if (g != NULL)
		ta->rc = add_row(ta, g, ta->errbuf);
	if (ta->rc != SQLITE_OK)
	{
		if (ta->rc == SQLITE_NOMEM)
			snprintf(ta->errbuf, SHARDIO_ERRLEN, "out of memory");
		else if (ta->rc == SQLITE_FULL)
			snprintf(ta->errbuf, SHARDIO_ERRLEN,
					 "more groups than thread aggregation keeps");
		sqlite3_result_error(ctx, ta->errbuf, -1);
	}
}

/*
 * rows_final
 *		Final function of ssfdw_rows: the groups stay in the aggregation.
 */
static void
rows_final(sqlite3_context *ctx)
{
	sqlite3_result_null(ctx);
}

/* The state of ssfdw_sumsq in SQLite's aggregate context. */
typedef struct SumSqState
{
	unsigned long long sq[3];
	int			has;
} SumSqState;

/*
 * sumsq_step
 *		Step function of ssfdw_sumsq(x): the exact sum of the squares of
 *		integers, which the variances of integer columns need and SQLite's
 *		64-bit sum() cannot hold.  Reals are truncated as TA_SUM reads
 *		them; the query's guard reports them anyway.
 */
static void
sumsq_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	SumSqState *st;

	if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
		return;
	st = sqlite3_aggregate_context(ctx, sizeof(SumSqState));
	if (st == NULL)
	{
		sqlite3_result_error_nomem(ctx);
		return;
	}
	sumsq_add(st->sq, sqlite3_value_type(argv[0]) == SQLITE_FLOAT ?
			  (long long) sqlite3_value_double(argv[0]) :
			  sqlite3_value_int64(argv[0]));
	st->has = 1;
}

/*
 * sumsq_final
 *		Final function of ssfdw_sumsq: the sum as decimal text, or NULL
 *		when no value was summed (as TA_SUMSQ emits it).
 */
static void
sumsq_final(sqlite3_context *ctx)
{
	SumSqState *st = sqlite3_aggregate_context(ctx, 0);
	char		buf[SUMSQ_TEXT_LEN];

	if (st == NULL || !st->has)
	{
		sqlite3_result_null(ctx);
		return;
	}
	sumsq_text(st->sq, buf);
	sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
}

/*
 * threadagg_register
 *		Make ssfdw_rows and ssfdw_sumsq on a handle (shardio_open),
 *		callable only from the wrapper's own SQL, never from a shard's
 *		views or triggers.
 */
int
threadagg_register(sqlite3 *db)
{
	int			rc;

	rc = sqlite3_create_function_v2(db, "ssfdw_rows", -1,
									SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL,
									NULL, rows_step, rows_final, NULL);
	if (rc != SQLITE_OK)
		return rc;
	return sqlite3_create_function_v2(db, "ssfdw_sumsq", 1,
									  SQLITE_UTF8 | SQLITE_DIRECTONLY |
									  SQLITE_DETERMINISTIC, NULL,
									  NULL, sumsq_step, sumsq_final, NULL);
}

/*
 * threadagg_consume
 *		Run a raw statement, "SELECT ssfdw_rows(raw columns) FROM ...", to
 *		its end: every row it reads goes into its group (rows_step).
 *		Returns SQLITE_DONE, SQLITE_FULL when there are more groups than the
 *		spec allows, an SQLite error, or the wrapper's error for a time it
 *		cannot read (add_row), with the message in errbuf.
 */
int
threadagg_consume(ThreadAgg *ta, sqlite3_stmt *stmt, char *errbuf)
{
	sqlite3_mutex *mutex = sqlite3_db_mutex(sqlite3_db_handle(stmt));
	int			rc;

	if (ta->nkeys == 0 && ta->first == NULL && new_group(ta, 0) == NULL)
	{
		snprintf(errbuf, SHARDIO_ERRLEN, "out of memory");
		return SQLITE_NOMEM;
	}
	ta->rc = SQLITE_OK;
	ta->errbuf = errbuf;
	errbuf[0] = '\0';

	/*
	 * One step reads the whole shard, its rows going to rows_step, which
	 * finds this aggregation here; the handle's mutex keeps any other
	 * statement of the handle out meanwhile.
	 */
	sqlite3_mutex_enter(mutex);
	consuming = ta;
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		rc = sqlite3_step(stmt);
	consuming = NULL;
	if (ta->rc != SQLITE_OK)
		rc = ta->rc;
	else if (rc != SQLITE_DONE)
		snprintf(errbuf, SHARDIO_ERRLEN, "%s",
				 sqlite3_errmsg(sqlite3_db_handle(stmt)));
	sqlite3_mutex_leave(mutex);
	ta->errbuf = NULL;
	return rc;
}

/*
 * put_value
 *		Store a value into a batch cell, bytes into the arena (as offsets
 *		until the batch is complete).
 */
static int
put_value(ShardBatch *batch, ShardValue *dst, const ShardValue *src)
{
	*dst = *src;
	if (src->type == SQLITE_TEXT || src->type == SQLITE_BLOB)
	{
		long		off = shardio_arena_store(batch, src->u.p, (size_t) src->len);

		if (off < 0)
			return 0;
		dst->u.i = off;
	}
	return 1;
}

/*
 * group_value
 *		The partial column c of group g, as the shard's SQL would return it.
 *		Text points into the group.  Returns SQLITE_OK, or
 *		SHARDIO_ERR_SUM_OVERFLOW when an integer sum overflowed (with
 *		SQLite's sum()'s message, which the backend maps to the same
 *		SQLSTATE).
 */
static int
group_value(ThreadAgg *ta, TaGroup *g, int c, ShardValue *v, char *errbuf)
{
	const TaAcc *acc = &g->accs[c];

	memset(v, 0, sizeof(*v));
	v->type = SQLITE_INTEGER;
	switch (ta->spec->cols[c].op)
	{
		case TA_KEY:
			*v = g->keys[ta->key_of_col[c]];
			break;
		case TA_COUNT_INF:
		case TA_TIME_MIN:
		case TA_TIME_MAX:
			if (!acc->has)
				v->type = SQLITE_NULL;
			v->u.i = acc->i;
			break;
		case TA_SUM:
		case TA_SUM_HI:
		case TA_SUM_LO:
			if (acc->overflow)
			{
				if (errbuf)
					snprintf(errbuf, SHARDIO_ERRLEN, "integer overflow");
				return SHARDIO_ERR_SUM_OVERFLOW;
			}
			if (!acc->has)
				v->type = SQLITE_NULL;
			v->u.i = acc->i;
			break;
		case TA_TOTAL:
			v->type = SQLITE_FLOAT;
			v->u.d = acc->d;
			break;
		case TA_SUMSQ:
			if (!acc->has)
			{
				v->type = SQLITE_NULL;
				break;
			}
			sumsq_text(acc->sq, ta->sqtext);
			v->type = SQLITE_TEXT;
			v->u.p = ta->sqtext;
			v->len = (int) strlen(ta->sqtext);
			break;
		case TA_MIN:
		case TA_MAX:
			if (acc->has)
				*v = acc->v;
			else
				v->type = SQLITE_NULL;
			break;
		default:
			v->u.i = acc->i;
			break;
	}
	return SQLITE_OK;
}

/*
 * must_keep
 *		Does a group have to reach the backend whatever the bound, because
 *		the merge rejects it: a value of the wrong storage class (the
 *		guard), an unreadable boolean, an integer sum that overflowed, a
 *		total that overflowed without an infinite input?
 */
static int
must_keep(ThreadAgg *ta, TaGroup *g)
{
	const ThreadAggSpec *spec = ta->spec;
	int			c;

	for (c = 0; c < spec->ncols; c++)
	{
		const TaAcc *acc = &g->accs[c];
		int			c2;

		switch (spec->cols[c].op)
		{
			case TA_GUARD:
			case TA_KEYCHECK:
			case TA_COUNT_DIFF:
				if (acc->i > 0)
					return 1;
				break;
			case TA_SUM:
			case TA_SUM_HI:
			case TA_SUM_LO:
				if (acc->overflow)
					return 1;
				break;
			case TA_TOTAL:
				if (!isinf(acc->d))
					break;
				for (c2 = 0; c2 < spec->ncols; c2++)
					if (spec->cols[c2].op == TA_COUNT_INF &&
						spec->cols[c2].raw == spec->cols[c].raw &&
						g->accs[c2].i == 0)
						return 1;
				break;
			default:
				break;
		}
	}
	return 0;
}

/* A group as keep_first_groups sorts it. */
typedef struct SortItem
{
	ThreadAgg  *ta;
	TaGroup    *g;
	int			keep;			/* must_keep */
} SortItem;

/*
 * compare_groups
 *		qsort comparator of SortItems: groups that must be kept first, then
 *		the spec's order (numbers by value, text byte-wise as the C
 *		collation and SQLite's BINARY compare).
 */
static int
compare_groups(const void *pa, const void *pb)
{
	const SortItem *ia = pa;
	const SortItem *ib = pb;
	ThreadAgg  *ta = ia->ta;
	TaGroup    *a = ia->g;
	TaGroup    *b = ib->g;
	int			s;

	if (ia->keep != ib->keep)
		return ia->keep ? -1 : 1;
	if (ia->keep)
		return 0;
	for (s = 0; s < ta->spec->nsorts; s++)
	{
		const ThreadAggSort *sort = &ta->spec->sorts[s];
		ShardValue	va,
					vb;
		int			r;

		group_value(ta, a, sort->col, &va, NULL);
		group_value(ta, b, sort->col, &vb, NULL);
		if (va.type == SQLITE_NULL || vb.type == SQLITE_NULL)
		{
			if (va.type == vb.type)
				continue;
			return (va.type == SQLITE_NULL) == (sort->nulls_first != 0) ? -1 : 1;
		}
		if (sort->lo >= 0)
		{
			/*
			 * A bigint sum, hi * 2^32 + lo with lo >= 0: compare hi plus the
			 * carry of lo, then lo's low 32 bits.
			 */
			ShardValue	la,
						lb;

			group_value(ta, a, sort->lo, &la, NULL);
			group_value(ta, b, sort->lo, &lb, NULL);
			va.u.i += la.u.i >> 32;
			vb.u.i += lb.u.i >> 32;
			r = value_cmp(&va, &vb);
			if (r == 0)
			{
				la.u.i &= 4294967295LL;
				lb.u.i &= 4294967295LL;
				r = value_cmp(&la, &lb);
			}
		}
		else
			r = value_cmp(&va, &vb);
		if (r != 0)
			return sort->desc ? -r : r;
	}
	return 0;
}

/*
 * keep_first_groups
 *		For a bounded aggregation, choose the groups to return: the first
 *		bound in the spec's order, and every group that must raise an error.
 *		Returns 0 when memory runs out.
 */
static int
keep_first_groups(ThreadAgg *ta)
{
	SortItem   *items;
	TaGroup    *g;
	long		n = 0;
	long		i;

	items = malloc(sizeof(SortItem) * (ta->ngroups + 1));
	ta->kept = malloc(sizeof(TaGroup *) * (ta->ngroups + 1));
	if (items == NULL || ta->kept == NULL)
	{
		free(items);
		return 0;
	}
	for (g = ta->first; g; g = g->next_in_order)
	{
		items[n].ta = ta;
		items[n].g = g;
		items[n].keep = must_keep(ta, g);
		n++;
	}
	qsort(items, n, sizeof(SortItem), compare_groups);
	ta->nkept = 0;
	for (i = 0; i < n && (i < ta->bound || items[i].keep); i++)
		ta->kept[ta->nkept++] = items[i].g;
	free(items);
	return 1;
}

/*
 * next_group
 *		The next group to emit, or NULL after the last.
 */
static TaGroup *
next_group(ThreadAgg *ta)
{
	TaGroup    *g;

	if (ta->kept)
		return ta->kept_next < ta->nkept ? ta->kept[ta->kept_next++] : NULL;
	g = ta->emit_next;
	if (g)
		ta->emit_next = g->next_in_order;
	return g;
}

/*
 * threadagg_emit
 *		Fill a batch with the next groups' partial rows.  Returns
 *		SQLITE_ROW when groups remain, SQLITE_DONE after the last, or an
 *		error (SHARDIO_ERR_SUM_OVERFLOW: an integer sum overflowed).
 */
int
threadagg_emit(ThreadAgg *ta, ShardBatch *batch, char *errbuf)
{
	const ThreadAggSpec *spec = ta->spec;
	TaGroup    *g;

	shardio_batch_reset(batch);
	batch->ncols = spec->ncols;
	if (!ta->emit_started)
	{
		ta->emit_next = ta->first;
		ta->emit_started = 1;
		if (ta->bound >= 0 && ta->ngroups > ta->bound &&
			!keep_first_groups(ta))
		{
			snprintf(errbuf, SHARDIO_ERRLEN, "out of memory");
			return SQLITE_NOMEM;
		}
	}
	while (batch->nrows < batch->maxrows && (g = next_group(ta)) != NULL)
	{
		ShardValue *row = &batch->values[(size_t) batch->nrows * spec->ncols];
		int			c;

		for (c = 0; c < spec->ncols; c++)
		{
			ShardValue	v;
			int			rc = group_value(ta, g, c, &v, errbuf);

			if (rc != SQLITE_OK)
				return rc;
			if (!put_value(batch, &row[c], &v))
			{
				snprintf(errbuf, SHARDIO_ERRLEN, "out of memory");
				return SQLITE_NOMEM;
			}
		}
		batch->nrows++;
	}
	shardio_batch_fix_pointers(batch);
	return (ta->kept ? ta->kept_next < ta->nkept : ta->emit_next != NULL) ?
		SQLITE_ROW : SQLITE_DONE;
}

/*
 * threadagg_free
 *		Release an aggregation and all its groups.
 */
void
threadagg_free(ThreadAgg *ta)
{
	TaGroup    *g;

	if (ta == NULL)
		return;
	for (g = ta->first; g;)
	{
		TaGroup    *next = g->next_in_order;
		int			c;

		for (c = 0; c < ta->nkeys; c++)
			value_free(&g->keys[c]);
		for (c = 0; c < ta->spec->ncols; c++)
			value_free(&g->accs[c].v);
		free(g->keys);
		free(g->accs);
		free(g);
		g = next;
	}
	free(ta->kept);
	free(ta->key_guard);
	free(ta->slots);
	free(ta->key_raw);
	free(ta->key_of_col);
	free(ta->rawrow);
	free(ta);
}
