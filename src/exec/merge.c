/*-------------------------------------------------------------------------
 *
 * merge.c
 *		  Merging the partial aggregates that shards return
 *
 * An aggregate scan (upper.c) receives from each shard one row per group:
 * the grouping keys and the partial aggregates.  Groups are merged in a
 * hash table keyed by the keys, compared with the equality operators of
 * the query's own GROUP BY, so two shards' rows of one group always meet.
 * Once every shard has answered, each group is finalized into the scan's
 * output row: counts are summed, integer sums checked for overflow (or
 * combined from 32-bit halves into numeric), averages divided with
 * PostgreSQL's numeric division, minima and maxima compared by type.
 *
 * count(DISTINCT x) uses a second table keyed by (keys, x): a value counts
 * once however many shards have it.
 *
 * The groups' table stays within hash_mem (work_mem times
 * hash_mem_multiplier) as PostgreSQL's hash aggregation does: once it is
 * full, rows of the groups in it are still merged there, and rows of new
 * groups are set aside on disk by the hash of their keys (mergespill.c).
 * The groups in memory are returned first; then the rows set aside are
 * merged one partition at a time, into the emptied table, the same way.
 * A merge with count(DISTINCT x) does not spill: its table of pairs is not
 * partitioned, and the planner does not push one that would not fit.
 *
 * A scan that also does the query's ORDER BY and LIMIT (upper.c's final
 * path) sorts the finished groups with a bounded tuplesort and returns
 * only the rows OFFSET and LIMIT select.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/nodeAgg.h"
#include "executor/nodeHash.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/date.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/tuplesort.h"

#include "compat.h"

#include "merge.h"
#include "mergespill.h"

/* The running state of one aggregate of one group. */
typedef struct AggAcc
{
	int64		count;			/* count, count(x), avg's count, distinct */
	int64		isum;			/* integer sum, or the high halves */
	int64		ilo;			/* the low halves of a bigint sum, or the
								 * infinite inputs of a float sum */
	double		fsum;			/* double precision total */
	bool		has;			/* a non-NULL partial was merged */
	int64		imm;			/* min/max/bool of integers */
	double		fmm;			/* min/max of doubles */
	char	   *tmm;			/* min/max of text */
	Datum		nsum;			/* a variance's sum (numeric), or 0 */
	Datum		nsumsq;			/* its sum of squares (numeric), or 0 */
} AggAcc;

struct ShardMerge
{
	int			nout;			/* output columns */
	int		   *ops;			/* ShardAggOp of each */
	int		  **cols;			/* shard columns of each */
	Oid		   *types;			/* key type, or aggregate argument type */
	ShardColumnConv *convs;		/* for keys */
	FmgrInfo   *key_funcs;		/* per output column: the function of a
								 * key the shards return as a date or time
								 * standing for its bucket (date_trunc,
								 * extract, date_part), or fn_oid invalid */
	Datum	   *key_units;		/* its unit or field (text), or 0 */
	bool	   *key_dates;		/* the stand-in is a date */
	Datum	   *key_zones;		/* the zone (text) it reads the time in, or
								 * 0: the TimeZone */
	void	  **key_forms;		/* a bucket form's key of its stand-in
								 * (bucketform.c), or NULL */
	int			nkeys;
	int		   *key_out;		/* output column of each key */

	TupleHashTable groups;
	TupleTableSlot *keyslot;	/* keys of a shard row, for lookups */
	TupleTableSlot *readslot;	/* keys of a stored group */
	TupleHashTable distinct;	/* (keys, x) seen, or NULL */
	TupleTableSlot *dslot;
	int			dcol;			/* shard column of x */
	ShardColumnConv dconv;
	int			guard_col;
	int			keycheck_col;	/* key checks, or -1 (shard_merge_set_order) */

	AggAcc	   *nokeys;			/* the one group of a query without keys */
	bool		emitting;
	TupleHashIterator iter;
	bool		nokeys_emitted;

	MemoryContext tablecxt;		/* groups */
	MemoryContext metacxt;		/* the groups' hash table itself */
	MemoryContext tempcxt;		/* reset per row */
	const char *table;			/* SQLite table, for messages */

	/* ORDER BY and LIMIT of the output, when the scan does them */
	int			nsort;
	AttrNumber *sort_attnos;
	Oid		   *sort_ops;
	Oid		   *sort_colls;
	bool	   *sort_nulls_first;
	int64		offset;
	int64		count;			/* -1: no LIMIT */
	int64		skipped;		/* rows OFFSET has skipped so far */
	int64		returned;
	Tuplesortstate *sort;		/* the finished groups, once sorted */
	TupleTableSlot *sortslot;
	MemoryContext cxt;			/* where the merge was created */

	/* Rows set aside on disk once the groups fill hash_mem (mergespill.c) */
	bool		can_spill;		/* keys and no count(DISTINCT x) */
	Size		hash_mem;		/* get_hash_memory_limit() */
	Size		mem_limit;		/* groups' bytes before rows are set aside:
								 * hash_mem less the partitions' buffers */
	int			used_bits;		/* hash bits the rows being merged share */
	MergeSpill *spill;			/* partitions being written, or NULL */
	List	   *batches;		/* MergeSpillBatch of each waiting one */
	MergeSpillReader reader;

	/* for EXPLAIN ANALYZE */
	int64		nbatches;		/* partitions written */
	Size		peak_mem;		/* the groups' most bytes */
	int64		disk_bytes;		/* bytes of the partitions not yet merged */
	int64		peak_disk;
};

/*
 * build_table
 *		A hash table over a key tuple of the given types, with the given
 *		equality operators and collations.
 */
