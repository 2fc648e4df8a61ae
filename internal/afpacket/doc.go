// Package afpacket reads frames from a Linux AF_PACKET socket's memory-
// mapped receive ring (Documentation/networking/packet_mmap.rst), where
// the kernel copies each frame as it passes the tap, in the softirq that
// delivers it. A plain AF_PACKET socket instead queues a clone of the
// skb, sharing its pages, and copies them only when the reader calls
// recvmsg; a sender that reuses those pages in between (HomaModule frees
// a message's DATA skbs with homa_skb_free_many_tx when its RPC is
// reaped, and takes back their pages whenever the skb itself has no
// other user, a clone that shares its data notwithstanding) leaves the
// reader a frame it cannot copy (EFAULT) or one holding other bytes.
//
// It owns homatest's AF_PACKET rings, set up, mapped (and prefaulted),
// read and unmapped one way: BlockRing (TPACKET_V3, blocks of packed
// frames handed over when full or retired) for live captures
// (pcap.OpenLive), where whole GSO frames matter and a block's wait does
// not; SlotRing (TPACKET_V2, one fixed slot per frame handed over at
// once) for the netem switch's ports, where each frame's latency is the
// link's, with the frames larger than a slot read from the socket by
// SlotRing.Read. It also opens and binds every AF_PACKET socket of
// homatest's (Open, Bind, Htons): the rings' sockets and the harness's
// gratuitous ARP.
package afpacket
