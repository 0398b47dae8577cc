#!/usr/bin/env python3
"""gc-scale-report.py LOGDIR "SIZES": the tables of bench/gc-scale.sh, from the
warm-N.json and cold-N.json files a run left in LOGDIR (GC status + /usr/bin/time -v)."""
import json, os, sys
log, sizes = sys.argv[1], [int(x) for x in sys.argv[2].split()]
def j(name):
    return json.load(open(os.path.join(log, name + ".json")))
def size(n):
    return "%gM" % (n / 1e6)
print("| size | cache | chunks on disk | references | mark s | touches/s | sweep s | swept chunks/s | CPU s (user + sys) | CPU share | peak RSS MiB |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for n in sizes:
    for mode in ("warm", "cold"):
        d = j("%s-%d" % (mode, n))
        m, s = d["mark_ns"] / 1e9, d["sweep_ns"] / 1e9
        cpu = d["user_s"] + d["sys_s"]
        print("| %s | %s | %d | %d | %.2f | %.1f K | %.2f | %.2f M | %.1f + %.1f | %.0f %% | %d |" % (
            size(n), mode, d["disk_chunks"], d["referenced_chunks"], m, d["touched"] / m / 1e3,
            s, d["disk_chunks"] / s / 1e6, d["user_s"], d["sys_s"], 100 * cpu / d["wall_s"],
            d["rss_kib"] // 1024))
print()
b = sizes[0]
print("| ratio to %s | linear | cache | mark s | sweep s | CPU s | peak RSS |" % size(b))
print("|---|---:|---|---:|---:|---:|---:|")
for n in sizes[1:]:
    for mode in ("warm", "cold"):
        d, d0 = j("%s-%d" % (mode, n)), j("%s-%d" % (mode, b))
        cpu = lambda x: x["user_s"] + x["sys_s"]
        print("| %s / %s | %.1f | %s | %.2f | %.2f | %.2f | %.2f |" % (
            size(n), size(b), n / b, mode, d["mark_ns"] / d0["mark_ns"],
            d["sweep_ns"] / d0["sweep_ns"], cpu(d) / cpu(d0), d["rss_kib"] / d0["rss_kib"]))