static TupleHashTable
build_table(PlanState *ps, int nkeys, Oid *keytypes, Oid *eqops, Oid *colls,
			TupleTableSlot **slot, MemoryContext metacxt,
			MemoryContext tablecxt, MemoryContext tempcxt)
{
	TupleDesc	desc = CreateTemplateTupleDesc(nkeys);
	AttrNumber *keycols = palloc(sizeof(AttrNumber) * nkeys);
	Oid		   *eqfuncs;
	FmgrInfo   *hashfuncs;
	int			i;

	for (i = 0; i < nkeys; i++)
	{
		TupleDescInitEntry(desc, i + 1, NULL, keytypes[i], -1, 0);
		TupleDescInitEntryCollation(desc, i + 1, colls[i]);
		keycols[i] = i + 1;
	}
	*slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	execTuplesHashPrepare(nkeys, eqops, &eqfuncs, &hashfuncs);
	return BuildTupleHashTableExt(ps, desc, nkeys, keycols, eqfuncs, hashfuncs,
								  colls, 256, 0, metacxt,
								  tablecxt, tempcxt, false);
}

/*
 * shard_merge_create
 *		Set up the merge of an aggregate scan from its plan's lists.
 */
ShardMerge *
shard_merge_create(PlanState *ps, List *ops, List *cols, List *types,
				   List *eqops, List *colls, List *distinct, List *key_truncs,
				   int guard_col, const char *table)
{
	ShardMerge *m = palloc0(sizeof(ShardMerge));
	ListCell   *lc1,
			   *lc2,
			   *lc3;
	Oid		   *keytypes;
	Oid		   *keyeqops;
	Oid		   *keycolls;
	int			i = 0;
	int			k = 0;

	m->nout = list_length(ops);
	m->ops = palloc(sizeof(int) * m->nout);
	m->cols = palloc(sizeof(int *) * m->nout);
	m->types = palloc(sizeof(Oid) * m->nout);
	m->convs = palloc0(sizeof(ShardColumnConv) * m->nout);
	m->key_funcs = palloc0(sizeof(FmgrInfo) * m->nout);
	m->key_units = palloc0(sizeof(Datum) * m->nout);
	m->key_dates = palloc0(sizeof(bool) * m->nout);
	m->key_forms = palloc0(sizeof(void *) * m->nout);
	m->key_zones = palloc0(sizeof(Datum) * m->nout);
	m->key_out = palloc(sizeof(int) * (m->nout + 1));
	m->guard_col = guard_col;
	m->keycheck_col = -1;
	m->table = table;
	m->count = -1;
	m->cxt = CurrentMemoryContext;
	forthree(lc1, ops, lc2, cols, lc3, types)
	{
		List	   *c = (List *) lfirst(lc2);
		ListCell   *lcc;
		int			j = 0;

		m->ops[i] = lfirst_int(lc1);
		m->cols[i] = palloc(sizeof(int) * (list_length(c) + 1));
		foreach(lcc, c)
			m->cols[i][j++] = lfirst_int(lcc);
		m->types[i] = lfirst_oid(lc3);
		if (m->ops[i] == AGGOP_KEY)
		{
			List	   *kt = list_nth(key_truncs, i);
			Oid			read_as = m->types[i];

			if (kt != NIL && intVal(linitial(kt)) == InvalidOid)
			{
				/* a bucket form: its expression of the stand-in */
				m->key_forms[i] = shard_time_key_form_start(llast(kt));
				read_as = intVal(lthird(kt));
			}
			else if (kt != NIL)
			{
				fmgr_info(intVal(linitial(kt)), &m->key_funcs[i]);
				if (strVal(lsecond(kt))[0] != '\0')
					m->key_units[i] = CStringGetTextDatum(strVal(lsecond(kt)));
				m->key_dates[i] = intVal(lthird(kt));
				if (strVal(lfourth(kt))[0] != '\0')
					m->key_zones[i] = CStringGetTextDatum(strVal(lfourth(kt)));
				read_as = m->key_dates[i] ? DATEOID : TIMESTAMPTZOID;
			}
			shard_conv_init(&m->convs[i], read_as, -1);
			m->key_out[m->nkeys++] = i;
		}
		i++;
	}

	/*
	 * The groups' blocks are no larger than a sixteenth of hash_mem, so
	 * that their memory, compared with it, grows in small steps.
	 */
	m->hash_mem = get_hash_memory_limit();
	m->tablecxt = AllocSetContextCreate(CurrentMemoryContext,
										"sqlite_shard_fdw groups",
										ALLOCSET_DEFAULT_MINSIZE,
										ALLOCSET_DEFAULT_INITSIZE,
										Min(ALLOCSET_DEFAULT_MAXSIZE,
											Max(ALLOCSET_DEFAULT_INITSIZE,
												pg_prevpower2_size_t(m->hash_mem / 16))));
	m->metacxt = AllocSetContextCreate(CurrentMemoryContext,
									   "sqlite_shard_fdw group table",
									   ALLOCSET_DEFAULT_SIZES);
	m->tempcxt = AllocSetContextCreate(CurrentMemoryContext,
									   "sqlite_shard_fdw merge",
									   ALLOCSET_DEFAULT_SIZES);

	keytypes = palloc(sizeof(Oid) * (m->nkeys + 1));
	keyeqops = palloc(sizeof(Oid) * (m->nkeys + 1));
	keycolls = palloc(sizeof(Oid) * (m->nkeys + 1));
	forboth(lc1, eqops, lc2, colls)
	{
		keytypes[k] = m->types[m->key_out[k]];
		keyeqops[k] = lfirst_oid(lc1);
		keycolls[k] = lfirst_oid(lc2);
		k++;
	}
	if (m->nkeys > 0)
	{
		m->groups = build_table(ps, m->nkeys, keytypes, keyeqops, keycolls,
								&m->keyslot, m->metacxt, m->tablecxt,
								m->tempcxt);
		m->readslot = MakeSingleTupleTableSlot(m->keyslot->tts_tupleDescriptor,
											   &TTSOpsMinimalTuple);
	}

	if (distinct != NIL)
	{
		m->dcol = linitial_int(distinct);
		keytypes[m->nkeys] = (Oid) lsecond_int(distinct);
		keyeqops[m->nkeys] = (Oid) lthird_int(distinct);
		keycolls[m->nkeys] = (Oid) lfourth_int(distinct);
		shard_conv_init(&m->dconv, keytypes[m->nkeys], -1);
		m->distinct = build_table(ps, m->nkeys + 1, keytypes, keyeqops,
								  keycolls, &m->dslot, m->metacxt,
								  m->tablecxt, m->tempcxt);
	}

	m->can_spill = (m->nkeys > 0 && m->distinct == NULL);
	m->mem_limit = m->hash_mem -
		Min(m->hash_mem / 2,
			(Size) merge_spill_partitions(m->hash_mem, 0) * BLCKSZ);
	initStringInfo(&m->reader.buf);
	return m;
}

