-- test/regress_explain.sql
--	Included by suites that check chosen lines of a plan
--	(\i test/regress_explain.sql); they drop it at the end.
--
-- regress_explain_lines(options, pattern, query): the lines of EXPLAIN
-- (options) of query that match the regular expression pattern, in order.
CREATE FUNCTION regress_explain_lines(options text, pattern text, q text)
RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  l text;
BEGIN
  FOR l IN EXECUTE format('EXPLAIN (%s) %s', options, q) LOOP
    IF l ~ pattern THEN
      RETURN NEXT l;
    END IF;
  END LOOP;
END$$;
