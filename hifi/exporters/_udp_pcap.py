"""libpcap files of UDP datagrams over IPv4 over Ethernet, built with numpy (no packet loop).

What a sensor that streams UDP packets puts on the wire, as ``tcpdump``/Wireshark record it:
the libpcap global header, then per packet a record header and an Ethernet II frame holding an
IPv4 header (checksum set), a UDP header (checksum set) and the payload. Every packet of one
file has the same payload size, so the records are one numpy structured array written at once.

References
----------
libpcap file format: https://wiki.wireshark.org/Development/LibpcapFileFormat (global header
magic 0xA1B2C3D4, version 2.4, link type 1 = Ethernet).
RFC 791 (IPv4 header and its checksum), RFC 768 (UDP, checksum over the pseudo-header),
RFC 1071 (computing the Internet checksum), IEEE 802.3 (Ethernet II, EtherType 0x0800).
"""

from __future__ import annotations

import numpy as np

#: libpcap global header fields (little-endian magic: readers detect the byte order from it).
PCAP_MAGIC = 0xA1B2C3D4
PCAP_VERSION = (2, 4)
PCAP_SNAPLEN = 65535
LINKTYPE_ETHERNET = 1

ETHERTYPE_IPV4 = 0x0800
IPPROTO_UDP = 17
IPV4_HEADER_BYTES = 20
UDP_HEADER_BYTES = 8
ETHERNET_HEADER_BYTES = 14
#: Time to live of the IPv4 header (a common host default; sensors do not document theirs).
IPV4_TTL = 64
#: IPv4 "don't fragment" flag: one sensor packet always fits an Ethernet frame.
IPV4_FLAG_DF = 0x4000

_GLOBAL_HEADER = np.dtype([("magic", "<u4"), ("major", "<u2"), ("minor", "<u2"), ("thiszone", "<i4"),
                           ("sigfigs", "<u4"), ("snaplen", "<u4"), ("network", "<u4")])


def _record_dtype(payload_bytes: int) -> np.dtype:
    """One pcap record: record header, Ethernet II, IPv4, UDP headers and the payload (packed)."""
    return np.dtype([
        ("ts_sec", "<u4"), ("ts_usec", "<u4"), ("incl_len", "<u4"), ("orig_len", "<u4"),
        ("eth_dst", "u1", 6), ("eth_src", "u1", 6), ("eth_type", ">u2"),
        ("ip_ver_ihl", "u1"), ("ip_tos", "u1"), ("ip_len", ">u2"), ("ip_id", ">u2"), ("ip_frag", ">u2"),
        ("ip_ttl", "u1"), ("ip_proto", "u1"), ("ip_sum", ">u2"), ("ip_src", "u1", 4), ("ip_dst", "u1", 4),
        ("udp_sport", ">u2"), ("udp_dport", ">u2"), ("udp_len", ">u2"), ("udp_sum", ">u2"),
        ("payload", "u1", payload_bytes),
    ])


def _ones_complement_fold(total) -> np.ndarray:
    """Fold a sum of 16-bit words into 16 bits with end-around carry (RFC 1071)."""
    s = np.asarray(total, dtype=np.uint64)
    for _ in range(4):                      # at most 4 folds for a 64-bit sum
        s = (s & 0xFFFF) + (s >> 16)
    return s.astype(np.uint16)


def internet_checksum(words) -> np.ndarray:
    """RFC 1071 checksum of rows of big-endian 16-bit words: ``~fold(sum)``, shape (n,)."""
    words = np.asarray(words, dtype=np.uint64)
    return (~_ones_complement_fold(words.sum(axis=-1))).astype(np.uint16)


def _ip_bytes(address: str) -> np.ndarray:
    parts = [int(p) for p in address.split(".")]
    if len(parts) != 4 or not all(0 <= p <= 255 for p in parts):
        raise ValueError(f"not an IPv4 address: {address!r}")
    return np.asarray(parts, dtype=np.uint8)


def _mac_bytes(address: str) -> np.ndarray:
    parts = [int(p, 16) for p in address.split(":")]
    if len(parts) != 6:
        raise ValueError(f"not a MAC address: {address!r}")
    return np.asarray(parts, dtype=np.uint8)