/*
 * shard_merge_group_bytes
 *		The memory the merge takes per group of an aggregation with nout
 *		output columns, whose keys (and text minima and maxima) take
 *		data_width bytes: the hash table's entry, the key tuple and the
 *		accumulators, estimated as PostgreSQL's HashAgg estimates its own.
 *		The planner compares it with hash_mem to cost the merge's spill.
 */
Size
shard_merge_group_bytes(int nout, int data_width)
{
	return hash_agg_entry_size(0, data_width, sizeof(AggAcc) * nout);
}

/*
 * shard_merge_reset
 *		Forget every group, for a rescan.
 */
void
shard_merge_reset(ShardMerge *m)
{
	if (m->groups)
		ResetTupleHashTable(m->groups);
	if (m->distinct)
		ResetTupleHashTable(m->distinct);
	MemoryContextReset(m->tablecxt);
	m->nokeys = NULL;
	m->nokeys_emitted = false;
	m->emitting = false;
	shard_merge_end(m);
	m->skipped = 0;
	m->returned = 0;
}

/*
 * finish_pass
 *		End the writing of the partitions of the rows being merged: they
 *		wait in the list of batches.
 */
static void
finish_pass(ShardMerge *m)
{
	MemoryContext oldcxt;

	if (m->spill == NULL)
		return;
	oldcxt = MemoryContextSwitchTo(m->cxt);
	m->nbatches -= list_length(m->batches);
	m->batches = merge_spill_finish(m->spill, m->batches);
	m->nbatches += list_length(m->batches);
	m->spill = NULL;
	MemoryContextSwitchTo(oldcxt);
}

/*
 * shard_merge_end
 *		Release the output's sort and the rows set aside (and the temporary
 *		files they used).
 */
void
shard_merge_end(ShardMerge *m)
{
	ListCell   *lc;

	if (m->sort)
		tuplesort_end(m->sort);
	m->sort = NULL;
	finish_pass(m);
	foreach(lc, m->batches)
	{
		merge_spill_close((MergeSpillBatch *) lfirst(lc));
		pfree(lfirst(lc));
	}
	list_free(m->batches);
	m->batches = NIL;
	m->used_bits = 0;
	m->disk_bytes = 0;
}

/*
 * shard_merge_explain
 *		What EXPLAIN ANALYZE shows of a merge that set rows aside: the
 *		batches (the table's first, and each partition merged after it),
 *		the most memory its groups took and the most disk its rows did, as
 *		PostgreSQL shows its hash aggregation's.
 */
void
shard_merge_explain(ShardMerge *m, ExplainState *es)
{
	int64		mem_kb = (m->peak_mem + 1023) / 1024;
	int64		disk_kb = (m->peak_disk + 1023) / 1024;

	if (m->nbatches == 0)
		return;
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		appendStringInfoSpaces(es->str, es->indent * 2);
		appendStringInfo(es->str,
						 "Merge Batches: " INT64_FORMAT "  Memory Usage: " INT64_FORMAT "kB  Disk Usage: " INT64_FORMAT "kB\n",
						 m->nbatches + 1, mem_kb, disk_kb);
	}
	else
	{
		ExplainPropertyInteger("Merge Batches", NULL, m->nbatches + 1, es);
		ExplainPropertyInteger("Merge Memory Usage", "kB", mem_kb, es);
		ExplainPropertyInteger("Merge Disk Usage", "kB", disk_kb, es);
	}
}

/*
 * shard_merge_set_order
 *		Return the groups sorted by the given keys (the plan's
 *		FdwScanOrderMergeKeys list: output attnos, sort operators,
 *		collations, nulls_first flags); keycheck_col is the shard column of
 *		the key checks, or -1.
 */
void
shard_merge_set_order(ShardMerge *m, List *keys, int keycheck_col)
{
	List	   *attnos = linitial(keys);
	int			i;

	m->keycheck_col = keycheck_col;
	m->nsort = list_length(attnos);
	m->sort_attnos = palloc(sizeof(AttrNumber) * (m->nsort + 1));
	m->sort_ops = palloc(sizeof(Oid) * (m->nsort + 1));
	m->sort_colls = palloc(sizeof(Oid) * (m->nsort + 1));
	m->sort_nulls_first = palloc(sizeof(bool) * (m->nsort + 1));
	for (i = 0; i < m->nsort; i++)
	{
		m->sort_attnos[i] = list_nth_int(attnos, i);
		m->sort_ops[i] = list_nth_oid(lsecond(keys), i);
		m->sort_colls[i] = list_nth_oid(lthird(keys), i);
		m->sort_nulls_first[i] = list_nth_int(lfourth(keys), i);
	}
}

