/*-------------------------------------------------------------------------
 *
 * rebalance.c
 *		  shard_rebalance_plan: which tenants to move so that every shard is
 *		  under a threshold; shard_rebalance: the procedure that moves them
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
 * after the moves' cleanup and a VACUUM), less the rows of tenants moved
 * away and not yet cleaned up; a tenant counts its estimated bytes.
 * Tenants in a move stay where they are.  The plan executes nothing;
 * shard_rebalance runs it, move by move, each committed on its own.
 *
 *-------------------------------------------------------------------------
 */
#include "sqlite_shard_fdw.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(shard_rebalance_plan);
PG_FUNCTION_INFO_V1(shard_rebalance);

/* A shard as the plan sees it. */
typedef struct PlanShard
{
	ShardFleetStat *fs;
	double		used;			/* bytes, after the moves planned so far */
	bool		usable;			/* its file exists: it may take tenants */
	bool		done;			/* planned for, or given up on */
} PlanShard;

/* One move of a plan. */
typedef struct PlannedMove
{
	int			step;
	char	   *tenant;
	char	   *from;
	char	   *to;
	int64		bytes;
} PlannedMove;

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
 * tenant_cmp
 *		Order ShardLocations by tenant id, byte for byte, as
 *		shard_fleet_stats takes them.
 */
static int
tenant_cmp(const ListCell *a, const ListCell *b)
{
	return strcmp(((ShardLocation *) lfirst(a))->tenant,
				  ((ShardLocation *) lfirst(b))->tenant);
}

/*
 * leftovers_on
 *		The tenants that have moved away from a shard and whose rows are
 *		still on it until tenant_cleanup, as ShardLocations.
 */
static List *
leftovers_on(ShardDirectory *dir, const char *shard_id)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, shard_directory_moving(dir))
	{
		ShardLocation *loc = lfirst(lc);

		if (strcmp(loc->owner, loc->shard_id) != 0 &&
			strcmp(loc->shard_id, shard_id) == 0)
			result = lappend(result, loc);
	}
	return result;
}

/*
 * plan_moves
 *		The moves (PlannedMove) that bring every shard of the server under
 *		threshold percent of its max_shard_bytes, planned greedily (see the
 *		file's header), in the order to run them.  The shards are read one
 *		after another, and each is let go (its read transaction ended) once
 *		read: nothing is held when the plan is returned.
 */
static List *
plan_moves(ShardServerOptions *opts, double threshold)
{
	ShardDirectory *dir;
	double		limit;
	List	   *owners;
	List	   *moving;
	List	   *plan = NIL;
	PlanShard  *shards;
	int			nshards = 0;
	int			pos = 0;
	int			step = 0;
	ListCell   *lc;
	int			i;

	if (!(threshold > 0 && threshold <= 100))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("threshold must be a percentage above 0 and at most 100")));
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

		List	   *leftovers = leftovers_on(dir, info->shard_id);
		List	   *listed;

		listed = list_concat_copy(shard_fleet_owned(owners, &pos,
													info->shard_id),
								  leftovers);
		list_sort(listed, tenant_cmp);
		p->fs = shard_fleet_stats(opts, info, listed, true, true);
		shard_conn_end_reads();
		p->usable = (p->fs->file_bytes >= 0);
		if (!p->usable)
		{
			ereport(WARNING,
					(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
					 errmsg("shard \"%s\" is left out of the plan: file \"%s\" does not exist",
							info->shard_id, info->path)));
			continue;
		}
		p->used = (double) shard_fleet_used_bytes(p->fs);

		/* leftovers are not the shard's to give, and go with the cleanup */
		for (i = 0; i < p->fs->ntenants; i++)
		{
			ShardTenantStat *st = &p->fs->tenants[i];
			ListCell   *ll;

			foreach(ll, leftovers)
				if (strcmp(((ShardLocation *) lfirst(ll))->tenant,
						   st->tenant) == 0)
				{
					st->planned = true;
					p->used -= st->bytes;
				}
		}
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
			PlannedMove *move;

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
			pick->planned = true;
			from->used -= pick->bytes;
			to->used += pick->bytes;
			move = palloc(sizeof(PlannedMove));
			move->step = ++step;
			move->tenant = pstrdup(pick->tenant);
			move->from = pstrdup(from->fs->info->shard_id);
			move->to = pstrdup(to->fs->info->shard_id);
			move->bytes = (int64) (pick->bytes + 0.5);
			plan = lappend(plan, move);
		}
		/* brought under, or given up on: not looked at again */
		from->done = true;
	}
	return plan;
}

/*
 * shard_rebalance_plan
 *		shard_rebalance_plan(server [, threshold]): the moves (step, tenant,
 *		from, to, bytes) that bring every shard under threshold percent of
 *		the server's max_shard_bytes (default 70), in the order to run
 *		them.  The rows are materialized and the shards let go before they
 *		are returned, so that a move run on them (SELECT tenant_move(...)
 *		FROM shard_rebalance_plan(...)) finds no read of this statement in
 *		its way.
 */
Datum
shard_rebalance_plan(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardServerOptions *opts;
	double		threshold = 70.0;
	ListCell   *lc;

	opts = shard_admin_server_arg(fcinfo);
	if (PG_NARGS() > 1 && !PG_ARGISNULL(1))
		threshold = PG_GETARG_FLOAT8(1);
	shard_require_admin(gettext_noop("permission denied to plan a rebalancing"),
						gettext_noop("Only roles with privileges of the \"%s\" role may plan a rebalancing."));
	shard_move_refuse_file_per_tenant(opts, NULL);
	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, plan_moves(opts, threshold))
	{
		PlannedMove *move = lfirst(lc);
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};

		values[0] = Int32GetDatum(move->step);
		values[1] = shard_tenant_id_datum(move->tenant);
		values[2] = CStringGetTextDatum(move->from);
		values[3] = CStringGetTextDatum(move->to);
		values[4] = Int64GetDatum(move->bytes);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
							 values, nulls);
	}
	return (Datum) 0;
}

