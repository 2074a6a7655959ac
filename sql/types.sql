--
-- Type conversion: values of every SQLite storage class read through
-- columns of every supported type (src/convert.c), the errors for values
-- a column cannot take, and the SQLite conventions for dates and times.
--
\! bash test/fixtures/types.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER types_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/types/directory.db');

-- Output must not depend on these; timestamptz must not depend on TimeZone.
SET datestyle = 'ISO, YMD';
SET intervalstyle = 'postgres';
SET extra_float_digits = 1;
SET timezone = 'America/New_York';

CREATE DOMAIN regress_posint AS int4 CHECK (VALUE > 0);
CREATE DOMAIN regress_notnull AS text NOT NULL;

CREATE FOREIGN TABLE types_good (
  tenant_id text, id int8,
  c_int2 int2, c_int4 int4, c_int8 int8, c_float4 float4, c_float8 float8,
  c_numeric numeric, c_numeric_p numeric(8,2),
  c_bool bool, c_text text, c_varchar varchar(5), c_bpchar char(4),
  c_name name,
  c_bytea bytea, c_uuid uuid, c_json json, c_jsonb jsonb,
  c_date date, c_ts timestamp, c_ts0 timestamp(0), c_tstz timestamptz,
  c_interval interval, c_int_array int4[], c_posint regress_posint
) SERVER types_srv OPTIONS (table 'good');

-- ===================================================================
-- Values that convert.  Rows 1 to 3 (shard_a) hold mostly integers,
-- reals and text, row 4 (shard_b) text in other accepted forms, row 5
-- NULL everywhere.  No WHERE clause: every shard is read.
-- ===================================================================
-- Integers are range-checked, reals taken only when integral, text goes
-- through the type's input function.  Reals become numeric through their
-- shortest round-trip form (0.1, not 0.1000000000000000055...; 2.675
-- rounds to 2.68 in numeric(8,2)).
SELECT id, c_int2, c_int4, c_int8, c_float4, c_float8, c_numeric, c_numeric_p
FROM types_good ORDER BY id;
-- Booleans: 0/1 (and 0.0/1.0) or boolin's words.  Numbers become text
-- through their decimal form; char(4) pads, empty text stays empty.
SELECT id, c_bool, c_text, c_text IS NULL AS text_is_null,
       '[' || c_varchar || ']' AS c_varchar, c_bpchar,
       octet_length(c_bpchar) AS bpchar_octets, c_name
FROM types_good ORDER BY id;
-- bytea takes blobs and text bytes as they are ('\x61' is four bytes); uuid
-- takes text in any case, with or without hyphens, or a 16-byte blob; json
-- validates (jsonb normalizes), and JSON null is not SQL NULL.
SELECT id, c_bytea, c_uuid, c_json, c_jsonb, c_jsonb IS NULL AS jsonb_is_null
FROM types_good ORDER BY id;
-- Types without a fast path go through their input function.
SELECT id, c_interval, c_int_array, c_posint FROM types_good ORDER BY id;

-- ===================================================================
-- Dates and times, SQLite's way
-- ===================================================================
-- Numbers are Unix time in seconds (reals rounded to microseconds), text
-- is YYYY-MM-DD[( |T)HH:MM[:SS[.SSS...]][Z|(+|-)HH:MM]]; an offset is
-- converted to UTC, no offset means UTC.  A date drops the time of day
-- (86399 is 1970-01-01 23:59:59; -0.5 is 1969-12-31 23:59:59.5; row 4's
-- '2024-03-01 01:00+02:00' is 2024-02-29 23:00 UTC).  timestamp(0)
-- rounds half up.
SELECT id, c_date, c_ts, c_ts0 FROM types_good ORDER BY id;
-- timestamptz: the same instants whatever the session's TimeZone.
SELECT id, c_tstz, c_tstz AT TIME ZONE 'UTC' AS c_tstz_utc
FROM types_good ORDER BY id;
SET timezone = 'Asia/Tokyo';
SELECT id, c_tstz, c_tstz AT TIME ZONE 'UTC' AS c_tstz_utc
FROM types_good ORDER BY id;
SET timezone = 'America/New_York';
-- DateStyle does not change how text is read either.
SET datestyle = 'SQL, DMY';
SELECT id, c_date, c_tstz FROM types_good WHERE id IN (3, 4) ORDER BY id;
SET datestyle = 'ISO, YMD';