/*
 * shard_merge_set_limit
 *		Skip the first offset rows of the output and stop after count more
 *		(count -1: no limit).
 */
void
shard_merge_set_limit(ShardMerge *m, int64 offset, int64 count)
{
	m->offset = offset;
	m->count = count;
}

/*
 * value_int
 *		An integer partial; NULL counts as absent.
 */
static bool
value_int(const ShardValue *v, int64 *out)
{
	if (v->type == SQLITE_INTEGER)
	{
		*out = v->u.i;
		return true;
	}
	if (v->type == SQLITE_FLOAT)
	{
		*out = (int64) v->u.d;
		return true;
	}
	return false;
}

/*
 * value_float
 *		A numeric partial as a double; NULL counts as absent.
 */
static bool
value_float(const ShardValue *v, double *out)
{
	if (v->type == SQLITE_INTEGER)
	{
		*out = (double) v->u.i;
		return true;
	}
	if (v->type == SQLITE_FLOAT)
	{
		*out = v->u.d;
		return true;
	}
	return false;
}

/*
 * add_int
 *		Add to an integer accumulator, with PostgreSQL's overflow error.
 */
static void
add_int(int64 *acc, int64 v)
{
	if (pg_add_s64_overflow(*acc, v, acc))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("bigint out of range")));
}

/*
 * merge_minmax
 *		Keep the smaller (or larger) of the accumulated and a new value.
 */
static void
merge_minmax(ShardMerge *m, AggAcc *acc, int op, Oid type, const ShardValue *v)
{
	bool		take;

	if (v->type == SQLITE_NULL)
		return;
	if (type == TEXTOID || type == VARCHAROID)
	{
		const char *p = v->type == SQLITE_TEXT ? v->u.p : "";
		int			cmp = acc->has ? strcmp(p, acc->tmm) : 0;

		take = !acc->has || (op == AGGOP_MIN ? cmp < 0 : cmp > 0);
		if (take)
		{
			if (acc->tmm)
				pfree(acc->tmm);
			acc->tmm = MemoryContextStrdup(m->tablecxt, p);
		}
	}
	else if (type == FLOAT8OID)
	{
		double		d = 0;

		(void) value_float(v, &d);
		take = !acc->has || (op == AGGOP_MIN ? d < acc->fmm : d > acc->fmm);
		if (take)
			acc->fmm = d;
	}
	else
	{
		int64		i = 0;

		(void) value_int(v, &i);
		take = !acc->has || (op == AGGOP_MIN ? i < acc->imm : i > acc->imm);
		if (take)
			acc->imm = i;
	}
	acc->has = true;
}

/*
 * int_sum_numeric
 *		A bigint sum from its halves: high * 2^32 + low, exactly.
 */
static Datum
int_sum_numeric(AggAcc *acc)
{
	Datum		high = NumericGetDatum(int64_to_numeric(acc->isum));
	Datum		shift = NumericGetDatum(int64_to_numeric(INT64CONST(4294967296)));
	Datum		low = NumericGetDatum(int64_to_numeric(acc->ilo));

	return DirectFunctionCall2(numeric_add,
							   DirectFunctionCall2(numeric_mul, high, shift),
							   low);
}

/*
 * add_numeric
 *		Add a numeric to an accumulator kept in the merge's table context.
 */