/* Where shard_rebalance is in its plan, for the context of its errors. */
typedef struct RebalanceProgress
{
	PlannedMove *move;
	int			nmoves;
} RebalanceProgress;

/*
 * rebalance_error_context
 *		Name the move of the plan that an error of shard_rebalance came
 *		from.
 */
static void
rebalance_error_context(void *arg)
{
	RebalanceProgress *progress = arg;

	if (progress->move != NULL)
		errcontext("move %d of %d of the rebalancing: tenant \"%s\" from shard \"%s\" to shard \"%s\"",
				   progress->move->step, progress->nmoves,
				   progress->move->tenant, progress->move->from,
				   progress->move->to);
}

/*
 * shard_rebalance
 *		CALL shard_rebalance(server [, threshold [, max_moves]]): plan as
 *		shard_rebalance_plan does, then run the plan's moves one after
 *		another (at most max_moves of them), each with tenant_move and
 *		committed on its own, so that what is done stays done when a later
 *		move fails or the session ends.  A procedure: it commits, so it
 *		runs only as a CALL outside a transaction block.
 *
 * The plan is made once, first: the shards a move leaves keep the moved
 * tenant's pages until tenant_cleanup, and a plan made between moves would
 * count them twice (a plan made later counts them once: it leaves out
 * leftovers of moves not yet cleaned up).  The shards are let go before
 * the first move, whose source they would otherwise lock.
 */
Datum
shard_rebalance(PG_FUNCTION_ARGS)
{
	ShardServerOptions *opts;
	NameData	servername;
	double		threshold = 70.0;
	int32		max_moves = -1;
	List	   *plan;
	char	   *move_sql;
	Oid			argtypes[3] = {NAMEOID, TEXTOID, TEXTOID};
	RebalanceProgress progress;
	ErrorContextCallback errcallback;
	int			done = 0;
	ListCell   *lc;

	if (fcinfo->context == NULL || !IsA(fcinfo->context, CallContext) ||
		castNode(CallContext, fcinfo->context)->atomic)
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
		/* translator: %s is the name of an SQL procedure */
				 errmsg("%s cannot run inside a transaction block",
						"shard_rebalance()"),
				 errdetail("Each move commits on its own."),
				 errhint("Run CALL shard_rebalance(...) as a statement of its own, outside BEGIN and COMMIT.")));
	opts = shard_admin_server_arg(fcinfo);
	namestrcpy(&servername, NameStr(*PG_GETARG_NAME(0)));
	if (!PG_ARGISNULL(1))
		threshold = PG_GETARG_FLOAT8(1);
	if (!PG_ARGISNULL(2))
	{
		max_moves = PG_GETARG_INT32(2);
		if (max_moves < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_moves must not be negative")));
	}
	shard_require_admin(gettext_noop("permission denied to rebalance shards"),
						gettext_noop("Only roles with privileges of the \"%s\" role may rebalance shards."));
	shard_move_refuse_file_per_tenant(opts, NULL);

	/* the moves run as tenant_move of this procedure's schema */
	move_sql = psprintf("SELECT %s.tenant_move($1, $2, $3)",
						quote_identifier(get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid))));

	SPI_connect_ext(SPI_OPT_NONATOMIC);
	/* in the procedure's memory, which outlives the commits */
	move_sql = pstrdup(move_sql);
	plan = plan_moves(opts, threshold);
	if (plan == NIL)
		ereport(NOTICE,
				(errmsg("rebalancing: no tenant of server \"%s\" to move",
						NameStr(servername))));
	SPI_commit();

	progress.move = NULL;
	progress.nmoves = list_length(plan);
	errcallback.callback = rebalance_error_context;
	errcallback.arg = &progress;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;
	foreach(lc, plan)
	{
		PlannedMove *move = lfirst(lc);
		Datum		args[3];
		int			rc;

		if (max_moves >= 0 && done >= max_moves)
			break;
		ereport(NOTICE,
				(errmsg("rebalancing: move %d of %d: tenant \"%s\" from shard \"%s\" to shard \"%s\"",
						move->step, progress.nmoves, move->tenant,
						move->from, move->to)));
		progress.move = move;
		args[0] = NameGetDatum(&servername);
		args[1] = CStringGetTextDatum(move->tenant);
		args[2] = CStringGetTextDatum(move->to);
		rc = SPI_execute_with_args(move_sql, 3, argtypes, args, NULL, false, 1);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute_with_args failed: %s",
				 SPI_result_code_string(rc));
		progress.move = NULL;
		SPI_commit();
		done++;
	}
	error_context_stack = errcallback.previous;

	if (done < progress.nmoves)
		ereport(NOTICE,
				(errmsg("rebalancing: %d of %d moves done, stopped by \"max_moves\"",
						done, progress.nmoves),
				 done > 0 ?
				 errhint("CALL shard_rebalance() again plans and runs the rest; tenant_cleanup() deletes the moved tenants' rows from the shards they left.") : 0));
	else if (done > 0)
		ereport(NOTICE,
				(errmsg("rebalancing: %d of %d moves done", done,
						progress.nmoves),
				 errhint("Run tenant_cleanup() to delete the moved tenants' rows from the shards they left.")));
	SPI_finish();
	PG_RETURN_VOID();
}
