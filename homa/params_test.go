package homa

import "testing"

func TestParamsForLink(t *testing.T) {
	for _, c := range []struct {
		bps                     int64
		unsched, incoming, fifo int
	}{
		{100e9, 60000, 1600000, 50000},
		{25e9, 60000, 480000, 50000},
		{10e9, 30000, 400000, 50000},
		{1e9, 3000, 40000, 5000},
		{100e6, 1424, 11392, 1424}, // floors: one packet, eight packets, one packet
	} {
		p := ParamsForLink(c.bps)
		if p.UnschedBytes != c.unsched || p.MaxIncoming != c.incoming || p.LinkRate != c.bps || p.FIFOGrantIncrement != c.fifo {
			t.Errorf("%d bit/s: unsched %d incoming %d rate %d fifo %d, want %d %d %d %d", c.bps, p.UnschedBytes, p.MaxIncoming, p.LinkRate,
				p.FIFOGrantIncrement, c.unsched, c.incoming, c.bps, c.fifo)
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
