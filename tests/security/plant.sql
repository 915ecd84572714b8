-- tests/security/plant.sql — what a hostile owner of the extension's schema plants before a
-- superuser installs, updates or uses pg_idgen. Run as that role (psql variables: funcs and ops,
-- the names from shadow_names.py and bound_names.sql; schema, where to plant; exact, 'on' to
-- shadow pg_catalog's exact signatures too, for a schema a victim puts before pg_catalog;
-- opgrid, 'full' or 'small': the operand types of the operator shadows).
--
-- For every name PostgreSQL knows (pg_catalog's functions, aggregates and operators of that name)
-- it creates shadows whose argument types are a better match than pg_catalog's for some call: each
-- overload with one argument's type replaced by each of a grid of common types, polymorphic
-- overloads made concrete, variadic ones expanded, and for every binary operator every pair of
-- the grid. nonexact.py adds an exact shadow of each call site the catalog shows coerced. Every shadow records its call in public.hostile_calls
-- and tries to make the planting role a superuser, so a test sees both.
SET client_min_messages = warning;
SET search_path = pg_catalog, pg_temp;   -- the planter itself never meets its own shadows
SELECT pg_catalog.set_config('hostile.funcs', :'funcs', false),
       pg_catalog.set_config('hostile.ops', :'ops', false),
       pg_catalog.set_config('hostile.schema', :'schema', false),
       pg_catalog.set_config('hostile.exact', :'exact', false),
       pg_catalog.set_config('hostile.opgrid', :'opgrid', false) \gset
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
                          'numeric', 'text', 'varchar', 'bpchar', 'bytea', 'regclass', 'regtype', 'timestamptz',
                          'timestamp', 'date', 'interval', 'jsonb', 'uuid', 'int4[]', 'int8[]', 'text[]']::regtype[];
  -- the operator grid: the whole grid, or (small) the numeric and string types, where coercions
  -- between operands are most common
  opgrid regtype[] := CASE pg_catalog.current_setting('hostile.opgrid')
                        WHEN 'small' THEN ARRAY['int2', 'int4', 'int8', 'float4', 'float8', 'numeric', 'text',
                                                'varchar', 'name', 'bpchar']::regtype[]
                        ELSE ARRAY['bool', '"char"', 'name', 'int2', 'int4', 'int8', 'oid', 'float4', 'float8',
                          'numeric', 'text', 'varchar', 'bpchar', 'bytea', 'regclass', 'regtype', 'timestamptz',
                          'timestamp', 'date', 'interval', 'jsonb', 'uuid', 'int4[]', 'int8[]', 'text[]']::regtype[] END;
  pseudo regtype[] := ARRAY['anyelement', 'anynonarray', 'anycompatible', 'anycompatiblenonarray', '"any"']::regtype[];
  pseudo_array regtype[] := ARRAY['anyarray', 'anycompatiblearray']::regtype[];
  fname text; opname text; p record; i int; k int; t regtype; l regtype; r regtype;
  args regtype[]; sigs regtype[][]; sig text; ret regtype; n int := 0; made text[] := '{}';
  variants jsonb;
