/* sqlite_shard_fdw--0.1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION sqlite_shard_fdw" to load this file. \quit

CREATE FUNCTION sqlite_shard_fdw_handler()
RETURNS fdw_handler
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

CREATE FUNCTION sqlite_shard_fdw_validator(text[], oid)
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

CREATE FOREIGN DATA WRAPPER sqlite_shard_fdw
  HANDLER sqlite_shard_fdw_handler
  VALIDATOR sqlite_shard_fdw_validator;

-- Control plane: the directory of shards and tenants.

-- directory_init(server) creates a missing directory file with mode 0660;
-- directory_init(server, mode) with the given octal mode, such as '0600'.
CREATE FUNCTION directory_init(server name)
RETURNS void
AS 'MODULE_PATHNAME', 'shard_directory_init'
LANGUAGE C STRICT;

CREATE FUNCTION directory_init(server name, mode text)
RETURNS void
AS 'MODULE_PATHNAME', 'shard_directory_init'
LANGUAGE C STRICT;

CREATE FUNCTION shard_add(server name, shard_id text, path text)
RETURNS void
AS 'MODULE_PATHNAME', 'shard_add'
LANGUAGE C;

CREATE FUNCTION shard_list(server name,
                           OUT shard_id text, OUT path text,
                           OUT tenants bigint, OUT bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shard_list'
LANGUAGE C STRICT;

CREATE FUNCTION tenant_add(server name, tenant text, shard_id text DEFAULT NULL,
                           expected_bytes bigint DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'shard_tenant_add'
LANGUAGE C;

-- directory_adopt(server [, folder]) adds the folder's SQLite files as
-- shards, then registers every tenant the shards hold that the directory
-- does not know on the shard holding it; a tenant on several shards is
-- reported, not registered.
CREATE FUNCTION directory_adopt(server name, folder text DEFAULT NULL,
                                OUT tenant_id text, OUT shard_id text,
                                OUT rows bigint, OUT status text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shard_directory_adopt'
LANGUAGE C;

CREATE FUNCTION tenant_locate(server name, tenant text,
                              OUT shard_id text, OUT status text,
                              OUT source_shard_id text,
                              OUT target_shard_id text, OUT path text)
RETURNS record
AS 'MODULE_PATHNAME', 'shard_tenant_locate'
LANGUAGE C STRICT;

-- shard_analyze(server [, shard_id]) runs SQLite's ANALYZE inside the
-- shards, so that SQLite plans their queries from statistics.
CREATE FUNCTION shard_analyze(server name, shard text DEFAULT NULL,
                              OUT shard_id text, OUT stat_rows bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shard_analyze'
LANGUAGE C;

REVOKE ALL ON FUNCTION shard_analyze(name, text) FROM PUBLIC;

-- reference_check(table) compares every shard's copy of a reference table
-- with the copy reads come from.
CREATE FUNCTION reference_check(reference_table regclass,
                                OUT shard_id text, OUT rows bigint,
                                OUT digest text, OUT same boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shard_reference_check'
LANGUAGE C STRICT;

REVOKE ALL ON FUNCTION directory_init(name), directory_init(name, text),
  shard_add(name, text, text), tenant_add(name, text, text, bigint),
  directory_adopt(name, text) FROM PUBLIC;

-- Moving a tenant between shards (src/control/move.c, movecleanup.c).
-- Every step commits in the shards and the directory at once, outside the
-- transaction, so these functions refuse to run inside a transaction block.

CREATE FUNCTION tenant_move(server name, tenant text, target_shard text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shard_tenant_move'
LANGUAGE C;

CREATE FUNCTION tenant_move_abort(server name, tenant text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'shard_tenant_move_abort'
LANGUAGE C;

CREATE FUNCTION tenant_cleanup(server name, tenant text DEFAULT NULL,
                               vacuum boolean DEFAULT true,
                               OUT tenant_id text, OUT shard_id text,
                               OUT rows_deleted bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shard_tenant_cleanup'
LANGUAGE C;

CREATE FUNCTION tenant_moves(server name,
                             OUT move_id bigint, OUT tenant_id text,
                             OUT source_shard_id text, OUT target_shard_id text,
                             OUT phase text, OUT rows_copied bigint,
                             OUT backlog bigint, OUT lock_ms float8,
                             OUT started_at timestamptz,
                             OUT finished_at timestamptz,
                             OUT cleaned_at timestamptz, OUT error text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shard_tenant_moves'
LANGUAGE C STRICT;

REVOKE ALL ON FUNCTION tenant_move(name, text, text),
  tenant_move_abort(name, text), tenant_cleanup(name, text, boolean)
  FROM PUBLIC;

-- Fleet checks, control plane and statistics.

-- shard_orphans(server [, tenant_column]): rows a shard holds for tenants
-- it does not own, per shard, table and tenant.
CREATE FUNCTION shard_orphans(server name, tenant_column text DEFAULT NULL,
                              OUT shard_id text, OUT table_name text,
                              OUT tenant_id text, OUT rows bigint,
                              OUT owner text, OUT reason text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shard_orphans'
LANGUAGE C;

REVOKE ALL ON FUNCTION shard_orphans(name, text) FROM PUBLIC;

-- tenant_list(server [, shard]): the tenants, or those a shard answers for.
CREATE FUNCTION tenant_list(server name, shard text DEFAULT NULL,
                            OUT tenant_id text, OUT shard_id text,
                            OUT status text, OUT source_shard_id text,
                            OUT target_shard_id text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shard_tenant_list'
LANGUAGE C;

-- tenant_remove(server, tenant [, delete_rows]): refused while the tenant
-- has rows on its shard (unless delete_rows) or is being moved; returns the
-- rows deleted.
CREATE FUNCTION tenant_remove(server name, tenant text,
                              delete_rows boolean DEFAULT false)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shard_tenant_remove'
LANGUAGE C;

-- shard_remove(server, shard): refused while the shard answers for tenants
-- or takes part in a move; the file stays.
CREATE FUNCTION shard_remove(server name, shard text)
RETURNS void
AS 'MODULE_PATHNAME', 'shard_remove'
LANGUAGE C;

REVOKE ALL ON FUNCTION tenant_remove(name, text, boolean),
  shard_remove(name, text) FROM PUBLIC;

-- shard_stats(server): sizes, pages and tenants of every shard; what its
-- database holds (used_bytes) against max_shard_bytes, flagged at 70 % and
-- 80 %.
CREATE FUNCTION shard_stats(server name,
                            OUT shard_id text, OUT bytes bigint,
                            OUT wal_bytes bigint, OUT used_bytes bigint,
                            OUT page_size bigint,
                            OUT page_count bigint, OUT freelist_count bigint,
                            OUT tenants bigint, OUT max_shard_bytes bigint,
                            OUT percent numeric, OUT above_70 boolean,
                            OUT above_80 boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shard_stats'
LANGUAGE C;

-- tenant_stats(server [, shard]): rows per table, estimated bytes and share
-- of its shard, per tenant.
CREATE FUNCTION tenant_stats(server name, shard text DEFAULT NULL,
                             OUT tenant_id text, OUT shard_id text,
                             OUT rows bigint, OUT table_rows jsonb,
                             OUT bytes bigint, OUT share numeric,
                             OUT estimate text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shard_tenant_stats'
LANGUAGE C;

-- shard_rebalance_plan(server [, threshold]): the moves that bring every
-- shard under threshold percent of max_shard_bytes; executes nothing.
CREATE FUNCTION shard_rebalance_plan(server name, threshold float8 DEFAULT 70,
                                     OUT step integer, OUT tenant_id text,
                                     OUT from_shard text, OUT to_shard text,
                                     OUT bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shard_rebalance_plan'
LANGUAGE C;

REVOKE ALL ON FUNCTION shard_stats(name), tenant_stats(name, text),
  shard_rebalance_plan(name, float8) FROM PUBLIC;

-- CALL shard_rebalance(server [, threshold [, max_moves]]): run the moves
-- of shard_rebalance_plan one after another, each committed on its own.
CREATE PROCEDURE shard_rebalance(server name, threshold float8 DEFAULT 70,
                                 max_moves integer DEFAULT NULL)
AS 'MODULE_PATHNAME', 'shard_rebalance'
LANGUAGE C;

REVOKE ALL ON PROCEDURE shard_rebalance(name, float8, integer) FROM PUBLIC;

-- Commits that span shards: shard_commits(server) lists those that did not
-- finish (interrupted by a crash between two shard commits, failed after
-- some shards committed, or in progress), one row per shard, with whether
-- the shard holds the transaction's writes; shard_commit_forget(server,
-- commit_id) removes one once it has been dealt with.
CREATE FUNCTION shard_commits(server name,
                              OUT commit_id bigint, OUT started_at timestamptz,
                              OUT backend_pid integer, OUT state text,
                              OUT xid text, OUT error text,
                              OUT commit_order integer, OUT shard_id text,
                              OUT path text, OUT committed boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shard_commits'
LANGUAGE C STRICT;

CREATE FUNCTION shard_commit_forget(server name, commit_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'shard_commit_forget'
LANGUAGE C STRICT;

REVOKE ALL ON FUNCTION shard_commits(name), shard_commit_forget(name, bigint)
  FROM PUBLIC;

-- Rollups (src/control/rollup*.c): a PostgreSQL table of per-tenant partial
-- aggregates of one foreign table, refreshed for the tenants whose rows
-- changed.  The catalog lives in a schema of its own; only its owners and
-- the roles they grant may read it, as it names every tenant.

CREATE SCHEMA ssfdw_rollup;

-- One row per rollup: the rollup table, the foreign table it aggregates,
-- the query as given and the one that fills the table (avg as sum and
-- count), the rollup table's tenant column, and when it was last refreshed
-- (as_of: every write committed before it is in the rollup).
CREATE TABLE ssfdw_rollup.rollups (
  rollup regclass PRIMARY KEY,
  source regclass NOT NULL,
  server oid NOT NULL,
  query text NOT NULL,
  fill_query text NOT NULL,
  tenant_key name NOT NULL,
  keys name[] NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  refreshed_at timestamptz,
  full_refreshed_at timestamptz
);

-- What each rollup has taken of each shard's change log: the log's epoch
-- (a new one whenever the capture is installed afresh) and the last change
-- taken ("mark").
CREATE TABLE ssfdw_rollup.shards (
  rollup regclass NOT NULL,
  shard_id text NOT NULL,
  epoch text NOT NULL,
  mark bigint NOT NULL,
  PRIMARY KEY (rollup, shard_id)
);

-- When each tenant's groups were last computed.
CREATE TABLE ssfdw_rollup.tenants (
  rollup regclass NOT NULL,
  tenant_id text NOT NULL,
  refreshed_at timestamptz NOT NULL,
  PRIMARY KEY (rollup, tenant_id)
);

REVOKE ALL ON SCHEMA ssfdw_rollup FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA ssfdw_rollup FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('ssfdw_rollup.rollups', '');
SELECT pg_catalog.pg_extension_config_dump('ssfdw_rollup.shards', '');
SELECT pg_catalog.pg_extension_config_dump('ssfdw_rollup.tenants', '');

-- A rollup whose table, or whose foreign table, is dropped is forgotten.
-- The function runs as the extension's owner: the role that drops a table
-- may not write the catalog.
CREATE FUNCTION ssfdw_rollup.forget_dropped()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog
AS $$
DECLARE
  gone oid[];
BEGIN
  SELECT array_agg(objid) INTO gone FROM pg_event_trigger_dropped_objects()
   WHERE classid = 'pg_class'::regclass AND objsubid = 0;
  IF gone IS NULL THEN
    RETURN;
  END IF;
  SELECT array_agg(rollup::oid) INTO gone FROM ssfdw_rollup.rollups
   WHERE rollup::oid = ANY (gone) OR source::oid = ANY (gone);
  IF gone IS NULL THEN
    RETURN;
  END IF;
  DELETE FROM ssfdw_rollup.shards WHERE rollup::oid = ANY (gone);
  DELETE FROM ssfdw_rollup.tenants WHERE rollup::oid = ANY (gone);
  DELETE FROM ssfdw_rollup.rollups WHERE rollup::oid = ANY (gone);
END
$$;
REVOKE ALL ON FUNCTION ssfdw_rollup.forget_dropped() FROM PUBLIC;

CREATE EVENT TRIGGER ssfdw_rollup_forget_dropped ON sql_drop
  EXECUTE FUNCTION ssfdw_rollup.forget_dropped();

-- rollup_create(name, query): create the table name holding query's
-- result, an aggregate of one foreign table grouped by its tenant column.
CREATE FUNCTION rollup_create(name text, query text)
RETURNS regclass
AS 'MODULE_PATHNAME', 'shard_rollup_create'
LANGUAGE C STRICT;

-- rollup_refresh(rollup [, full]): recompute the groups of the tenants
-- whose rows changed since the last refresh (with full, every group).
CREATE FUNCTION rollup_refresh(rollup regclass, full boolean DEFAULT false,
                               OUT tenants bigint, OUT groups bigint,
                               OUT as_of timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'shard_rollup_refresh'
LANGUAGE C STRICT;

-- rollup_refresh_tenant(rollup, tenant): recompute one tenant's groups.
CREATE FUNCTION rollup_refresh_tenant(rollup regclass, tenant text,
                                      OUT tenants bigint, OUT groups bigint,
                                      OUT as_of timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'shard_rollup_refresh_tenant'
LANGUAGE C STRICT;

-- rollup_drop(rollup): drop the rollup table and forget the rollup.
CREATE FUNCTION rollup_drop(rollup regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'shard_rollup_drop'
LANGUAGE C STRICT;

-- rollup_tenant_scope(server): the tenants the current role's user mapping
-- of server limits it to, or NULL: what a rollup table's row-level
-- security policy shows it.
CREATE FUNCTION rollup_tenant_scope(server oid)
RETURNS text[]
AS 'MODULE_PATHNAME', 'shard_rollup_tenant_scope'
LANGUAGE C STABLE STRICT;

-- rollup_pending(rollup): the tenants with changes in the shards that the
-- rollup has not taken yet, with the time of the last (NULL: unknown, as
-- when the shard's change capture was missing).
CREATE FUNCTION rollup_pending(rollup regclass,
                               OUT tenant_id text, OUT changed_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shard_rollup_pending'
LANGUAGE C STRICT;

-- rollup_staleness([rollup]): per rollup and tenant, when its groups were
-- computed, whether changes wait, and for how long at most they have.
CREATE FUNCTION rollup_staleness(rollup regclass DEFAULT NULL,
                                 OUT rollup_table regclass, OUT tenant_id text,
                                 OUT refreshed_at timestamptz,
                                 OUT pending boolean,
                                 OUT changed_at timestamptz,
                                 OUT stale_for interval)
RETURNS SETOF record
LANGUAGE sql
AS $$
  SELECT r.rollup, x.tenant_id, x.refreshed_at, x.pending, x.changed_at,
         CASE WHEN x.pending
              THEN now() - greatest(r.refreshed_at, x.refreshed_at)
              ELSE interval '0' END
    FROM ssfdw_rollup.rollups r,
    LATERAL (
      SELECT coalesce(t.tenant_id, p.tenant_id) AS tenant_id,
             t.refreshed_at, p.changed_at,
             p.tenant_id IS NOT NULL
               AND (t.refreshed_at IS NULL OR p.changed_at IS NULL
                    OR p.changed_at > t.refreshed_at) AS pending
        FROM (SELECT * FROM ssfdw_rollup.tenants t0
               WHERE t0.rollup = r.rollup) t
        FULL JOIN (SELECT * FROM @extschema@.rollup_pending(r.rollup)) p
          ON p.tenant_id = t.tenant_id) x
   WHERE $1 IS NULL OR r.rollup = $1
   ORDER BY 1, 2
$$;

REVOKE ALL ON FUNCTION rollup_create(text, text),
  rollup_refresh(regclass, boolean), rollup_refresh_tenant(regclass, text),
  rollup_drop(regclass), rollup_pending(regclass),
  rollup_staleness(regclass) FROM PUBLIC;

-- tenant_create(server, tenant [, template]): on a server of layout
-- 'file_per_tenant', make the tenant's file from a template database (the
-- server option tenant_template by default), registered in the directory
-- when the directory names the files; returns the file's path.
CREATE FUNCTION tenant_create(server name, tenant text,
                              template text DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'shard_tenant_create'
LANGUAGE C;

REVOKE ALL ON FUNCTION tenant_create(name, text, text) FROM PUBLIC;

-- shard_schemas(server, table): each distinct declaration of an SQLite
-- table among the shards (columns and declared types, NULL where a shard
-- has no such table), the shards having it and the first of them.
CREATE FUNCTION shard_schemas(server name, table_name text,
                              OUT columns text, OUT shards bigint,
                              OUT example_shard text, OUT example_path text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shard_schemas'
LANGUAGE C;
REVOKE ALL ON FUNCTION shard_schemas(name, text) FROM PUBLIC;

-- rollup_answer_live(rollup [, max_staleness]): the tenants whose groups a
-- query answered from the rollup reads live now, those whose rows changed
-- since their refresh (with max_staleness: none while no change has waited
-- longer).  Queries answered from a rollup call it once per execution
-- (sqlite_shard_fdw.rollup_answer); the caller must be allowed to read the
-- rollup table, and sees only the tenants its user mapping allows.
CREATE FUNCTION rollup_answer_live(rollup regclass,
                                   max_staleness interval DEFAULT NULL)
RETURNS text[]
AS 'MODULE_PATHNAME', 'shard_rollup_answer_live'
LANGUAGE C VOLATILE;

-- fanout_progress(): the fan-outs running now in this database (pid,
-- server, foreign table, files read to their end of the files in all, when
-- it began), as the caller may see them: its own, or every one for members
-- of pg_read_all_stats.  Needs sqlite_shard_fdw in shared_preload_libraries.
CREATE FUNCTION fanout_progress(OUT pid integer, OUT server text,
                                OUT table_name regclass, OUT files_done bigint,
                                OUT files_total bigint,
                                OUT started timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shard_fanout_progress'
LANGUAGE C STRICT VOLATILE;

-- The state of each shard's files (device, inode, size and change time of
-- the file and of its WAL file) when a refresh last found nothing in its
-- change log above the mark, or NULL: while the files show that state, a
-- refresh or a query answered from the rollup need not open the shard
-- (src/control/rollupcapture.c says when a state is trusted).
ALTER TABLE ssfdw_rollup.shards ADD COLUMN file_state text;
