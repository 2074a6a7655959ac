-- test/regress_items_same.sql
--	regress_same(): 'same' when the foreign table items and the native table
--	items_n hold the same rows (as multisets), else the rows on one side
--	only.  Included by the write suites that keep both tables in step
--	(\i test/regress_items_same.sql); they drop it at the end.
CREATE FUNCTION regress_same() RETURNS text LANGUAGE sql AS $$
  SELECT CASE WHEN count(*) = 0 THEN 'same' ELSE 'differ: ' ||
    string_agg(format('%s %s', side, r), '; ' ORDER BY side, r) END
  FROM (SELECT 'foreign only' AS side, f::text AS r FROM
          (SELECT * FROM items EXCEPT ALL SELECT * FROM items_n) f
        UNION ALL
        SELECT 'native only', n::text FROM
          (SELECT * FROM items_n EXCEPT ALL SELECT * FROM items) n) d
$$;
