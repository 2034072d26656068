#!/usr/bin/env python3
"""The diagnoser's report corpus: every snapshot case under tests/data/cases, traced from every
source to every destination it has, in every output format, written one file per query.

A refactor of the walk must not change a byte of it (issue 12's acceptance check):

    python3 tests/lib/diag_corpus.py build/tools/sarena-diag /tmp/corpus-before
    ... change the code, rebuild ...
    python3 tests/lib/diag_corpus.py build/tools/sarena-diag /tmp/corpus-after
    diff -r /tmp/corpus-before /tmp/corpus-after

Sources: node:NAME for each node directory, pod:NS/NAME for each pod of cluster/pods.json.
Destinations: each pod (its first containerPort, else 8080, over TCP; 7777/udp too), each Service
port (svc:NS/NAME:PORT/PROTO), each node's 22/tcp, an outside address (203.0.113.10:443/tcp; only
a snapshot is read, nothing is sent). Variants: the default query in text, json and dot; a
1400-byte UDP query and a TTL-2 query in json. Each file holds the exit status, stdout and stderr.
"""
import concurrent.futures
import json
import os
import subprocess
import sys


def load_items(path):
    try:
        with open(path) as f:
            return json.load(f).get("items") or []
    except (OSError, ValueError):
        return []


def queries(case_dir):
    nodes = sorted(os.listdir(os.path.join(case_dir, "nodes"))) if os.path.isdir(
        os.path.join(case_dir, "nodes")) else []
    pods = load_items(os.path.join(case_dir, "cluster", "pods.json"))
    svcs = load_items(os.path.join(case_dir, "cluster", "services.json"))
    srcs = [f"node:{n}" for n in nodes]
    dsts = []
    for p in pods:
        meta = p.get("metadata", {})
        ref = f"pod:{meta.get('namespace', 'default')}/{meta.get('name', '')}"
        srcs.append(ref)
        port = 8080
        for c in p.get("spec", {}).get("containers", []) or []:
            for cp in c.get("ports", []) or []:
                if cp.get("containerPort"):
                    port = cp["containerPort"]
                    break
            else:
                continue
            break
        dsts.append(f"{ref}:{port}/tcp")
        dsts.append(f"{ref}:7777/udp")
    for s in svcs:
        meta = s.get("metadata", {})
        for sp in s.get("spec", {}).get("ports", []) or []:
            proto = (sp.get("protocol") or "TCP").lower()
            dsts.append(f"svc:{meta.get('namespace', 'default')}/{meta.get('name', '')}:"
                        f"{sp.get('port')}/{proto}")
    dsts += [f"node:{n}:22/tcp" for n in nodes]
    dsts.append("203.0.113.10:443/tcp")
    for src in srcs:
        for dst in dsts:
            if dst.startswith(src + ":"):
                continue
            yield src, dst, ["-o", "text"], "txt"
            yield src, dst, ["-o", "json"], "json"
            yield src, dst, ["-o", "dot"], "dot"
            if dst.endswith("/udp"):
                yield src, dst, ["-o", "json", "--size", "1400"], "size1400.json"
            if dst.endswith("/tcp"):
                yield src, dst, ["-o", "json", "--ttl", "2"], "ttl2.json"


def safe(s):
    return "".join(c if c.isalnum() or c in "-._" else "_" for c in s)


def run_one(binary, case_dir, out_dir, src, dst, extra, suffix):
    cmd = [binary, "trace", "--snapshot", case_dir, "--src", src, "--dst", dst] + extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    name = f"{safe(src)}__{safe(dst)}.{suffix}"
    # The snapshot path appears in some messages; make it relative so two trees compare equal.
    out = r.stdout.replace(case_dir, "<case>")
    err = r.stderr.replace(case_dir, "<case>")
    with open(os.path.join(out_dir, name), "w") as f:
        f.write(f"exit {r.returncode}\n--- stdout\n{out}--- stderr\n{err}")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: diag_corpus.py SARENA_DIAG OUT_DIR")
    binary, out = os.path.abspath(sys.argv[1]), sys.argv[2]
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "cases")
    root = os.path.normpath(root)
    jobs = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        for case in sorted(os.listdir(root)):
            case_dir = os.path.join(root, case)
            if case.startswith("_") or not os.path.isdir(case_dir):
                continue
            case_out = os.path.join(out, case)
            os.makedirs(case_out, exist_ok=True)
            for src, dst, extra, suffix in queries(case_dir):
                jobs.append(ex.submit(run_one, binary, case_dir, case_out, src, dst, extra, suffix))
        for j in jobs:
            j.result()
    print(f"diag_corpus: {len(jobs)} reports in {out}")


if __name__ == "__main__":
    main()
