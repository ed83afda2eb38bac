import json,glob,statistics,sys,os
d=sys.argv[1]
pts=["read-4K-1","read-64K-4","read-1M-16","write-4K-1","write-64K-4","write-1M-16","randread-4K-1","randwrite-4K-1"]
def fio(p):
    j=json.load(open(p))["jobs"][0]; s=j["read"] if j["read"]["total_ios"] else j["write"]; pc=s["lat_ns"].get("percentile",{})
    return dict(gbs=s["bw_bytes"]/1e9,iops=s["iops"],p50=pc.get("50.000000",0)/1e3,p99=pc.get("99.000000",0)/1e3,p999=pc.get("99.900000",0)/1e3,mean=s["lat_ns"]["mean"]/1e3)
def pp(p):
    x=json.load(open(p))["points"][0]; l=x["latency"]
    return dict(gbs=x["throughput_gb_per_s"],iops=x["iops"],p50=l["p50_us"],p99=l["p99_us"],p999=l["p99_9_us"],mean=l["mean_us"])
print("| point | metric | peerpath (median of 3) | fio (median of 3) | peerpath / fio |\n|---|---|---:|---:|---:|")
for pt in pts:
    P=[pp(f) for f in [f for f in sorted(glob.glob(f"{d}/pp-{pt}-*.json")) if os.path.getsize(f)]]; F=[fio(f) for f in [f for f in sorted(glob.glob(f"{d}/fio-{pt}-*.json")) if os.path.getsize(f)]]
    if not P or not F: continue
    for k in ["gbs","iops","p50","p99","p999","mean"]:
        a=statistics.median(x[k] for x in P); b=statistics.median(x[k] for x in F)
        print(f"| {pt} (n={len(P)}/{len(F)}) | {k} | {a:.3f} | {b:.3f} | {a/b if b else float('nan'):.2f} |")