static void
add_numeric(ShardMerge *m, Datum *acc, Datum v)
{
	MemoryContext oldcxt;
	Datum		sum = *acc ? DirectFunctionCall2(numeric_add, *acc, v) : v;

	oldcxt = MemoryContextSwitchTo(m->tablecxt);
	if (*acc)
		pfree(DatumGetPointer(*acc));
	*acc = datumCopy(sum, false, -1);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * merge_variance
 *		Fold a shard's count, sum of squares (decimal text, ssfdw_sumsq) and
 *		sum (of a bigint, as its high and low halves) into a variance's
 *		accumulator, sums as numeric: PostgreSQL's own are exact too.
 */
static void
merge_variance(ShardMerge *m, AggAcc *acc, Oid type, const ShardValue *row,
			   const int *c)
{
	int64		iv;
	int64		lo;

	if (value_int(&row[c[0]], &iv))
		add_int(&acc->count, iv);
	if (row[c[1]].type == SQLITE_TEXT)
		add_numeric(m, &acc->nsumsq,
					DirectFunctionCall3(numeric_in,
										CStringGetDatum(pnstrdup(row[c[1]].u.p,
																 row[c[1]].len)),
										ObjectIdGetDatum(InvalidOid),
										Int32GetDatum(-1)));
	if (!value_int(&row[c[2]], &iv))
		return;
	if (type != INT8OID)
		add_numeric(m, &acc->nsum, NumericGetDatum(int64_to_numeric(iv)));
	else
	{
		AggAcc		halves = {0};

		halves.isum = iv;
		if (value_int(&row[c[3]], &lo))
			halves.ilo = lo;
		add_numeric(m, &acc->nsum, int_sum_numeric(&halves));
	}
	acc->has = true;
}

/*
 * merge_row
 *		Fold one shard row's partials into its group's accumulators.
 */
static void
merge_row(ShardMerge *m, AggAcc *accs, const ShardValue *row,
		  const char *shard_id)
{
	int			i;

	for (i = 0; i < m->nout; i++)
	{
		AggAcc	   *acc = &accs[i];
		const int  *c = m->cols[i];
		int64		iv = 0;
		double		dv;

		switch (m->ops[i])
		{
			case AGGOP_KEY:
			case AGGOP_COUNT_DISTINCT:
				break;
			case AGGOP_COUNT_STAR:
			case AGGOP_COUNT:
				if (value_int(&row[c[0]], &iv))
					add_int(&acc->count, iv);
				break;
			case AGGOP_SUM_INT:
				if (value_int(&row[c[0]], &iv))
				{
					add_int(&acc->isum, iv);
					acc->has = true;
				}
				break;
			case AGGOP_SUM_INT8:
			case AGGOP_AVG_INT8:
				if (value_int(&row[c[0]], &iv))
				{
					add_int(&acc->isum, iv);
					if (value_int(&row[c[1]], &iv))
						add_int(&acc->ilo, iv);
					acc->has = true;
				}
				if (m->ops[i] == AGGOP_AVG_INT8 && value_int(&row[c[2]], &iv))
					add_int(&acc->count, iv);
				break;
			case AGGOP_AVG_INT:
				if (value_int(&row[c[0]], &iv))
				{
					add_int(&acc->isum, iv);
					acc->has = true;
				}
				if (value_int(&row[c[1]], &iv))
					add_int(&acc->count, iv);
				break;
			case AGGOP_SUM_FLOAT:
			case AGGOP_AVG_FLOAT:
				if (value_int(&row[c[1]], &iv))
					add_int(&acc->count, iv);

				/*
				 * total() is never NULL but for NaN (infinities of both
				 * signs), which SQLite returns as NULL.
				 */
				if (value_float(&row[c[0]], &dv))
					acc->fsum += dv;
				else if (iv > 0)
					acc->fsum = get_float8_nan();
				if (value_int(&row[c[2]], &iv))
					add_int(&acc->ilo, iv);
				break;
			case AGGOP_MIN:
			case AGGOP_MAX:
				merge_minmax(m, acc, m->ops[i], m->types[i], &row[c[0]]);
				break;
			case AGGOP_VAR_POP:
			case AGGOP_VAR_SAMP:
			case AGGOP_STDDEV_POP:
			case AGGOP_STDDEV_SAMP:
				merge_variance(m, acc, m->types[i], row, c);
				break;
			case AGGOP_SUM_NUMCASE:
				if (value_int(&row[c[0]], &iv))
					add_int(&acc->isum, iv);
				if (value_int(&row[c[1]], &iv))
				{
					acc->imm = acc->has ? Max(acc->imm, iv) : iv;
					acc->has = true;
				}
				break;
			case AGGOP_BOOL_AND:
			case AGGOP_BOOL_OR:
				if (value_int(&row[c[1]], &iv) && iv > 0)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
							 errmsg("invalid input syntax for type boolean in table \"%s\" on shard \"%s\"",
									m->table, shard_id),
							 errdetail_plural("%lld stored value cannot be read as boolean.",
											  "%lld stored values cannot be read as boolean.",
											  (unsigned long) iv, (long long) iv)));
				if (value_int(&row[c[0]], &iv))
				{
					if (!acc->has)
						acc->imm = iv;
					else if (m->ops[i] == AGGOP_BOOL_AND)
						acc->imm = Min(acc->imm, iv);
					else
						acc->imm = Max(acc->imm, iv);
					acc->has = true;
				}
				break;
		}
	}
}

/*
 * store_keys
 *		Convert a row's keys (and, with x, the distinct value) into a key
 *		slot.
 */
static void
store_keys(ShardMerge *m, TupleTableSlot *slot, const ShardValue *row,
		   bool with_x)
{
	int			k;

	ExecClearTuple(slot);
	for (k = 0; k < m->nkeys; k++)
	{
		int			out = m->key_out[k];

		slot->tts_values[k] = shard_value_to_datum(&m->convs[out],
												   &row[m->cols[out][0]],
												   &slot->tts_isnull[k]);
		if (m->key_forms[out] != NULL)
			slot->tts_values[k] =
				shard_time_key_form_value(m->key_forms[out],
										  slot->tts_values[k],
										  &slot->tts_isnull[k]);
		/* the key's function of the date or time standing for its bucket */
		else if (OidIsValid(m->key_funcs[out].fn_oid) && !slot->tts_isnull[k])
		{
			Datum		t = slot->tts_values[k];

			if (m->key_dates[out])
				t = DirectFunctionCall1(date_timestamptz, t);
			if (m->key_funcs[out].fn_nargs == 3)	/* date_trunc(u, t, zone) */
				slot->tts_values[k] = FunctionCall3(&m->key_funcs[out],
													m->key_units[out], t,
													m->key_zones[out]);
			else
			{
				/* the local time in the zone: timezone(zone, t) */
				if (m->key_zones[out] != (Datum) 0)
					t = DirectFunctionCall2(timestamptz_zone,
											m->key_zones[out], t);
				slot->tts_values[k] = (m->key_units[out] == (Datum) 0) ?
					FunctionCall1(&m->key_funcs[out], t) :
					FunctionCall2(&m->key_funcs[out], m->key_units[out], t);
			}
		}
	}
	if (with_x)
		slot->tts_values[m->nkeys] = shard_value_to_datum(&m->dconv,
														  &row[m->dcol],
														  &slot->tts_isnull[m->nkeys]);
	ExecStoreVirtualTuple(slot);
}

/*
 * check_memory
 *		After a new group: once the groups take more than their limit, the
 *		rows of new groups are set aside from now on.
 */
