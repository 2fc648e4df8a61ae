package homa

import "testing"

func TestParamsForLink(t *testing.T) {
	for _, c := range []struct {
		bps               int64
		unsched, incoming int
	}{
		{100e9, 60000, 1600000},
		{25e9, 60000, 480000},
		{10e9, 30000, 400000},
		{1e9, 3000, 40000},
		{100e6, 1424, 11392}, // floors: one packet, eight packets
	} {
		p := ParamsForLink(c.bps)
		if p.UnschedBytes != c.unsched || p.MaxIncoming != c.incoming || p.LinkRate != c.bps {
			t.Errorf("%d bit/s: unsched %d incoming %d rate %d, want %d %d %d", c.bps, p.UnschedBytes, p.MaxIncoming, p.LinkRate, c.unsched, c.incoming, c.bps)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%d bit/s: %v", c.bps, err)
		}
	}
	p25 := ParamsForLink(25e9)
	if iv := p25.fifoInterval(); iv.Microseconds() != 320 {
		t.Errorf("FIFO interval at 25 Gbit/s %v, want 320µs", iv)
	}
}
