/*-------------------------------------------------------------------------
 *
 * compat.h
 *		  PostgreSQL version differences (14 to 17) for sqlite_shard_fdw
 *
 * Every PG_VERSION_NUM test in the project lives here, behind a _compat
 * macro, so the rest of the code reads as if there were one PostgreSQL.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SQLITE_SHARD_FDW_COMPAT_H
#define SQLITE_SHARD_FDW_COMPAT_H

#include "nodes/pathnodes.h"
#include "optimizer/pathnode.h"

#if PG_VERSION_NUM < 140000
#error "sqlite_shard_fdw needs PostgreSQL 14 or later"
#endif

/* The role a foreign scan runs as: ForeignScan.checkAsUser from 16 on. */
#if PG_VERSION_NUM >= 160000
#define scan_user_compat(fsplan, estate, rtindex) \
	(OidIsValid((fsplan)->checkAsUser) ? (fsplan)->checkAsUser : GetUserId())
#else
#define scan_user_compat(fsplan, estate, rtindex) \
	(OidIsValid(exec_rt_fetch((rtindex), (estate))->checkAsUser) ? \
	 exec_rt_fetch((rtindex), (estate))->checkAsUser : GetUserId())
#endif

/*
 * The columns an INSERT names (its permission info from 16 on), and the
 * role a modification runs as.
 */
#if PG_VERSION_NUM >= 160000
#define inserted_cols_compat(root, rte) \
	(getRTEPermissionInfo((root)->parse->rteperminfos, (rte))->insertedCols)
#define modify_user_compat(rinfo, estate) \
	ExecGetResultRelCheckAsUser((rinfo), (estate))
#else
#define inserted_cols_compat(root, rte) ((rte)->insertedCols)
#define modify_user_compat(rinfo, estate) \
	(OidIsValid(exec_rt_fetch((rinfo)->ri_RangeTableIndex, (estate))->checkAsUser) ? \
	 exec_rt_fetch((rinfo)->ri_RangeTableIndex, (estate))->checkAsUser : \
	 GetUserId())
#endif

/*
 * A range table entry copied into a query of its own: from 16 on its
 * permissions are an RTEPermissionInfo of the query it came from, which the
 * new query needs as its first.
 */
#if PG_VERSION_NUM >= 160000
#define copy_rte_perms_compat(query, root, rte) \
	do { \
		(query)->rteperminfos = \
			list_make1(copyObject(getRTEPermissionInfo((root)->parse->rteperminfos, (rte)))); \
		(rte)->perminfoindex = 1; \
	} while (0)
#else
#define copy_rte_perms_compat(query, root, rte) ((void) 0)
#endif

/* Privilege checks on servers went through object_aclcheck from 16 on. */
#if PG_VERSION_NUM >= 160000
#define server_aclcheck_compat(serverid, roleid, mode) \
	object_aclcheck(ForeignServerRelationId, (serverid), (roleid), (mode))
#else
#define server_aclcheck_compat(serverid, roleid, mode) \
	pg_foreign_server_aclcheck((serverid), (roleid), (mode))
#endif

/* subquery_planner gained setops (a set operation's tree) in 17. */
#if PG_VERSION_NUM >= 170000
#define subquery_planner_compat(glob, parse, parent, recursion, fraction) \
	subquery_planner(glob, parse, parent, recursion, fraction, NULL)
#else
#define subquery_planner_compat(glob, parse, parent, recursion, fraction) \
	subquery_planner(glob, parse, parent, recursion, fraction)
#endif

/* create_foreignscan_path gained fdw_restrictinfo in 17. */
#if PG_VERSION_NUM >= 170000
#define create_foreignscan_path_compat(root, rel, target, rows, startup, total, \
									   pathkeys, outer, fdw_outerpath, private) \
	create_foreignscan_path(root, rel, target, rows, startup, total, pathkeys, \
							outer, fdw_outerpath, NIL, private)
#else
#define create_foreignscan_path_compat(root, rel, target, rows, startup, total, \
									   pathkeys, outer, fdw_outerpath, private) \
	create_foreignscan_path(root, rel, target, rows, startup, total, pathkeys, \
							outer, fdw_outerpath, private)
#endif

/* create_foreign_upper_path gained fdw_restrictinfo in 17 too. */
#if PG_VERSION_NUM >= 170000
#define create_foreign_upper_path_compat(root, rel, target, rows, startup, \
										 total, pathkeys, fdw_outerpath, private) \
	create_foreign_upper_path(root, rel, target, rows, startup, total, \
							  pathkeys, fdw_outerpath, NIL, private)
#else
#define create_foreign_upper_path_compat(root, rel, target, rows, startup, \
										 total, pathkeys, fdw_outerpath, private) \
	create_foreign_upper_path(root, rel, target, rows, startup, total, \
							  pathkeys, fdw_outerpath, private)
#endif

/* create_foreign_join_path gained fdw_restrictinfo in 17 too. */
#if PG_VERSION_NUM >= 170000
#define create_foreign_join_path_compat(root, rel, target, rows, startup, \
										total, pathkeys, outer, fdw_outerpath, \
										private) \
	create_foreign_join_path(root, rel, target, rows, startup, total, \
							 pathkeys, outer, fdw_outerpath, NIL, private)
