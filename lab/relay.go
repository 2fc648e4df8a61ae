package lab

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The command's stdout and stderr reach the host as files in a folder of
// the host's shared with the guest over 9p (outputTag, mounted at
// outputDir): a 9p write returns once QEMU has written the host's file, so
// no byte is dropped however slowly the host reads. They used to come over
// virtconsole devices (hvc0, hvc1), where QEMU drops what its chardev
// cannot take at once (virtio-console.c's flush_buf: a console port is
// never throttled) and the guest's tty turned "\n" into "\r\n": a slow
// reader of `lab -o json` lost bytes mid-document, with exit 0. After the
// command the init prints each file's size and SHA-256 on the control
// port (markOutput), and Run checks them against what it relayed.
const (
	outputTag = "labout"
	outputDir = "/lab/out"
	// markOutput starts the init's sums of one output file: "NAME BYTES
	// SHA256" (NAME stdout or stderr).
	markOutput = "homatest-lab: output "
	// relayPoll is how often a relay looks for bytes the guest appended.
	relayPoll = 50 * time.Millisecond
)

// outputNames are the command's output files in outputDir, in the order
// of Config.Stdout and Config.Stderr.
var outputNames = [...]string{"stdout", "stderr"}

// outputSum is what the guest says it wrote to one output file.
type outputSum struct {
	size int64
	sha  string // hex SHA-256
}

// parseOutputSum parses the text after markOutput: NAME BYTES SHA256.
func parseOutputSum(s string) (name string, sum outputSum, ok bool) {
	f := strings.Fields(s)
	if len(f) != 3 || len(f[2]) != 2*sha256.Size {
		return "", sum, false
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || n < 0 {
		return "", sum, false
	}
	if _, err := hex.DecodeString(f[2]); err != nil {
		return "", sum, false
	}
	return f[0], outputSum{size: n, sha: strings.ToLower(f[2])}, true
}

// relay copies a file the guest writes (over 9p) to w as it grows,
// counting and hashing what it copied.
type relay struct {
	path string
	w    io.Writer
	wmu  *sync.Mutex // held for each write to w: Stdout and Stderr may be one writer
	n    int64
	h    hash.Hash
	err  error // the first error reading path or writing w
}

func newRelay(path string, w io.Writer, wmu *sync.Mutex) *relay {
	return &relay{path: path, w: w, wmu: wmu, h: sha256.New()}
}

// run copies path to w until done is closed, then copies what is left
// (the guest has stopped writing) and returns.
func (r *relay) run(done <-chan struct{}) {
	f, err := os.Open(r.path)
	if err != nil {
		r.err = err
		return
	}
	defer f.Close()
	tick := time.NewTicker(relayPoll)
	defer tick.Stop()
	buf := make([]byte, 256<<10)
	for last := false; ; {
		for {
			n, err := f.Read(buf)
			if n > 0 {
				r.h.Write(buf[:n])
				r.n += int64(n)
				r.wmu.Lock()
				_, werr := r.w.Write(buf[:n])
				r.wmu.Unlock()
				if werr != nil {
					r.err = werr
					return
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				r.err = err
				return
			}
		}
		if last {
			return
		}
		select {
		case <-done:
			last = true
		case <-tick.C:
		}
	}
}

// check compares what r relayed with what the guest wrote: an error names
// the stream and both sizes.
func (r *relay) check(name string, want outputSum, ok bool) error {
	got := hex.EncodeToString(r.h.Sum(nil))
	switch {
	case r.err != nil:
		return fmt.Errorf("lab: COMMAND's %s was not relayed whole: %v after %d of its bytes", name, r.err, r.n)
	case !ok:
		return fmt.Errorf("lab: the guest never said how much COMMAND wrote to its %s (its sums on the control port did not come; the host relayed %d bytes): see --console", name, r.n)
	case want.size != r.n || want.sha != got:
		return fmt.Errorf("lab: COMMAND's %s came corrupted: the guest wrote %d bytes (sha256 %.12s), the host relayed %d (sha256 %.12s)", name, want.size, want.sha, r.n, got)
	}
	return nil
}
