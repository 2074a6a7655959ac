--
-- IMPORT FOREIGN SCHEMA: type mapping, tenant columns, quoting, LIMIT TO /
-- EXCEPT, and the import options "shard", "tenant_column" and
-- "import_not_null".
--
\! bash test/fixtures/import.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER import_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/import/directory.db');

-- What an imported schema looks like: foreign tables and their options,
-- then every column with its type, NOT NULL and options.
CREATE FUNCTION import_tables(nsp name)
RETURNS TABLE (relname name, ftoptions text[]) LANGUAGE sql AS $$
  SELECT c.relname, ft.ftoptions
  FROM pg_foreign_table ft JOIN pg_class c ON c.oid = ft.ftrelid
  WHERE c.relnamespace = nsp::regnamespace
  ORDER BY c.relname COLLATE "C"
$$;
CREATE FUNCTION import_columns(nsp name)
RETURNS TABLE (relname name, attname name, type text, not_null bool,
               options text[]) LANGUAGE sql AS $$
  SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
         a.attnotnull, a.attfdwoptions
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
  WHERE c.relnamespace = nsp::regnamespace AND c.relkind = 'f'
    AND a.attnum > 0 AND NOT a.attisdropped
  ORDER BY c.relname COLLATE "C", a.attnum
$$;

-- ===================================================================
-- Import everything from the first shard (shard_a, by shard id)
-- ===================================================================
-- "settings" has no tenant column: a reference table, with a NOTICE that
-- says how to import it if another column holds the tenant.  The view
-- "broken" reads a dropped table: skipped, with a WARNING.  SQLite's own
-- tables (sqlite_sequence, sqlite_stat1) are not imported, nor the
-- wrapper's own (a move's log, "_ssfdw_move_..."), though it has no tenant
-- column.  events.id, an INTEGER PRIMARY KEY, is NOT NULL.
\! sqlite3 /tmp/ssfdw_regress/import/shards/a.db "CREATE TABLE _ssfdw_move_9_log(seq INTEGER PRIMARY KEY, op TEXT)"
CREATE SCHEMA import_all;
IMPORT FOREIGN SCHEMA main FROM SERVER import_srv INTO import_all;
\! sqlite3 /tmp/ssfdw_regress/import/shards/a.db "DROP TABLE _ssfdw_move_9_log"
SELECT * FROM import_tables('import_all');
SELECT * FROM import_columns('import_all');
\d+ import_all.orders
SELECT * FROM import_all.settings ORDER BY 1;

-- Imported tables read like any other, names needing quotes included.
SELECT * FROM import_all.orders WHERE tenant_id = 'acme' ORDER BY order_id;
SELECT tenant_id, order_id, status, amount FROM import_all.orders
  ORDER BY tenant_id, order_id;
SELECT * FROM import_all."MixedCase" WHERE "Tenant_ID" = 'acme';
SELECT * FROM import_all.events;
SELECT count(*) FROM import_all."with space";
SELECT count(*) FROM import_all."dq""table";
SELECT * FROM import_all.a_table_whose_name_is_much_longer_than_sixty_three_bytes_in_pos;
SELECT tenant_id, n_orders, total, last_status
  FROM import_all.order_totals ORDER BY tenant_id;
-- Every mapped type reads its value.  c_string and c_money have NUMERIC
-- affinity in SQLite, which stored '0123' as the integer 123 and '12.50'
-- as the real 12.5: text is the type that reads any such value.
\x on
SELECT * FROM import_all.type_zoo;
\x off

-- ===================================================================
-- LIMIT TO and EXCEPT
-- ===================================================================
CREATE SCHEMA import_limit;
IMPORT FOREIGN SCHEMA main LIMIT TO (orders, "MixedCase", "dq""table", nosuch)
  FROM SERVER import_srv INTO import_limit;
SELECT * FROM import_tables('import_limit');

CREATE SCHEMA import_except;
IMPORT FOREIGN SCHEMA main
  EXCEPT (type_zoo, settings, broken, "with space",
          a_table_whose_name_is_much_longer_than_sixty_three_bytes_in_postgres)
  FROM SERVER import_srv INTO import_except;
SELECT * FROM import_tables('import_except');

-- ===================================================================
-- Import options
-- ===================================================================
-- "shard" reads another shard's schema.
CREATE SCHEMA import_b;
IMPORT FOREIGN SCHEMA main EXCEPT (broken) FROM SERVER import_srv
  INTO import_b OPTIONS (shard 'shard_b');
SELECT relname FROM import_tables('import_b');
SELECT * FROM import_columns('import_b') WHERE relname = 'only_on_b';

-- "import_not_null" false drops the NOT NULL constraints.
CREATE SCHEMA import_nullable;
IMPORT FOREIGN SCHEMA main LIMIT TO (orders) FROM SERVER import_srv
  INTO import_nullable OPTIONS (import_not_null 'false');
SELECT attname, not_null FROM import_columns('import_nullable');

