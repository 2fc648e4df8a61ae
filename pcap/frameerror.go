package pcap

// FrameError is an error reading from a live capture while the socket
// stays usable (Live.ReadFrame): a ring block whose frame headers point
// outside it (the rest of the block is skipped). Readers count these and
// read on instead of ending the capture.
type FrameError struct{ Err error }

func (e *FrameError) Error() string { return "read one frame: " + e.Err.Error() }
func (e *FrameError) Unwrap() error { return e.Err }
