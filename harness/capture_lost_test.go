package harness

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCaptureLostKeepsSpools: when capture.pcapng cannot be written (a
// spool record whose length field is garbage, as a 75-minute lab pass
// met), Stop says the capture is lost and where its spools are kept, and
// Topology.Close (discard) leaves them there for diagnosis.
func TestCaptureLostKeepsSpools(t *testing.T) {
	c, arts := oneHostCapture(t)
	now := time.Now()
	s := &stream{port: "p1", dir: DirIn, done: make(chan struct{}), live: &stampedLive{ts: []time.Time{now.Add(-2 * time.Second)}, wake: make(chan struct{})}}
	s.target.Store(-1)
	var err error
	if s.spool, err = newSpool(arts, ".capture-p1-in.spool"); err != nil {
		t.Fatal(err)
	}
	var h [spoolHeader]byte
	binary.LittleEndian.PutUint32(h[12:], 2238199654) // a torn record
	s.spool.w.Write(h[:])
	c.streams = append(c.streams, s)
	go s.run()
	startFakeStream(t, c, 0, DirOut, &stampedLive{ts: []time.Time{now.Add(-time.Second)}, wake: make(chan struct{})})
	_, err = c.Stop()
	c.discard()
	if err == nil || !strings.Contains(err.Error(), "capture.pcapng lost") || !strings.Contains(err.Error(), "record of 2238199654 bytes") ||
		!strings.Contains(err.Error(), "2 spools are kept") || !strings.Contains(err.Error(), arts.Dir) {
		t.Fatalf("Stop: %v; want the capture lost, the reason and where its 2 spools are kept", err)
	}
	if _, err := os.Stat(arts.Path("capture.pcapng")); !os.IsNotExist(err) {
		t.Errorf("capture.pcapng: %v; want none", err)
	}
	kept, _ := filepath.Glob(arts.Path(KeptSpoolPrefix + "*.spool"))
	temp, _ := filepath.Glob(arts.Path(".capture-*.spool"))
	if len(kept) != 2 || len(temp) != 0 {
		t.Errorf("after Close: kept %v, temporary %v; want 2 kept, no temporary spool", kept, temp)
	}
	if fi, err := os.Stat(arts.Path(KeptSpoolPrefix + "p1-in.spool")); err != nil || fi.Size() != 16+spoolHeader+3 {
		t.Errorf("kept in-spool: %v, %v; want the corrupt record and the frame (35 bytes)", fi, err)
	}
}

// TestMoveFileAcrossFileSystems: a spool kept from os.TempDir (newSpool on
// a 9p run folder) is copied into the run folder when rename cannot.
func TestMoveFileAcrossFileSystems(t *testing.T) {
	var a, b syscall.Statfs_t
	dst := t.TempDir()
	if syscall.Statfs("/dev/shm", &a) != nil || syscall.Statfs(dst, &b) != nil || a.Fsid == b.Fsid {
		t.Skip("no /dev/shm on another file system than", dst)
	}
	src, err := os.CreateTemp("/dev/shm", "homatest-move-*")
	if err != nil {
		t.Skip(err)
	}
	defer os.Remove(src.Name())
	src.WriteString("frames")
	src.Close()
	to := filepath.Join(dst, "kept.spool")
	if err := moveFile(src.Name(), to); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(to)
	if _, serr := os.Stat(src.Name()); string(got) != "frames" || err != nil || !os.IsNotExist(serr) {
		t.Errorf("moved %q (%v), source %v; want \"frames\" and the source gone", got, err, serr)
	}
}
