//! `#[pg_test]`s of the mask functions.

use pgrx::prelude::*;

#[pg_schema]
mod tests {
    use pgrx::prelude::*;

    /// Runs `sql` and returns its SQLSTATE and message, or "ok".
    fn sqlstate_of(sql: &str) -> String {
        let exists = Spi::get_one::<bool>("SELECT to_regprocedure('pg_temp.sqlstate_of(text)') IS NOT NULL")
            .unwrap()
            .unwrap_or(false);
        if !exists {
            Spi::run(
                "CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$ \
                 BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN others THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$",
            )
            .unwrap();
            Spi::run("GRANT EXECUTE ON FUNCTION pg_temp.sqlstate_of(text) TO PUBLIC").unwrap();
        }
        Spi::get_one_with_args::<String>("SELECT pg_temp.sqlstate_of($1)", &[sql.into()]).unwrap().unwrap()
    }

    #[pg_test]
    fn mask_round_trips_and_rotates() {
        assert_eq!(Spi::get_one::<i32>("SELECT uid_mask_key_create('t_orders')").unwrap(), Some(1));
        let ok = Spi::get_one::<bool>(
            "SELECT bool_and(uid_unmask(uid_mask(g, 't_orders'), 't_orders') = g AND uid_mask(g, 't_orders') >= 0) \
             FROM (SELECT g FROM generate_series(0, 20000) g UNION ALL SELECT 9223372036854775807 - g FROM generate_series(0, 1000) g) s",
        )
        .unwrap()
        .unwrap();
        assert!(ok);
        let m1 = Spi::get_one::<i64>("SELECT uid_mask(42, 't_orders')").unwrap().unwrap();
        assert_eq!(Spi::get_one::<i32>("SELECT uid_mask_key_rotate('t_orders')").unwrap(), Some(2));
        let m2 = Spi::get_one::<i64>("SELECT uid_mask(42, 't_orders')").unwrap().unwrap();
        assert_ne!(m1, m2, "the new version masks differently");
        assert_eq!(
            Spi::get_one_with_args::<i64>("SELECT uid_unmask($1, 't_orders', 1)", &[m1.into()]).unwrap(),
            Some(42)
        );
        assert_eq!(
            Spi::get_one_with_args::<i64>("SELECT uid_unmask($1, 't_orders')", &[m2.into()]).unwrap(),
            Some(42)
        );
        let n = Spi::get_one_with_args::<i64>(
            "SELECT count(*) FROM uid_unmask_all($1, 't_orders') WHERE id = 42",
            &[m1.into()],
        )
        .unwrap();
        assert_eq!(n, Some(1));
        // versioned text codes need no version argument
        let ok = Spi::get_one::<bool>(
            "SELECT bool_and(uid_unmask_text(uid_mask_text(g, 't_orders'), 't_orders') = g \
                         AND uid_unmask_text(uid_mask_text(g, 't_orders', 'base62'), 't_orders', 'base62') = g) \
             FROM generate_series(0, 1000) g",
        )
        .unwrap()
        .unwrap();
        assert!(ok);
    }

    #[pg_test]
    fn ff1_vectors_pass_through_sql() {
        // NIST SP 800-38G FF1 sample #1 (AES-128, radix 10, empty tweak) and #2 (tweak 39383736353433323130)
        let s1 = Spi::get_one::<Vec<i32>>(
            "SELECT uid_ff1_encrypt('\\x2B7E151628AED2A6ABF7158809CF4F3C', 10, '{0,1,2,3,4,5,6,7,8,9}')",
        )
        .unwrap()
        .unwrap();
        assert_eq!(s1, vec![2, 4, 3, 3, 4, 7, 7, 4, 8, 4]);
        let s2 = Spi::get_one::<Vec<i32>>(
            "SELECT uid_ff1_encrypt('\\x2B7E151628AED2A6ABF7158809CF4F3C', 10, '{0,1,2,3,4,5,6,7,8,9}', '\\x39383736353433323130')",
        )
        .unwrap()
        .unwrap();
        assert_eq!(s2, vec![6, 1, 2, 4, 2, 0, 0, 7, 7, 3]);
        // the fpe crate's radix-2 case: AES-256 zero key, 32 zero bits
        let b = Spi::get_one::<Vec<i32>>(
            "SELECT uid_ff1_encrypt(decode(repeat('00', 32), 'hex'), 2, array_fill(0, ARRAY[32]))",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            b,
            vec![
                1, 1, 0, 1, 1, 1, 1, 0, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 1, 1, 0, 0,
                0
            ]
        );
        // uid_mask_raw is FF1 over the 63 bits of the id
        let same = Spi::get_one::<bool>(
            "WITH k(key) AS (SELECT decode(repeat('2b', 32), 'hex')), \
                  x(id) AS (VALUES (0::bigint), (1), (123456789), (9223372036854775807)) \
             SELECT bool_and(uid_mask_raw(id, key) = \
                    (SELECT string_agg(d::text, '' ORDER BY o) FROM unnest(uid_ff1_encrypt(key, 2, \
                        (SELECT array_agg(substr(id::bit(64)::text, i, 1)::int ORDER BY i) FROM generate_series(2, 64) i))) \
                        WITH ORDINALITY u(d, o))::bit(63)::bigint \
                  AND uid_unmask_raw(uid_mask_raw(id, key), key) = id) FROM k, x",
        )
        .unwrap()
        .unwrap();
        assert!(same);
    }

