-- tests/security/plant.sql — what a hostile owner of the extension's schema plants before a
-- superuser installs, updates or uses pg_idgen. Run as that role (psql variables: funcs and ops,
-- the names from shadow_names.py and bound_names.sql; schema, where to plant; exact, 'on' to
-- shadow pg_catalog's exact signatures too, for a schema a victim puts before pg_catalog).
--
-- For every name PostgreSQL knows (pg_catalog's functions, aggregates and operators of that name)
-- it creates shadows whose argument types are a better match than pg_catalog's for some call: each
-- overload with one argument's type replaced by each of a grid of common types, and for every
-- binary operator every pair of the grid. Every shadow records its call in public.hostile_calls
-- and tries to make the planting role a superuser, so a test sees both.
SET client_min_messages = warning;
SET search_path = pg_catalog, pg_temp;   -- the planter itself never meets its own shadows
SELECT pg_catalog.set_config('hostile.funcs', :'funcs', false),
       pg_catalog.set_config('hostile.ops', :'ops', false),
       pg_catalog.set_config('hostile.schema', :'schema', false),
       pg_catalog.set_config('hostile.exact', :'exact', false) \gset
CREATE TABLE IF NOT EXISTS public.hostile_calls (what text, by_user name DEFAULT current_user, at timestamptz DEFAULT pg_catalog.clock_timestamp());
GRANT INSERT, SELECT ON public.hostile_calls TO PUBLIC;
SELECT pg_catalog.format($f$CREATE OR REPLACE FUNCTION public.hostile_hit(what text) RETURNS void LANGUAGE plpgsql AS $b$
BEGIN
  INSERT INTO public.hostile_calls (what) VALUES (what);
  BEGIN
    EXECUTE %L;
  EXCEPTION WHEN others THEN NULL;
  END;
END $b$$f$, pg_catalog.format('ALTER ROLE %I SUPERUSER', :'owner')) \gexec
DO $plant$
DECLARE
  sch text := pg_catalog.current_setting('hostile.schema');
  exact bool := pg_catalog.current_setting('hostile.exact') = 'on';
  grid regtype[] := ARRAY['bool', '"char"', 'name', 'int2', 'int4', 'int8', 'oid', 'float4', 'float8',
                          'numeric', 'text', 'varchar', 'bytea', 'regclass', 'timestamptz', 'timestamp',
                          'date', 'interval', 'jsonb', 'uuid']::regtype[];
  fname text; opname text; p record; i int; t regtype; l regtype; r regtype;
  args regtype[]; sig text; ret regtype; n int := 0; made text[] := '{}';
BEGIN
  -- functions and aggregates
  FOREACH fname IN ARRAY pg_catalog.string_to_array(pg_catalog.current_setting('hostile.funcs'), ' ') LOOP
    FOR p IN SELECT pr.oid, pr.proargtypes::regtype[] AS a, pr.prorettype::regtype AS rt, pr.prokind, pr.proretset
             FROM pg_catalog.pg_proc pr
             WHERE pr.proname = fname AND pr.pronamespace = 'pg_catalog'::regnamespace
               AND pr.pronargs BETWEEN 0 AND 4 AND pr.provariadic = 0 AND pr.prokind IN ('f', 'a')
               AND NOT EXISTS (SELECT FROM pg_catalog.pg_type ty WHERE ty.oid = pr.prorettype AND ty.typtype = 'p' AND ty.oid <> 'void'::regtype)
               AND NOT EXISTS (SELECT FROM pg_catalog.unnest(pr.proargtypes::oid[]) a(o) JOIN pg_catalog.pg_type ty ON ty.oid = a.o WHERE ty.typtype = 'p')
    LOOP
      FOR i IN 0 .. COALESCE(pg_catalog.array_length(p.a, 1), 0) LOOP
        FOREACH t IN ARRAY grid LOOP
          args := p.a;
          IF i = 0 THEN
            CONTINUE WHEN NOT exact OR t <> 'bool'::regtype;     -- once: the exact signature
          ELSE
            CONTINUE WHEN args[i] = t;
            args[i] := t;
          END IF;
          sig := pg_catalog.array_to_string(args, ', ');
          CONTINUE WHEN pg_catalog.format('%s(%s)', fname, sig) = ANY (made);
          -- pg_catalog's own signature can only win from a schema placed before it
          CONTINUE WHEN NOT exact AND EXISTS (SELECT FROM pg_catalog.pg_proc q WHERE q.proname = fname
                          AND q.pronamespace = 'pg_catalog'::regnamespace AND q.proargtypes::regtype[] = args);
          made := made || pg_catalog.format('%s(%s)', fname, sig);
          BEGIN
            IF p.prokind = 'a' THEN
              CONTINUE WHEN pg_catalog.array_length(args, 1) IS DISTINCT FROM 1;
              EXECUTE pg_catalog.format(
                'CREATE FUNCTION %I.%I(%s, %s) RETURNS %s LANGUAGE plpgsql AS $b$ BEGIN PERFORM public.hostile_hit(%L); RETURN $1; END $b$',
                sch, 'hostile_sfunc_' || n, args[1], args[1], args[1], pg_catalog.format('aggregate %s(%s)', fname, sig));
              EXECUTE pg_catalog.format('CREATE AGGREGATE %I.%I(%s) (SFUNC = %I.%I, STYPE = %s)',
                sch, fname, args[1], sch, 'hostile_sfunc_' || n, args[1]);
            ELSE
              EXECUTE pg_catalog.format(
                'CREATE FUNCTION %I.%I(%s) RETURNS %s%s LANGUAGE plpgsql AS $b$ BEGIN PERFORM public.hostile_hit(%L); %s END $b$',
                sch, fname, sig, CASE WHEN p.proretset THEN 'SETOF ' ELSE '' END, p.rt,
                pg_catalog.format('function %s(%s)', fname, sig),
                CASE WHEN p.proretset THEN 'RETURN;' WHEN p.rt = 'void'::regtype THEN 'RETURN;' ELSE 'RETURN NULL;' END);
            END IF;
            n := n + 1;
          EXCEPTION WHEN others THEN NULL;    -- a signature the grid cannot express
          END;
        END LOOP;
      END LOOP;
    END LOOP;
  END LOOP;
  -- operators: every pair of the grid for each binary operator name pg_catalog has, and the
  -- prefix form for each type of the grid where pg_catalog has a prefix operator of that name
  FOREACH opname IN ARRAY pg_catalog.string_to_array(pg_catalog.current_setting('hostile.ops'), ' ') LOOP
    CONTINUE WHEN NOT EXISTS (SELECT FROM pg_catalog.pg_operator o WHERE o.oprname = opname AND o.oprnamespace = 'pg_catalog'::regnamespace);
    FOREACH l IN ARRAY grid || ARRAY[NULL::regtype] LOOP
      FOREACH r IN ARRAY grid LOOP
        CONTINUE WHEN l IS NULL AND NOT EXISTS (SELECT FROM pg_catalog.pg_operator o WHERE o.oprname = opname AND o.oprkind = 'l');
        CONTINUE WHEN l IS NOT NULL AND NOT EXISTS (SELECT FROM pg_catalog.pg_operator o WHERE o.oprname = opname AND o.oprkind = 'b');
        CONTINUE WHEN NOT exact AND EXISTS (SELECT FROM pg_catalog.pg_operator o WHERE o.oprname = opname
                        AND o.oprnamespace = 'pg_catalog'::regnamespace AND o.oprleft = COALESCE(l, 0) AND o.oprright = r);
        -- the result: bool for comparisons, else the type of pg_catalog's operator with this
        -- left type (or the left type itself)
        SELECT CASE WHEN opname IN ('=', '<>', '<', '>', '<=', '>=', '~', '!~', '~~', '!~~', '@>', '<@', '&&') THEN 'bool'::regtype
                    ELSE COALESCE((SELECT o.oprresult::regtype FROM pg_catalog.pg_operator o
                                               WHERE o.oprname = opname AND o.oprleft = COALESCE(l, 0) ORDER BY o.oprright = r DESC LIMIT 1),
                                              COALESCE(l, r)) END INTO ret;
        BEGIN
          IF l IS NULL THEN
            EXECUTE pg_catalog.format('CREATE FUNCTION %I.%I(%s) RETURNS %s LANGUAGE plpgsql AS $b$ BEGIN PERFORM public.hostile_hit(%L); RETURN NULL; END $b$',
              sch, 'hostile_op_' || n, r, ret, pg_catalog.format('operator %s(%s)', opname, r));
            EXECUTE pg_catalog.format('CREATE OPERATOR %I.%s (RIGHTARG = %s, FUNCTION = %I.%I)', sch, opname, r, sch, 'hostile_op_' || n);
          ELSE
            EXECUTE pg_catalog.format('CREATE FUNCTION %I.%I(%s, %s) RETURNS %s LANGUAGE plpgsql AS $b$ BEGIN PERFORM public.hostile_hit(%L); RETURN NULL; END $b$',
              sch, 'hostile_op_' || n, l, r, ret, pg_catalog.format('operator %s(%s, %s)', opname, l, r));
            EXECUTE pg_catalog.format('CREATE OPERATOR %I.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %I.%I)', sch, opname, l, r, sch, 'hostile_op_' || n);
          END IF;
          n := n + 1;
        EXCEPTION WHEN others THEN NULL;
        END;
      END LOOP;
    END LOOP;
  END LOOP;
  RAISE WARNING 'planted % shadows in schema %', n, sch;
END
$plant$;
