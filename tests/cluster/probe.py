#!/usr/bin/env python3
"""Socket probes for cluster.sh: no nc or JVM start-up needed, so polling stays cheap.

  probe.py free-ports N              print N distinct free loopback ports
  probe.py zk-ok HOST:PORT           ZooKeeper answers `ruok` with `imok`
  probe.py zk-serving HOST:PORT      ZooKeeper serves requests (4lw `srvr` tells its mode:
                                     standalone, or leader/follower of a quorum)
  probe.py zk-ephemeral HOST:PORT P  znode P is a live ephemeral (4lw `dump`)
  probe.py kafka-ready HOST:PORT ID  Metadata lists broker ID and it is the controller
  probe.py kafka-brokers HOST:PORT N [ID]
                                     Metadata lists at least N brokers (and broker ID); for
                                     KRaft, whose Metadata names no real controller
  probe.py kdc-ready HOST:PORT FILE  the KDC accepts TCP connections and has written FILE, its
                                     mark that keytabs, krb5.conf and ticket cache are in place
"""
import os
import socket
import struct
import sys

TIMEOUT = 3.0


def addr(hostport):
    host, port = hostport.rsplit(":", 1)
    return host, int(port)


def free_ports(n):
    # Hold all sockets open at once so the ports differ from each other.
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        print(" ".join(str(s.getsockname()[1]) for s in socks))
    finally:
        for s in socks:
            s.close()
    return True


def four_letter(hostport, word):
    with socket.create_connection(addr(hostport), timeout=TIMEOUT) as s:
        s.sendall(word.encode())
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return b"".join(chunks).decode(errors="replace")
            chunks.append(chunk)


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return buf


def kafka_metadata(hostport):
    # Metadata v1 with an empty topic list: brokers + controller, nothing else.
    # Unlike a bare port check it only succeeds once the broker serves requests
    # and the controller has published it, so topics can be created right away.
    client = b"offsetkeeper-probe"
    body = struct.pack(">hhih", 3, 1, 7, len(client)) + client + struct.pack(">i", 0)
    with socket.create_connection(addr(hostport), timeout=TIMEOUT) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", recv_exact(s, 4))
        data = recv_exact(s, size)
    pos = 4  # correlation id
    (count,) = struct.unpack_from(">i", data, pos)
    pos += 4
    ids = []
    for _ in range(count):
        node, hlen = struct.unpack_from(">ih", data, pos)
        pos += 6 + hlen + 4  # host, port
        (rlen,) = struct.unpack_from(">h", data, pos)
        pos += 2 + max(rlen, 0)  # rack (nullable)
        ids.append(node)
    (controller,) = struct.unpack_from(">i", data, pos)
    return ids, controller


def kafka_ready(hostport, broker_id):
    ids, controller = kafka_metadata(hostport)
    return broker_id in ids and controller == broker_id


def kafka_brokers(hostport, n, broker_id=None):
    ids, _ = kafka_metadata(hostport)
    return len(ids) >= n and (broker_id is None or broker_id in ids)


def kdc_ready(hostport, ready_file):
    if not os.path.exists(ready_file):
        return False
    with socket.create_connection(addr(hostport), timeout=TIMEOUT):
        return True


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "free-ports":
        return free_ports(int(args[0]))
    if cmd == "zk-ok":
        return four_letter(args[0], "ruok") == "imok"
    if cmd == "zk-serving":
        return "Mode: " in four_letter(args[0], "srvr")
    if cmd == "zk-ephemeral":
        return args[1] in (line.strip() for line in four_letter(args[0], "dump").splitlines())
    if cmd == "kafka-ready":
        return kafka_ready(args[0], int(args[1]))
    if cmd == "kafka-brokers":
        return kafka_brokers(args[0], int(args[1]), int(args[2]) if len(args) > 2 else None)
    if cmd == "kdc-ready":
        return kdc_ready(args[0], args[1])
    sys.exit(__doc__)


if __name__ == "__main__":
    try:
        ok = main(sys.argv) if len(sys.argv) > 1 else sys.exit(__doc__)
    except (OSError, EOFError, struct.error):
        ok = False
    sys.exit(0 if ok else 1)
