-- The worker id: setting, then this database's catalog row, then an error.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_idgen;

-- the server's configuration sets pg_idgen.worker_id = 1
SELECT worker_id, source, system_identifier, confirmed FROM snowflake_worker();
-- without the setting and without a stored id: a clear error, never a silent 0
SET pg_idgen.worker_id = -1;
SELECT worker_id, source FROM snowflake_worker();
SELECT snowflake_next();
-- a stored id for this database
SELECT set_worker_id(42);
SELECT worker_id, source, system_identifier = (SELECT system_identifier::text FROM pg_control_system()) AS this_cluster,
       confirmed
  FROM snowflake_worker();
SELECT worker_id FROM uid_decode(snowflake_next());
SELECT worker_id, system_identifier = (SELECT system_identifier FROM pg_control_system()) AS this_cluster,
       set_by = current_user AS set_by_me
  FROM pg_idgen_worker;
-- setting it again replaces it; the change is seen at once
SELECT set_worker_id(43);
SELECT worker_id FROM uid_decode(snowflake_next());
-- the setting wins over the table
SET pg_idgen.worker_id = 7;
SELECT worker_id, source FROM snowflake_worker();
SELECT worker_id FROM uid_decode(snowflake_next());
SET pg_idgen.worker_id = -1;
-- a row made on another cluster (a restored or copied database) is refused until confirmed
UPDATE pg_idgen_worker SET system_identifier = 1;
SELECT worker_id, source, system_identifier, confirmed FROM snowflake_worker();
-- (this cluster's system identifier varies: masked)
SELECT regexp_replace(regress_sqlstate_of('SELECT snowflake_next()'), 'this cluster is \d+', 'this cluster is N')
    AS refused;
SELECT set_worker_id(43);
SELECT confirmed FROM snowflake_worker();
SELECT worker_id FROM uid_decode(snowflake_next());
-- errors
SELECT set_worker_id(1024);
SELECT set_worker_id(-1);
SELECT set_worker_id(NULL) IS NULL AS strict;
SELECT regress_sqlstate_of('SELECT set_worker_id(1024)');
-- clearing it
SELECT clear_worker_id();
SELECT clear_worker_id();
SELECT regress_sqlstate_of('SELECT snowflake_next()');
-- the table is dumped with the extension's data
SELECT c::regclass AS config_table FROM pg_extension e, unnest(e.extconfig) c WHERE e.extname = 'pg_idgen' ORDER BY c::regclass::text;
-- ordinary roles generate and read, but do not configure
SELECT set_worker_id(44);
CREATE ROLE idgen_worker_user;
SET ROLE idgen_worker_user;
SELECT worker_id, source FROM snowflake_worker();
SELECT worker_id FROM uid_decode(snowflake_next());
SELECT regress_sqlstate_of('SELECT set_worker_id(45)');
SELECT regress_sqlstate_of('SELECT clear_worker_id()');
SELECT regress_sqlstate_of('UPDATE pg_idgen_worker SET worker_id = 45');
RESET ROLE;
DROP ROLE idgen_worker_user;
SELECT clear_worker_id();
RESET pg_idgen.worker_id;
-- Leases (pg_idgen.lease_mode, off here): snowflake_lease() and snowflake_worker() say so, the
-- registry table is empty and PUBLIC has no privilege on it; pg_idgen.registry (it holds no
-- password: refused there) is hidden from roles outside pg_read_all_settings.
SHOW pg_idgen.lease_mode;
SELECT * FROM snowflake_lease();
SELECT worker_id, source, lease FROM snowflake_worker();
SELECT count(*) FROM pg_idgen_leases;
CREATE ROLE idgen_lease_user;
SET ROLE idgen_lease_user;
SELECT mode FROM snowflake_lease();
SELECT regress_sqlstate_of('SELECT count(*) FROM pg_idgen_leases');
-- (the message's wording differs between 15 and 16+: only the SQLSTATE and the setting's name)
SELECT regexp_replace(regress_sqlstate_of('SHOW pg_idgen.registry'), ': .*(examine "[^"]+").*', ': ... \1');
SELECT regexp_replace(regress_sqlstate_of('SELECT current_setting(''pg_idgen.registry'')'), ': .*(examine "[^"]+").*', ': ... \1');
SHOW pg_idgen.lease_ttl;
RESET ROLE;
DROP ROLE idgen_lease_user;
