package pcap

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/spec"
)

// TestConcatenatedCaptures: `cat a.pcap a.pcap` is read up to the end of
// the first capture, and the error says a second capture's header
// follows its last frame (classic pcap holds one capture), not that the
// file is damaged after a frame that does not exist. (Two pcapngs are
// two sections, both read: TestSectionComments.)
func TestConcatenatedCaptures(t *testing.T) {
	pcapFile := "testdata/real/linux-6.13-proto146/a-small-rpcs.pcap"
	one, err := os.ReadFile(pcapFile)
	if err != nil {
		t.Fatal(err)
	}
	st1, err := StreamPath(pcapFile, ReaderOptions{}, func(*spec.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	two := filepath.Join(dir, "two.pcap")
	if err := os.WriteFile(two, append(append([]byte{}, one...), one...), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := StreamPath(two, ReaderOptions{}, func(*spec.Event) {})
	var d *DamagedError
	if !errors.As(err, &d) || !errors.Is(err, ErrConcatenated) || d.Frames != st1.Frames || st.Frames != st1.Frames {
		t.Fatalf("cat a.pcap a.pcap: %v (frames %d), want ErrConcatenated after frame %d", err, st.Frames, st1.Frames)
	}
	if msg := err.Error(); !strings.Contains(msg, "concatenated") || strings.Contains(msg, "damaged") || strings.Contains(msg, "\n") {
		t.Errorf("message %q: want one line naming the concatenation, not damage", msg)
	}
	// A classic pcap, then a pcapng's section header block (little-endian,
	// 28 bytes, no options).
	shb := []byte{0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 28, 0, 0, 0}
	mixed := filepath.Join(dir, "mixed")
	if err := os.WriteFile(mixed, append(append([]byte{}, one...), shb...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := StreamPath(mixed, ReaderOptions{}, func(*spec.Event) {}); !errors.Is(err, ErrConcatenated) {
		t.Errorf("pcap then pcapng: %v, want ErrConcatenated", err)
	}
}

// TestReaderContext: a Reader whose context has ended stops within
// ctxFrames frames of a regular file (the read of a capture of millions
// of frames ends at once on SIGINT), with the context's error.
func TestReaderContext(t *testing.T) {
	src, err := Open("testdata/real/linux-6.13-proto146/a-small-rpcs.pcap", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	var cis []gopacket.CaptureInfo
	for {
		data, ci, err := src.src.ZeroCopyReadPacketData()
		if err != nil {
			break
		}
		frames, cis = append(frames, append([]byte(nil), data...)), append(cis, ci)
	}
	src.Close()
	path := filepath.Join(t.TempDir(), "big.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(f)
	w.WriteFileHeader(65535, layers.LinkTypeEthernet)
	total := 0
	for total < 4*ctxFrames {
		for i := range frames {
			w.WritePacket(cis[i], frames[i])
			total++
		}
	}
	f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := Open(path, ReaderOptions{Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		_, err := r.Next()
		if err == nil {
			continue
		}
		if !errors.Is(err, context.Canceled) || r.Stats().Frames >= ctxFrames {
			t.Fatalf("after %d of %d frames: %v, want context.Canceled within %d frames", r.Stats().Frames, total, err, ctxFrames)
		}
		break
	}
}
