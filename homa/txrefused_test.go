package homa_test

import (
	"context"
	"errors"
	"net/netip"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
)

// refusing is a transport whose first left sends the kernel refuses, as
// a full qdisc or a firewall would.
type refusing struct {
	homa.Transport
	left atomic.Int64
}

func (r *refusing) Send(dst netip.Addr, prio uint8, pkt []byte) error {
	if r.left.Add(-1) >= 0 {
		return errors.New("sendmsg: no buffer space available")
	}
	return r.Transport.Send(dst, prio, pkt)
}

// TestHostCountsRefusedSends: packets the transport refuses count in
// Stats.TxRefused (they are in Sent too: the machine sent them), and a
// RefusedError counts its N. The request's first two packets refused, the
// client's RESEND timer recovers the call.
func TestHostCountsRefusedSends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New(memnet.Config{})
		defer n.Close()
		tr := &refusing{Transport: n.Attach(netip.MustParseAddr("198.18.0.1"))}
		tr.left.Store(2)
		cli, err := homa.New(homa.Config{Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		srv, err := homa.New(homa.Config{Transport: n.Attach(netip.MustParseAddr("198.18.0.2"))})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		echoServer(t, srv, 4000)
		c, _ := cli.Dial()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := c.Call(ctx, netip.AddrPortFrom(srv.Addr(), 4000), make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
		if st := cli.Stats(); st.TxRefused != 2 {
			t.Errorf("TxRefused = %d, want 2 (sent %v)", st.TxRefused, st.Sent)
		}
		if st := srv.Stats(); st.TxRefused != 0 {
			t.Errorf("server TxRefused = %d, want 0", st.TxRefused)
		}
	})
	if got := (&homa.RefusedError{N: 3, Err: errors.New("x")}).Error(); got != "3 packet(s) refused: x" {
		t.Errorf("RefusedError = %q", got)
	}
}
