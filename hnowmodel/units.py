"""Units of the wire shared by the model's users: what an Ethernet frame carries.

>>> round(FRAMING, 4)
1.0456
"""

from __future__ import annotations

__all__ = ["ETHERNET_FRAME_BYTES", "TCP_PAYLOAD_BYTES", "FRAMING"]

#: Bytes of one full Ethernet frame at MTU 1500 (1500 B of IP packet + 14 B of Ethernet header; what a shaper
#: such as ``tc tbf`` counts).
ETHERNET_FRAME_BYTES = 1514
#: TCP payload bytes in one such frame (1500 − 20 B IP − 20 B TCP − 12 B of TCP timestamps).
TCP_PAYLOAD_BYTES = 1448
#: Line bytes per TCP payload byte at MTU 1500: Ethernet frames of 1514 B carry 1448 B of TCP payload, so a link
#: shaped at ``R`` bit/s moves ``R / FRAMING`` bit/s of payload.
FRAMING = ETHERNET_FRAME_BYTES / TCP_PAYLOAD_BYTES
