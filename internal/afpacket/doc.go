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
package afpacket
