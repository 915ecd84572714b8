-- pg_idgen: the statement trigger function of the extension's tables. Every change of a table
-- (by the functions, by DML, by pg_restore) sends a relcache invalidation, and every backend drops
-- its cached copy of the contents (custom layouts, the stored worker id). A C function that
-- refuses a direct call (39P01); not executable by PUBLIC (triggers fire regardless).
CREATE FUNCTION pg_idgen_catalog_changed() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_catalog_changed';
REVOKE ALL ON FUNCTION pg_idgen_catalog_changed() FROM PUBLIC;
