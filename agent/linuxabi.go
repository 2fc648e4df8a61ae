package agent

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// The Linux kernel's Homa socket API (HomaModule main, homa.h), as used by
// the linux agent. The structures are system-call arguments in native byte
// order, not wire data.
const (
	// ipprotoHoma is IPPROTO_HOMA: the socket protocol and the socket
	// option level.
	ipprotoHoma = 146
	// soHomaRcvbuf is SO_HOMA_RCVBUF: installs the receive buffer region
	// (struct homa_rcvbuf_args).
	soHomaRcvbuf = 10
	// soHomaServer is SO_HOMA_SERVER: an int enabling server mode.
	soHomaServer = 11
	// homaBpageSize is HOMA_BPAGE_SIZE: bytes per buffer page.
	homaBpageSize = 65536
	// homaMaxBpages is HOMA_MAX_BPAGES: buffer pages per message.
	homaMaxBpages = 16
	// rcvbufArgsLen, sendmsgArgsLen and recvmsgArgsLen are the sizes of
	// struct homa_rcvbuf_args, homa_sendmsg_args and homa_recvmsg_args.
	rcvbufArgsLen  = 16
	sendmsgArgsLen = 24
	recvmsgArgsLen = 88
	// sockaddrIn6Len is sizeof(struct sockaddr_in6); recvmsg needs a name
	// buffer at least this long.
	sockaddrIn6Len = 28
)

// The user API of HomaModule's linux_6.1.38 branch (homa.h there, last
// changed 2024): IPPROTO_HOMA was 253 (0xFD), SO_HOMA_SET_BUF (10) took a
// struct homa_set_buf_args of the same 16-byte layout as
// homa_rcvbuf_args, there was no SO_HOMA_SERVER (every bound socket gets
// requests), struct homa_sendmsg_args was id and completion_cookie alone
// (16 bytes; homa_sendmsg copies only those, the first 16 bytes of
// sendmsgArgs), and struct homa_recvmsg_args was 120 bytes with flags
// that must ask for requests and/or responses (recvmsgArgs2024).
const (
	ipprotoHoma2024 = 253
	// recvmsgArgs2024Len is sizeof(struct homa_recvmsg_args) there;
	// homa_recvmsg refuses any other msg_controllen.
	recvmsgArgs2024Len = 120
	// homaRecvmsgRequest and homaRecvmsgResponse are its
	// HOMA_RECVMSG_REQUEST and HOMA_RECVMSG_RESPONSE flags: without one,
	// homa_wait_for_message returns no message of that kind.
	homaRecvmsgRequest  = 0x01
	homaRecvmsgResponse = 0x02
)

// homaABI is one HomaModule user API the linux agent can drive.
type homaABI struct {
	// proto is IPPROTO_HOMA: the socket protocol and option level.
	proto int
	// serverOpt tells whether server sockets need SO_HOMA_SERVER.
	serverOpt bool
	// wire is the hello's wire field: the wire format of that version
	// ("" for the current one).
	wire string
	// recvLen is sizeof(struct homa_recvmsg_args); encodeRecv and
	// decodeRecv write and read it.
	recvLen    int
	encodeRecv func(a *recvmsgArgs) []byte
	decodeRecv func(b []byte) recvmsgArgs
}

// abiMain is HomaModule main's API (and linux_6.13.9's); abi2024 is
// linux_6.1.38's.
var (
	abiMain = &homaABI{proto: ipprotoHoma, serverOpt: true, recvLen: recvmsgArgsLen,
		encodeRecv: func(a *recvmsgArgs) []byte { b := a.encode(); return b[:] },
		decodeRecv: func(b []byte) recvmsgArgs { return decodeRecvmsgArgs((*[recvmsgArgsLen]byte)(b)) }}
	abi2024 = &homaABI{proto: ipprotoHoma2024, wire: "2024", recvLen: recvmsgArgs2024Len,
		encodeRecv: func(a *recvmsgArgs) []byte { b := a.encode2024(); return b[:] },
		decodeRecv: func(b []byte) recvmsgArgs { return decodeRecvmsgArgs2024((*[recvmsgArgs2024Len]byte)(b)) }}
)

