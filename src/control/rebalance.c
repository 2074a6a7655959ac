/*-------------------------------------------------------------------------
 *
 * rebalance.c
 *		  shard_rebalance_plan: which tenants to move so that every shard is
 *		  under a threshold, without moving them
 *
 * Choosing the fewest bytes to move off a shard so that it falls under a
 * limit, with room on the others to take them, is a bin-packing problem:
 * no exact answer is affordable for thousands of tenants.  The plan is
 * greedy, shard by shard from the fullest:
 *
 * - while the shard is over the limit, move the smallest tenant that alone
 *   brings it under and fits on another shard (one move, the fewest bytes
 *   among single moves); if none does, move the largest tenant that fits
 *   somewhere and look again;
 * - a tenant goes to the shard with the most room left under the limit
 *   (fullest shards give, emptiest take), never to one that would pass
 *   the limit itself;
 * - a shard that cannot be brought under (no tenant fits anywhere) is
 *   reported with a WARNING, and its moves that help are kept.
 *
 * Sizes are those of tenant_stats and shard_stats (fleetstats.c): a shard
 * counts its used pages (file pages less free pages, what it would take
 * after the moves' cleanup and a VACUUM), a tenant its estimated bytes.
 * Tenants in a move stay where they are.  Nothing is executed.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "funcapi.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(shard_rebalance_plan);

/* A shard as the plan sees it. */
typedef struct PlanShard
{
	ShardFleetStat *fs;
	double		used;			/* bytes, after the moves planned so far */
	bool		usable;			/* its file exists: it may take tenants */
	bool		done;			/* planned for, or given up on */
} PlanShard;

/*
 * roomiest
 *		The shard other than from with the most room under limit that can
 *		take bytes without passing it, or NULL.
 */
static PlanShard *
roomiest(PlanShard *shards, int n, PlanShard *from, double bytes,
		 double limit)
{
	PlanShard  *best = NULL;
	int			i;

	for (i = 0; i < n; i++)
	{
		PlanShard  *p = &shards[i];

		if (p == from || !p->usable || p->used + bytes > limit)
			continue;
		if (best == NULL || p->used < best->used)
			best = p;
	}
	return best;
}

/*
 * shard_rebalance_plan
 *		shard_rebalance_plan(server [, threshold]): the moves (tenant, from,
 *		to, bytes) that bring every shard under threshold percent of the
 *		server's max_shard_bytes (default 70), planned greedily (see the
 *		file's header), in the order to run them.
 */
Datum
shard_rebalance_plan(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardServerOptions *opts;
	ShardDirectory *dir;
	double		threshold = 70.0;
	double		limit;
	List	   *owners;
	List	   *moving;
	PlanShard  *shards;
	int			nshards = 0;
	int			pos = 0;
	int			step = 0;
	ListCell   *lc;
	int			i;

	opts = shard_admin_server_arg(fcinfo);
	if (PG_NARGS() > 1 && !PG_ARGISNULL(1))
		threshold = PG_GETARG_FLOAT8(1);
	if (!(threshold > 0 && threshold <= 100))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("threshold must be a percentage above 0 and at most 100")));
	shard_require_admin(gettext_noop("permission denied to plan a rebalancing"),
						gettext_noop("Only roles with privileges of the \"%s\" role may plan a rebalancing."));
	InitMaterializedSRF(fcinfo, 0);
	limit = opts->max_shard_bytes * threshold / 100.0;

	dir = shard_directory_get(opts);
	owners = shard_fleet_owners(dir);
	moving = shard_directory_moving(dir);
	shards = palloc0(sizeof(PlanShard) *
					 (list_length(shard_directory_shards(dir)) + 1));
	foreach(lc, shard_directory_shards(dir))
	{
		ShardInfo  *info = lfirst(lc);
		PlanShard  *p = &shards[nshards++];

		p->fs = shard_fleet_stats(opts, info,
								  shard_fleet_owned(owners, &pos, info->shard_id),
								  true, true);
		p->usable = (p->fs->file_bytes >= 0);
		if (!p->usable)
			ereport(WARNING,
					(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
					 errmsg("shard \"%s\" is left out of the plan: file \"%s\" does not exist",
							info->shard_id, info->path)));
		if (p->usable)
			p->used = (double) (p->fs->page_count - p->fs->freelist_count) *
				p->fs->page_size;
	}

	/* the fullest shards give first */
	for (;;)
	{
		PlanShard  *from = NULL;

		for (i = 0; i < nshards; i++)
			if (shards[i].usable && shards[i].used > limit &&
				!shards[i].done &&
				(from == NULL || shards[i].used > from->used))
				from = &shards[i];
		if (from == NULL)
			break;

		while (from->used > limit)
		{
			ShardTenantStat *alone = NULL;
			ShardTenantStat *largest = NULL;
			ShardTenantStat *pick;
			PlanShard  *to_alone = NULL;
			PlanShard  *to_largest = NULL;
			PlanShard  *to;

			for (i = 0; i < from->fs->ntenants; i++)
			{
				ShardTenantStat *st = &from->fs->tenants[i];
				PlanShard  *dest;
				ListCell   *lm;
				bool		busy = false;

				if (st->bytes <= 0 || st->planned)
					continue;
				foreach(lm, moving)
					busy |= (strcmp(((ShardLocation *) lfirst(lm))->tenant,
									st->tenant) == 0);
				dest = busy ? NULL :
					roomiest(shards, nshards, from, st->bytes, limit);
				if (dest == NULL)
					continue;
				if (from->used - st->bytes <= limit)
				{
					/* enough alone: the smallest such */
					if (alone == NULL || st->bytes < alone->bytes)
					{
						alone = st;
						to_alone = dest;
					}
				}
				else if (largest == NULL || st->bytes > largest->bytes)
				{
					largest = st;
					to_largest = dest;
				}
			}
			pick = alone ? alone : largest;
			to = alone ? to_alone : to_largest;
			if (pick == NULL)
			{
				ereport(WARNING,
						(errmsg("shard \"%s\" cannot be brought under %g%% of \"max_shard_bytes\"",
								from->fs->info->shard_id, threshold),
						 errdetail("No tenant left on it fits on another shard under that limit."),
						 errhint("Add a shard with shard_add(), or raise the threshold.")));
				break;
			}
			{
				Datum		values[5];
				bool		nulls[5] = {false, false, false, false, false};

				pick->planned = true;
				from->used -= pick->bytes;
				to->used += pick->bytes;
				values[0] = Int32GetDatum(++step);
				values[1] = shard_tenant_id_datum(pick->tenant);
				values[2] = CStringGetTextDatum(from->fs->info->shard_id);
				values[3] = CStringGetTextDatum(to->fs->info->shard_id);
				values[4] = Int64GetDatum((int64) (pick->bytes + 0.5));
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
									 values, nulls);
			}
		}
		/* brought under, or given up on: not looked at again */
		from->done = true;
	}
	return (Datum) 0;
}
