package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/homatest/homatest/report/annotate"
	"github.com/homatest/homatest/spec"
)

// writeAnnotated writes the capture at path ("-": standard input, as read
// by openCapture) to out with rep's violations as packet comments, and says
// so on w.
func writeAnnotated(w io.Writer, out, path string, rep *spec.Report) error {
	var in io.Reader
	if path == "-" {
		in = bytes.NewReader(stdinData)
	} else {
		f, err := os.Open(path)
		if err != nil {
			return openError(path, err)
		}
		defer f.Close()
		in = f
	}
	section := fmt.Sprintf("homatest check %s (profile %s): %d violations", path, rep.Profile, len(rep.Violations))
	n, err := annotate.Write(in, out, rep.Violations, section)
	if err != nil {
		return fmt.Errorf("--annotate: cannot write %s: %w", out, unwrapPathErr(err))
	}
	fmt.Fprintf(w, "annotated capture: %s (%s on %s)\n", out,
		plural(len(rep.Violations), "violation", "violations"), plural(n, "frame", "frames"))
	return nil
}

// unwrapPathErr drops the temporary file name a write error may carry.
func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