static void
check_memory(ShardMerge *m)
{
	Size		mem = MemoryContextMemAllocated(m->tablecxt, true) +
		MemoryContextMemAllocated(m->metacxt, true);
	int			n;

	m->peak_mem = Max(m->peak_mem, mem);
	if (!m->can_spill || m->spill != NULL || mem <= m->mem_limit)
		return;
	/* With no bits of the hash left, the table grows, as PostgreSQL's. */
	n = merge_spill_partitions(m->hash_mem, m->used_bits);
	if (n > 0)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(m->cxt);

		m->spill = merge_spill_begin(n, m->used_bits);
		MemoryContextSwitchTo(oldcxt);
	}
}

/*
 * group_accs
 *		The accumulators of a row's group, created on first sight; NULL when
 *		the table is full and the row, of a new group, was set aside.
 */
static AggAcc *
group_accs(ShardMerge *m, const ShardValue *row, int ncols,
		   const char *shard_id)
{
	TupleHashEntry entry;
	bool		isnew;
	uint32		hash;

	if (m->nkeys == 0)
	{
		if (m->nokeys == NULL)
			m->nokeys = MemoryContextAllocZero(m->tablecxt,
											   sizeof(AggAcc) * m->nout);
		return m->nokeys;
	}
	store_keys(m, m->keyslot, row, false);
	if (m->spill != NULL)
	{
		MemoryContext oldcxt;

		entry = LookupTupleHashEntry(m->groups, m->keyslot, NULL, &hash);
		if (entry != NULL)
			return (AggAcc *) entry->additional;
		/* the partition's file lasts as long as the merge */
		oldcxt = MemoryContextSwitchTo(m->cxt);
		m->disk_bytes += merge_spill_row(m->spill, hash, row, ncols,
										 shard_id);
		MemoryContextSwitchTo(oldcxt);
		m->peak_disk = Max(m->peak_disk, m->disk_bytes);
		return NULL;
	}
	entry = LookupTupleHashEntry(m->groups, m->keyslot, &isnew, NULL);
	if (isnew)
	{
		entry->additional = MemoryContextAllocZero(m->tablecxt,
												   sizeof(AggAcc) * m->nout);
		check_memory(m);
	}
	return (AggAcc *) entry->additional;
}

/*
 * add_row
 *		Merge one row of a shard into its group, or set it aside.
 */
static void
add_row(ShardMerge *m, const ShardValue *row, int ncols,
		const char *shard_id)
{
	MemoryContext oldcxt;
	AggAcc	   *accs;

	MemoryContextReset(m->tempcxt);
	oldcxt = MemoryContextSwitchTo(m->tempcxt);
	accs = group_accs(m, row, ncols, shard_id);
	if (accs != NULL)
		merge_row(m, accs, row, shard_id);

	if (accs != NULL && m->distinct)
	{
		bool		isnew;

		store_keys(m, m->dslot, row, true);
		(void) LookupTupleHashEntry(m->distinct, m->dslot, &isnew, NULL);
		if (isnew && !m->dslot->tts_isnull[m->nkeys])
		{
			int			i;

			for (i = 0; i < m->nout; i++)
				if (m->ops[i] == AGGOP_COUNT_DISTINCT)
					accs[i].count++;
		}
	}
	MemoryContextSwitchTo(oldcxt);
}

/*
 * shard_merge_add_batch
 *		Merge every row of a batch from one shard.  From a shard that
 *		returned only its first groups (bounded), a key the key checks
 *		flag is an error too: the group may stand for others the bound cut
 *		(5 and '5', one PostgreSQL key), so the answer cannot be trusted.
 *		Elsewhere the merge converts such keys as reading the rows would.
 */
void
shard_merge_add_batch(ShardMerge *m, ShardBatch *batch, const char *shard_id,
					  bool bounded)
{
	int			r;

	for (r = 0; r < batch->nrows; r++)
	{
		const ShardValue *row = &batch->values[(size_t) r * batch->ncols];
		int64		bad;

		if ((m->guard_col >= 0 && value_int(&row[m->guard_col], &bad) &&
			 bad > 0) ||
			(bounded && m->keycheck_col >= 0 &&
			 value_int(&row[m->keycheck_col], &bad) && bad > 0))
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
					 errmsg("table \"%s\" on shard \"%s\" holds values the aggregates cannot read",
							m->table, shard_id),
					 errdetail_plural("%lld stored value cannot be read as its column's type (a storage class or range the type does not allow, invalid text, or a time the wrapper does not read).",
									  "%lld stored values cannot be read as their column's type (a storage class or range the type does not allow, invalid text, or a time the wrapper does not read).",
									  (unsigned long) bad, (long long) bad),
					 errhint("Set \"sqlite_shard_fdw.aggregate_pushdown\" to off to aggregate in PostgreSQL, which reports each value.")));

		add_row(m, row, batch->ncols, shard_id);
	}
}

/*
 * numeric_sqrt_at
 *		The square root of a positive numeric, rounded to scale digits
 *		(half away from zero) as PostgreSQL's stddev rounds it: numeric_sqrt
 *		chooses its own scale, so its result, rounded, is corrected by
 *		comparing the squares of the rounding interval's ends with x.
 */
