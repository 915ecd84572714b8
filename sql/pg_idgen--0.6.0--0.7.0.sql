-- pg_idgen 0.6.0 -> 0.7.0. Written by hand and reviewed (docs/contributing.md "Releasing": the rules
-- for upgrade scripts). Run by ALTER EXTENSION pg_idgen UPDATE TO '0.7.0', as a superuser, with
-- search_path = the extension's schema, pg_temp. The update test from 0.6.0
-- (tests/upgrade/extension_update_060.sh) checks that a database updated by it has exactly the
-- objects of a fresh 0.7.0 install (tests/upgrade/objects.sql) and that nothing of the extension
-- binds a function, operator or type outside pg_catalog and the extension (tests/security/audit.sql).
\echo Use "ALTER EXTENSION pg_idgen UPDATE TO '0.7.0'" to load this file. \quit

-- Each change of 0.7.0 adds its section below, in the form the install script creates it.
