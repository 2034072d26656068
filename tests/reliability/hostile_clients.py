#!/usr/bin/env python3
"""Hostile clients of sarenad's socket for tests/reliability/hostile_socket_test.sh.

  hostile_clients.py idle SOCK N UID_BASE UIDS READY   N idle connections spread over UIDS
                                                       non-root uids (UID_BASE..), held open
  hostile_clients.py big SOCK N READY                  N connections (as the caller) that send
                                                       only a 4-byte header announcing 4 MiB

Once every connection is made, prints "open=<still open> refused=<closed by the daemon or not
connectable>" and creates READY, then holds the connections until killed.
"""
import os, select, socket, struct, sys, time


def connect_many(path, n, payload=b""):
    socks, refused = [], 0
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect(path)
            if payload:
                s.sendall(payload)
            socks.append(s)
        except OSError:
            refused += 1
            s.close()
    time.sleep(1.0)  # let the daemon accept and refuse what is over its limits
    still = []
    for s in socks:
        r, _, _ = select.select([s], [], [], 0)
        if r:
            try:
                if s.recv(1, socket.MSG_PEEK) == b"":
                    refused += 1
                    s.close()
                    continue
            except OSError:
                refused += 1
                s.close()
                continue
        still.append(s)
    return still, refused


def hold_forever(ready, line):
    print(line, flush=True)
    open(ready, "w").close()
    while True:
        time.sleep(3600)


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "big":
        n, ready = int(sys.argv[3]), sys.argv[4]
        socks, refused = connect_many(path, n, struct.pack(">I", 4 * 1024 * 1024))
        hold_forever(ready, f"open={len(socks)} refused={refused}")
    n, uid_base, uids, ready = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
    per = [n // uids + (1 if i < n % uids else 0) for i in range(uids)]
    pipes = []
    for i in range(uids):
        r, w = os.pipe()
        if os.fork() == 0:
            os.close(r)
            os.setgroups([])
            os.setgid(uid_base + i)
            os.setuid(uid_base + i)
            socks, refused = connect_many(path, per[i])
            os.write(w, f"{len(socks)} {refused}\n".encode())
            while True:
                time.sleep(3600)
        os.close(w)
        pipes.append(r)
    total_open = total_refused = 0
    for r in pipes:
        data = b""
        while not data.endswith(b"\n"):
            chunk = os.read(r, 64)
            if not chunk:
                break
            data += chunk
        o, f = data.split() if data.strip() else (b"0", b"0")
        total_open += int(o)
        total_refused += int(f)
    hold_forever(ready, f"open={total_open} refused={total_refused}")


if __name__ == "__main__":
    main()