static Datum
numeric_sqrt_at(Datum x, int scale)
{
	Datum		r = DirectFunctionCall2(numeric_round,
										DirectFunctionCall1(numeric_sqrt, x),
										Int32GetDatum(scale));
	Datum		ulp = DirectFunctionCall3(numeric_in,
										  CStringGetDatum(psprintf("1e-%d", scale)),
										  ObjectIdGetDatum(InvalidOid),
										  Int32GetDatum(-1));
	Datum		half = DirectFunctionCall3(numeric_in,
										   CStringGetDatum(psprintf("5e-%d", scale + 1)),
										   ObjectIdGetDatum(InvalidOid),
										   Int32GetDatum(-1));
	int			i;

	for (i = 0; i < 4; i++)
	{
		Datum		up = DirectFunctionCall2(numeric_add, r, half);
		Datum		down = DirectFunctionCall2(numeric_sub, r, half);

		/* r rounds sqrt(x) when (r - half)^2 <= x < (r + half)^2 */
		if (DatumGetInt32(DirectFunctionCall2(numeric_cmp,
											  DirectFunctionCall2(numeric_mul, up, up),
											  x)) <= 0)
			r = DirectFunctionCall2(numeric_add, r, ulp);
		else if (DatumGetInt32(DirectFunctionCall2(numeric_cmp,
												   DirectFunctionCall2(numeric_mul, down, down),
												   x)) > 0)
			r = DirectFunctionCall2(numeric_sub, r, ulp);
		else
			break;
	}
	return r;
}

/*
 * variance_result
 *		var_pop, var_samp, stddev_pop or stddev_samp of integers, as
 *		PostgreSQL's numeric_stddev_internal computes them from N, the sum
 *		and the sum of squares: (N * sumX2 - sumX * sumX) / (N * N) or
 *		/ (N * (N - 1)) with numeric division's scale, 0 when the numerator
 *		is not positive, NULL without values (or with one, of the sample
 *		forms); the standard deviations the square root at the variance's
 *		scale.
 */
static Datum
variance_result(AggAcc *acc, int op, bool *isnull)
{
	bool		sample = (op == AGGOP_VAR_SAMP || op == AGGOP_STDDEV_SAMP);
	Datum		n;
	Datum		num;
	Datum		den;
	Datum		var;

	if (acc->count == 0 || (sample && acc->count <= 1) || !acc->has ||
		acc->nsumsq == (Datum) 0)
	{
		*isnull = true;
		return (Datum) 0;
	}
	n = NumericGetDatum(int64_to_numeric(acc->count));
	num = DirectFunctionCall2(numeric_sub,
							  DirectFunctionCall2(numeric_mul, n, acc->nsumsq),
							  DirectFunctionCall2(numeric_mul, acc->nsum,
												  acc->nsum));
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, num,
										  NumericGetDatum(int64_to_numeric(0)))) <= 0)
		return NumericGetDatum(int64_to_numeric(0));
	den = DirectFunctionCall2(numeric_mul, n,
							  sample ?
							  NumericGetDatum(int64_to_numeric(acc->count - 1)) :
							  n);
	var = DirectFunctionCall2(numeric_div, num, den);
	if (op == AGGOP_VAR_POP || op == AGGOP_VAR_SAMP)
		return var;
	return numeric_sqrt_at(var,
						   DatumGetInt32(DirectFunctionCall1(numeric_scale, var)));
}

/*
 * finalize
 *		Compute an aggregate's result from its accumulator.
 */
static Datum
finalize(ShardMerge *m, int i, AggAcc *acc, bool *isnull)
{
	Oid			type = m->types[i];

	*isnull = false;
	switch (m->ops[i])
	{
		case AGGOP_COUNT_STAR:
		case AGGOP_COUNT:
		case AGGOP_COUNT_DISTINCT:
			return Int64GetDatum(acc->count);
		case AGGOP_SUM_INT:
			*isnull = !acc->has;
			return Int64GetDatum(acc->isum);
		case AGGOP_SUM_INT8:
			*isnull = !acc->has;
			return acc->has ? int_sum_numeric(acc) : (Datum) 0;
		case AGGOP_AVG_INT:
		case AGGOP_AVG_INT8:
			if (acc->count == 0)
			{
				*isnull = true;
				return (Datum) 0;
			}
			return DirectFunctionCall2(numeric_div,
									   m->ops[i] == AGGOP_AVG_INT ?
									   NumericGetDatum(int64_to_numeric(acc->isum)) :
									   int_sum_numeric(acc),
									   NumericGetDatum(int64_to_numeric(acc->count)));
		case AGGOP_SUM_FLOAT:
		case AGGOP_AVG_FLOAT:
			/* Finite inputs adding up to infinity: PostgreSQL's overflow. */
			if (isinf(acc->fsum) && acc->ilo == 0)
				float_overflow_error();
			*isnull = (acc->count == 0);
			if (m->ops[i] == AGGOP_SUM_FLOAT)
				return Float8GetDatum(acc->fsum);
			return Float8GetDatum(acc->count ? acc->fsum / acc->count : 0);
		case AGGOP_MIN:
		case AGGOP_MAX:
			*isnull = !acc->has;
			if (!acc->has)
				return (Datum) 0;
			if (type == TEXTOID || type == VARCHAROID)
				return CStringGetTextDatum(acc->tmm);
			if (type == FLOAT8OID)
				return Float8GetDatum(acc->fmm);
			if (type == INT2OID)
				return Int16GetDatum((int16) acc->imm);
			if (type == INT4OID)
				return Int32GetDatum((int32) acc->imm);
			if (type == DATEOID)
				return DateADTGetDatum((DateADT) acc->imm);
			return Int64GetDatum(acc->imm);	/* also timestamps */
		case AGGOP_BOOL_AND:
		case AGGOP_BOOL_OR:
			*isnull = !acc->has;
			return BoolGetDatum(acc->imm != 0);
		case AGGOP_VAR_POP:
		case AGGOP_VAR_SAMP:
		case AGGOP_STDDEV_POP:
		case AGGOP_STDDEV_SAMP:
			return variance_result(acc, m->ops[i], isnull);
		case AGGOP_SUM_NUMCASE:
			/* the integer sum at the largest scale of its terms */
			*isnull = !acc->has;
			if (!acc->has)
				return (Datum) 0;
			return DirectFunctionCall2(numeric_round,
									   NumericGetDatum(int64_to_numeric(acc->isum)),
									   Int32GetDatum((int32) acc->imm));
		default:
			elog(ERROR, "unexpected aggregate kind %d", m->ops[i]);
	}
	return (Datum) 0;
}

