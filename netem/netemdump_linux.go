package netem

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/internal/nsexec"
)

// netemQdiscs dumps the netem qdiscs of interface ifindex in ns with their
// raw options (vishvananda/netlink keeps only the 32-bit tick values and
// drops the 64-bit delay, jitter and the loss model).
func netemQdiscs(ns netns.NsHandle, ifindex int) ([]NetemQdisc, error) {
	var out []NetemQdisc
	tickNS := 1000 / netlink.TickInUsec()
	err := nsexec.Do(ns, func() error {
		req := nl.NewNetlinkRequest(unix.RTM_GETQDISC, unix.NLM_F_DUMP)
		req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(ifindex)})
		msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWQDISC)
		if err != nil {
			return fmt.Errorf("netem: dump qdiscs: %w", err)
		}
		for _, m := range msgs {
			if len(m) < nl.SizeofTcMsg {
				continue
			}
			tm := nl.DeserializeTcMsg(m)
			if int(tm.Ifindex) != ifindex {
				continue
			}
			var kind string
			var opts []byte
			for _, a := range parseTLVs(m[nl.SizeofTcMsg:]) {
				switch a.typ {
				case nl.TCA_KIND:
					kind = string(trimNUL(a.val))
				case nl.TCA_OPTIONS:
					opts = a.val
				}
			}
			if kind != "netem" {
				continue
			}
			q, err := ParseNetemOptions(opts, tickNS)
			if err != nil {
				return err
			}
			q.Handle, q.Parent = tcHandle(tm.Handle), tcHandle(tm.Parent)
			out = append(out, q)
		}
		return nil
	})
	return out, err
}

// tcHandle prints a qdisc handle as tc does: "root", "10:" (minor 0) or
// "1:10" (hex).
func tcHandle(h uint32) string {
	switch {
	case h == netlink.HANDLE_ROOT:
		return "root"
	case h&0xffff == 0:
		return fmt.Sprintf("%x:", h>>16)
	}
	return fmt.Sprintf("%x:%x", h>>16, h&0xffff)
}

func trimNUL(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}
