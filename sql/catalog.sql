-- pg_idgen works on text as UTF-8 (tags, layout and key names, text codes): a database of another
-- encoding could hand it text that is not, which it would have to refuse call by call. It is
-- refused once, here.
DO $$
BEGIN
    IF pg_catalog.getdatabaseencoding() OPERATOR(pg_catalog.<>) 'UTF8' THEN
        RAISE EXCEPTION 'pg_idgen needs a UTF8 database; this one is %', pg_catalog.getdatabaseencoding()
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Create the database with ENCODING ''UTF8'' (TEMPLATE template0).';
    END IF;
END
$$;
-- pg_idgen: the statement trigger function of the extension's tables. Every change of a table
-- (by the functions, by DML, by pg_restore) sends a relcache invalidation, and every backend drops
-- its cached copy of the contents (custom layouts, the stored worker id). A C function that
-- refuses a direct call (39P01); not executable by PUBLIC (triggers fire regardless).
CREATE FUNCTION pg_idgen_catalog_changed() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_catalog_changed';
REVOKE ALL ON FUNCTION pg_idgen_catalog_changed() FROM PUBLIC;
