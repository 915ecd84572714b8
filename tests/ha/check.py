"""tests/ha/check.py — what the clients of one phase were handed, against the faults and the final leader.

Usage: check.py PHASE_DIR FINAL_TSV
  PHASE_DIR/values.tsv  load.py: kind, snowflake id, segment value, server port, receive time
  PHASE_DIR/errors.tsv  load.py: time, client, SQLSTATE, message
  PHASE_DIR/events.tsv  run.sh, one line per fault: kind, fault time, old leader port, new leader
                        port, time the new leader was seen (patronictl/REST), start leader port
                        on the first line as "start 0 - PORT -"
  FINAL_TSV             id, seg of every row of ha_ids on the final leader
Prints key=value lines (run.sh asserts on them) and a human summary on stderr.
Epochs: the leader's values from one fault to the next. A value of port P received at time t
belongs to the last epoch led by P that began (its fault) at or before t — a node can lead twice,
never two epochs at once.
"""
import collections
import sys

phase, final_path = sys.argv[1], sys.argv[2]


def rows(path):
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


values = [(k, int(i), int(s), int(p), float(t)) for k, i, s, p, t in rows(phase + "/values.tsv")]
errors = rows(phase + "/errors.tsv")
events = rows(phase + "/events.tsv")
final = {int(r[0]): int(r[1]) for r in rows(final_path)}

out = {}
out["values"] = len(values)
out["inserted"] = sum(1 for v in values if v[0] == "ins")
out["selected"] = len(values) - out["inserted"]

ids = collections.Counter(v[1] for v in values)
out["snowflake_twice"] = sum(c - 1 for c in ids.values() if c > 1)
segs = collections.Counter(v[2] for v in values if v[0] == "ins")
segs_sel = collections.Counter(v[2] for v in values if v[0] == "sel")
out["segment_twice"] = sum(c - 1 for c in segs.values() if c > 1) + sum(c - 1 for c in segs_sel.values() if c > 1)
out["duplicate_key_errors"] = sum(1 for e in errors if e[2] == "23505")
acked = [(v[1], v[2]) for v in values if v[0] == "ins"]
out["acked_missing"] = sum(1 for i, s in acked if final.get(i) != s)
out["client_errors"] = len(errors)

# epochs
starts = []   # (start time, leader port)
for e in events:
    kind, t, old, new, seen = e[:5]
    starts.append((0.0 if kind == "start" else float(t), int(new)))


def epoch_of(port, t):
    best = None
    for n, (st, p) in enumerate(starts):
        if p == port and st <= t:
            best = n
    return best


by_epoch = collections.defaultdict(list)
unassigned = 0
for v in values:
    e = epoch_of(v[3], v[4])
    if e is None:
        unassigned += 1
    else:
        by_epoch[e].append(v)
out["values_outside_epochs"] = unassigned
below_total = 0
summary = []
for n in range(1, len(starts)):
    prev = [v[1] for m in range(n) for v in by_epoch[m]]
    cur = by_epoch[n]
    top = max(prev) if prev else 0
    below = sum(1 for v in cur if v[1] <= top)
    below_total += below
    kind, t, old, new, seen = events[n][:5]
    first = min((v[4] for v in cur), default=None)
    failover_s = float(seen) - float(t)
    first_s = (first - float(t)) if first is not None else float("nan")
    errs = sum(1 for e in errors if float(t) <= float(e[0]) <= (first if first else float(t)))
    summary.append(f"{kind} {old}->{new}: leader seen after {failover_s:.1f} s, first id after "
                   f"{first_s:.1f} s, {len(cur)} values in its epoch, {below} at or below the "
                   f"previous leaders' highest id, {errs} client errors until the first id")
    out[f"fault{n}_failover_s"] = "%.1f" % failover_s
    out[f"fault{n}_first_id_s"] = "%.1f" % first_s
    out[f"fault{n}_values"] = len(cur)
    out[f"fault{n}_below"] = below
out["faults"] = len(starts) - 1
out["ids_at_or_below_old_leader"] = below_total
codes = collections.Counter(e[2] for e in errors)
out["error_codes"] = ",".join(f"{c}:{n}" for c, n in sorted(codes.items())) or "-"
for k, v in out.items():
    print(f"{k}={v}")
for line in summary:
    print("  " + line, file=sys.stderr)