-- ===================================================================
-- Values that do not convert: one error each.  Table types_bad has one row
-- (tenant acme, shard_a); each query fetches one column.
-- ===================================================================
CREATE FOREIGN TABLE types_bad (
  tenant_id text,
  blob_int int4,
  real_fraction_int int4,
  integer_out_of_range int4,
  real_out_of_range int2,
  text_int int4,
  real_float4_overflow float4,
  numeric_precision numeric(8,2),
  integer_bool bool,
  text_bool bool,
  blob_text text,
  varchar_too_long varchar(5),
  invalid_utf8 text,
  nul_in_text varchar,
  integer_bytea bytea,
  uuid_15_bytes uuid,
  text_uuid uuid,
  integer_uuid uuid,
  text_jsonb jsonb,
  timestamp_format timestamp,
  timestamp_offset_format timestamptz,
  date_impossible date,
  time_impossible timestamp,
  timestamptz_out_of_range timestamptz,
  blob_date date,
  domain_check regress_posint,
  null_domain regress_notnull
) SERVER types_srv OPTIONS (table 'bad');
SELECT count(*) FROM types_bad;
-- a storage class the type cannot take: HV004
SELECT blob_int FROM types_bad;
SELECT real_fraction_int FROM types_bad;
SELECT blob_text FROM types_bad;
SELECT integer_bytea FROM types_bad;
SELECT integer_uuid FROM types_bad;
SELECT uuid_15_bytes FROM types_bad;
SELECT blob_date FROM types_bad;
-- out of range: 22003, 22008 for dates and times
SELECT integer_out_of_range FROM types_bad;
SELECT real_out_of_range FROM types_bad;
SELECT real_float4_overflow FROM types_bad;
SELECT numeric_precision FROM types_bad;
SELECT timestamptz_out_of_range FROM types_bad;
-- text the type's input function rejects: 22P02 and relatives
SELECT text_int FROM types_bad;
SELECT integer_bool FROM types_bad;
SELECT text_bool FROM types_bad;
SELECT varchar_too_long FROM types_bad;
SELECT text_uuid FROM types_bad;
SELECT text_jsonb FROM types_bad;
-- text that is not UTF-8 (or holds a NUL byte): 22021
SELECT invalid_utf8 FROM types_bad;
SELECT nul_in_text FROM types_bad;
-- dates and times in other forms (22007) or with impossible fields (22008)
SELECT timestamp_format FROM types_bad;
SELECT timestamp_offset_format FROM types_bad;
SELECT date_impossible FROM types_bad;
SELECT time_impossible FROM types_bad;
-- domains: the base type's conversion, then the domain's constraints
SELECT domain_check FROM types_bad;
SELECT null_domain FROM types_bad;
-- and the columns that do convert still read fine
SELECT tenant_id FROM types_bad;

-- The SQLSTATE of each error above, caught in a subtransaction (which also
-- shows that a scan failing mid-row cleans up after itself).
CREATE FUNCTION types_sqlstate(query text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE query;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE;
END
$$;
SELECT attname AS column_name,
       types_sqlstate(format('SELECT %I FROM types_bad', attname)) AS sqlstate
FROM pg_attribute
WHERE attrelid = 'types_bad'::regclass AND attnum > 0
ORDER BY attnum;

-- ===================================================================
-- Clean up
-- ===================================================================
RESET datestyle;
RESET intervalstyle;
RESET extra_float_digits;
RESET timezone;
DROP FOREIGN TABLE types_good, types_bad;
DROP FUNCTION types_sqlstate(text);
DROP DOMAIN regress_posint, regress_notnull;
DROP SERVER types_srv;