#else
#define create_foreign_join_path_compat(root, rel, target, rows, startup, \
										total, pathkeys, outer, fdw_outerpath, \
										private) \
	create_foreign_join_path(root, rel, target, rows, startup, total, \
							 pathkeys, outer, fdw_outerpath, private)
#endif

/* exprs_known_equal gained an operator family in 17. */
#if PG_VERSION_NUM >= 170000
#define exprs_known_equal_compat(root, a, b) \
	exprs_known_equal((root), (a), (b), InvalidOid)
#else
#define exprs_known_equal_compat(root, a, b) exprs_known_equal((root), (a), (b))
#endif

/* flatten_join_alias_vars took the PlannerInfo from 16 on. */
#if PG_VERSION_NUM >= 160000
#define flatten_join_alias_vars_compat(query, node) \
	flatten_join_alias_vars(NULL, (query), (node))
#else
#define flatten_join_alias_vars_compat(query, node) \
	flatten_join_alias_vars((query), (node))
#endif

/* tuplesort_begin_heap's randomAccess became a flags word in 15. */
#if PG_VERSION_NUM >= 150000
#define tuplesort_begin_heap_compat(desc, nkeys, attnos, ops, colls, nulls, mem) \
	tuplesort_begin_heap(desc, nkeys, attnos, ops, colls, nulls, mem, NULL, \
						 TUPLESORT_NONE)
#else
#define tuplesort_begin_heap_compat(desc, nkeys, attnos, ops, colls, nulls, mem) \
	tuplesort_begin_heap(desc, nkeys, attnos, ops, colls, nulls, mem, NULL, \
						 false)
#endif

/* make_simple_restrictinfo took the PlannerInfo from 15 on. */
#if PG_VERSION_NUM >= 150000
#define make_simple_restrictinfo_compat(root, clause) \
	make_simple_restrictinfo(root, clause)
#else
#define make_simple_restrictinfo_compat(root, clause) \
	make_simple_restrictinfo(clause)
#endif

/* MarkGUCPrefixReserved replaced EmitWarningsOnPlaceholders in 15. */
#if PG_VERSION_NUM >= 150000
#define MarkGUCPrefixReserved_compat(prefix) MarkGUCPrefixReserved(prefix)
#else
#define MarkGUCPrefixReserved_compat(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

/*
 * The data of an extended statistics object: from 15 on, up to two rows
 * (of the table alone, of its inheritance tree) that ANALYZE makes; in 14,
 * one row made with the object, which DROP STATISTICS expects to find, so
 * it is kept there.
 */
#if PG_VERSION_NUM >= 150000
#define RemoveStatisticsData_compat(statsoid) \
	do { \
		RemoveStatisticsDataById((statsoid), false); \
		RemoveStatisticsDataById((statsoid), true); \
	} while (0)
#else
#define RemoveStatisticsData_compat(statsoid) ((void) (statsoid))
#endif

/*
 * A wait event of the extension's own: from 17 on a named one, which the
 * server registers on first use and cache then remembers; before that
 * PostgreSQL's single "Extension" event.
 */
#if PG_VERSION_NUM >= 170000
#define wait_event_extension_compat(cache, name) \
	((cache) != 0 ? (cache) : ((cache) = WaitEventExtensionNew(name)))
#else
#define wait_event_extension_compat(cache, name) \
	((void) (cache), (uint32) PG_WAIT_EXTENSION)
#endif

/*
 * Whether the integer input functions take only decimal digits with a sign
 * and blanks, as ssfdw_int_read (shardio.c) reads text stored in an integer
 * column: up to 15; 16 added underscores and hexadecimal, octal and binary
 * prefixes, which that reader does not know, so an integer SET expression
 * is then computed row by row by PostgreSQL.
 */
#if PG_VERSION_NUM >= 160000
#define int_input_decimal_only_compat false
#else
#define int_input_decimal_only_compat true
#endif

/*
 * Parse analysis of one statement without parameters, and the text of an
 * analysed query (rollup.c): pg_get_querydef is exported from 15 on; 14
 * has no way to print a Query, so rollups need 15.
 */
#if PG_VERSION_NUM >= 150000
#define parse_analyze_compat(rawstmt, sql) \
	parse_analyze_fixedparams((rawstmt), (sql), NULL, 0, NULL)
#define pg_get_querydef_compat(query) pg_get_querydef((query), false)
#else
#define parse_analyze_compat(rawstmt, sql) \
	parse_analyze((rawstmt), (sql), NULL, 0, NULL)
#define pg_get_querydef_compat(query) \
	(ereport(ERROR, \
			 (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), \
			  errmsg("rollups need PostgreSQL 15 or later"))), (char *) NULL)
#endif

/* pg_md5_hash reports why it failed (*errstr) from 15 on. */
#if PG_VERSION_NUM >= 150000
#define pg_md5_hash_compat(buff, len, hexsum, errstr) \
	pg_md5_hash((buff), (len), (hexsum), (errstr))
#else
#define pg_md5_hash_compat(buff, len, hexsum, errstr) \
	((*(errstr) = "out of memory"), pg_md5_hash((buff), (len), (hexsum)))
#endif

#endif							/* SQLITE_SHARD_FDW_COMPAT_H */
