package agent

import (
	"context"
	"io"
)

// PipeRef runs the ref agent in this process (ServeRef on a goroutine) and
// returns a Client connected to it over two io.Pipe pairs: the way tests in
// other packages drive the reference implementation without a child
// process (give RefOptions.Transport a homa/memnet endpoint to need no
// root). The agent stops at Shutdown, at Client.Close or at ctx's end;
// ServeRef's result is then sent on the returned channel.
func PipeRef(ctx context.Context, ref RefOptions, opt ClientOptions) (*Client, <-chan error) {
	return pipe(opt, func(r io.Reader, w io.Writer) error { return ServeRef(ctx, r, w, ref) })
}

// PipeLinux is PipeRef for the linux agent (ServeLinux).
func PipeLinux(ctx context.Context, lo LinuxOptions, opt ClientOptions) (*Client, <-chan error) {
	return pipe(opt, func(r io.Reader, w io.Writer) error { return ServeLinux(ctx, r, w, lo) })
}

// pipe runs serve on a goroutine between two io.Pipe pairs and returns the
// Client on the other ends.
func pipe(opt ClientOptions, serve func(io.Reader, io.Writer) error) (*Client, <-chan error) {
	reqR, reqW := io.Pipe()
	evR, evW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := serve(reqR, evW)
		evW.Close()
		reqR.Close()
		done <- err
	}()
	return NewClient(evR, reqW, opt), done
}

// PipeTCP is PipeRef for the tcp agent (ServeTCP).
func PipeTCP(ctx context.Context, to TCPOptions, opt ClientOptions) (*Client, <-chan error) {
	return pipe(opt, func(r io.Reader, w io.Writer) error { return ServeTCP(ctx, r, w, to) })
}
