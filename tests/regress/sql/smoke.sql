-- smoke: the extension loads (it is preloaded) and hands out a positive id
SET client_min_messages = warning;
CREATE EXTENSION pg_idgen;
SELECT snowflake_next() > 0 AS positive;
-- regress_sqlstate_of(q): SQLSTATE and message of a statement, for the other tests' error cases
CREATE FUNCTION regress_sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN others THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
-- regress_explain_json(q): EXPLAIN (FORMAT JSON) of a statement, for plan-shape assertions
CREATE FUNCTION regress_explain_json(q text) RETURNS json LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
  RETURN j;
END $$;