    #[pg_test]
    fn text_codes() {
        assert_eq!(Spi::get_one::<String>("SELECT uid_to_text(1234)").unwrap().unwrap(), "16J");
        assert_eq!(
            Spi::get_one::<String>("SELECT uid_to_text(1234, 'crockford_check')").unwrap().unwrap(),
            "16JD"
        );
        assert_eq!(Spi::get_one::<i64>("SELECT uid_from_text('1-6j')").unwrap(), Some(1234));
        assert_eq!(
            Spi::get_one::<i64>("SELECT uid_from_text('AzL8n0Y58m7', 'base62')").unwrap(),
            Some(i64::MAX)
        );
        assert!(sqlstate_of("SELECT uid_from_text('12U4')")
            .starts_with("22P02: invalid character 'U' at position 3"));
        assert!(sqlstate_of("SELECT uid_from_text('16JE', 'crockford_check')")
            .starts_with("22P02: check symbol 'E' at position 4"));
        assert!(sqlstate_of("SELECT uid_from_text('80000000000000')").starts_with("22003"));
        assert!(sqlstate_of("SELECT uid_from_text('')").starts_with("22P02"));
        assert!(sqlstate_of("SELECT uid_to_text(-1)").starts_with("22003"));
        assert!(sqlstate_of("SELECT uid_to_text(1, 'base64')").starts_with("22023"));
    }

    #[pg_test]
    fn nulls_never_raise_internal_errors() {
        Spi::run("SELECT uid_mask_key_create('t_nulls')").unwrap();
        for q in [
            "SELECT uid_mask(NULL, 't_nulls')",
            "SELECT uid_mask(1, NULL)",
            "SELECT uid_mask(1, 't_nulls', NULL)",
            "SELECT uid_unmask(NULL, 't_nulls')",
            "SELECT uid_unmask(1, NULL::text)",
            "SELECT uid_unmask(1, 't_nulls', NULL)",
            "SELECT uid_mask_raw(NULL, NULL)",
            "SELECT uid_unmask_raw(1, NULL)",
            "SELECT uid_to_text(NULL)",
            "SELECT uid_to_text(1, NULL)",
            "SELECT uid_from_text(NULL)",
            "SELECT uid_from_text('1', NULL)",
            "SELECT uid_mask_text(NULL, 't_nulls')",
            "SELECT uid_unmask_text('1', NULL)",
            "SELECT uid_ff1_encrypt(NULL, 10, '{1}')",
            "SELECT uid_ff1_decrypt('\\x00', NULL, '{1}')",
            "SELECT uid_mask_key_create(NULL)",
            "SELECT uid_mask_key_rotate(NULL)",
            "SELECT uid_mask_key_drop('t_nulls', NULL)",
            "SELECT uid_mask_key_set_in_use('t_nulls', 1, NULL)",
        ] {
            let r = Spi::get_one::<bool>(&format!("SELECT ({q}) IS NULL")).unwrap();
            assert_eq!(r, Some(true), "{q}");
        }
        assert!(sqlstate_of(
            "SELECT uid_ff1_encrypt('\\x2B7E151628AED2A6ABF7158809CF4F3C', 10, '{0,1,2,3,NULL,5}')"
        )
        .starts_with("22004"));
    }

