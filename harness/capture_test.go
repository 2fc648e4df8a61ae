package harness

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/internal/nsexec"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"
)

// TestCapture sends N Homa NEED_ACK packets (distinct sender_ids) from h1
// to h2 over raw IP sockets and checks the merged pcapng: each packet
// exactly once inbound on p1(h1) and once outbound on p2(h2), nothing on
// p3(h3), time-ordered, no kernel drops; the one-direction files hold one
// view of each packet.
func TestCapture(t *testing.T) {
	requireRoot(t)
	topo := build(t, Config{Hosts: 3})
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	const n = 200
	var rx, tx net.PacketConn
	if err := h2.Do(func() (err error) { rx, err = net.ListenPacket("ip4:146", "0.0.0.0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	if err := h1.Do(func() (err error) { tx, err = net.ListenPacket("ip4:146", "0.0.0.0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	c, err := topo.StartCapture(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	id := func(i int) uint64 { return uint64(1000 + 2*i) }
	for i := 0; i < n; i++ {
		b, err := wire.Encode(&wire.NeedAckFields{Common: wire.CommonFields{SenderID: id(i)}}, wire.EncodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.WriteTo(b, &net.IPAddr{IP: h2.Addr4.AsSlice()}); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 2048)
	for got := 0; got < n; got++ {
		rx.SetReadDeadline(time.Now().Add(scaled(5 * time.Second)))
		if _, _, err := rx.ReadFrom(buf); err != nil {
			t.Fatalf("h2 received %d of %d packets: %v", got, n, err)
		}
	}
	st, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("capture stats: %+v", st)
	if st.KernelDrops != 0 {
		t.Errorf("kernel dropped %d frames", st.KernelDrops)
	}
	if st.Ports[0].In < n || st.Ports[1].Out < n || st.Captured < 2*n {
		t.Errorf("counts %+v: want ≥ %d in on p1, out on p2", st, n)
	}
	for _, f := range []struct {
		name string
		dir  Direction
	}{{"in.pcapng", DirIn}, {"out.pcapng", DirOut}} {
		if err := c.WriteFile(f.name, f.dir); err != nil {
			t.Fatal(err)
		}
	}

	type seen struct{ in, out, other int }
	read := func(name string) (map[uint64]*seen, int) {
		r, err := pcap.Open(topo.Artifacts.Path(name), pcap.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		m := map[uint64]*seen{}
		var last time.Time
		frames := 0
		for {
			f, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil || f.Err != nil {
				t.Fatalf("%s: %v %v", name, err, f.Err)
			}
			frames++
			if f.Time.Before(last) {
				t.Errorf("%s frame %d at %v before the previous one (%v)", name, f.Number, f.Time, last)
			}
			last = f.Time
			s := m[f.Packet.SenderID()]
			if s == nil {
				s = &seen{}
				m[f.Packet.SenderID()] = s
			}
			switch iface := r.InterfaceName(f.Interface); {
			case iface == "p1(h1)" && f.Direction == pcap.DirInbound:
				s.in++
			case iface == "p2(h2)" && f.Direction == pcap.DirOutbound:
				s.out++
			default:
				s.other++
				t.Errorf("%s: sender_id %d on %s %v", name, f.Packet.SenderID(), iface, f.Direction)
			}
		}
		return m, frames
	}
	for _, c := range []struct {
		name    string
		in, out int
	}{{"capture.pcapng", 1, 1}, {"in.pcapng", 1, 0}, {"out.pcapng", 0, 1}} {
		m, frames := read(c.name)
		if want := n * (c.in + c.out); frames != want {
			t.Errorf("%s: %d Homa frames, want %d", c.name, frames, want)
		}
		for i := 0; i < n; i++ {
			s := m[id(i)]
			if s == nil || s.in != c.in || s.out != c.out {
				t.Errorf("%s: sender_id %d seen %+v, want in %d out %d", c.name, id(i), s, c.in, c.out)
			}
		}
	}
	// Close removes the spool files; the artifacts stay.
	if err := topo.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteFile("late.pcapng", DirBoth); err == nil {
		t.Error("WriteFile after Close succeeded")
	}
	ents, _ := os.ReadDir(topo.Artifacts.Dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{"capture.pcapng", "in.pcapng", "out.pcapng", "topology.json"}; !slices.Equal(names, want) {
		t.Errorf("run folder holds %v, want %v", names, want)
	}
}

// TestCaptureAnnotations: an annotation lands in the two-direction file
// only, on its port, with its direction and comment.
func TestCaptureAnnotations(t *testing.T) {
	requireRoot(t)
	topo := build(t, Config{Hosts: 2})
	c, err := topo.StartCapture(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	fr, err := pcap.BuildFrame(gopacket.NewSerializeBuffer(), pcap.FrameSpec{SrcMAC: h1.MAC, DstMAC: h2.MAC, Src: h1.Addr4, Dst: h2.Addr4},
		&wire.NeedAckFields{Common: wire.CommonFields{SenderID: 42}}, wire.EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const note = "dropped by netem: fault plan rule 1"
	c.Annotate(Annotation{Time: time.Now(), Host: 2, Dir: DirOut, Frame: fr, Comment: note})
	if _, err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteFile("out.pcapng", DirOut); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(topo.Artifacts.Path("capture.pcapng"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ng, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for {
		data, ci, opts, err := ng.ReadPacketDataWithOptions()
		if err != nil {
			break
		}
		if len(opts.Comments) == 1 && opts.Comments[0] == note {
			found++
			if ci.InterfaceIndex != 1 || opts.Flags == nil || opts.Flags.Direction != pcapgo.NgEpbFlagDirectionOutbound || !bytes.Equal(data, fr) {
				t.Errorf("annotation on interface %d flags %+v, frame equal %v; want interface 1 outbound, same frame", ci.InterfaceIndex, opts.Flags, bytes.Equal(data, fr))
			}
		}
	}
	if found != 1 {
		t.Errorf("annotation found %d times in capture.pcapng, want 1", found)
	}
	r, err := pcap.Open(topo.Artifacts.Path("out.pcapng"), pcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		t.Errorf("out.pcapng holds Homa frame %d (sender_id %d); annotations belong only in the two-direction file", f.Number, f.Packet.SenderID())
	}
}

// TestLiveBytesAtTap: a live capture records a frame's bytes as they
// passed the switch port, not as they are when its reader gets to them.
// h1 sends a UDP datagram with sendfile, so the skb refers to the file's
// page-cache page; h2 receives it, then the file is rewritten in place
// and only then is the capture read. A socket read with recvmsg copies
// from a clone of the skb that shares the page, and got the rewritten
// bytes (as it got EFAULT where HomaModule took back the pages of a
// reaped RPC's DATA skbs under such a clone); the ring copied the frame
// at the tap.
func TestLiveBytesAtTap(t *testing.T) {
	requireRoot(t)
	topo := build(t, Config{Hosts: 2})
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	var live *pcap.Live
	if err := nsexec.Do(topo.Switch, func() (err error) {
		live, err = pcap.OpenLive(topo.Ports[0], pcap.LiveOptions{Direction: pcap.DirInbound})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	sent, later := bytes.Repeat([]byte("A"), 1000), bytes.Repeat([]byte("B"), 1000)
	path := filepath.Join(t.TempDir(), "payload")
	if err := os.WriteFile(path, sent, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const port = 9999
	var rx *net.UDPConn
	if err := h2.Do(func() (err error) {
		rx, err = net.ListenUDP("udp4", &net.UDPAddr{Port: port})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	if err := h1.Do(func() error {
		c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: h2.Addr4.AsSlice(), Port: port})
		if err != nil {
			return err
		}
		defer c.Close()
		rc, err := c.SyscallConn()
		if err != nil {
			return err
		}
		var n int
		var serr error
		if err := rc.Write(func(fd uintptr) bool {
			off := int64(0)
			n, serr = unix.Sendfile(int(fd), int(f.Fd()), &off, len(sent))
			return serr != unix.EAGAIN
		}); err != nil {
			return err
		}
		if serr == nil && n != len(sent) {
			serr = fmt.Errorf("sendfile sent %d of %d bytes", n, len(sent))
		}
		return serr
	}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	rx.SetReadDeadline(time.Now().Add(scaled(5 * time.Second)))
	n, err := rx.Read(buf)
	if err != nil || !bytes.Equal(buf[:n], sent) {
		t.Fatalf("h2 received %d bytes (%v), want the %d sent", n, err, len(sent))
	}
	if _, err := f.WriteAt(later, 0); err != nil {
		t.Fatal(err)
	}
	live.SetReadDeadline(time.Now().Add(scaled(5 * time.Second)))
	for {
		data, _, _, err := live.ReadFrame()
		if err != nil {
			t.Fatalf("no UDP frame to port %d in the capture: %v", port, err)
		}
		if len(data) < 34 || binary.BigEndian.Uint16(data[12:]) != 0x0800 || data[23] != unix.IPPROTO_UDP {
			continue
		}
		udp := data[14+int(data[14]&0x0f)*4:]
		if binary.BigEndian.Uint16(udp[2:]) != port {
			continue
		}
		if got := udp[8:]; !bytes.Equal(got, sent) {
			t.Fatalf("the capture holds %d payload bytes %.8q..., want the %d bytes sent (%.8q...)", len(got), got, len(sent), sent)
		}
		return
	}
}
