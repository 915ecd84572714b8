-- pg_idgen 0.3.0 -> 0.4.0. Written by hand and reviewed (README "Releasing": the rules for
-- upgrade scripts). Run by ALTER EXTENSION pg_idgen UPDATE TO '0.4.0', as a superuser, with
-- search_path = the extension's schema, pg_temp. The update test from 0.3.0 checks that a database
-- updated by it has exactly the objects of a fresh 0.4.0 install (tests/upgrade/objects.sql).
\echo Use "ALTER EXTENSION pg_idgen UPDATE TO '0.4.0'" to load this file. \quit

-- Each change of 0.4.0 adds its section below, in the form the install script creates it.