    #[pg_test]
    fn wrong_key_version_and_values_are_clear_errors() {
        Spi::run("SELECT uid_mask_key_create('t_err')").unwrap();
        assert!(sqlstate_of("SELECT uid_mask(1, 'no_such_key')")
            .starts_with("42704: mask key \"no_such_key\" does not exist"));
        assert!(sqlstate_of("SELECT uid_unmask(1, 't_err', 9)")
            .starts_with("42704: mask key \"t_err\" has no version 9"));
        assert!(sqlstate_of("SELECT uid_mask(-1, 't_err')").starts_with("22003"));
        assert!(sqlstate_of("SELECT uid_unmask(-5, 't_err')").starts_with("22003"));
        assert!(
            sqlstate_of("SELECT uid_mask_raw(1, '\\x0011')").starts_with("22023: a masking key is 32 bytes")
        );
        assert!(sqlstate_of("SELECT uid_mask_key_create('t_err')").starts_with("42710"));
        assert!(sqlstate_of("SELECT uid_mask_key_create('Bad Name')").starts_with("22023"));
        assert!(sqlstate_of("SELECT uid_mask_key_rotate('nope')").starts_with("42704"));
        // in use: no drop, no delete, no truncate, no change of the key bytes
        assert!(sqlstate_of("SELECT uid_mask_key_drop('t_err', 1)").starts_with("55006"));
        assert!(sqlstate_of("DELETE FROM pg_idgen_mask_keys WHERE name = 't_err'").starts_with("55006"));
        assert!(sqlstate_of("TRUNCATE pg_idgen_mask_keys").starts_with("55006"));
        assert!(sqlstate_of(
            "UPDATE pg_idgen_mask_keys SET key = decode(repeat('00', 32), 'hex') WHERE name = 't_err'"
        )
        .starts_with("22023"));
        // once not in use it can be dropped; its number is not reused
        Spi::run("SELECT uid_mask_key_set_in_use('t_err', 1, false)").unwrap();
        Spi::run("SELECT uid_mask_key_drop('t_err', 1)").unwrap();
        assert!(sqlstate_of("SELECT uid_mask(1, 't_err')").starts_with("42704"));
        assert_eq!(Spi::get_one::<i32>("SELECT uid_mask_key_create('t_err')").unwrap(), Some(2));
        assert!(sqlstate_of("UPDATE pg_idgen_mask_keys SET key = decode(repeat('00', 32), 'hex') WHERE name = 't_err' AND version = 1")
            .starts_with("22023"));
    }

