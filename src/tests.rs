//! `#[pg_test]`s: the SQL functions inside a real backend (preloaded, worker id 7).

use pgrx::prelude::*;

#[pg_schema]
mod tests {
    use pgrx::prelude::*;

    #[pg_test]
    fn next_ids_increase_and_decode_to_our_worker() {
        let a = Spi::get_one::<i64>("SELECT snowflake_next()").unwrap().unwrap();
        let b = Spi::get_one::<i64>("SELECT snowflake_next()").unwrap().unwrap();
        assert!(b > a);
        let w = Spi::get_one_with_args::<i32>("SELECT worker_id FROM uid_decode($1)", &[b.into()])
            .unwrap()
            .unwrap();
        assert_eq!(w, 7);
    }

    #[pg_test]
    fn default_column_multi_row_insert() {
        Spi::run("CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next(), v int)").unwrap();
        Spi::run("INSERT INTO t (v) VALUES (1), (2), (3)").unwrap();
        Spi::run("INSERT INTO t (v) SELECT g FROM generate_series(1, 10000) g").unwrap();
        let n = Spi::get_one::<i64>("SELECT count(DISTINCT id) FROM t").unwrap().unwrap();
        assert_eq!(n, 10003);
        let ordered = Spi::get_one::<bool>(
            "SELECT bool_and(id > prev) FROM (SELECT id, lag(id) OVER (ORDER BY ctid) AS prev FROM t) s WHERE prev IS NOT NULL",
        )
        .unwrap()
        .unwrap();
        assert!(ordered, "ids follow insertion order");
    }

    #[pg_test]
    fn snowflake_at_bounds_ids_of_now() {
        let ok = Spi::get_one::<bool>(
            "SELECT snowflake_at(now() - interval '1 minute') < snowflake_next() AND snowflake_next() < snowflake_at(clock_timestamp() + interval '1 minute')",
        )
        .unwrap()
        .unwrap();
        assert!(ok);
    }

    #[pg_test]
    fn compose_is_the_inverse_of_decode() {
        let ok = Spi::get_one::<bool>(
            "SELECT bool_and(uid_compose(d.ts, d.worker_id, d.sequence) = x.id) FROM (SELECT snowflake_next() AS id FROM generate_series(1, 1000)) x, LATERAL uid_decode(x.id) d",
        )
        .unwrap()
        .unwrap();
        assert!(ok);
    }

    #[pg_test]
    fn stats_count_what_was_issued() {
        // a worker id no other test uses: #[pg_test]s run concurrently against one server
        Spi::run("SET pg_idgen.worker_id = 9").unwrap();
        let before = Spi::get_one::<i64>(
            "SELECT coalesce(sum(ids_issued), 0)::bigint FROM snowflake_stats() WHERE worker_id = 9",
        )
        .unwrap()
        .unwrap();
        Spi::run("SELECT snowflake_next() FROM generate_series(1, 500)").unwrap();
        let after = Spi::get_one::<i64>("SELECT ids_issued FROM snowflake_stats() WHERE worker_id = 9")
            .unwrap()
            .unwrap();
        assert_eq!(after - before, 500);
    }

    #[pg_test(error = "pg_idgen worker id is not configured")]
    fn unset_worker_id_is_an_error() {
        Spi::run("SET pg_idgen.worker_id = -1").unwrap();
        Spi::run("SELECT snowflake_next()").unwrap();
    }

    #[pg_test]
    fn decodes_discords_documented_example() {
        let row = Spi::get_three::<String, i32, i32>(
            "SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS'), worker_high, worker_low \
             FROM uid_decode(175928847299117063, 'discord')",
        )
        .unwrap();
        assert_eq!(row, (Some("2016-04-30 11:18:25.796".into()), Some(1), Some(0)));
    }

    #[pg_test]
    fn stored_worker_id_is_used_when_the_setting_is_unset() {
        Spi::run("SET pg_idgen.worker_id = -1").unwrap();
        Spi::run("SELECT set_worker_id(99)").unwrap();
        let w = Spi::get_one::<i32>("SELECT worker_id FROM uid_decode(snowflake_next())").unwrap().unwrap();
        assert_eq!(w, 99);
        Spi::run("SET pg_idgen.worker_id = 7").unwrap();
        let w = Spi::get_one::<i32>("SELECT worker_id FROM uid_decode(snowflake_next())").unwrap().unwrap();
        assert_eq!(w, 7, "the setting wins over the table");
    }

    #[pg_test]
    fn segment_values_increase_across_segments() {
        Spi::run("SELECT segment_create('pgtest_tag', 10)").unwrap();
        let ok = Spi::get_one::<bool>(
            "SELECT bool_and(v > prev) AND count(*) = 999 FROM \
             (SELECT v, lag(v) OVER (ORDER BY g) AS prev \
                FROM (SELECT g, segment_next('pgtest_tag') AS v FROM generate_series(1, 1000) g) s) t \
             WHERE prev IS NOT NULL",
        )
        .unwrap()
        .unwrap();
        assert!(ok, "1,000 values over 100 segments of 10 strictly increase");
        // The tag was created by this (test) transaction: its values come from this backend's
        // private buffer, not from a shared entry, until the transaction commits.
        let row = Spi::get_two::<i64, i64>(
            "SELECT values_issued, persisted_hwm FROM segment_status WHERE tag = 'pgtest_tag'",
        )
        .unwrap();
        assert_eq!(row, (Some(0), Some(1000)), "no shared entry; all 1,000 values durably reserved");
    }

    #[pg_test(error = "id -5 is negative; ids of this layout are positive (layout \"default\")")]
    fn negative_ids_do_not_decode() {
        Spi::run("SELECT * FROM uid_decode(-5)").unwrap();
    }
}
