package pcap

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// TestReorder: frames at 1, 3, 2, 4, 30 and 5 ms in file order. Stats
// count the two that lie back (frame 3, 1 ms; frame 6, 25 ms), the first
// and the furthest. With Reorder 1 ms the events come in timestamp order
// within that window, keeping their frame numbers (1 3 2 4), and frame
// 6, further back than the window, comes as it is read: before frame 5,
// still held. Without Reorder they come in file order.
func TestReorder(t *testing.T) {
	grant := buildFrame(t, FrameSpec{Src: addrB, Dst: addrA, Priority: 7}, sampleFields()[1], wire.EncodeOptions{FixLengths: true, SetMarks: true})
	var recs []rec
	for _, ms := range []int{1, 3, 2, 4, 30, 5} {
		recs = append(recs, rec{time.Unix(1, 0).Add(time.Duration(ms) * time.Millisecond), grant, len(grant)})
	}
	capture := classicPcapOf(t, 65535, recs...)
	for _, tc := range []struct {
		reorder time.Duration
		want    []int
	}{
		{0, []int{1, 2, 3, 4, 5, 6}},
		{time.Millisecond, []int{1, 3, 2, 4, 6, 5}},
	} {
		r, err := NewReader(bytes.NewReader(capture), ReaderOptions{Reorder: tc.reorder})
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		if err := r.EachEvent(func(e *spec.Event) {
			if e.Err != nil || e.Type() != wire.TypeGrant {
				t.Errorf("frame %d: %v %v", e.Frame, e.Type(), e.Err)
			}
			got = append(got, e.Frame)
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("reorder %v: frames %v, want %v", tc.reorder, got, tc.want)
		}
		if st := r.Stats(); st.Backwards != 2 || st.BackwardsFrame != 3 || st.BackwardsMax != 25*time.Millisecond {
			t.Errorf("reorder %v: backwards %d first %d max %v, want 2 3 25ms", tc.reorder, st.Backwards, st.BackwardsFrame, st.BackwardsMax)
		}
	}
}