/*
 * fill_slot
 *		Build one output row: keys from the group's key tuple, aggregates
 *		finalized.
 */
static void
fill_slot(ShardMerge *m, TupleTableSlot *slot, TupleTableSlot *keys,
		  AggAcc *accs)
{
	int			i;
	int			k = 0;

	ExecClearTuple(slot);
	for (i = 0; i < m->nout; i++)
	{
		if (m->ops[i] == AGGOP_KEY)
		{
			slot->tts_values[i] = keys->tts_values[k];
			slot->tts_isnull[i] = keys->tts_isnull[k];
			k++;
		}
		else
			slot->tts_values[i] = finalize(m, i, &accs[i],
										   &slot->tts_isnull[i]);
	}
	ExecStoreVirtualTuple(slot);
}

/*
 * next_batch
 *		Merge the next partition of rows set aside into the emptied table
 *		(its groups returned); false when none is left.
 */
static bool
next_batch(ShardMerge *m)
{
	MergeSpillBatch *b;
	MemoryContext oldcxt;
	const ShardValue *row;
	int			ncols;
	const char *shard_id;

	finish_pass(m);
	if (m->batches == NIL)
		return false;
	b = linitial(m->batches);
	m->batches = list_delete_first(m->batches);

	ResetTupleHashTable(m->groups);
	MemoryContextReset(m->tablecxt);
	m->used_bits = b->used_bits;
	/* the reader's buffers last from row to row */
	oldcxt = MemoryContextSwitchTo(m->cxt);
	while (merge_spill_read(b, &m->reader, &row, &ncols, &shard_id))
	{
		CHECK_FOR_INTERRUPTS();
		add_row(m, row, ncols, shard_id);
	}
	MemoryContextSwitchTo(oldcxt);
	m->disk_bytes -= b->bytes;
	merge_spill_close(b);
	pfree(b);
	m->emitting = false;
	return true;
}

/*
 * next_group
 *		Finish the next merged group into slot; false after the last.  A
 *		query without grouping keys always has its one group, even over no
 *		rows at all (count 0, sum NULL).  The groups in the table come
 *		first, then those of each partition of rows set aside.
 */
static bool
next_group(ShardMerge *m, TupleTableSlot *slot)
{
	TupleHashEntry entry;

	if (m->nkeys == 0)
	{
		if (m->nokeys_emitted)
			return false;
		if (m->nokeys == NULL)
			m->nokeys = MemoryContextAllocZero(m->tablecxt,
											   sizeof(AggAcc) * m->nout);
		fill_slot(m, slot, NULL, m->nokeys);
		m->nokeys_emitted = true;
		return true;
	}

	for (;;)
	{
		if (!m->emitting)
		{
			InitTupleHashIterator(m->groups, &m->iter);
			m->emitting = true;
		}
		entry = ScanTupleHashTable(m->groups, &m->iter);
		if (entry != NULL)
			break;
		if (!next_batch(m))
			return false;
	}
	ExecStoreMinimalTuple(entry->firstTuple, m->readslot, false);
	slot_getallattrs(m->readslot);
	fill_slot(m, slot, m->readslot, (AggAcc *) entry->additional);
	return true;
}

/*
 * sort_groups
 *		Put every finished group into the output's sort, bounded by
 *		OFFSET + LIMIT.
 */
static void
sort_groups(ShardMerge *m, TupleTableSlot *slot)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(m->cxt);

	if (m->sortslot == NULL)
		m->sortslot = MakeSingleTupleTableSlot(slot->tts_tupleDescriptor,
											   &TTSOpsMinimalTuple);
	m->sort = tuplesort_begin_heap_compat(slot->tts_tupleDescriptor, m->nsort,
										  m->sort_attnos, m->sort_ops,
										  m->sort_colls, m->sort_nulls_first,
										  work_mem);
	if (m->count >= 0 && m->offset <= PG_INT64_MAX - m->count)
		tuplesort_set_bound(m->sort, m->offset + m->count);
	MemoryContextSwitchTo(oldcxt);

	/* Each group is finished in tempcxt, which the sort copies it out of. */
	for (;;)
	{
		bool		more;

		MemoryContextReset(m->tempcxt);
		oldcxt = MemoryContextSwitchTo(m->tempcxt);
		more = next_group(m, slot);
		if (more)
			tuplesort_puttupleslot(m->sort, slot);
		MemoryContextSwitchTo(oldcxt);
		if (!more)
			break;
	}
	ExecClearTuple(slot);
	tuplesort_performsort(m->sort);
}

/*
 * shard_merge_next
 *		The next output row into slot, after every shard's rows were added;
 *		false after the last.
 */
bool
shard_merge_next(ShardMerge *m, TupleTableSlot *slot)
{
	for (;;)
	{
		if (m->count >= 0 && m->returned >= m->count)
			return false;
		if (m->nsort > 0)
		{
			if (m->sort == NULL)
				sort_groups(m, slot);
			if (!tuplesort_gettupleslot(m->sort, true, false, m->sortslot, NULL))
				return false;
			ExecCopySlot(slot, m->sortslot);
		}
		else if (!next_group(m, slot))
			return false;
		if (m->skipped < m->offset)
		{
			m->skipped++;
			continue;
		}
		m->returned++;
		return true;
	}
}
