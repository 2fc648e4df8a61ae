package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/homatest/homatest/internal/atomicfile"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// outputFormat is the value of a command's -o/--output flag when it names
// a format (plot's -o names a picture file instead): one of the formats
// the command offers, checked when the flags are parsed, so that every
// command refuses a bad -o with the same one-line usage error.
type outputFormat struct {
	p       *string
	formats []string
}

// formatError is a -o value the command does not offer.
type formatError struct {
	value   string
	formats []string
}

func (e *formatError) Error() string {
	return fmt.Sprintf("-o %q: want %s", e.value, orList(e.formats))
}

// orList renders a, b or c.
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

func (o *outputFormat) String() string { return *o.p }

func (o *outputFormat) Set(s string) error {
	if !slices.Contains(o.formats, s) {
		return &formatError{value: s, formats: o.formats}
	}
	*o.p = s
	return nil
}

func (o *outputFormat) Type() string { return "format" }

// outputVar defines -o/--output on fs, stored in *p: formats lists what
// the command can print (the first is the default), usage says what each
// prints.
func outputVar(fs *pflag.FlagSet, p *string, usage string, formats ...string) {
	*p = formats[0]
	fs.VarP(&outputFormat{p: p, formats: formats}, "output", "o", fmt.Sprintf("output: %s; %s", orList(formats), usage))
}

// checkOutputFile reports, before any work starts, an output file (flag
// name, e.g. "--junit") that is "-" (file flags never write standard
// output) or whose folder does not exist or is not a folder,
// so no command runs for minutes and then fails to write its report, and
// none creates folders the user did not ask for; a folder that takes no
// new file (read-only, /proc) is caught too (atomicfile.Check).
func checkOutputFile(flag, path string) error {
	switch path {
	case "":
		return nil
	case "-":
		// Standard output carries the command's own report; a file
		// flag never shares it (check -o junit prints JUnit there).
		return fmt.Errorf("%s -: this flag writes a file, not standard output (which carries the report): give a file name", flag)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err == nil && !st.IsDir() {
		return fmt.Errorf("%s %s: %s is not a folder", flag, path, dir)
	}
	if err != nil {
		return fmt.Errorf("%s %s: folder %s: %v (create it first, or write the file elsewhere)", flag, path, dir, errors.Unwrap(err))
	}
	return flagWriteErr(flag, path, atomicfile.Check(path))
}

// checkInputFile reports, before any work starts, an input file (flag
// name, e.g. "--kernel") that cannot be read: "--kernel X: no such file
// or directory (fix)", fix saying what to give instead.
func checkInputFile(flag, path, fix string) error {
	f, err := os.Open(path)
	if err == nil {
		f.Close()
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // "open X: " would say the path twice
	}
	return fmt.Errorf("%s %s: %v (%s)", flag, path, err, fix)
}

// flagWriteErr names the flag in an error writing its output file path:
// "--junit /proc/x.xml: cannot write: no such file or directory" (nil
// stays nil).
func flagWriteErr(flag, path string, err error) error {
	var we *atomicfile.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &we):
		return fmt.Errorf("%s %s: cannot write: %w", flag, path, we.Err)
	}
	return fmt.Errorf("%s %s: %w", flag, path, err)
}

// oneArg is cobra.ExactArgs(1) with an error that names the argument
// wanted (what, e.g. "a scenario file") and an example.
func oneArg(what, example string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
			return fmt.Errorf("%s wants %s, got %d arguments; e.g. %s %s", name, what, len(args), cmd.CommandPath(), example)
		}
		return nil
	}
}

// captureArgs is the argument check of a command that reads one or more
// capture files (check, decode): at least one, and standard input ("-")
// at most once, since it can be read only once (a second "-" read it
// again as an empty capture, or waited for input that never came).
func captureArgs(cmd *cobra.Command, args []string) error {
	name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	if len(args) == 0 {
		return fmt.Errorf("%s needs at least one capture file (see %s --help)", name, cmd.CommandPath())
	}
	if n := count(args, "-"); n > 1 {
		return fmt.Errorf("%s: standard input (\"-\") can be given once, got it %d times: save it to a file to read it more than once", name, n)
	}
	return nil
}

// count is the number of times s occurs in ss.
func count(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}

// noArgs is cobra.NoArgs with a one-line error saying the command takes
// no arguments (cobra's reads "unknown command", as if a subcommand were
// meant).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		// The error line begins "homatest: ": name the subcommand only.
		name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
		return fmt.Errorf("%s takes no arguments, got %q: %s --help shows its flags", name, strings.Join(args, " "), cmd.CommandPath())
	}
	return nil
}

// errWriter remembers the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
