-- pg_idgen: what must not replicate. Every table of the extension holds this node's own state
-- (its worker id, its segment tags and the stride slots it serves, its keyed spaces and their
-- durable bounds, the leases, slot owners and registry roles of a registry, its mask keys and
-- custom layouts); the regclass columns name this node's backing sequences by OID. None of them
-- may take another node's rows: the tables that must be the same on every node (mask keys,
-- layouts) are set up on each node with pg_idgen's functions, never replicated (docs/fleet.md,
-- "What must not replicate"). Made last (finalize), so that it covers every table above.
--
-- Subscriber side, the guarantee: pg_idgen_replica_guard on every table as ENABLE REPLICA
-- triggers (they fire only under session_replication_role = replica: apply and table
-- synchronization workers). A row change applied from another node is skipped with one WARNING per
-- table and transaction; an applied TRUNCATE is refused (0A000): a trigger cannot skip it.
CREATE FUNCTION pg_idgen_replica_guard() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_replica_guard';
REVOKE ALL ON FUNCTION pg_idgen_replica_guard() FROM PUBLIC;
-- The publisher's side of the TRUNCATE: since no subscriber can skip one, a TRUNCATE of a table of
-- pg_idgen that a publication carries with publish = truncate is refused (55000) where it is made,
-- before it stops every subscriber (an ordinary trigger: sessions, not apply workers).
CREATE FUNCTION pg_idgen_publish_truncate_guard() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    pubs text;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.format('"%s"', p.pubname), ', ' ORDER BY p.pubname) INTO pubs
      FROM pg_catalog.pg_publication p
     WHERE p.pubtruncate
       AND EXISTS (SELECT FROM pg_catalog.pg_publication_tables t
                    WHERE t.pubname OPERATOR(pg_catalog.=) p.pubname
                      AND t.schemaname OPERATOR(pg_catalog.=) TG_TABLE_SCHEMA
                      AND t.tablename OPERATOR(pg_catalog.=) TG_TABLE_NAME);
    IF pubs IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'object_not_in_prerequisite_state',
            MESSAGE = pg_catalog.format('cannot truncate pg_idgen''s table "%s": %s %s %s its TRUNCATE', TG_TABLE_NAME,
                                        CASE WHEN pg_catalog.strpos(pubs, ',') OPERATOR(pg_catalog.>) 0
                                             THEN 'publications' ELSE 'publication' END,
                                        pubs,
                                        CASE WHEN pg_catalog.strpos(pubs, ',') OPERATOR(pg_catalog.>) 0
                                             THEN 'publish' ELSE 'publishes' END),
            DETAIL = 'A subscriber cannot skip a TRUNCATE of pg_idgen''s tables: applying it is refused, which stops the subscription.',
            HINT = 'DELETE the rows instead (subscribers skip row changes of pg_idgen''s tables), or ALTER PUBLICATION ... SET (publish = ''insert, update, delete'').';
    END IF;
    RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION pg_idgen_publish_truncate_guard() FROM PUBLIC;
DO $replica_guard$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT n.nspname, c.relname
          FROM pg_catalog.pg_depend d
          JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid
          JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
          JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
         WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
           AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
           AND d.deptype OPERATOR(pg_catalog.=) 'e'
           AND e.extname OPERATOR(pg_catalog.=) 'pg_idgen'
           AND c.relkind OPERATOR(pg_catalog.=) 'r'
         ORDER BY c.relname
    LOOP
        EXECUTE pg_catalog.format(
            'CREATE TRIGGER pg_idgen_replica_guard BEFORE INSERT OR UPDATE OR DELETE ON %I.%I '
            'FOR EACH ROW EXECUTE FUNCTION @extschema@.pg_idgen_replica_guard()', t.nspname, t.relname);
        EXECUTE pg_catalog.format(
            'CREATE TRIGGER pg_idgen_replica_guard_truncate BEFORE TRUNCATE ON %I.%I '
            'FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.pg_idgen_replica_guard()', t.nspname, t.relname);
        EXECUTE pg_catalog.format(
            'CREATE TRIGGER pg_idgen_publish_truncate_guard BEFORE TRUNCATE ON %I.%I '
            'FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.pg_idgen_publish_truncate_guard()', t.nspname, t.relname);
        EXECUTE pg_catalog.format('ALTER TABLE %I.%I ENABLE REPLICA TRIGGER pg_idgen_replica_guard',
                                  t.nspname, t.relname);
        EXECUTE pg_catalog.format('ALTER TABLE %I.%I ENABLE REPLICA TRIGGER pg_idgen_replica_guard_truncate',
                                  t.nspname, t.relname);
    END LOOP;