// rcvbufArgs is struct homa_rcvbuf_args (16 bytes): start u64 @0 (address
// of a page-aligned region), length u64 @8 (bytes).
type rcvbufArgs struct {
	Start, Length uint64
}

func (a rcvbufArgs) encode() (b [rcvbufArgsLen]byte) {
	binary.NativeEndian.PutUint64(b[0:], a.Start)
	binary.NativeEndian.PutUint64(b[8:], a.Length)
	return b
}

// sendmsgArgs is struct homa_sendmsg_args (24 bytes), passed as msg_control
// with msg_controllen 0: id u64 @0 (in: 0 for a new request or the id of
// the request answered; out: the new request's id), completion_cookie u64
// @8, flags u32 @16 (HOMA_SENDMSG_PRIVATE = 1), reserved u32 @20 (0).
type sendmsgArgs struct {
	ID, Cookie uint64
	Flags      uint32
	Reserved   uint32
}

func (a sendmsgArgs) encode() (b [sendmsgArgsLen]byte) {
	binary.NativeEndian.PutUint64(b[0:], a.ID)
	binary.NativeEndian.PutUint64(b[8:], a.Cookie)
	binary.NativeEndian.PutUint32(b[16:], a.Flags)
	binary.NativeEndian.PutUint32(b[20:], a.Reserved)
	return b
}

func decodeSendmsgArgs(b *[sendmsgArgsLen]byte) sendmsgArgs {
	return sendmsgArgs{
		ID: binary.NativeEndian.Uint64(b[0:]), Cookie: binary.NativeEndian.Uint64(b[8:]),
		Flags: binary.NativeEndian.Uint32(b[16:]), Reserved: binary.NativeEndian.Uint32(b[20:]),
	}
}

// recvmsgArgs is struct homa_recvmsg_args (88 bytes; msg_controllen must be
// exactly 88): id u64 @0 (in: 0 = any message; out: the id received, odd for
// a request), completion_cookie u64 @8 (out), num_bpages u32 @16 (in: pages
// handed back; out: pages of this message), reserved u32 @20 (0),
// bpage_offsets[16] u32 @24 (offsets into the buffer region).
type recvmsgArgs struct {
	ID, Cookie   uint64
	NumBpages    uint32
	Reserved     uint32
	BpageOffsets [homaMaxBpages]uint32
}

func (a *recvmsgArgs) encode() (b [recvmsgArgsLen]byte) {
	binary.NativeEndian.PutUint64(b[0:], a.ID)
	binary.NativeEndian.PutUint64(b[8:], a.Cookie)
	binary.NativeEndian.PutUint32(b[16:], a.NumBpages)
	binary.NativeEndian.PutUint32(b[20:], a.Reserved)
	for i, off := range a.BpageOffsets {
		binary.NativeEndian.PutUint32(b[24+4*i:], off)
	}
	return b
}

func decodeRecvmsgArgs(b *[recvmsgArgsLen]byte) recvmsgArgs {
	a := recvmsgArgs{
		ID: binary.NativeEndian.Uint64(b[0:]), Cookie: binary.NativeEndian.Uint64(b[8:]),
		NumBpages: binary.NativeEndian.Uint32(b[16:]), Reserved: binary.NativeEndian.Uint32(b[20:]),
	}
	for i := range a.BpageOffsets {
		a.BpageOffsets[i] = binary.NativeEndian.Uint32(b[24+4*i:])
	}
	return a
}