def udp_pcap_bytes(payloads, time_ns, *, src_ip: str, dst_ip: str, src_port: int, dst_port: int,
                   src_mac: str, dst_mac: str = "ff:ff:ff:ff:ff:ff") -> bytes:
    """A whole libpcap file of UDP datagrams, one per row of ``payloads``.

    Parameters
    ----------
    payloads : (n, m) uint8
        UDP payloads, all ``m`` bytes long.
    time_ns : (n,) int64
        Capture time of each packet [ns since 1970-01-01T00:00:00 UTC]; written to the record
        header rounded to the microsecond (``ts_sec``, ``ts_usec``).
    src_ip, dst_ip : str
        Dotted IPv4 addresses.
    src_port, dst_port : int
        UDP ports.
    src_mac, dst_mac : str
        Ethernet addresses, ``aa:bb:cc:dd:ee:ff`` (default destination: broadcast).

    Returns
    -------
    bytes
        Global header followed by the n records, in the order of the rows.

    Notes
    -----
    The IPv4 identification field counts the packets (mod 65536). Both checksums are filled in:
    the IPv4 header checksum over its ten words, the UDP checksum over the pseudo-header
    (source, destination, protocol, UDP length), the UDP header and the payload (padded with a
    zero byte when odd), 0 transmitted as 0xFFFF (RFC 768).
    """
    payloads = np.ascontiguousarray(payloads, dtype=np.uint8)
    if payloads.ndim != 2:
        raise ValueError(f"payloads must be (n, m) bytes, got shape {payloads.shape}")
    n, m = payloads.shape
    rec = np.zeros(n, dtype=_record_dtype(m))
    us = (np.asarray(time_ns, dtype=np.int64) + 500) // 1000
    rec["ts_sec"], rec["ts_usec"] = np.divmod(us, 1_000_000)
    frame_len = ETHERNET_HEADER_BYTES + IPV4_HEADER_BYTES + UDP_HEADER_BYTES + m
    rec["incl_len"] = rec["orig_len"] = frame_len
    rec["eth_dst"], rec["eth_src"] = _mac_bytes(dst_mac), _mac_bytes(src_mac)
    rec["eth_type"] = ETHERTYPE_IPV4
    rec["ip_ver_ihl"] = 0x45                      # version 4, header of 5 words
    rec["ip_len"] = IPV4_HEADER_BYTES + UDP_HEADER_BYTES + m
    rec["ip_id"] = np.arange(n, dtype=np.uint64) % 65536
    rec["ip_frag"] = IPV4_FLAG_DF
    rec["ip_ttl"] = IPV4_TTL
    rec["ip_proto"] = IPPROTO_UDP
    src, dst = _ip_bytes(src_ip), _ip_bytes(dst_ip)
    rec["ip_src"], rec["ip_dst"] = src, dst
    rec["udp_sport"], rec["udp_dport"] = src_port, dst_port
    rec["udp_len"] = UDP_HEADER_BYTES + m
    rec["payload"] = payloads
    raw = rec.view(np.uint8).reshape(n, rec.dtype.itemsize)
    ip0 = 16 + ETHERNET_HEADER_BYTES                 # record header + Ethernet header
    ip_words = raw[:, ip0:ip0 + IPV4_HEADER_BYTES].view(">u2")
    rec["ip_sum"] = internet_checksum(ip_words)
    udp0 = ip0 + IPV4_HEADER_BYTES
    segment = raw[:, udp0:]
    if m % 2:
        segment = np.concatenate([segment, np.zeros((n, 1), dtype=np.uint8)], axis=1)
    seg_words = np.ascontiguousarray(segment).view(">u2").astype(np.uint64).sum(axis=1)
    pseudo = np.concatenate([src, dst]).view(">u2").astype(np.uint64).sum() + IPPROTO_UDP + UDP_HEADER_BYTES + m
    udp_sum = (~_ones_complement_fold(seg_words + pseudo)).astype(np.uint16)
    rec["udp_sum"] = np.where(udp_sum == 0, 0xFFFF, udp_sum)
    header = np.zeros(1, dtype=_GLOBAL_HEADER)
    header["magic"] = PCAP_MAGIC
    header["major"], header["minor"] = PCAP_VERSION
    header["snaplen"] = PCAP_SNAPLEN
    header["network"] = LINKTYPE_ETHERNET
    return header.tobytes() + rec.tobytes()