END
$replica_guard$;

-- Publisher side and the shape of the group: an event trigger on CREATE/ALTER PUBLICATION and
-- CREATE/ALTER SUBSCRIPTION. A publication that names one of pg_idgen's tables is refused
-- (22023, as PostgreSQL refuses a system or temporary table in a publication); one that covers them
-- through FOR ALL TABLES or TABLES IN SCHEMA (which cannot leave a table out) gets a WARNING.
-- Subscriptions: on PostgreSQL 15 (no origin = none) a node that publishes and subscribes gets a
-- WARNING (a one-way fan-in to an aggregator is fine); on 16 and later a subscription with
-- origin = any on a node that publishes, and an active-active database (a subscription with
-- origin = none) that has generators handing out the same values on every node, get a WARNING.
-- Only the four tags fire it; it refuses nothing but a named pg_idgen table. SECURITY DEFINER:
-- a role that may create a subscription without being superuser (pg_create_subscription) must not
-- need a privilege on pg_idgen's tables for its DDL to pass; it only reads catalogs and those
-- tables, and is never callable directly (event trigger functions are not).
CREATE FUNCTION pg_idgen_replication_check() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    pub record;
    sub record;
    named text;
    covered text;
    via text;
    publishes text;
    origin text;
    unsafe text;
    db oid := (SELECT d.oid FROM pg_catalog.pg_database d
                WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database());
    since16 bool := pg_catalog.current_setting('server_version_num')::int OPERATOR(pg_catalog.>=) 160000;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.format('"%s"', p.pubname), ', ' ORDER BY p.pubname)
      INTO publishes FROM pg_catalog.pg_publication p;

    IF TG_TAG OPERATOR(pg_catalog.=) 'CREATE PUBLICATION' OR TG_TAG OPERATOR(pg_catalog.=) 'ALTER PUBLICATION' THEN
        FOR pub IN
            SELECT DISTINCT p.oid, p.pubname, p.puballtables
              FROM pg_catalog.pg_event_trigger_ddl_commands() c
              JOIN pg_catalog.pg_publication p ON p.oid OPERATOR(pg_catalog.=) CASE
                   WHEN c.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_publication'::pg_catalog.regclass THEN c.objid
                   WHEN c.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_publication_rel'::pg_catalog.regclass THEN
                        (SELECT r.prpubid FROM pg_catalog.pg_publication_rel r WHERE r.oid OPERATOR(pg_catalog.=) c.objid)
                   WHEN c.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_publication_namespace'::pg_catalog.regclass THEN
                        (SELECT s.pnpubid FROM pg_catalog.pg_publication_namespace s WHERE s.oid OPERATOR(pg_catalog.=) c.objid)
                   END
             ORDER BY p.pubname
        LOOP
            -- pg_idgen's tables the publication names itself: refused.
            SELECT pg_catalog.string_agg(pg_catalog.format('"%s"', k.relname), ', ' ORDER BY k.relname) INTO named
              FROM pg_catalog.pg_publication_rel r
              JOIN pg_catalog.pg_class k ON k.oid OPERATOR(pg_catalog.=) r.prrelid
              JOIN pg_catalog.pg_depend d ON d.objid OPERATOR(pg_catalog.=) k.oid
               AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
               AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
               AND d.deptype OPERATOR(pg_catalog.=) 'e'
              JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
               AND e.extname OPERATOR(pg_catalog.=) 'pg_idgen'
             WHERE r.prpubid OPERATOR(pg_catalog.=) pub.oid;
            IF named IS NOT NULL THEN
                RAISE EXCEPTION USING
                    ERRCODE = 'invalid_parameter_value',
                    MESSAGE = pg_catalog.format('cannot add pg_idgen''s %s %s to publication "%s"',
                                               CASE WHEN pg_catalog.strpos(named, ',') OPERATOR(pg_catalog.>) 0 THEN 'tables' ELSE 'table' END,
                                               named, pub.pubname),
                    DETAIL = 'pg_idgen''s tables hold each node''s own state (worker id, segment tags and slots, keyed spaces and bounds, leases, mask keys, layouts): a subscriber must not take another node''s.',
                    HINT = 'Publish the application''s tables only; set up pg_idgen on each node with its functions (docs/fleet.md, "What must not replicate").';
            END IF;
            -- pg_idgen's tables the publication carries through FOR ALL TABLES or TABLES IN SCHEMA.
            SELECT pg_catalog.string_agg(pg_catalog.format('"%s"', t.tablename), ', ' ORDER BY t.tablename) INTO covered
              FROM pg_catalog.pg_publication_tables t
              JOIN pg_catalog.pg_namespace n ON n.nspname OPERATOR(pg_catalog.=) t.schemaname
              JOIN pg_catalog.pg_class k ON k.relname OPERATOR(pg_catalog.=) t.tablename
               AND k.relnamespace OPERATOR(pg_catalog.=) n.oid
              JOIN pg_catalog.pg_depend d ON d.objid OPERATOR(pg_catalog.=) k.oid
               AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
               AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
               AND d.deptype OPERATOR(pg_catalog.=) 'e'
              JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
               AND e.extname OPERATOR(pg_catalog.=) 'pg_idgen'
             WHERE t.pubname OPERATOR(pg_catalog.=) pub.pubname;
            IF covered IS NOT NULL THEN
                via := CASE WHEN pub.puballtables THEN 'FOR ALL TABLES'
                            ELSE 'TABLES IN SCHEMA ' OPERATOR(pg_catalog.||) (
                                 SELECT pg_catalog.string_agg(pg_catalog.quote_ident(n.nspname), ', ' ORDER BY n.nspname)
                                   FROM pg_catalog.pg_publication_namespace s
                                   JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) s.pnnspid
                                  WHERE s.pnpubid OPERATOR(pg_catalog.=) pub.oid) END;
                RAISE WARNING USING
                    MESSAGE = pg_catalog.format('publication "%s" carries pg_idgen''s tables (%s): %s', pub.pubname, via, covered),
                    DETAIL = 'They hold this node''s own state. A subscriber with pg_idgen 0.5.0 or later skips their row changes, and a TRUNCATE of them, which it could not skip, is refused here; a database without pg_idgen''s guards would take this node''s worker id, segment slots and keyed bounds as its own. PostgreSQL cannot leave a table out of FOR ALL TABLES.',
                    HINT = 'Publish the application''s tables by name (FOR TABLE ...) or by a schema that does not hold pg_idgen''s tables.';
            END IF;
        END LOOP;
        IF NOT since16 AND EXISTS (SELECT FROM pg_catalog.pg_subscription s WHERE s.subdbid OPERATOR(pg_catalog.=) db) THEN
            RAISE WARNING USING
                MESSAGE = 'this PostgreSQL 15 database publishes and subscribes: changes loop if the nodes subscribe to each other',
                DETAIL = 'A subscription on PostgreSQL 15 applies every change whatever node it came from (no origin = none); two nodes that subscribe to each other send every change back and forth. A one-way fan-in or cascade is fine.',
                HINT = 'Active-active (several writable nodes) needs PostgreSQL 16 or later with origin = none.';
        END IF;
        RETURN;
    END IF;

    -- CREATE or ALTER SUBSCRIPTION
    FOR sub IN
        SELECT DISTINCT s.oid, s.subname
          FROM pg_catalog.pg_event_trigger_ddl_commands() c
          JOIN pg_catalog.pg_subscription s ON s.oid OPERATOR(pg_catalog.=) c.objid
         WHERE c.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_subscription'::pg_catalog.regclass
         ORDER BY s.subname
    LOOP
        IF NOT since16 THEN
            IF publishes IS NOT NULL THEN
                RAISE WARNING USING
                    MESSAGE = pg_catalog.format('subscription "%s": this PostgreSQL 15 database also publishes (%s): changes loop if the nodes subscribe to each other', sub.subname, publishes),
                    DETAIL = 'A subscription on PostgreSQL 15 applies every change whatever node it came from (no origin = none); two nodes that subscribe to each other send every change back and forth. A one-way fan-in or cascade is fine.',
                    HINT = 'Active-active (several writable nodes) needs PostgreSQL 16 or later with origin = none.';
            END IF;
            CONTINUE;
        END IF;
        EXECUTE 'SELECT s.suborigin FROM pg_catalog.pg_subscription s WHERE s.oid OPERATOR(pg_catalog.=) $1'
           INTO origin USING sub.oid;
        IF origin OPERATOR(pg_catalog.=) 'any' AND publishes IS NOT NULL THEN
            RAISE WARNING USING
                MESSAGE = pg_catalog.format('subscription "%s" has origin = any and this database also publishes (%s): changes loop if its publisher subscribes to this node', sub.subname, publishes),
                DETAIL = 'With origin = any a subscriber applies the changes its publisher received from other nodes too; between nodes that subscribe to each other every change comes back. A one-way cascade is fine.',
                HINT = 'For active-active, create the subscriptions WITH (origin = none).';
        END IF;
    END LOOP;
    IF since16 THEN
        EXECUTE 'SELECT pg_catalog.string_agg(pg_catalog.format(''"%s"'', s.subname), '', '' ORDER BY s.subname) '
                'FROM pg_catalog.pg_subscription s WHERE s.subdbid OPERATOR(pg_catalog.=) $1 '
                'AND s.suborigin OPERATOR(pg_catalog.=) ''none'''
           INTO origin USING db;
        IF origin IS NOT NULL THEN
            -- Generators that hand out the same values on every node: a segment tag that is
            -- neither slotted, nor strided (nodes => N), nor registry-owned; a keyed space not in
            -- fleet mode (no nodes => N).
            SELECT pg_catalog.string_agg(x.what, ', ' ORDER BY x.what) INTO unsafe FROM (
                SELECT pg_catalog.format('segment tag "%s"', g.tag) AS what
                  FROM @extschema@.pg_idgen_segments g
                 WHERE NOT g.slotted AND NOT g.registry AND g.nodes OPERATOR(pg_catalog.=) 1
                UNION ALL
                SELECT pg_catalog.format('keyed space "%s"', k.space)
                  FROM @extschema@.pg_idgen_keyed_spaces k
                 WHERE k.nodes IS NULL OR k.nodes OPERATOR(pg_catalog.<=) 1
            ) x;
            IF unsafe IS NOT NULL THEN
                RAISE WARNING USING
                    MESSAGE = pg_catalog.format('this database replicates active-active (subscriptions with origin = none: %s) and has generators that hand out the same values on every node: %s', origin, unsafe),
                    DETAIL = 'A value such a generator hands out on one writable node is handed out on the others too: rows keyed by it collide, and a duplicate key (23505) in an apply worker stops its subscription.',
                    HINT = 'Use slotted or strided segment tags (segment_create with slots => S, or nodes => N and node_index => k) and keyed spaces with nodes => N and node_index => k, or call these generators on one node only.';
            END IF;
        END IF;
    END IF;
