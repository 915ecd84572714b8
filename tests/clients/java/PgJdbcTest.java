// pgjdbc (Debian libpostgresql-jdbc-java): the DEFAULT key through
// prepareStatement(sql, new String[]{"id"}) + getGeneratedKeys() (only the id column; with
// RETURN_GENERATED_KEYS pgjdbc returns every column), a batch through addBatch/executeBatch
// with the same key request, ids as long parameters, decoding in SQL, every id compared with
// the server's id::text. Prints PASS:/FAIL: lines naming the client and the check, and a
// STAT: line (see tests/clients/run.sh).
//   java -cp <build dir>:/usr/share/java/postgresql.jar PgJdbcTest
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class PgJdbcTest {
    static final String CLIENT = "pgjdbc";
    static final int ROWS = Integer.parseInt(System.getenv("CLIENT_ROWS"));
    static int passed, failed, compared, lookups, rows;

    static boolean ok(String check, boolean cond, String detail) {
        if (cond) { passed++; System.out.println("PASS: " + CLIENT + ": " + check + (detail.isEmpty() ? "" : " (" + detail + ")")); }
        else { failed++; System.out.println("FAIL: " + CLIENT + ": " + check + ": " + detail); }
        return cond;
    }

    static boolean eq(String check, Object got, Object want) {
        boolean same = got == null ? want == null : got.equals(want);
        return ok(check, same, same ? String.valueOf(got) : "got " + got + ", want " + want);
    }

    static String columns(ResultSet rs) throws SQLException {
        ResultSetMetaData md = rs.getMetaData();
        List<String> names = new ArrayList<>();
        for (int i = 1; i <= md.getColumnCount(); i++) names.add(md.getColumnName(i));
        return String.join(",", names);
    }

    // --- docs snippet (JDBC): the key of one row; name the key column
    static long insertOrder(Connection conn, int n, String note) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(
                "INSERT INTO orders (n, note) VALUES (?, ?)", new String[] {"id"})) {
            ps.setInt(1, n);
            ps.setString(2, note);
            ps.executeUpdate();
            try (ResultSet keys = ps.getGeneratedKeys()) {
                keys.next();
                return keys.getLong("id");
            }
        }
    }
    // ---

    // the columns of getGeneratedKeys() for one row inserted (and deleted again) with keyNames,
    // or with Statement.RETURN_GENERATED_KEYS when keyNames is null
    static String keyColumns(Connection conn, int n, String[] keyNames) throws SQLException {
        String sql = "INSERT INTO orders (n, note) VALUES (?, 'key columns')";
        String cols;
        try (PreparedStatement ps = keyNames == null
                ? conn.prepareStatement(sql, Statement.RETURN_GENERATED_KEYS)
                : conn.prepareStatement(sql, keyNames)) {
            ps.setInt(1, n);
            ps.executeUpdate();
            try (ResultSet keys = ps.getGeneratedKeys()) {
                cols = columns(keys);
            }
        }
        try (PreparedStatement del = conn.prepareStatement("DELETE FROM orders WHERE n = ?")) {
            del.setInt(1, n);
            del.executeUpdate();
        }
        return cols;
    }

    public static void main(String[] args) {
        int workerId = Integer.parseInt(System.getenv("CLIENT_WORKER_ID"));
        // TCP on 127.0.0.1: pgjdbc does not speak unix sockets without an extra library
        String url = "jdbc:postgresql://127.0.0.1:" + System.getenv("PGPORT") + "/" + System.getenv("PGDATABASE");
        try (Connection conn = DriverManager.getConnection(url, System.getenv("PGUSER"), "")) {
            try (Statement st = conn.createStatement()) {
                st.execute("CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_next(), n int NOT NULL UNIQUE, note text)");
            }
            Map<Integer, Long> held = new LinkedHashMap<>();

            long orderId = insertOrder(conn, 0, "one");
            held.put(0, orderId);
            // which columns getGeneratedKeys() returns for each way of asking for keys
            eq("getGeneratedKeys() after new String[]{\"id\"} has only the id column",
               keyColumns(conn, -1, new String[] {"id"}), "id");
            eq("getGeneratedKeys() after RETURN_GENERATED_KEYS has every column (the pitfall)",
               keyColumns(conn, -2, null), "id,n,note");

            // --- docs snippet (JDBC): a batch, keys in batch order
            conn.setAutoCommit(false);
            List<Long> batchIds = new ArrayList<>();
            try (PreparedStatement ps = conn.prepareStatement(
                    "INSERT INTO orders (n, note) VALUES (?, ?)", new String[] {"id"})) {
                for (int n = 1; n <= ROWS; n++) {
                    ps.setInt(1, n);
                    ps.setString(2, "row " + n);
                    ps.addBatch();
                }
                ps.executeBatch();
                try (ResultSet keys = ps.getGeneratedKeys()) {
                    while (keys.next()) batchIds.add(keys.getLong(1));
                }
            }
            conn.commit();
            conn.setAutoCommit(true);
            // ---
            eq("executeBatch() + getGeneratedKeys(): one key per batch entry", batchIds.size(), ROWS);
            for (int n = 1; n <= batchIds.size(); n++) held.put(n, batchIds.get(n - 1));
            rows = held.size();

            // every id the client holds, as Long.toString, against the server's id::text
            int bad = 0, serverRows = 0;
            String firstBad = "";
            try (Statement st = conn.createStatement();
                 ResultSet rs = st.executeQuery("SELECT n, id::text FROM orders ORDER BY n")) {
                while (rs.next()) {
                    serverRows++;
                    Long mine = held.get(rs.getInt(1));
                    if (mine == null || !Long.toString(mine).equals(rs.getString(2))) {
                        if (bad++ == 0) firstBad = "n=" + rs.getInt(1) + " client " + mine + " server " + rs.getString(2);
                    }
                }
            }
            compared += held.size();
            ok("single + batch insert: " + held.size() + " ids equal the server's id::text exactly",
               bad == 0 && serverRows == held.size() && serverRows > 0,
               bad == 0 ? "long" : bad + " of " + serverRows + " differ, first: " + firstBad);

            int wrong = 0;
            String firstWrong = "";
            try (PreparedStatement ps = conn.prepareStatement("SELECT n FROM orders WHERE id = ?")) {
                for (Map.Entry<Integer, Long> e : held.entrySet()) {
                    ps.setLong(1, e.getValue());
                    List<Integer> got = new ArrayList<>();
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) got.add(rs.getInt(1));
                    }
                    if (got.size() != 1 || got.get(0).intValue() != e.getKey()) {
                        if (wrong++ == 0) firstWrong = "n=" + e.getKey() + " got " + got;
                    }
                }
            }
            lookups += held.size();
            ok("WHERE id = ? (setLong) with each of the " + held.size() + " ids finds exactly its row",
               wrong == 0, wrong == 0 ? "" : wrong + " wrong, first: " + firstWrong);

            try (PreparedStatement ps = conn.prepareStatement("SELECT worker_id FROM uid_decode(?)")) {
                ps.setLong(1, orderId);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    eq("uid_decode(?) of the single row's id gives the configured worker id", rs.getInt(1), workerId);
                }
            }
            try (Statement st = conn.createStatement();
                 ResultSet rs = st.executeQuery("SELECT DISTINCT d.worker_id FROM orders t CROSS JOIN LATERAL uid_decode(t.id) d")) {
                List<Integer> ws = new ArrayList<>();
                while (rs.next()) ws.add(rs.getInt(1));
                eq("uid_decode(id) of every row gives the configured worker id", ws, List.of(workerId));
            }
        } catch (Exception e) {
            ok("unexpected exception", false, e.toString());
        }
        System.out.println("STAT: " + CLIENT + ": rows=" + rows + " ids_compared=" + compared + " lookups=" + lookups
                           + " checks=" + (passed + failed) + " failed=" + failed);
        System.exit(failed == 0 ? 0 : 1);
    }
}
