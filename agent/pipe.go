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
	reqR, reqW := io.Pipe()
	evR, evW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := ServeRef(ctx, reqR, evW, ref)
		evW.Close()
		reqR.Close()
		done <- err
	}()
	return NewClient(evR, reqW, opt), done
}
