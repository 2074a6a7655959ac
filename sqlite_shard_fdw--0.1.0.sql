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