-- "tenant_column" names another column; SQLite matches it without regard
-- to case, and the table option keeps the table's own spelling.  This is
-- what the NOTICE about "settings" suggests.  The tables without a column
-- "KEY" but with a column "tenant_id" are tenant tables read the wrong way:
-- skipped, never reference tables (which every tenant reads whole).
CREATE SCHEMA import_tenant;
IMPORT FOREIGN SCHEMA main LIMIT TO (settings, "MixedCase", orders)
  FROM SERVER import_srv INTO import_tenant
  OPTIONS (tenant_column 'KEY');
SELECT * FROM import_tables('import_tenant');
SELECT * FROM import_tenant.settings;
-- ... or are skipped, with reference_tables off
CREATE SCHEMA import_noref;
IMPORT FOREIGN SCHEMA main LIMIT TO (settings, "MixedCase", orders)
  FROM SERVER import_srv INTO import_noref
  OPTIONS (tenant_column 'KEY', reference_tables 'false');
SELECT * FROM import_tables('import_noref');

-- ===================================================================
-- Keys SQLite never stores as NULL
-- ===================================================================
-- An alias for the rowid (the single-column INTEGER PRIMARY KEY of a
-- rowid table) and the key of a WITHOUT ROWID table are NOT NULL; any
-- other primary key column of a rowid table may hold NULL, as SQLite
-- allows, and stays nullable.  Where SQLite accepts a NULL key, the row
-- was inserted with one (see test/fixtures/import.sh).
CREATE SCHEMA import_keys;
IMPORT FOREIGN SCHEMA main
  LIMIT TO (k_integer, k_lower, k_autoincrement, k_table_pk, k_table_pk_desc,
            k_int, k_bigint, k_integer_8, k_desc, k_composite,
            k_without_rowid, k_not_null, k_view)
  FROM SERVER import_srv INTO import_keys OPTIONS (shard 'shard_c');
SELECT relname, type, not_null FROM import_columns('import_keys')
  WHERE attname = 'id';
SELECT 'k_integer' AS t, id FROM import_keys.k_integer
  WHERE tenant_id = 'hooli'
UNION ALL SELECT 'k_lower', id FROM import_keys.k_lower
  WHERE tenant_id = 'hooli'
UNION ALL SELECT 'k_autoincrement', id FROM import_keys.k_autoincrement
  WHERE tenant_id = 'hooli'
UNION ALL SELECT 'k_table_pk', id FROM import_keys.k_table_pk
  WHERE tenant_id = 'hooli'
UNION ALL SELECT 'k_table_pk_desc', id FROM import_keys.k_table_pk_desc
  WHERE tenant_id = 'hooli'
UNION ALL SELECT 'k_int', id FROM import_keys.k_int
  WHERE tenant_id = 'hooli'
UNION ALL SELECT 'k_bigint', id FROM import_keys.k_bigint
  WHERE tenant_id = 'hooli'
UNION ALL SELECT 'k_integer_8', id FROM import_keys.k_integer_8
  WHERE tenant_id = 'hooli'
UNION ALL SELECT 'k_desc', id FROM import_keys.k_desc
  WHERE tenant_id = 'hooli'
UNION ALL SELECT 'k_composite', id FROM import_keys.k_composite
  WHERE tenant_id = 'hooli'
UNION ALL SELECT 'k_without_rowid', id FROM import_keys.k_without_rowid
  WHERE tenant_id = 'hooli'
UNION ALL SELECT 'k_not_null', id FROM import_keys.k_not_null
  WHERE tenant_id = 'hooli'
UNION ALL SELECT 'k_view', id FROM import_keys.k_view
  WHERE tenant_id = 'hooli';

-- "import_not_null" false leaves these nullable too.
CREATE SCHEMA import_keys_nullable;
IMPORT FOREIGN SCHEMA main
  LIMIT TO (k_integer, k_table_pk, k_without_rowid, k_not_null)
  FROM SERVER import_srv INTO import_keys_nullable
  OPTIONS (shard 'shard_c', import_not_null 'false');
SELECT relname, not_null FROM import_columns('import_keys_nullable')
  WHERE attname = 'id';

-- ===================================================================
-- Errors
-- ===================================================================
CREATE SCHEMA import_err;
IMPORT FOREIGN SCHEMA public FROM SERVER import_srv INTO import_err;
IMPORT FOREIGN SCHEMA main FROM SERVER import_srv INTO import_err
  OPTIONS (shard 'shard_z');
IMPORT FOREIGN SCHEMA main FROM SERVER import_srv INTO import_err
  OPTIONS (schema 'main');
IMPORT FOREIGN SCHEMA main FROM SERVER import_srv INTO import_err
  OPTIONS (import_not_null 'maybe');
IMPORT FOREIGN SCHEMA main FROM SERVER import_srv INTO import_err
  OPTIONS (tenant_column '');
SELECT count(*) FROM import_tables('import_err');

-- ===================================================================
-- Clean up
-- ===================================================================
\set VERBOSITY terse
DROP SCHEMA import_all, import_noref, import_limit, import_except, import_b,
  import_nullable, import_tenant, import_keys, import_keys_nullable,
  import_err CASCADE;
DROP FUNCTION import_tables(name), import_columns(name);
DROP SERVER import_srv;
\set VERBOSITY default
