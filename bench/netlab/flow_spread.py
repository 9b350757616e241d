#!/usr/bin/python3
"""How far apart equal TCP flows into one receiver finish (flow_spread.sh).

recv: accept N connections on PORT; for each round, read SIZE bytes from
each and print, per round, the time each connection's SIZE bytes were
complete, measured from the round's start (an absolute wall-clock time
START + round * PERIOD that every sender waits for).
send: connect to HOST:PORT once, then send SIZE bytes at every round's
start. The connections stay open between rounds, as UCX's do.
"""
import socket, sys, threading, time

def recv(port, flows, size, rounds, start, period):
    lst = socket.socket()
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind(("0.0.0.0", port))
    lst.listen(flows)
    conns = [lst.accept()[0] for _ in range(flows)]
    done = [[0.0] * flows for _ in range(rounds)]
    def read(i, c):
        buf = bytearray(1 << 20)
        for r in range(rounds):
            left = size
            while left > 0:
                k = c.recv_into(buf, min(left, len(buf)))
                if k == 0:
                    raise SystemExit("a sender closed early")
                left -= k
            done[r][i] = time.time() - (start + r * period)
    threads = [threading.Thread(target=read, args=(i, c)) for i, c in enumerate(conns)]
    for t in threads: t.start()
    for t in threads: t.join()
    for r in range(rounds):
        print(" ".join("%.4f" % x for x in done[r]), flush=True)

def summarize(path, skip):
    """Mean and median over rounds of (first through) / (last through)."""
    ratios = []
    with open(path) as f:
        for line in f:
            times = sorted(float(x) for x in line.split())
            if times and times[-1] > 0:
                ratios.append(times[0] / times[-1])
    ratios = sorted(ratios[skip:])
    if not ratios:
        raise SystemExit("no rounds in " + path)
    print("%.3f %.3f %d" % (sum(ratios) / len(ratios), ratios[len(ratios) // 2], len(ratios)))

def send(host, port, size, rounds, start, period):
    c = socket.socket()
    for _ in range(200):
        try:
            c.connect((host, port))
            break
        except OSError:
            time.sleep(0.05)
    data = b"x" * size
    for r in range(rounds):
        t = start + r * period
        while time.time() < t:
            pass
        c.sendall(data)
    c.close()

if __name__ == "__main__":
    role = sys.argv[1]
    if role == "summarize":
        summarize(sys.argv[2], int(sys.argv[3]))
    elif role == "recv":
        recv(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
             float(sys.argv[6]), float(sys.argv[7]))
    else:
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
             float(sys.argv[6]), float(sys.argv[7]))
