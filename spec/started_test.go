package spec

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestStartedElsewhere: a port's view of a capture whose request's offset
// 0 was lost on its way to the server's port sees the RPC first at a
// later segment; the capture saw it start at the client's port
// (StartedRPCs), so the view holds the RPC's history (RPC.SeenFromStart)
// and its findings are not put down to an RPC started before the
// capture. Without the whole capture's starts, or with a start after the
// view's first packet, it does not.
func TestStartedElsewhere(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.after(time.Millisecond)
	b.data(true, 2, 3000, 0, 1424, 7, nil)
	b.after(20*time.Microsecond).data(true, 2, 3000, 1424, 1424, 7, nil)
	view := b.events[1:] // the server's port: offset 0 never arrived
	prof, err := LookupProfile("linux")
	if err != nil {
		t.Fatal(err)
	}
	later := map[RPCKey]time.Time{KeyOf(&view[0]): view[0].Time.Add(time.Microsecond)}
	for _, tc := range []struct {
		name    string
		started map[RPCKey]time.Time
		want    bool
	}{{"view-alone", nil, false}, {"whole-capture", StartedRPCs(b.events), true}, {"start-after-the-view's-first", later, false}} {
		j := Judge{Profile: "linux", Params: prof.Params, Started: tc.started}
		c := j.Stream(HostPoint(b.server))
		for i := range view {
			c.Feed(&view[i])
		}
		r := c.trace.rpcs[KeyOf(&view[0])]
		if r == nil || r.SeenFromStart != tc.want {
			t.Errorf("%s: RPC %+v, want SeenFromStart %v", tc.name, r, tc.want)
		}
		if ev, ok := c.startedBefore(true, &r.Key, nil); ok == tc.want {
			t.Errorf("%s: startedBefore %v %v, want %v", tc.name, ev, ok, !tc.want)
		}
	}
}
