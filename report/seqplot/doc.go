// Package seqplot draws the sequence graph of one Homa RPC from a capture,
// the way tcptrace draws a TCP connection: time on the x axis (from the
// RPC's first packet), byte offset in the message on the y axis, one panel
// for the request and one for the response.
//
// Each DATA segment is a vertical stroke from its offset to offset+length,
// coloured by the priority level it travelled at (p0..p7, read from the IP
// header); a DATA with retransmit=1 also gets a cross. The granted offset
// (the incoming field of the first DATA, then every GRANT that raised it)
// is a step line; a RESEND is a red bar over the byte range it asked for
// (length 0xFFFFFFFF: up to the message length); a BUSY is a triangle at
// the highest offset sent so far.
//
// Building and drawing are separate: a Builder collects an RPC's packets
// (spec.Events, as pcap.Reader.EachEvent gives them) into a Model, plain
// data that tests can inspect, and Model.Render draws it with gonum/plot as
// PNG, SVG or PDF. Slowest and Latency pick the RPC to draw from a
// spec.Trace's RPCs.
package seqplot