// encode2024 writes a as linux_6.1.38's struct homa_recvmsg_args (120
// bytes): id u64 @0, completion_cookie u64 @8, flags u32 @16 (here always
// HOMA_RECVMSG_REQUEST|HOMA_RECVMSG_RESPONSE: the agent takes whatever
// comes), peer_addr @20 (a 28-byte sockaddr_in_union the kernel fills),
// num_bpages u32 @48, _pad u32 @52 (must be 0), bpage_offsets[16] u32
// @56. Reserved is not in that layout.
func (a *recvmsgArgs) encode2024() (b [recvmsgArgs2024Len]byte) {
	binary.NativeEndian.PutUint64(b[0:], a.ID)
	binary.NativeEndian.PutUint64(b[8:], a.Cookie)
	binary.NativeEndian.PutUint32(b[16:], homaRecvmsgRequest|homaRecvmsgResponse)
	binary.NativeEndian.PutUint32(b[48:], a.NumBpages)
	for i, off := range a.BpageOffsets {
		binary.NativeEndian.PutUint32(b[56+4*i:], off)
	}
	return b
}

// decodeRecvmsgArgs2024 reads what encode2024 writes (flags and
// peer_addr are left out: the agent reads the peer from msg_name).
func decodeRecvmsgArgs2024(b *[recvmsgArgs2024Len]byte) recvmsgArgs {
	a := recvmsgArgs{ID: binary.NativeEndian.Uint64(b[0:]), Cookie: binary.NativeEndian.Uint64(b[8:]),
		NumBpages: binary.NativeEndian.Uint32(b[48:])}
	for i := range a.BpageOffsets {
		a.BpageOffsets[i] = binary.NativeEndian.Uint32(b[56+4*i:])
	}
	return a
}

// gatherMessage copies a received message of n bytes out of the buffer
// region: page i starts at offs[i]; every page but the last is a full
// homaBpageSize. Errors: more pages than homaMaxBpages or too few for n,
// or an offset outside the region.
func gatherMessage(region []byte, offs []uint32, n int) ([]byte, error) {
	if n < 0 || len(offs) > homaMaxBpages || len(offs)*homaBpageSize < n {
		return nil, fmt.Errorf("linux: message of %d bytes in %d buffer pages", n, len(offs))
	}
	out := make([]byte, n)
	for i, off := range offs {
		chunk := min(homaBpageSize, n-i*homaBpageSize)
		if chunk <= 0 {
			break
		}
		if int(off)+chunk > len(region) {
			return nil, fmt.Errorf("linux: buffer page offset %d + %d beyond the %d-byte region", off, chunk, len(region))
		}
		copy(out[i*homaBpageSize:], region[off:int(off)+chunk])
	}
	return out, nil
}

// encodeSockaddr returns struct sockaddr_in (16 bytes: family u16 native
// @0, port u16 big-endian @2, address @4) or sockaddr_in6 (28 bytes:
// family @0, port @2, flowinfo @4, address @8, scope id @24) for ap.
// family is AF_INET or AF_INET6 of the running system.
func encodeSockaddr(ap netip.AddrPort, afInet, afInet6 uint16) []byte {
	a := ap.Addr().Unmap()
	if a.Is4() {
		b := make([]byte, 16)
		binary.NativeEndian.PutUint16(b[0:], afInet)
		binary.BigEndian.PutUint16(b[2:], ap.Port())
		v4 := a.As4()
		copy(b[4:], v4[:])
		return b
	}
	b := make([]byte, sockaddrIn6Len)
	binary.NativeEndian.PutUint16(b[0:], afInet6)
	binary.BigEndian.PutUint16(b[2:], ap.Port())
	v6 := a.As16()
	copy(b[8:], v6[:])
	return b
}

// decodeSockaddr reads a sockaddr_in or sockaddr_in6 written by the kernel.
// Errors: too short, or another family.
func decodeSockaddr(b []byte, afInet, afInet6 uint16) (netip.AddrPort, error) {
	if len(b) < 4 {
		return netip.AddrPort{}, fmt.Errorf("linux: sockaddr of %d bytes", len(b))
	}
	fam, port := binary.NativeEndian.Uint16(b[0:]), binary.BigEndian.Uint16(b[2:])
	switch {
	case fam == afInet && len(b) >= 8:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port), nil
	case fam == afInet6 && len(b) >= 24:
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), port), nil
	}
	return netip.AddrPort{}, fmt.Errorf("linux: sockaddr family %d in %d bytes", fam, len(b))
}
