#!/usr/bin/env bash
# scripts/fresh-machine.sh — `make run` as a newcomer meets it: on a fresh Debian bookworm machine
# (a chroot made by debootstrap) from a fresh clone, timed. As root on a Debian or Ubuntu host.
#
# Usage:
#   scripts/fresh-machine.sh base            make the machine once (about 3 min): debootstrap
#                                            bookworm (standard variant), build-essential,
#                                            ca-certificates, curl, git, sudo and this host's Rust
#                                            toolchain (rustup's active one): Rust only, no
#                                            cargo-pgrx, PostgreSQL, libclang, ~/.pgrx, cargo
#                                            registry or build cache. This host's extra CA certificates
#                                            (/usr/local/share/ca-certificates: a network that
#                                            intercepts TLS) go along, and 127.0.1.1 <hostname> into
#                                            /etc/hosts, as Debian's installer writes it.
#   scripts/fresh-machine.sh run COMMIT [make-args...]
#                                            e.g. `run HEAD`, `run HEAD PG=18`: an overlay over the
#                                            machine (thrown away after), /proc, /sys, /dev, a tmpfs
#                                            /dev/shm; `git clone` of this repository into
#                                            /root/pg_idgen (mode 700, as a newcomer's clone as root),
#                                            COMMIT checked out; `time make run <make-args>` with a
#                                            clean environment; then `make stop`, Debian's own
#                                            cluster stopped, anything left in the chroot killed
#                                            (and said: it would be a leak), unmounted, removed.
#                                            FRESH_CARGO_PGRX=1: this host's cargo-pgrx copied into
#                                            the machine first (a newcomer who has it already).
#   scripts/fresh-machine.sh targets COMMIT  every make target README.md and docs/getting-started.md
#                                            name, each on a machine of its own (as run does): it
#                                            must end with exit 0, or fail saying in its last line
#                                            what to run first (a make or scripts/ command), with
#                                            no Rust error chain, panic or backtrace; one still
#                                            running after FRESH_TARGET_SECS (default 600) without
#                                            an error so far counts as started (make test, deps,
#                                            bench take longer). FRESH_TARGETS="run;install PG=16"
#                                            overrides the list. A table at the end; exit 1 when a
#                                            target fails that rule. Long (about an hour): not in
#                                            make test or .ci/run.
# Logs (FRESH_LOGDIR, default target/fresh-machine): make-run-<commit>-<args>.log, the same with
# each line's elapsed seconds (.ts.log), and what the run installed (.pkgs: new Debian packages
# with their sizes, the wheels, ~/.cargo/registry, ~/.pgrx).
# Services: Debian's postgresql-15 starts its cluster 15/main from its postinst on a real machine;
# in the chroot (no init) invoke-rc.d starts nothing. When port 5432 is taken on the host, a
# policy-rc.d (exit 101) in the throwaway layer makes sure of it.
# Env: FRESH_BASE (default /srv/pg_idgen-fresh-base), FRESH_RUN (default /srv/pg_idgen-fresh-run),
#   FRESH_REPO (default this repository), FRESH_LOGDIR, FRESH_PATCH=file.patch (applied to the
#   clone; logs get -patched), FRESH_KEEP=1 (keep the throwaway upper layer). One run at a time
#   (a lock beside FRESH_RUN).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BASE=${FRESH_BASE:-/srv/pg_idgen-fresh-base}
RUN=${FRESH_RUN:-/srv/pg_idgen-fresh-run}
REPO=${FRESH_REPO:-$ROOT}
LOGDIR=${FRESH_LOGDIR:-$ROOT/target/fresh-machine}
say() { printf '[fresh-machine] %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

cmd_base() {
    local B=$BASE tc
    [ ! -e "$B" ] || die "$B exists; remove it first (after checking nothing is mounted below it)"
    command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap
    debootstrap bookworm "$B" http://deb.debian.org/debian
    rm -f "$B/etc/apt/sources.list"
    cat > "$B/etc/apt/sources.list.d/debian.sources" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    cp /etc/resolv.conf "$B/etc/resolv.conf"
    hostname > "$B/etc/hostname"
    grep -q "$(hostname)" "$B/etc/hosts" || printf '127.0.1.1\t%s\n' "$(hostname)" >> "$B/etc/hosts"
    # (the directory made first: ca-certificates, which makes it, is installed below)
    mkdir -p "$B/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$B/usr/local/share/ca-certificates/" 2>/dev/null || true
    mount_machine "$B"
    trap 'unmount_below "$BASE/dev"; unmount_below "$BASE/sys"; unmount_below "$BASE/proc"' EXIT
    chroot "$B" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
        bash -c 'apt-get update && apt-get install -y build-essential ca-certificates curl git sudo && update-ca-certificates && apt-get clean'
    # Rust: rustup's settings and the active toolchain (and the names that point to it), cargo's
    # binaries (cargo-pgrx among them); no registry
    tc=$(rustup show active-toolchain 2>/dev/null | awk '{ print $1 }')
    [ -n "$tc" ] && [ -d "$HOME/.rustup/toolchains/$tc" ] || die "no active rustup toolchain on this host"
    mkdir -p "$B/root/.rustup/toolchains" "$B/root/.rustup/update-hashes" "$B/root/.cargo"
    cp -a "$HOME/.rustup/settings.toml" "$B/root/.rustup/"
    cp -a "$HOME/.rustup/toolchains/$tc" "$B/root/.rustup/toolchains/"
    [ ! -e "$HOME/.rustup/update-hashes/$tc" ] || cp -a "$HOME/.rustup/update-hashes/$tc" "$B/root/.rustup/update-hashes/"
    find "$HOME/.rustup/toolchains" -maxdepth 1 -type l -lname "*$tc" -exec cp -a {} "$B/root/.rustup/toolchains/" \;
    # rustup's proxies (cargo, rustc, ...) and nothing cargo installed: Rust only
    mkdir -p "$B/root/.cargo/bin"
    find "$HOME/.cargo/bin" -maxdepth 1 -samefile "$HOME/.cargo/bin/rustup" -exec cp -a {} "$B/root/.cargo/bin/" \;
    [ ! -e "$HOME/.cargo/env" ] || cp -a "$HOME/.cargo/env" "$B/root/.cargo/"
    chroot "$B" /usr/bin/env -i HOME=/root PATH=/root/.cargo/bin:/usr/bin:/bin cargo --version \
        || die "cargo does not run in $B"
    say "base ready: $B (Rust only)"
}

M=$RUN/merged
CHROOT_PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# pids whose root directory is the chroot (or anything below it)
chroot_pids() {
    local p r
    for p in /proc/[0-9]*; do
        r=$(readlink "$p/root" 2>/dev/null) || continue
        case $r in "$M"|"$M"/*) echo "${p#/proc/}" ;; esac
    done
}

in_chroot() {   # in_chroot CMD...: run CMD in the chroot with a clean environment
    chroot "$M" /usr/bin/env -i HOME=/root PATH="$CHROOT_PATH" TERM=dumb LANG=C.UTF-8 "$@" 9>&-   # not the lock
}

kill_chroot_procs() {   # TERM, wait up to 10 s, then KILL; prints what it had to kill
    local pids sig n
    pids=$(chroot_pids)
    [ -n "$pids" ] || return 0
    say "processes still running in the chroot:"
    # shellcheck disable=SC2086
    ps -o pid,user,args -p $(echo $pids | tr ' ' ,) >&2 || true
    for sig in TERM KILL; do
        # shellcheck disable=SC2086
        kill -s $sig $pids 2>/dev/null || true
        for n in $(seq 1 20); do
            pids=$(chroot_pids); [ -n "$pids" ] || return 0
            sleep 0.5
        done
    done
    pids=$(chroot_pids)
    [ -z "$pids" ] || say "WARNING: could not kill: $pids"
}

mounts_below() {   # mounts_below DIR: every mount at or below DIR, deepest first
    awk -v r="$1" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r
}
unmount_below() {   # unmount_below DIR
    local mp tries mps
    for tries in 1 2 3; do
        mapfile -t mps < <(mounts_below "$1")
        [ ${#mps[@]} -gt 0 ] || return 0
        for mp in "${mps[@]}"; do umount "$mp" >/dev/null 2>&1 || true; done
    done
    mapfile -t mps < <(mounts_below "$1")
    for mp in "${mps[@]}"; do say "lazy unmount of $mp"; umount -l "$mp" || true; done
}
# mount_machine ROOT: what a machine's processes need below ROOT: /proc, /sys, /dev, /dev/pts and a
# tmpfs /dev/shm (PostgreSQL's shared memory). Slave mounts: what is mounted below them here never
# reaches the host's /sys or /dev, which on a systemd host are shared mounts
mount_machine() {
    mount -t proc proc "$1/proc"
    mount --rbind /sys "$1/sys" && mount --make-rslave "$1/sys"
    mount --bind /dev "$1/dev" && mount --make-rslave "$1/dev"
    mount --bind /dev/pts "$1/dev/pts"
    mount -t tmpfs -o mode=1777,nosuid,nodev shm "$1/dev/shm"
}

cleanup() {
    [ -d "$RUN" ] || return 0
    kill_chroot_procs
    unmount_below "$RUN"
    if [ -n "$(mounts_below "$RUN")" ]; then
        say "ERROR: mounts left below $RUN; not removing it"; return 1
    fi
    if [ "${FRESH_KEEP:-0}" = 1 ] && [ "${1:-}" = final ]; then
        say "FRESH_KEEP=1: kept $RUN (upper layer: $RUN/upper)"; return 0
    fi
    rm -rf --one-file-system "$RUN"
}

cmd_run() {
[ -x "$BASE/root/.cargo/bin/cargo" ] || die "$BASE is not a prepared base (scripts/fresh-machine.sh base)"
RUN_CMD=${RUN_CMD:-run}   # the make target (cmd_targets sets others)
# ---- 0. one run at a time (the cleanup below would kill another run's chroot), then leftovers --
exec 9>"$RUN.lock"
if ! flock -n 9; then
    say "another run holds $RUN.lock (pid(s): $(fuser "$RUN.lock" 2>/dev/null)); waiting for it (up to 1 h)"
    flock -w 3600 9 || die "gave up waiting for $RUN.lock"
fi
# ---- leftovers of a previous run ----
cleanup || die "could not clean up a previous run in $RUN"

# ---- 1. commit and log names ---------------------------------------------------------------
COMMIT=$(git -C "$REPO" rev-parse --verify "$1^{commit}") || die "no commit $1 in $REPO"
shift
SHORT=${COMMIT:0:7}
ARGS_TAG=$(printf '%s_' "$@" | sed -e 's/_$//' -e 's#[^A-Za-z0-9=._-]#_#g')
[ -n "$ARGS_TAG" ] || ARGS_TAG=default
[ "$RUN_CMD" = run ] || ARGS_TAG=$RUN_CMD-$ARGS_TAG
[ "${FRESH_CARGO_PGRX:-0}" != 1 ] || ARGS_TAG=$ARGS_TAG-with-cargo-pgrx
LOG=$LOGDIR/make-run-$SHORT-$ARGS_TAG.log
TSLOG=$LOGDIR/make-run-$SHORT-$ARGS_TAG.ts.log
PKGS=$LOGDIR/make-run-$SHORT-$ARGS_TAG.pkgs

trap 'cleanup final' EXIT
trap 'exit 130' INT TERM

# ---- 2. the throwaway machine ---------------------------------------------------------------
mkdir -p "$RUN/upper" "$RUN/work" "$M"
if mount -t overlay overlay -o "lowerdir=$BASE,upperdir=$RUN/upper,workdir=$RUN/work" "$M" 2>/dev/null; then
    say "overlay over $BASE at $M"
else
    say "overlayfs unavailable: cp -a $BASE $M"
    cp -a "$BASE/." "$M/" || die "cp -a failed"
fi
mount_machine "$M"
cp /etc/resolv.conf "$M/etc/resolv.conf"
if [ "${FRESH_CARGO_PGRX:-0}" = 1 ]; then
    cp -a "$(command -v cargo-pgrx)" "$M/root/.cargo/bin/" || die "FRESH_CARGO_PGRX=1: no cargo-pgrx on this host"
fi

if [ -n "$(ss -ltnH 'sport = :5432' 2>/dev/null)" ]; then
    say "port 5432 is taken on the host: services will not start in the chroot (policy-rc.d 101)"
    printf '#!/bin/sh\nexit 101\n' > "$M/usr/sbin/policy-rc.d"; chmod 755 "$M/usr/sbin/policy-rc.d"
    POLICY="policy-rc.d 101 (host port 5432 taken)"
else
    POLICY="services start as on a real machine (host port 5432 free)"
fi

# ---- 3. the clone -------------------------------------------------------------------------
git clone -q --no-hardlinks "file://$REPO" "$M/root/pg_idgen" || die "git clone failed"
git -C "$M/root/pg_idgen" -c advice.detachedHead=false checkout -q "$COMMIT" || die "checkout $COMMIT failed"
PATCHNOTE=
if [ -n "${FRESH_PATCH:-}" ]; then
    git -C "$M/root/pg_idgen" apply "$(readlink -f "$FRESH_PATCH")" || die "git apply $FRESH_PATCH failed"
    PATCHNOTE="; with $FRESH_PATCH applied to the clone"
    ARGS_TAG=$ARGS_TAG-patched
    LOG=$LOGDIR/make-run-$SHORT-$ARGS_TAG.log TSLOG=$LOGDIR/make-run-$SHORT-$ARGS_TAG.ts.log PKGS=$LOGDIR/make-run-$SHORT-$ARGS_TAG.pkgs
fi

# ---- 4. make run ----------------------------------------------------------------------------
{
    echo "# scripts/fresh-machine.sh run: commit $COMMIT ($(git -C "$REPO" log -1 --format=%s "$COMMIT" | cut -c1-100))"
    echo "# make args: ${*:-(none)}${PATCHNOTE}; started $(date -u +%FT%TZ); $POLICY; host load: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$LOG"
cp "$LOG" "$TSLOG"
echo "$LOG" > "$LOGDIR/.last-log"   # for cmd_targets
say "cd /root/pg_idgen && time make $RUN_CMD $* (log: $LOG)"
T0=$(date +%s)
# shellcheck disable=SC2016
set +e   # a failing make run is a result to record (its status, what it installed), not an abort
# shellcheck disable=SC2016
in_chroot timeout -k 60 -s INT "${RUN_LIMIT:-0}" /bin/bash -c 'cd /root/pg_idgen && time make "$@" </dev/null' make "$RUN_CMD" "$@" 2>&1 |
    while IFS= read -r line; do
        printf '%s\n' "$line" >> "$LOG"
        printf '+%4ds %s\n' $(( $(date +%s) - T0 )) "$line" >> "$TSLOG"
        printf '%s\n' "$line"
    done
RC=${PIPESTATUS[0]}
set -e
T1=$(date +%s)
echo "# make $RUN_CMD exit status $RC, wall $((T1 - T0))s, finished $(date -u +%FT%TZ)" | tee -a "$LOG" >> "$TSLOG"

# ---- 5. what the run brought in ----------------------------------------------------------
{
    echo "# what make run installed (commit $SHORT, args: ${*:-none})"
    echo "## new Debian packages (name version installed-size-KiB)"
    dpkg-query --admindir="$M/var/lib/dpkg" -W -f='${db:Status-Abbrev} ${Package} ${Version} ${Installed-Size}\n' | awk '$1 == "ii" { print $2, $3, $4 }' | sort > "$RUN/pkgs.after"
    dpkg-query --admindir="$BASE/var/lib/dpkg" -W -f='${db:Status-Abbrev} ${Package} ${Version} ${Installed-Size}\n' | awk '$1 == "ii" { print $2, $3, $4 }' | sort > "$RUN/pkgs.before"
    comm -13 "$RUN/pkgs.before" "$RUN/pkgs.after"
    echo "## count: $(comm -13 "$RUN/pkgs.before" "$RUN/pkgs.after" | wc -l) packages," \
         "installed size $(comm -13 "$RUN/pkgs.before" "$RUN/pkgs.after" | awk '{ s += $3 } END { printf "%.0f MiB", s / 1024 }')," \
         "downloaded .debs $(du -sc "$M"/var/cache/apt/archives/*.deb 2>/dev/null | tail -1 | awk '{ printf "%.0f MiB", $1 / 1024 }')" \
         "($(ls "$M"/var/cache/apt/archives/*.deb 2>/dev/null | wc -l) files)"
    echo "## apt lists refreshed: $(stat -c %y "$M"/var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_InRelease 2>/dev/null)"
    echo "## wheels (/var/cache/pg_idgen/wheels)"
    ls -l "$M"/var/cache/pg_idgen/wheels 2>/dev/null || echo "(none)"
    du -sh "$M"/var/cache/pg_idgen 2>/dev/null || true
    echo "## ~/.cargo/registry: $(du -sh "$M"/root/.cargo/registry 2>/dev/null | cut -f1) ; target/: $(du -sh "$M"/root/pg_idgen/target 2>/dev/null | cut -f1)"
    echo "## ~/.pgrx/config.toml"
    cat "$M"/root/.pgrx/config.toml 2>/dev/null || echo "(none)"
} > "$PKGS" 2>&1

# ---- 6. stop everything the run started ----------------------------------------------------
say "make stop $*"
in_chroot /bin/bash -c 'cd /root/pg_idgen && make stop "$@"' make-stop "$@" >> "$LOG" 2>&1 || say "make stop failed (see $LOG)"
# Debian's own cluster(s) (15/main on 5432, started by postgresql-15's postinst)
if [ -x "$M/usr/bin/pg_lsclusters" ]; then
    echo "# Debian clusters after the run:" >> "$LOG"
    in_chroot pg_lsclusters >> "$LOG" 2>&1 || true
    in_chroot /bin/bash -c 'pg_lsclusters -h 2>/dev/null | while read -r v c _; do pg_ctlcluster "$v" "$c" stop -m fast >/dev/null 2>&1 || true; done' || true
fi
left=$(chroot_pids)
if [ -n "$left" ]; then
    echo "# processes left in the chroot after make stop and pg_ctlcluster stop: $left" >> "$LOG"
fi
kill_chroot_procs
say "make $RUN_CMD exit status $RC; log $LOG, timestamps $TSLOG, packages $PKGS"
grep -E '^make run: |^real' "$LOG" >&2 || true
LAST_LOG=$LOG LAST_WALL=$((T1 - T0))
return "$RC"
}

# the make targets README.md and docs/getting-started.md name ("make X [PG=NN]"), once each;
# psql is interactive (it is given no input here, so it connects and ends)
doc_targets() {
    grep -ohE '`make [a-z][a-z0-9-]*( PG=[0-9]+)?' "$ROOT/README.md" "$ROOT/docs/getting-started.md" \
        | sed 's/^`make //' | awk '!seen[$0]++' \
        | while read -r t rest; do grep -q "^$t:" "$ROOT/Makefile" && echo "$t${rest:+ $rest}"; done
}

# the make target's own output in LOG: up to the line cmd_run writes when it ends (make stop and
# the Debian clusters' state follow it)
target_output() { sed '/^# make [^ ]* exit status/,$d' "$1" | grep -Ev '^make(\[[0-9]+\])?: \*\*\*|^(real|user|sys)[[:space:]]|^# |^$'; }

# judge LOG RC: ok (exit 0), started (stopped at the limit, no error so far), told (failed, its
# last line names what to run first, no Rust error chain), or FAILED
judge() {
    local log=$1 rc=$2 last
    if target_output "$log" | grep -Eq "panicked at|stack backtrace|^Location:|^ +[0-9]+: .*::|^Error: "; then echo FAILED; return; fi
    [ "$rc" != 0 ] || { echo ok; return; }
    [ "$rc" != 124 ] || { echo started; return; }
    last=$(target_output "$log" | tail -1)
    if grep -Eq '(make [a-z]|scripts/[a-z-]+\.sh)' <<<"$last"; then echo told; else echo FAILED; fi
}

cmd_targets() {
    local commit=$1 t rc verdict log bad=0 targets=() words
    if [ -n "${FRESH_TARGETS:-}" ]; then IFS=';' read -ra targets <<<"$FRESH_TARGETS"; else mapfile -t targets < <(doc_targets); fi
    local table
    table=$LOGDIR/targets-$(git -C "$REPO" rev-parse --short "$commit").txt
    : >"$table"
    for t in "${targets[@]}"; do
        read -ra words <<<"$t"
        rm -f "$LOGDIR/.last-log"
        # errexit inside the subshell (it would be off under `|| rc=$?`)
        set +e
        ( set -e; RUN_CMD=${words[0]} RUN_LIMIT=${FRESH_TARGET_SECS:-600}; cmd_run "$commit" "${words[@]:1}" )
        rc=$?
        set -e
        [ "$rc" != 130 ] || die "interrupted"
        log=$(cat "$LOGDIR/.last-log" 2>/dev/null || true)
        if [ -z "$log" ] || [ ! -f "$log" ]; then
            verdict=FAILED; bad=1
            printf '%-22s %-8s exit %-4s %s\n' "make $t" "$verdict" "$rc" "(no log: the machine was not made)" | tee -a "$table"
            continue
        fi
        verdict=$(judge "$log" "$rc")
        [ "$verdict" != FAILED ] || bad=1
        printf '%-22s %-8s exit %-4s %s\n' "make $t" "$verdict" "$rc" "$(target_output "$log" | tail -1 | cut -c1-110)" | tee -a "$table"
    done
    say "targets: table in $table"
    cat "$table" >&2
    return $bad
}

[ "$(id -u)" = 0 ] || die "run as root"
cmd=${1:-}; [ $# -gt 0 ] && shift
case $cmd in
    base) cmd_base ;;
    run)  [ $# -ge 1 ] || usage; mkdir -p "$LOGDIR"; cmd_run "$@" ;;
    targets) [ $# -eq 1 ] || usage; mkdir -p "$LOGDIR"; cmd_targets "$1" ;;
    *)    usage ;;
esac
