package netem

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/homatest/homatest/pcap"
)

// recorder writes what the switch forwarded and dropped as pcapng, one
// pcapng interface per switch port (in port order), with a comment on each
// dropped or altered frame.
type recorder struct {
	w    *pcap.Writer
	file *pcap.FileWriter
	err  error // first write error; recording stops there
}

func newRecorder(w io.Writer, path string, ports []Port) (*recorder, error) {
	if w == nil && path == "" {
		return nil, nil
	}
	ifaces := make([]pcap.Interface, len(ports))
	for i, p := range ports {
		ifaces[i] = pcap.Interface{Name: p.Name, Description: "netem switch port " + p.Name + " (egress)"}
	}
	if path != "" {
		f, err := pcap.Create(path, ifaces...)
		if err != nil {
			return nil, fmt.Errorf("netem: record: %w", err)
		}
		return &recorder{w: f.Writer, file: f}, nil
	}
	pw, err := pcap.NewWriter(w, ifaces...)
	if err != nil {
		return nil, fmt.Errorf("netem: record: %w", err)
	}
	return &recorder{w: pw}, nil
}

// forwarded records frame f sent on port at ts.
func (r *recorder) forwarded(port int, ts time.Time, f *Frame) {
	r.write(port, ts, f.Data, f.Comment)
}

// dropped records frame f dropped on its way to port.
func (r *recorder) dropped(port int, ts time.Time, f *Frame, reason DropReason, detail string) {
	r.write(port, ts, f.Data, DropNote(f, reason, detail))
}

// DropNote is the comment a switch record gives frame f dropped for
// reason with detail (Core.OnDrop's arguments): "dropped: plan (plan rule
// 0 (name))", followed by what the switch did to the frame before, if
// anything ("; duplicate").
func DropNote(f *Frame, reason DropReason, detail string) string {
	c := "dropped: " + reason.String()
	if detail != "" {
		c += " (" + detail + ")"
	}
	if f.Comment != "" {
		c += "; " + f.Comment
	}
	return c
}

func (r *recorder) write(port int, ts time.Time, data []byte, comment string) {
	if r == nil || r.err != nil {
		return
	}
	r.err = r.w.WritePacket(port, ts, data, len(data), comment)
}

// close flushes (and closes the file) and returns the first error.
func (r *recorder) close() error {
	if r == nil {
		return nil
	}
	var err error
	if r.file != nil {
		err = r.file.Close()
	} else {
		err = r.w.Flush()
	}
	if e := errors.Join(r.err, err); e != nil {
		return fmt.Errorf("netem: record: %w", e)
	}
	return nil
}
