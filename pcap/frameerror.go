package pcap

// FrameError is an error reading one frame from a live capture while the
// socket stays usable (Live.ReadFrame): the kernel could not copy that
// frame (recvmsg EFAULT, seen for skbs HomaModule's GRO built). Readers
// count these and read on instead of ending the capture.
type FrameError struct{ Err error }

func (e *FrameError) Error() string { return "read one frame: " + e.Err.Error() }
func (e *FrameError) Unwrap() error { return e.Err }