BEGIN
  -- functions and aggregates: for each pg_catalog overload, the signatures a call could match
  -- better: one argument's type replaced by each type of the grid; a polymorphic overload made
  -- concrete with each type of the grid; a variadic one expanded to 1-3 trailing arguments
  FOREACH fname IN ARRAY pg_catalog.string_to_array(pg_catalog.current_setting('hostile.funcs'), ' ') LOOP
    FOR p IN SELECT pr.oid, ARRAY(SELECT pg_catalog.unnest(pr.proargtypes))::regtype[] AS a,
                    pr.prorettype::regtype AS rt, pr.prokind, pr.proretset, pr.provariadic::regtype AS va
             FROM pg_catalog.pg_proc pr
             WHERE pr.proname = fname AND pr.pronamespace = 'pg_catalog'::regnamespace
               AND pr.pronargs BETWEEN 0 AND 4 AND pr.prokind IN ('f', 'a')
    LOOP
      variants := '[]';
      -- the exact signature (for a schema placed before pg_catalog), and one argument replaced
      IF exact THEN variants := variants || pg_catalog.jsonb_build_array(pg_catalog.to_jsonb(p.a::text[])); END IF;
      FOR i IN 1 .. COALESCE(pg_catalog.array_length(p.a, 1), 0) LOOP
        FOREACH t IN ARRAY grid LOOP
          args := p.a; args[i] := t;
          variants := variants || pg_catalog.jsonb_build_array(pg_catalog.to_jsonb(args::text[]));
        END LOOP;
      END LOOP;
      -- polymorphic: every pseudo-type argument the same type of the grid (its array for anyarray)
      IF p.a && (pseudo || pseudo_array) THEN
        FOREACH t IN ARRAY grid LOOP
          CONTINUE WHEN t::text LIKE '%[]';
          args := p.a;
          FOR i IN 1 .. pg_catalog.array_length(args, 1) LOOP
            IF args[i] = ANY (pseudo) THEN args[i] := t;
            ELSIF args[i] = ANY (pseudo_array) THEN args[i] := (t::text || '[]')::regtype;
            END IF;
          END LOOP;
          variants := variants || pg_catalog.jsonb_build_array(pg_catalog.to_jsonb(args::text[]));
        END LOOP;
      END IF;
      -- variadic: the last parameter expanded to k arguments of its element type (any type of
      -- the grid for VARIADIC "any"), after the fixed ones (each of the grid, or text)
      IF p.va <> 0 THEN
        FOREACH t IN ARRAY grid LOOP
          CONTINUE WHEN t::text LIKE '%[]' OR (p.va <> '"any"'::regtype AND t <> p.va);
          FOR k IN 1 .. 3 LOOP
            args := p.a[1 : pg_catalog.array_length(p.a, 1) - 1];
            FOR i IN 1 .. k LOOP args := args || t; END LOOP;
            variants := variants || pg_catalog.jsonb_build_array(pg_catalog.to_jsonb(args::text[]));
            IF p.va = '"any"'::regtype THEN     -- a text key or format first, then values
              args := p.a[1 : pg_catalog.array_length(p.a, 1) - 1] || 'text'::regtype;
              FOR i IN 1 .. k LOOP args := args || t; END LOOP;
              variants := variants || pg_catalog.jsonb_build_array(pg_catalog.to_jsonb(args::text[]));
            END IF;
          END LOOP;
        END LOOP;
      END IF;
      FOR i IN 0 .. pg_catalog.jsonb_array_length(variants) - 1 LOOP
        args := ARRAY(SELECT pg_catalog.jsonb_array_elements_text(variants -> i))::regtype[];
        CONTINUE WHEN args && (pseudo || pseudo_array || ARRAY['internal', 'cstring']::regtype[]);
        sig := pg_catalog.array_to_string(args, ', ');
        CONTINUE WHEN pg_catalog.format('%s(%s)', fname, sig) = ANY (made);
        -- pg_catalog's own signature can only win from a schema placed before it
        CONTINUE WHEN NOT exact AND EXISTS (SELECT FROM pg_catalog.pg_proc q WHERE q.proname = fname
                        AND q.pronamespace = 'pg_catalog'::regnamespace
                        AND ARRAY(SELECT pg_catalog.unnest(q.proargtypes))::regtype[] = args);
        made := made || pg_catalog.format('%s(%s)', fname, sig);
        -- the result: pg_catalog's, made concrete like the arguments
        ret := CASE WHEN p.rt = ANY (pseudo) THEN args[1]
                    WHEN p.rt = ANY (pseudo_array) THEN COALESCE((SELECT ty.typarray::regtype FROM pg_catalog.pg_type ty WHERE ty.oid = args[1] AND ty.typarray <> 0), 'text[]')
                    WHEN p.rt = 'record'::regtype OR p.rt = 'trigger'::regtype THEN NULL
                    ELSE p.rt END;
        CONTINUE WHEN ret IS NULL;
        BEGIN
          IF p.prokind = 'a' THEN
            EXECUTE pg_catalog.format(
              'CREATE FUNCTION %I.%I(%s, %s) RETURNS %s LANGUAGE plpgsql AS $b$ BEGIN PERFORM public.hostile_hit(%L); RETURN $1; END $b$',
              sch, 'hostile_sfunc_' || n, ret, sig, ret, pg_catalog.format('aggregate %s(%s)', fname, sig));
            EXECUTE pg_catalog.format('CREATE AGGREGATE %I.%I(%s) (SFUNC = %I.%I, STYPE = %s)',
              sch, fname, sig, sch, 'hostile_sfunc_' || n, ret);
          ELSE
            EXECUTE pg_catalog.format(
              'CREATE FUNCTION %I.%I(%s) RETURNS %s%s LANGUAGE plpgsql AS $b$ BEGIN PERFORM public.hostile_hit(%L); %s END $b$',
              sch, fname, sig, CASE WHEN p.proretset THEN 'SETOF ' ELSE '' END, ret,
              pg_catalog.format('function %s(%s)', fname, sig),
              CASE WHEN p.proretset OR ret = 'void'::regtype THEN 'RETURN;' ELSE 'RETURN NULL;' END);
          END IF;
          n := n + 1;
        EXCEPTION WHEN out_of_memory THEN RAISE;   -- a full lock table: never passed over
                  WHEN others THEN NULL;    -- a signature PostgreSQL refuses (a reserved name, ...)
        END;
      END LOOP;
    END LOOP;
  END LOOP;
  -- operators: every pair of the grid for each binary operator name pg_catalog has, and the
  -- prefix form for each type of the grid where pg_catalog has a prefix operator of that name
  FOREACH opname IN ARRAY pg_catalog.string_to_array(pg_catalog.current_setting('hostile.ops'), ' ') LOOP
    CONTINUE WHEN NOT EXISTS (SELECT FROM pg_catalog.pg_operator o WHERE o.oprname = opname AND o.oprnamespace = 'pg_catalog'::regnamespace);
    FOREACH l IN ARRAY opgrid || ARRAY[NULL::regtype] LOOP
      FOREACH r IN ARRAY opgrid LOOP
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
        -- a shadow PostgreSQL refuses is passed over; a full lock table is not: every shadow after
        -- it would be passed over too, silently (the operators after '<>' were, on 15)
        EXCEPTION WHEN out_of_memory THEN RAISE; WHEN others THEN NULL;
        END;
      END LOOP;
    END LOOP;
  END LOOP;
  RAISE WARNING 'planted % shadows in schema %', n, sch;
END
$plant$;
