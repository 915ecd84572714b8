"""tests/partition/check.py — what every client of one scenario was handed, against the fault.

Usage: check.py OUTDIR [FINAL_TSV...]
  OUTDIR/values.*.tsv  load.py: client, kind, snowflake id, segment value, key, keyed value,
                       server address, receive time
  OUTDIR/errors.*.tsv  load.py: time, client, SQLSTATE, server address, message
  OUTDIR/events        run.sh, name=value lines: cut (time of the cut), old (address of the
                       node generating before it), new (address generating after it, once seen),
                       new_seen (time the new leader/holder was seen by the runner), heal (time);
                       keyed_nodes=N and keyed_index.NAME=K (a keyed space in fleet mode: the
                       values of load.py NAME must be K mod N)
  FINAL_TSV...         id, seg, kv of every row of pt_ids on the final leader, or on each node of
                       an active-active group (acknowledged inserts are looked up in each;
                       finals_differ counts the rows not in every one of them)
Prints key=value lines (run.sh asserts on them) and a human summary on stderr.
"""
import collections
import glob
import math
import sys

out_dir = sys.argv[1]
final_paths = sys.argv[2:]


def rows(path):
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


values = []
for p in sorted(glob.glob(out_dir + "/values.*.tsv")):
    for c, k, i, s, key, kv, a, t in rows(p):
        values.append((c, k, int(i), int(s), int(key), int(kv), a, float(t)))
errors = []
for p in sorted(glob.glob(out_dir + "/errors.*.tsv")):
    errors += rows(p)
ev = {}
with open(out_dir + "/events") as f:
    for line in f:
        if "=" in line:
            k, v = line.strip().split("=", 1)
            ev[k] = v
cut = float(ev.get("cut", "nan"))
old, new = ev.get("old", "-"), ev.get("new", "-")

out = collections.OrderedDict()
out["values"] = len(values)
out["inserted"] = sum(1 for v in values if v[1] == "ins")
ids = collections.Counter(v[2] for v in values)
out["snowflake_twice"] = sum(c - 1 for c in ids.values() if c > 1)
seg = collections.Counter((v[1], v[3]) for v in values if v[3] >= 0)
out["segment_twice"] = sum(c - 1 for c in seg.values() if c > 1)
kv = collections.Counter((v[4], v[5]) for v in values if v[4] >= 0)
out["keyed_twice"] = sum(c - 1 for c in kv.values() if c > 1)
out["duplicate_key_errors"] = sum(1 for e in errors if e[2] == "23505")
if final_paths:
    acked = [v for v in values if v[1] == "ins"]
    finals = []
    for path in final_paths:
        final = {}
        for r in rows(path):
            final[int(r[0])] = (int(r[1]), int(r[2]) if r[2] not in ("", "\\N") else -1)
        finals.append(final)
    out["acked_missing"] = sum(1 for final in finals for v in acked
                               if final.get(v[2]) != (v[3], v[5]))
    every = set.union(*(set(f.items()) for f in finals))
    out["finals_differ"] = sum(1 for r in every if any(f.get(r[0]) != r[1] for f in finals))
    out["final_rows"] = ",".join(str(len(f)) for f in finals)
out["client_errors"] = len(errors)
codes = collections.Counter(e[2] for e in errors)
out["error_codes"] = ",".join(f"{c}:{n}" for c, n in sorted(codes.items())) or "-"
out["refusals"] = codes.get("55000", 0)
by_addr = collections.Counter(v[6] for v in values)
out["per_server"] = ",".join(f"{a}:{n}" for a, n in sorted(by_addr.items()))

old_vals = [v for v in values if v[6] == old]
new_vals = [v for v in values if v[6] == new and v[7] >= cut]
old_last = max((v[7] for v in old_vals), default=float("nan"))
new_first = min((v[7] for v in new_vals), default=float("nan"))
out["old_values_after_cut"] = sum(1 for v in old_vals if v[7] >= cut)
out["old_last_after_cut_s"] = "%.1f" % (old_last - cut)
# what the clients on the old node's own side (named after its host) got from it after the cut;
# a client on the other side can receive, after the heal, an answer the old node sent before it
# stopped (held in TCP retransmission while the link was cut)
side = ev.get("old_host")
if side:
    own = [v for v in old_vals if v[0].startswith(side + ".") and v[7] >= cut]
    out["old_side_values_after_cut"] = len(own)
    out["old_side_last_after_cut_s"] = "%.1f" % (max((v[7] for v in own), default=cut) - cut)
    out["old_side_inserts_after_cut"] = sum(1 for v in own if v[1] == "ins")
out["new_first_after_cut_s"] = "%.1f" % (new_first - cut)
if "new_seen" in ev:
    out["new_seen_after_cut_s"] = "%.1f" % (float(ev["new_seen"]) - cut)
out["new_values"] = len(new_vals)
# refusals (55000) by the new node before its first value: how long it made its clients wait
# (later ones are the load running ahead of the layout's 200 ids/s)
out["new_refusals_before_first"] = sum(
    1 for e in errors if e[2] == "55000" and e[3] == new and cut <= float(e[0]) < new_first)
# values of the old node RECEIVED after the new node's first value was received (a receive time
# is at or after the generation: 0 here proves the old node generated nothing after it)
out["overlap_values"] = sum(1 for v in old_vals if not math.isnan(new_first) and v[7] >= new_first)
top = max((v[2] for v in old_vals), default=0)
out["new_ids_at_or_below_old"] = sum(1 for v in new_vals if v[2] <= top)
# the longest time with no value handed out to any client, from the cut on (a stall)
after = sorted(v[7] for v in values if v[7] >= cut)
gaps = [b - a for a, b in zip([cut] + after, after)]
out["longest_stall_after_cut_s"] = "%.1f" % max(gaps, default=float("nan"))
# per server, in the order a client received them: snowflake ids of one client increase
dec = 0
last_by_client = {}
for v in sorted(values, key=lambda v: v[7]):
    p = last_by_client.get(v[0])
    if p is not None and v[2] <= p:
        dec += 1
    last_by_client[v[0]] = v[2]
out["client_ids_not_increasing"] = dec
# keyed values: per client and key, increasing in the order received (one client waits for each)
dec = 0
last_kv = {}
for v in sorted(values, key=lambda v: v[7]):
    if v[4] < 0:
        continue
    p = last_kv.get((v[0], v[4]))
    if p is not None and v[5] <= p:
        dec += 1
    last_kv[(v[0], v[4])] = v[5]
out["keyed_not_increasing"] = dec
if "keyed_nodes" in ev:
    n = int(ev["keyed_nodes"])
    idx = {k[12:]: int(x) for k, x in ev.items() if k.startswith("keyed_index.")}
    out["keyed_wrong_residue"] = sum(1 for v in values if v[4] >= 0 and v[0].split(".")[0] in idx
                                     and v[5] % n != idx[v[0].split(".")[0]])
for k, v in out.items():
    print(f"{k}={v}")
print(f"  {len(values)} values ({by_addr}); old {old}: last value {out['old_last_after_cut_s']} s "
      f"after the cut; new {new}: first value {out['new_first_after_cut_s']} s after it; errors "
      f"{out['error_codes']}", file=sys.stderr)