END
$fn$;
REVOKE ALL ON FUNCTION pg_idgen_replication_check() FROM PUBLIC;
CREATE EVENT TRIGGER pg_idgen_replication_guard ON ddl_command_end
    WHEN TAG IN ('CREATE PUBLICATION', 'ALTER PUBLICATION', 'CREATE SUBSCRIPTION', 'ALTER SUBSCRIPTION')
    EXECUTE FUNCTION @extschema@.pg_idgen_replication_check();
COMMENT ON FUNCTION pg_idgen_replica_guard() IS 'ENABLE REPLICA trigger of pg_idgen''s tables: a change applied from another node by logical replication is skipped (a TRUNCATE refused)';
COMMENT ON FUNCTION pg_idgen_publish_truncate_guard() IS 'trigger of pg_idgen''s tables: refuses a TRUNCATE that a publication would send to subscribers, which cannot skip it';
COMMENT ON FUNCTION pg_idgen_replication_check() IS 'event trigger: refuses a publication naming pg_idgen''s tables, warns when one covers them and about group shapes that loop or collide';
-- Publications that already carry pg_idgen's tables when the extension is installed or updated.
DO $replication_warn$
DECLARE
    pubs text;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(x.pubname), ', ' ORDER BY x.pubname) INTO pubs
      FROM (SELECT DISTINCT t.pubname
              FROM pg_catalog.pg_publication_tables t
              JOIN pg_catalog.pg_namespace n ON n.nspname OPERATOR(pg_catalog.=) t.schemaname
              JOIN pg_catalog.pg_class k ON k.relname OPERATOR(pg_catalog.=) t.tablename
               AND k.relnamespace OPERATOR(pg_catalog.=) n.oid
              JOIN pg_catalog.pg_depend d ON d.objid OPERATOR(pg_catalog.=) k.oid
               AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
               AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
               AND d.deptype OPERATOR(pg_catalog.=) 'e'
              JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
               AND e.extname OPERATOR(pg_catalog.=) 'pg_idgen') x;
    IF pubs IS NOT NULL THEN
        RAISE WARNING USING
            MESSAGE = pg_catalog.format('publications carry pg_idgen''s tables: %s', pubs),
            DETAIL = 'They hold this node''s own state; subscribers with pg_idgen skip their row changes, and a TRUNCATE of them is refused here while a publication sends it.',
            HINT = 'Publish the application''s tables by name (FOR TABLE ...) or by a schema that does not hold pg_idgen''s tables.';
    END IF;
END
$replication_warn$;
