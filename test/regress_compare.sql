-- test/regress_compare.sql
--	Included by suites that compare a foreign table with a native table of
--	the same rows, items and items_native (\i test/regress_compare.sql); they
--	drop it at the end.
--
-- regress_same(query [, ordered]): run query, where {t} stands for the
-- table, against the native table and the foreign table; whether the
-- foreign answer is the native one (rows compared as text, sorted unless
-- the query's own order is tested), then the native answer.
CREATE FUNCTION regress_same(query text, ordered boolean DEFAULT false)
RETURNS TABLE (same boolean, native text)
LANGUAGE plpgsql AS $$
DECLARE
  want text[];
  got text[];
  q text;
  i int;
BEGIN
  FOREACH q IN ARRAY ARRAY[replace(query, '{t}', 'items_native'),
                           replace(query, '{t}', 'items')] LOOP
    EXECUTE format('SELECT coalesce(array_agg(r::text %s), ''{}'') FROM (%s) r',
                   CASE WHEN ordered THEN '' ELSE 'ORDER BY r::text' END, q)
      INTO got;
    IF want IS NULL THEN
      want := got;
    END IF;
  END LOOP;
  same := got IS NOT DISTINCT FROM want;
  IF NOT same THEN
    RAISE NOTICE 'foreign: %', array_to_string(got, ' ', '<NULL>');
  END IF;
  IF cardinality(want) = 0 THEN
    native := '(no rows)';
    RETURN NEXT;
  END IF;
  FOR i IN 1 .. cardinality(want) LOOP
    native := want[i];
    RETURN NEXT;
    same := NULL;
  END LOOP;
END
$$;
