-- test/directory.sql
--	The directory's tables, as directory_init() creates them: every fixture
--	and fleet builder reads this one file.
CREATE TABLE shards(
	shard_id TEXT PRIMARY KEY,
	path TEXT NOT NULL UNIQUE
);
CREATE TABLE shard_map(
	tenant_id TEXT PRIMARY KEY,
	shard_id TEXT NOT NULL,
	status TEXT NOT NULL DEFAULT 'ACTIVE',
	target_shard_id TEXT,
	updated_at INTEGER NOT NULL
);
CREATE INDEX shard_map_status ON shard_map(status);
