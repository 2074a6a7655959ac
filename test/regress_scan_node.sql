-- test/regress_scan_node.sql
--	Included by suites that read what EXPLAIN ANALYZE says of a foreign
--	scan (\i test/regress_scan_node.sql); they drop it at the end.
--
-- regress_scan_node(query): the Foreign Scan node of EXPLAIN (ANALYZE,
-- FORMAT JSON) of query, the first one down the plan's first children.
CREATE FUNCTION regress_scan_node(q text) RETURNS json
LANGUAGE plpgsql AS $$
DECLARE
  plan json;
  node json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || q INTO plan;
  node := plan -> 0 -> 'Plan';
  WHILE node ->> 'Node Type' <> 'Foreign Scan' LOOP
    node := node -> 'Plans' -> 0;
  END LOOP;
  RETURN node;
END$$;
