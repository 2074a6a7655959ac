--
-- IMPORT FOREIGN SCHEMA reads times stored as text or Unix seconds as
-- times: a TEXT (or untyped) column whose values are all ISO dates is
-- imported as date, all ISO times as timestamp, all with an offset as
-- timestamptz, with a NOTICE each; with infer_unix_seconds, an INTEGER
-- column of Unix seconds as timestamptz.  Columns whose values are times
-- in part keep their type; infer_times 'false' keeps every type.  The
-- rows then read as the values stored.  See test/fixtures/importtimes.sh.
--
\! bash test/fixtures/importtimes.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER it_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/importtimes/directory.db');
SET timezone = 'UTC';

CREATE SCHEMA it_inferred;
IMPORT FOREIGN SCHEMA main FROM SERVER it_srv INTO it_inferred;
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
  WHERE attrelid = 'it_inferred.events'::regclass AND attnum > 0 ORDER BY attnum;
SELECT id, at, day, stamped, mixed, someoff FROM it_inferred.events ORDER BY id;
-- time conditions and buckets on the inferred columns
SELECT count(*) FROM it_inferred.events WHERE at >= '2025-06-02';
SELECT date_trunc('day', stamped) AS d, count(*) FROM it_inferred.events
  GROUP BY 1 ORDER BY 1;

CREATE SCHEMA it_unix;
IMPORT FOREIGN SCHEMA main FROM SERVER it_srv INTO it_unix
  OPTIONS (infer_unix_seconds 'true');
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
  WHERE attrelid = 'it_unix.events'::regclass AND attname IN ('epoch', 'small')
  ORDER BY attnum;
SELECT id, epoch FROM it_unix.events ORDER BY id;

CREATE SCHEMA it_off;
IMPORT FOREIGN SCHEMA main FROM SERVER it_srv INTO it_off
  OPTIONS (infer_times 'false');
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
  WHERE attrelid = 'it_off.events'::regclass AND attnum > 0 ORDER BY attnum;

-- a bad option value
IMPORT FOREIGN SCHEMA main FROM SERVER it_srv INTO it_off
  OPTIONS (infer_times 'maybe');
