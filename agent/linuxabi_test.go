package agent

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
)

// The offsets and sizes below are those of HomaModule main's homa.h (see
// the Linux user API notes): each field is written with a distinct value
// and read back at its documented offset.

func TestRcvbufArgsLayout(t *testing.T) {
	b := rcvbufArgs{Start: 0x1122334455667788, Length: 64 << 20}.encode()
	if len(b) != 16 || binary.NativeEndian.Uint64(b[0:]) != 0x1122334455667788 || binary.NativeEndian.Uint64(b[8:]) != 64<<20 {
		t.Errorf("homa_rcvbuf_args = % x", b)
	}
}

func TestSendmsgArgsLayout(t *testing.T) {
	a := sendmsgArgs{ID: 0x0102030405060708, Cookie: 0x1112131415161718, Flags: 1, Reserved: 0}
	b := a.encode()
	if len(b) != 24 {
		t.Fatalf("homa_sendmsg_args is %d bytes, want 24", len(b))
	}
	if binary.NativeEndian.Uint64(b[0:]) != a.ID || binary.NativeEndian.Uint64(b[8:]) != a.Cookie ||
		binary.NativeEndian.Uint32(b[16:]) != 1 || binary.NativeEndian.Uint32(b[20:]) != 0 {
		t.Errorf("homa_sendmsg_args = % x", b)
	}
	if got := decodeSendmsgArgs(&b); got != a {
		t.Errorf("decode = %+v, want %+v", got, a)
	}
}

// TestRecvmsgArgsLayout checks struct homa_recvmsg_args of both user
// APIs, each through its ABI's encode and decode: main's is 88 bytes,
// num_bpages @16, reserved @20, bpage_offsets @24; linux_6.1.38's is 120
// bytes, flags @16 (the agent asks for requests and responses),
// num_bpages @48, _pad @52, bpage_offsets @56.
func TestRecvmsgArgsLayout(t *testing.T) {
	a := recvmsgArgs{ID: 7, Cookie: 0xAABBCCDD00112233, NumBpages: 3}
	for i := range a.BpageOffsets {
		a.BpageOffsets[i] = uint32(i+1) * homaBpageSize
	}
	for _, c := range []struct {
		name                  string
		abi                   *homaABI
		n, num, zero, offsets int
		flags                 int // offset of flags, -1: none
	}{
		{"main", abiMain, 88, 16, 20, 24, -1},
		{"linux_6.1.38", abi2024, 120, 48, 52, 56, 16},
	} {
		b := c.abi.encodeRecv(&a)
		if len(b) != c.n || c.abi.recvLen != c.n {
			t.Fatalf("%s: homa_recvmsg_args is %d bytes (recvLen %d), want %d", c.name, len(b), c.abi.recvLen, c.n)
		}
		if binary.NativeEndian.Uint64(b[0:]) != 7 || binary.NativeEndian.Uint64(b[8:]) != a.Cookie ||
			binary.NativeEndian.Uint32(b[c.num:]) != 3 || binary.NativeEndian.Uint32(b[c.zero:]) != 0 ||
			binary.NativeEndian.Uint32(b[c.offsets:]) != homaBpageSize || binary.NativeEndian.Uint32(b[c.offsets+60:]) != 16*homaBpageSize ||
			c.flags >= 0 && binary.NativeEndian.Uint32(b[c.flags:]) != homaRecvmsgRequest|homaRecvmsgResponse {
			t.Errorf("%s: homa_recvmsg_args = % x", c.name, b)
		}
		if got := c.abi.decodeRecv(b); got != a {
			t.Errorf("%s: decode = %+v, want %+v", c.name, got, a)
		}
	}
}

func TestSockaddrLayout(t *testing.T) {
	const afInet, afInet6 = 2, 10 // Linux AF_INET, AF_INET6
	for _, tc := range []struct {
		ap   string
		want []byte
	}{
		{"198.18.0.2:4000", []byte{0, 0, 0x0f, 0xa0, 198, 18, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"[fd00::2]:4000", append([]byte{0, 0, 0x0f, 0xa0, 0, 0, 0, 0, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}, 0, 0, 0, 0)},
	} {
		ap := netip.MustParseAddrPort(tc.ap)
		b := encodeSockaddr(ap, afInet, afInet6)
		fam := uint16(afInet)
		if ap.Addr().Is6() {
			fam = afInet6
		}
		binary.NativeEndian.PutUint16(tc.want, fam)
		if !bytes.Equal(b, tc.want) {
			t.Errorf("%s: % x, want % x", tc.ap, b, tc.want)
		}
		back, err := decodeSockaddr(b, afInet, afInet6)
		if err != nil || back != ap {
			t.Errorf("%s: decoded %v, %v", tc.ap, back, err)
		}
	}
	if _, err := decodeSockaddr([]byte{1, 2}, afInet, afInet6); err == nil {
		t.Error("short sockaddr accepted")
	}
}

func TestGatherMessage(t *testing.T) {
	region := make([]byte, 4*homaBpageSize)
	for i := range region {
		region[i] = byte(i / homaBpageSize)
	}
	// A 70,000-byte message in pages 2 (full) and 0 (partial).
	msg, err := gatherMessage(region, []uint32{2 * homaBpageSize, 0}, 70000)
	if err != nil || len(msg) != 70000 || msg[0] != 2 || msg[homaBpageSize-1] != 2 || msg[homaBpageSize] != 0 {
		t.Errorf("gather: len %d, err %v", len(msg), err)
	}
	if _, err := gatherMessage(region, []uint32{0}, 70000); err == nil {
		t.Error("70000 bytes in one page accepted")
	}
	if _, err := gatherMessage(region, []uint32{4 * homaBpageSize}, 10); err == nil {
		t.Error("offset beyond the region accepted")
	}
}