    #[pg_test]
    fn ordinary_roles_use_keys_but_cannot_read_them() {
        Spi::run("SELECT uid_mask_key_create('t_priv')").unwrap();
        Spi::run("ANALYZE pg_idgen_mask_keys").unwrap();
        let as_su = Spi::get_one::<i64>("SELECT uid_mask(7, 't_priv')").unwrap().unwrap();
        Spi::run("CREATE ROLE t_mask_user NOLOGIN").unwrap();
        // empty this backend's key cache (the statement trigger's invalidation), so that the
        // ordinary role reads the key table itself, through the owner switch
        Spi::run("SELECT uid_mask_key_set_in_use('t_priv', 1, true)").unwrap();
        Spi::run("SET ROLE t_mask_user").unwrap();
        assert_eq!(Spi::get_one::<i64>("SELECT uid_mask(7, 't_priv')").unwrap(), Some(as_su));
        assert_eq!(
            Spi::get_one_with_args::<i64>("SELECT uid_unmask($1, 't_priv')", &[as_su.into()]).unwrap(),
            Some(7)
        );
        assert!(sqlstate_of("SELECT key FROM pg_idgen_mask_keys").starts_with("42501"));
        assert!(sqlstate_of("SELECT count(*) FROM pg_idgen_mask_keys").starts_with("42501"));
        assert!(sqlstate_of("COPY pg_idgen_mask_keys TO '/dev/null'").starts_with("42501"));
        assert!(sqlstate_of("SELECT uid_mask_key_create('t_mine')").starts_with("42501"));
        assert!(sqlstate_of("SELECT uid_mask_key_rotate('t_priv')").starts_with("42501"));
        assert!(sqlstate_of("SELECT uid_mask_key_set_in_use('t_priv', 1, false)").starts_with("42501"));
        assert!(sqlstate_of("SELECT uid_mask_key_drop('t_priv', 1)").starts_with("42501"));
        let stats = Spi::get_one::<i64>(
            "SELECT count(*) FROM pg_catalog.pg_stats WHERE tablename = 'pg_idgen_mask_keys'",
        )
        .unwrap();
        assert_eq!(stats, Some(0), "no column statistics (most common values) of the key table");
        assert!(sqlstate_of("SELECT count(*) FROM pg_catalog.pg_statistic").starts_with("42501"));
        // the view shows keys without their bytes
        let cols = Spi::get_one::<String>(
            "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_catalog.pg_attribute \
             WHERE attrelid = 'uid_mask_keys'::regclass AND attnum > 0",
        )
        .unwrap()
        .unwrap();
        assert!(!cols.split(',').any(|c| c == "key"), "{cols}");
        assert_eq!(
            Spi::get_one::<bool>("SELECT current FROM uid_mask_keys WHERE name = 't_priv'").unwrap(),
            Some(true)
        );
        // no function returns a key (a type's binary output function returns bytea: its own value's)
        let leaky = Spi::get_one::<i64>(
            "SELECT count(*) FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_depend d ON d.objid = p.oid \
             JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_idgen' \
             WHERE (p.prorettype = 'bytea'::regtype OR 'bytea'::regtype = ANY (p.proallargtypes)) \
               AND NOT EXISTS (SELECT FROM pg_catalog.pg_type t WHERE t.typsend = p.oid)",
        )
        .unwrap();
        assert_eq!(leaky, Some(0));
        // key administration can be delegated with EXECUTE alone; the row records who did it
        Spi::run("RESET ROLE").unwrap();
        Spi::run("GRANT EXECUTE ON FUNCTION uid_mask_key_create(text) TO t_mask_user").unwrap();
        Spi::run("SET ROLE t_mask_user").unwrap();
        assert_eq!(Spi::get_one::<i32>("SELECT uid_mask_key_create('t_delegated')").unwrap(), Some(1));
        assert_eq!(
            Spi::get_one::<String>("SELECT created_by::text FROM uid_mask_keys WHERE name = 't_delegated'")
                .unwrap(),
            Some("t_mask_user".to_string())
        );
        assert!(sqlstate_of("SELECT key FROM pg_idgen_mask_keys").starts_with("42501"));
        // a shadowing schema on the caller's search_path gains nothing
        Spi::run("RESET ROLE").unwrap();
        Spi::run("CREATE SCHEMA t_evil; GRANT ALL ON SCHEMA t_evil TO t_mask_user").unwrap();
        Spi::run("SET ROLE t_mask_user").unwrap();
        Spi::run("CREATE FUNCTION t_evil.length(bytea) RETURNS int LANGUAGE sql AS 'SELECT 32'").unwrap();
        Spi::run("CREATE TABLE t_evil.pg_idgen_mask_keys (name text, version int, key bytea)").unwrap();
        Spi::run("RESET ROLE").unwrap();
        Spi::run("SELECT uid_mask_key_set_in_use('t_priv', 1, true)").unwrap();
        Spi::run("SET ROLE t_mask_user").unwrap();
        Spi::run("SET search_path = t_evil, public").unwrap();
        assert_eq!(Spi::get_one::<i64>("SELECT public.uid_mask(7, 't_priv')").unwrap(), Some(as_su));
        Spi::run("RESET search_path").unwrap();
        Spi::run("RESET ROLE").unwrap();
    }

    #[pg_test]
    fn a_rotation_in_another_transaction_is_seen() {
        Spi::run("SELECT uid_mask_key_create('t_rot')").unwrap();
        let a = Spi::get_one::<i64>("SELECT uid_mask(5, 't_rot')").unwrap().unwrap();
        // direct DML (as pg_restore would do) invalidates the cache through the statement trigger
        Spi::run("SELECT uid_mask_key_rotate('t_rot')").unwrap();
        let b = Spi::get_one::<i64>("SELECT uid_mask(5, 't_rot')").unwrap().unwrap();
        assert_ne!(a, b);
        assert_eq!(
            Spi::get_one::<i32>("SELECT version FROM uid_mask_keys WHERE name = 't_rot' AND current")
                .unwrap(),
            Some(2)
        );
    }
}
