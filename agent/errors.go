package agent

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrAgentExited: the agent closed its standard output (it exited or
	// crashed). Errors wrapping it carry the last lines of the agent's
	// standard error when ClientOptions.StderrTail is set. The harness
	// reports the agent as "crashed".
	ErrAgentExited = errors.New("agent exited")
	// ErrAgentSilent: the agent did not answer a request within the reply
	// timeout. The harness reports the agent as "silent".
	ErrAgentSilent = errors.New("agent silent")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("agent: client closed")
)

// maxQuote bounds the bytes of a bad line quoted in a ProtocolError.
const maxQuote = 200

// ProtocolError is a line from the agent that breaks the protocol: not JSON,
// an unknown event, a reply to no request, or a line too long. The session
// ends with it (the harness reports the agent as failed, not the IUT's
// protocol).
type ProtocolError struct {
	// Line is the offending line, cut to 200 bytes.
	Line string
	// Reason says what is wrong with it.
	Reason string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("agent protocol error: %s: %q (stdout must carry only protocol lines; log to stderr)", e.Reason, e.Line)
}

// newProtocolError quotes line (cut to maxQuote bytes) with reason.
func newProtocolError(line []byte, reason string) *ProtocolError {
	q := string(line)
	if len(q) > maxQuote {
		q = q[:maxQuote] + "…"
	}
	return &ProtocolError{Line: q, Reason: reason}
}

// AgentError is an error event: the agent could not carry out an op.
type AgentError struct {
	// Op and Seq identify the request; Message is the agent's one line.
	Op      string
	Seq     uint64
	Message string
}

func (e *AgentError) Error() string {
	return fmt.Sprintf("agent refused %s (seq %d): %s", e.Op, e.Seq, e.Message)
}

// withTail appends the last stderr lines of the agent to msg.
func withTail(msg, tail string) string {
	tail = strings.TrimSpace(tail)
	if tail == "" {
		return msg
	}
	return msg + "; last stderr lines: " + strings.ReplaceAll(tail, "\n", " | ")
}
